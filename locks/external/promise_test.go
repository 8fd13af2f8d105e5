package external_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster/backends/zookeeper"
	"github.com/locklab/locklab/locks/external"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/testenv"
)

// requireLibraries: the servers and Debian packages the reference clients
// need (missing ones fail in CI, skip elsewhere).
func requireLibraries(t *testing.T) {
	t.Helper()
	testenv.RequireBinaries(t, "redis-server", "etcd", "java", "javac")
	jars := []string{zookeeper.Jar}
	for _, j := range external.CuratorJars {
		jars = append(jars, "/usr/share/java/"+j+".jar")
	}
	testenv.RequireFiles(t, jars...)
	if out, err := exec.Command("/usr/bin/python3", "-c", "import redis, kazoo, etcd3, tooz").CombinedOutput(); err != nil {
		testenv.Unavailable(t, "Debian's Python lock libraries are missing (make deps): %s", strings.TrimSpace(string(out)))
	}
}

// TestLibraryClientPromises: every reference client speaks protocol
// version 2 and reports a promise (a lease's validity, or a session's
// timeout), so the run's promise is never "unreported" and the incidents
// of a holder paused 4s past its 1s TTL or session are classified from
// it: the holder's fault (client_faults), never the lock's.
func TestLibraryClientPromises(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts servers and library clients")
	}
	requireLibraries(t)
	want := map[string]string{
		"redis-py": "measured", "etcd3-py": "measured", "tooz-redis": "measured", "tooz-etcd": "measured",
		"kazoo": "estimated", "tooz-zookeeper": "estimated", "curator": "estimated",
	}
	var names []string
	for n := range want {
		names = append(names, n)
	}
	sc, err := scenarios.Parse("promises.yaml", []byte(`name: library-promises
cluster: {redis: {primaries: 1}, zookeeper: {nodes: 1}, etcd: {nodes: 1}}
locks: [`+strings.Join(names, ", ")+`]
workload: {clients: 3, duration: 6s, ttl: 1s, critical_section: 200ms}
faults:
  - {at: 1s, for: 4s, type: pause-client, client: holder}
resource: {fencing: observe}
`))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, _, err := runner.Run(ctx, sc, runner.Options{OutDir: t.TempDir()})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	for _, r := range res.Runs {
		t.Run(r.Lock, func(t *testing.T) {
			if r.Error != "" {
				t.Fatalf("run error: %s", r.Error)
			}
			t.Logf("promise %s, incidents %d (lock %d, client %d)", r.Promise, r.Incidents, r.LockFaults, r.ClientFaults)
			if r.Promise != want[r.Lock] {
				t.Errorf("promise %q, want %q", r.Promise, want[r.Lock])
			}
			if r.Incidents == 0 {
				t.Fatalf("holder paused 4s past a 1s TTL: no incident")
			}
			if r.LockFaults != 0 || r.ClientFaults == 0 {
				t.Errorf("lock faults %d, client faults %d: the paused holder outlived its promise, want client faults only", r.LockFaults, r.ClientFaults)
			}
		})
	}
}
