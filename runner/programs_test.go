package runner_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/cluster/backends/zookeeper"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/external"
	"github.com/locklab/locklab/report"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/testenv"
)

// libraryLocks are the reference clients of other languages.
var libraryLocks = []string{"redis-py", "kazoo", "etcd3-py", "tooz-redis", "tooz-zookeeper", "tooz-etcd", "curator"}

// requireLibraries checks the servers and the Debian packages the
// reference clients need: missing ones fail in CI and skip elsewhere,
// like a missing server binary.
func requireLibraries(t *testing.T) {
	t.Helper()
	testenv.RequireBinaries(t, "redis-server", "etcd", "java", "javac")
	jars := []string{zookeeper.Jar}
	for _, j := range external.CuratorJars {
		jars = append(jars, "/usr/share/java/"+j+".jar")
	}
	testenv.RequireFiles(t, jars...)
	out, err := exec.Command("/usr/bin/python3", "-c", "import redis, kazoo, etcd3, tooz").CombinedOutput()
	if err != nil {
		testenv.Unavailable(t, "Debian's Python lock libraries are missing (python3-redis, python3-kazoo, python3-etcd3, python3-tooz: run `make deps`): %s",
			strings.TrimSpace(string(out)))
	}
}

func libraryScenario(extra string) string {
	return `
cluster: {redis: {primaries: 1}, zookeeper: {nodes: 1}, etcd: {nodes: 1}}
locks: [` + strings.Join(libraryLocks, ", ") + `]
` + extra
}

// TestLibraryClientsAreSafe: every reference client under contention
// without faults: real work done, no violation, no lost update.
func TestLibraryClientsAreSafe(t *testing.T) {
	requireLibraries(t)
	sc := parse(t, `name: libraries-safe`+libraryScenario(`
workload: {clients: 3, duration: 2s, ttl: 2s, critical_section: 1ms}
resource: {fencing: observe}
`))
	res := runScenario(t, sc)
	for _, r := range res.Runs {
		if r.Ops < 20 || r.Violations != 0 || r.LostUpdates != 0 || r.Acquire.Count == 0 || r.Release.Count == 0 {
			t.Errorf("%s: ops %d violations %d lost %d acquire n=%d release n=%d: want ops >= 20, no violation",
				r.Lock, r.Ops, r.Violations, r.LostUpdates, r.Acquire.Count, r.Release.Count)
		}
		spec, _ := locks.Lookup(r.Lock)
		if spec.Fencing && r.StaleTokens != 0 {
			t.Errorf("%s: %d stale tokens without a fault: its token is not monotonic", r.Lock, r.StaleTokens)
		}
	}
}

// TestLibraryClientsPausedHolder: the holder's whole process (its
// library's heartbeat threads too) is stopped past its TTL/session: every
// library lets another client in, and the resumed holder's token (where
// the library gives one) is stale. The pause is 4s: etcd raises a 1s lease
// to its minimum (1.5 election timeouts, rounded up to 2s) and expires it
// on a 500ms tick, late on a loaded machine.
func TestLibraryClientsPausedHolder(t *testing.T) {
	requireLibraries(t)
	sc := parse(t, `name: libraries-pause`+libraryScenario(`
workload: {clients: 3, duration: 6s, ttl: 1s, critical_section: 200ms}
faults:
  - {at: 1s, for: 4s, type: pause-client, client: holder}
resource: {fencing: observe}
`))
	res := runScenario(t, sc)
	for _, r := range res.Runs {
		if len(r.Faults) != 1 || r.Faults[0].Error != "" || !strings.HasPrefix(r.Faults[0].Target, "client-") {
			t.Errorf("%s: fault windows %+v", r.Lock, r.Faults)
			continue
		}
		if r.Violations == 0 {
			t.Errorf("%s: holder paused 4s past a 1s TTL: no violation seen", r.Lock)
		}
		spec, _ := locks.Lookup(r.Lock)
		if spec.Fencing && r.StaleTokens == 0 {
			t.Errorf("%s: the resumed holder wrote with its old token: want stale_tokens > 0", r.Lock)
		}
	}
}

