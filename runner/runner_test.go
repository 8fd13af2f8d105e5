package runner_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "github.com/locklab/locklab/locks/all"
	"github.com/locklab/locklab/report"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/testenv"
	"github.com/locklab/locklab/workload"
)

// TestMain lets the test binary act as a client process: process_per_client
// runs re-execute it in worker mode.
func TestMain(m *testing.M) {
	workload.MaybeWorker()
	os.Exit(m.Run())
}

func parse(t *testing.T, yaml string) *scenarios.Scenario {
	t.Helper()
	sc, err := scenarios.Parse(t.Name()+".yaml", []byte(yaml))
	if err != nil {
		t.Fatalf("scenario: %v", err)
	}
	return sc
}

func runScenario(t *testing.T, sc *scenarios.Scenario) *report.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, dir, err := runner.Run(ctx, sc, runner.Options{OutDir: t.TempDir()})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if _, err := report.Read(dir); err != nil {
		t.Fatalf("result.json: %v", err)
	}
	for _, r := range res.Runs {
		if r.Error != "" {
			t.Fatalf("%s failed: %s", r.Lock, r.Error)
		}
		t.Logf("%-20s ops %5d  violations %3d  lost %3d  stale %3d (rejected %3d)  errors %s",
			r.Lock, r.Ops, r.Violations, r.LostUpdates, r.StaleTokens, r.StaleRejected, report.ErrorsString(r.Errors))
	}
	return res
}

func byLock(res *report.Result) map[string]report.Run {
	m := map[string]report.Run{}
	for _, r := range res.Runs {
		m[r.Lock] = r
	}
	return m
}

// TestCorrectLocksAreSafe: correct locks under contention, no faults, the
// checker must report nothing (it does not cry wolf), and the result file
// carries the contract fields.
func TestCorrectLocksAreSafe(t *testing.T) {
	testenv.RequireBinaries(t, "redis-server")
	sc := parse(t, `
name: safe
cluster: {redis: {primaries: 1}}
locks: [redis-cad, redis-watchdog, redis-reentrant]
workload: {clients: 6, duration: 2s, ttl: 2s, critical_section: 1ms}
resource: {fencing: enforce}
expect: {default: {violations: 0, lost_updates: 0, stale_tokens: 0}}
`)
	res := runScenario(t, sc)
	if !res.Complete || res.ExpectMet == nil || !*res.ExpectMet {
		t.Fatalf("complete=%v expect_met=%v", res.Complete, res.ExpectMet)
	}
	for _, r := range res.Runs {
		if r.Ops < 100 || r.Throughput <= 0 || r.Acquire.Count == 0 || r.Handoff.Count == 0 {
			t.Errorf("%s: ops %d throughput %.0f acquire n=%d handoff n=%d: the workload barely ran",
				r.Lock, r.Ops, r.Throughput, r.Acquire.Count, r.Handoff.Count)
		}
		if len(r.Timeline) < 15 {
			t.Errorf("%s: timeline has %d buckets for a 2s run", r.Lock, len(r.Timeline))
		}
	}
	if res.Schema != report.Schema || res.Scenario != "safe" || res.Provider != "local" {
		t.Errorf("result header: %+v", res)
	}
}

// TestBrokenLocksAreCaught: the critical section outlives the TTL. Every
// lock without renewal must show violations and lost updates; the renewing
// ones none. A checker that misses these is the worst bug locklab can have.
func TestBrokenLocksAreCaught(t *testing.T) {
	testenv.RequireBinaries(t, "redis-server")
	sc := parse(t, `
name: long-cs
cluster: {redis: {primaries: 1}}
locks: [redis-setnx-expire, redis-set-del, redis-cad, redis-watchdog, redis-reentrant]
workload: {clients: 3, duration: 3s, ttl: 300ms, critical_section: 700ms}
resource: {fencing: observe}
`)
	got := byLock(runScenario(t, sc))
	for _, name := range []string{"redis-setnx-expire", "redis-set-del", "redis-cad"} {
		if r := got[name]; r.Violations == 0 || r.LostUpdates == 0 || r.StaleTokens == 0 {
			t.Errorf("%s: violations %d lost %d stale %d, want all > 0", name, r.Violations, r.LostUpdates, r.StaleTokens)
		}
		if ev := got[name].ViolationEvents; len(ev) == 0 || ev[0].OverlapMs <= 0 || ev[0].FirstClient == ev[0].SecondClient {
			t.Errorf("%s: violation events %+v", name, ev)
		}
	}
	for _, name := range []string{"redis-watchdog", "redis-reentrant"} {
		if r := got[name]; r.Violations != 0 || r.LostUpdates != 0 || r.Ops == 0 {
			t.Errorf("%s: violations %d lost %d ops %d, want 0, 0, > 0", name, r.Violations, r.LostUpdates, r.Ops)
		}
	}
}

