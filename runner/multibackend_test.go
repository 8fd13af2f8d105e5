package runner_test

import (
	"strings"
	"testing"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/testenv"
)

// A fault may name nodes of every backend the scenario declares: each lock
// runs on its own backend's servers only, the fault acts on the names that
// exist there (the rest are dropped, said in its detail), and a fault left
// with nothing to act on is recorded as not applicable, which makes the
// run's safety verdict inconclusive instead of safe.
func TestMultiBackendFaults(t *testing.T) {
	testenv.RequireBinaries(t, "redis-server", "etcd")
	sc := parse(t, `
name: multi-backend
cluster: {redis: {primaries: 1}, etcd: {nodes: 3}}
locks: [redis-cad, etcd-recipe]
workload: {clients: 3, duration: 3s, ttl: 2s, critical_section: 50ms}
faults:
  - {at: 1s, for: 500ms, type: partition, groups: [[holder], [redis-0, etcd-0, etcd-1, etcd-2]]}
  - {at: 1s, for: 500ms, type: pause, node: etcd-1}
expect: {default: {violations: 0, lock_faults: 0, min_visits: 1}}
`)
	res := runScenario(t, sc)
	runs := byLock(res)
	cad, etcd := runs["redis-cad"], runs["etcd-recipe"]
	if len(cad.Faults) != 2 || len(etcd.Faults) != 2 {
		t.Fatalf("faults recorded: redis-cad %d, etcd-recipe %d, want 2 each", len(cad.Faults), len(etcd.Faults))
	}
	part := cad.Faults[0]
	if part.Error != "" || !strings.Contains(part.Detail, "dropped") || !strings.Contains(part.Detail, "etcd-0, etcd-1, etcd-2") {
		t.Errorf("redis-cad partition: detail %q, error %q; want it applied with the etcd names dropped", part.Detail, part.Error)
	}
	if p := cad.Faults[1]; !strings.Contains(p.Error, "not applicable") {
		t.Errorf("redis-cad pause etcd-1: error %q, want not applicable", p.Error)
	}
	if cad.Verdict == checker.VerdictMet {
		t.Errorf("redis-cad verdict met although a fault did not apply (%s)", cad.VerdictReason)
	}
	if e := etcd.Faults[0]; e.Error != "" || !strings.Contains(e.Detail, "redis-0") {
		t.Errorf("etcd-recipe partition: detail %q, error %q; want redis-0 dropped", e.Detail, e.Error)
	}
	if e := etcd.Faults[1]; e.Error != "" {
		t.Errorf("etcd-recipe pause etcd-1: %s", e.Error)
	}
}
