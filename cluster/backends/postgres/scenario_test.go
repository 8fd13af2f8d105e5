package postgres_test

import (
	"context"
	"testing"
	"time"

	_ "github.com/locklab/locklab/locks/all"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/testenv"
)

// TestFailoverScenario runs the built-in postgres-failover end to end: for
// both locks the promoted replica grants the advisory lock while the first holder is
// still inside, within its promise (a lock fault), and the scenario's
// expectations say exactly that.
func TestFailoverScenario(t *testing.T) {
	testenv.RequireBinaries(t, "pg_config")
	sc, err := scenarios.Resolve("postgres-failover")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, _, err := runner.Run(ctx, sc, runner.Options{OutDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Runs) != 2 {
		t.Fatalf("%d runs, want pg-advisory and pg-advisory-xact", len(res.Runs))
	}
	for _, r := range res.Runs {
		t.Logf("%s: ops %d, violations %d, lock faults %d", r.Lock, r.Ops, r.Violations, r.LockFaults)
		if r.Error != "" || r.Violations == 0 || r.LockFaults == 0 {
			t.Errorf("%s: error %q, violations %d, lock faults %d: want the lost lock reproduced", r.Lock, r.Error, r.Violations, r.LockFaults)
		}
	}
	if res.ExpectMet == nil || !*res.ExpectMet {
		t.Errorf("expectations not met")
	}
}