// TestPausedHolder: each client is its own process; the holder is frozen
// (SIGSTOP) past its lease, so its watchdog cannot renew and another client
// takes the lock. Fencing enforce must reject every stale write.
func TestPausedHolder(t *testing.T) {
	testenv.RequireBinaries(t, "redis-server")
	for _, fencing := range []string{"observe", "enforce"} {
		t.Run(fencing, func(t *testing.T) {
			sc := parse(t, `
name: pause-holder
cluster: {redis: {primaries: 1}}
locks: [redis-watchdog]
workload: {clients: 3, duration: 4s, ttl: 500ms, critical_section: 200ms, process_per_client: true}
faults:
  - {at: 500ms, for: 1500ms, type: pause-client, client: holder}
resource: {fencing: `+fencing+`}
`)
			res := runScenario(t, sc)
			r := res.Runs[0]
			if len(r.Faults) != 1 || r.Faults[0].Error != "" || !strings.HasPrefix(r.Faults[0].Target, "client-") {
				t.Fatalf("fault windows %+v", r.Faults)
			}
			// At least the 1.5s asked; the upper bound only catches a pause
			// that was never healed on time (a loaded machine adds delay).
			if w := r.Faults[0]; w.EndS-w.StartS < 1.5 || w.EndS-w.StartS > 3 {
				t.Errorf("pause lasted %.2fs, want 1.5s", w.EndS-w.StartS)
			}
			if r.Violations == 0 {
				t.Fatalf("paused holder past its lease: no violation seen")
			}
			if r.StaleTokens == 0 {
				t.Errorf("the resumed holder wrote with its old token: want stale_tokens > 0")
			}
			// Its promise ran out at most a lease (500 ms) into the 1.5 s
			// pause, and it learnt nothing before it woke: a zombie of a
			// second or more.
			if r.LostLeases == nil || *r.LostLeases == 0 || r.ZombieMsMax == nil || *r.ZombieMsMax < 900 {
				t.Errorf("lost_leases %v, zombie_ms_max %v: want the paused holder's lease lost, for 900 ms or more", deref(r.LostLeases), deref(r.ZombieMsMax))
			}
			switch fencing {
			case "enforce":
				if r.StaleAccepted != 0 || r.StaleRejected != r.StaleTokens || r.LostUpdates != 0 {
					t.Errorf("enforce: stale %d rejected %d accepted %d lost %d", r.StaleTokens, r.StaleRejected, r.StaleAccepted, r.LostUpdates)
				}
			case "observe":
				if r.StaleRejected != 0 || r.LostUpdates == 0 {
					t.Errorf("observe: rejected %d lost %d, want 0 and > 0", r.StaleRejected, r.LostUpdates)
				}
			}
		})
	}
}