// TestLibraryClientsInterrupted: Ctrl-C mid-run (a JVM and a Python
// client) writes a partial result and leaves no process behind.
func TestLibraryClientsInterrupted(t *testing.T) {
	requireLibraries(t)
	sc := parse(t, `
name: libraries-interrupted
cluster: {zookeeper: {nodes: 1}}
locks: [curator, kazoo]
workload: {clients: 3, duration: 30s, ttl: 2s}
`)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(4*time.Second, cancel)
	dir := t.TempDir()
	res, _, err := runner.Run(ctx, sc, runner.Options{OutDir: dir})
	if err == nil {
		t.Fatal("interrupted run returned no error")
	}
	saved, rerr := report.Read(dir)
	if rerr != nil {
		t.Fatal(rerr)
	}
	if saved.Complete || res.Complete || len(saved.Runs) != 1 || saved.Runs[0].Complete || saved.Interrupted == "" {
		t.Errorf("partial result: complete=%v runs=%d interrupted=%q", saved.Complete, len(saved.Runs), saved.Interrupted)
	}
	if kids := children(t); len(kids) > 0 {
		t.Errorf("processes left behind: %v", kids)
	}
}

// TestExecClientFailure: an exec client that breaks the protocol stops
// its run with an error naming the client and what it said; the other
// locks of the scenario still run and nothing is left behind.
func TestExecClientFailure(t *testing.T) {
	testenv.RequireBinaries(t, "redis-server")
	sc := parse(t, `
name: exec-broken
cluster: {redis: {primaries: 1}}
locks:
  - {name: exec, backend: redis, command: [/bin/sh, -c, "read c; echo '{\"op\":\"ready\"}'; read s; echo '{\"op\":\"next\"}'; read w; echo '{\"op\":\"acquired\",\"token\":\"x\"}'; sleep 30"], label: broken}
  - redis-cad
workload: {clients: 2, duration: 2s, ttl: 2s}
`)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, _, err := runner.Run(ctx, sc, runner.Options{OutDir: t.TempDir()})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	got := byLock(res)
	if e := got["broken"].Error; !strings.Contains(e, "client-") || !strings.Contains(e, `field token must be an integer >= 0 (got "x")`) {
		t.Errorf("broken client's error: %q", e)
	}
	if r := got["redis-cad"]; r.Error != "" || r.Ops == 0 {
		t.Errorf("redis-cad after the broken client: error %q ops %d", r.Error, r.Ops)
	}
	if kids := children(t); len(kids) > 0 {
		t.Errorf("processes left behind: %v", kids)
	}
}

// TestPythonRedisClientsFollowSentinel: behind Sentinel, the Python Redis
// clients (redis-py, tooz-redis) ask the Sentinels for the primary and
// follow a failover: after redis-0 is killed and its replica promoted
// (failover at 11s, about 10s after the cluster started, past Sentinel's
// first INFO refreshes; promotion 2-3s later), both still acquire, on the
// new primary. A client dialling the first address would only fail after
// the kill (the old primary stays down). Each grant carries sent_us, so
// every acquire line of redis-py's history has its winning send as a try.
func TestPythonRedisClientsFollowSentinel(t *testing.T) {
	requireLibraries(t)
	sc := parse(t, `name: python-sentinel
cluster: {redis: {primaries: 1, replicas: 1, sentinels: 3, persistence: none}}
locks: [redis-py, tooz-redis]
workload: {clients: 2, duration: 20s, ttl: 2s, critical_section: 10ms}
faults:
  - {at: 11s, type: failover, node: redis-0}
resource: {fencing: observe}
`)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	res, dir, err := runner.Run(ctx, sc, runner.Options{OutDir: t.TempDir()})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	after := map[int]int{} // grants after the promotion, per run
	tried := map[int]int{} // acquire lines with the winning send as a try
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var op checker.Op
		if err := json.Unmarshal([]byte(l), &op); err != nil {
			t.Fatalf("history line %q: %v", l, err)
		}
		if op.Op != checker.OpAcquire {
			continue
		}
		if time.Duration(op.Invoke) > 15*time.Second {
			after[op.Run]++
		}
		if len(op.Tries) == 2 {
			tried[op.Run]++
		}
	}
	for i, r := range res.Runs {
		t.Logf("%s: ops %d, grants after 15s %d, acquires with sent_us %d, error %q", r.Lock, r.Ops, after[i], tried[i], r.Error)
		if r.Error != "" {
			t.Errorf("%s: %s", r.Lock, r.Error)
		}
		if after[i] < 10 {
			t.Errorf("%s: %d grants after 15s (failover at 11s): want >= 10, on the promoted primary", r.Lock, after[i])
		}
		if r.Lock == "redis-py" && tried[i] == 0 {
			t.Errorf("redis-py: no acquire line carries the winning send (sent_us)")
		}
	}
}