// TestInterrupted: cancelling mid-run (Ctrl-C) writes a partial result and
// leaves no server or client process behind.
func TestInterrupted(t *testing.T) {
	testenv.RequireBinaries(t, "redis-server")
	sc := parse(t, `
name: interrupted
cluster: {redis: {primaries: 1, replicas: 1}}
locks: [redis-cad, redis-watchdog]
workload: {clients: 3, duration: 30s, ttl: 1s, process_per_client: true}
`)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(2500*time.Millisecond, cancel)
	dir := t.TempDir()
	start := time.Now()
	res, _, err := runner.Run(ctx, sc, runner.Options{OutDir: dir})
	if err == nil {
		t.Fatal("interrupted run returned no error")
	}
	if time.Since(start) > 20*time.Second {
		t.Errorf("stopping took %v", time.Since(start))
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

// children lists the live child processes of this test process.
func children(t *testing.T) []string {
	t.Helper()
	me := strconv.Itoa(os.Getpid())
	var out []string
	deadline := time.Now().Add(5 * time.Second)
	for {
		out = out[:0]
		stats, _ := filepath.Glob("/proc/[0-9]*/stat")
		for _, st := range stats {
			b, err := os.ReadFile(st)
			if err != nil {
				continue
			}
			// pid (comm) state ppid ...
			s := string(b)
			i := strings.LastIndexByte(s, ')')
			if i < 0 {
				continue
			}
			f := strings.Fields(s[i+1:])
			if len(f) > 1 && f[1] == me && f[0] != "Z" {
				out = append(out, s[:i+1])
			}
		}
		if len(out) == 0 || time.Now().After(deadline) {
			return out
		}
		time.Sleep(50 * time.Millisecond) // processes being reaped: poll
	}
}

// TestShortPauseIsSafe: a pause shorter than what is left of a renewed
// lease must not produce a violation: the checker does not cry wolf.
func TestShortPauseIsSafe(t *testing.T) {
	testenv.RequireBinaries(t, "redis-server")
	sc := parse(t, `
name: short-pause
cluster: {redis: {primaries: 1}}
locks: [redis-watchdog, redis-reentrant]
workload: {clients: 3, duration: 3s, ttl: 3s, critical_section: 100ms, process_per_client: true}
faults:
  - {at: 500ms, for: 600ms, type: pause-client, client: holder}
resource: {fencing: enforce}
`)
	for _, r := range runScenario(t, sc).Runs {
		if len(r.Faults) != 1 || r.Faults[0].Error != "" {
			t.Fatalf("%s: fault windows %+v", r.Lock, r.Faults)
		}
		if r.Violations != 0 || r.StaleTokens != 0 || r.LostUpdates != 0 {
			t.Errorf("%s: a 600ms pause under a 3s renewed lease gave violations %d stale %d lost %d",
				r.Lock, r.Violations, r.StaleTokens, r.LostUpdates)
		}
		if r.LostLeases == nil || *r.LostLeases != 0 || r.ZombieMsP50 != nil || r.ZombieMsMax != nil {
			t.Errorf("%s: a 600ms pause under a 3s renewed lease lost leases %v (zombie p50 %v, max %v), want 0 and none",
				r.Lock, deref(r.LostLeases), deref(r.ZombieMsP50), deref(r.ZombieMsMax))
		}
	}
}

// TestPlanSweep: one point per lock and sweep combination, with the swept
// values applied; --clients replaces the clients dimension.
func TestPlanSweep(t *testing.T) {
	sc := parse(t, `
name: plan
cluster: {redis: {primaries: 1}}
locks: [redis-cad, redis-watchdog]
workload: {clients: 2, duration: 5s, process_per_client: true}
faults:
  - {at: 1s, for: 1s, type: pause-client, client: holder}
sweep:
  clients: [1, 4]
  faults[0].for: [500ms, 2s]
`)
	pts, err := runner.Plan(sc, runner.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range pts {
		got = append(got, fmt.Sprintf("%s c=%d for=%s %v", p.Lock.Name, p.Clients, p.Faults[0].For, p.Params))
	}
	want := []string{
		"redis-cad c=1 for=500ms map[clients:1 faults[0].for:500ms]",
		"redis-cad c=1 for=2s map[clients:1 faults[0].for:2s]",
		"redis-cad c=4 for=500ms map[clients:4 faults[0].for:500ms]",
		"redis-cad c=4 for=2s map[clients:4 faults[0].for:2s]",
		"redis-watchdog c=1 for=500ms map[clients:1 faults[0].for:500ms]",
		"redis-watchdog c=1 for=2s map[clients:1 faults[0].for:2s]",
		"redis-watchdog c=4 for=500ms map[clients:4 faults[0].for:500ms]",
		"redis-watchdog c=4 for=2s map[clients:4 faults[0].for:2s]",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("plan:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	pts, err = runner.Plan(sc, runner.Options{Clients: 8, Locks: []string{"redis-cad"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) != 2 || pts[0].Clients != 8 || pts[1].Clients != 8 || pts[0].Params["clients"] != "" {
		t.Errorf("with --clients 8: %+v", pts)
	}
}

// TestExpectationsMerge: a lock's own entry takes its empty fields from
// default, stale_accepted included.
func TestExpectationsMerge(t *testing.T) {
	testenv.RequireBinaries(t, "redis-server")
	sc := parse(t, `
name: merge
cluster: {redis: {primaries: 1}}
locks: [redis-cad]
workload: {clients: 2, duration: 1s, ttl: 2s}
expect:
  default: {stale_accepted: 0, lost_updates: 0}
  redis-cad: {violations: 0}
`)
	r := runScenario(t, sc).Runs[0]
	var fields []string
	for _, e := range r.Expectations {
		fields = append(fields, e.Field)
	}
	if got := strings.Join(fields, ","); got != "violations,stale_accepted,lost_updates" {
		t.Errorf("checked %s, want violations,stale_accepted,lost_updates", got)
	}
}

// deref is *p, or "absent" when p is nil, for messages.
func deref[T any](p *T) any {
	if p == nil {
		return "absent"
	}
	return *p
}
