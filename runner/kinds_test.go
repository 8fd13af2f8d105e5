package runner_test

import (
	"testing"
	"time"

	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/testenv"
)

// builtin resolves a built-in scenario and shortens its workload to d.
func builtin(t *testing.T, name string, d time.Duration) *scenarios.Scenario {
	t.Helper()
	sc, err := scenarios.Resolve(name)
	if err != nil {
		t.Fatal(err)
	}
	sc.Workload.Duration = d
	return sc
}

// TestRWNaiveCaught runs the built-in redis-rw-naive-race, shortened: the
// check-then-act reader registration lets writers in among readers with
// no fault at all, and the checker sees it; redis-rw shows nothing while
// its readers do share the lock.
func TestRWNaiveCaught(t *testing.T) {
	testenv.RequireBinaries(t, "redis-server")
	got := byLock(runScenario(t, builtin(t, "redis-rw-naive-race", 3*time.Second)))
	if r := got["redis-rw-naive"]; r.Violations == 0 || r.Kind != "rw" {
		t.Errorf("redis-rw-naive: violations %d kind %q: the race was not caught", r.Violations, r.Kind)
	}
	r := got["redis-rw"]
	if r.Violations != 0 || r.ChangedReads != 0 || r.LostUpdates != 0 || r.Ops < 100 {
		t.Errorf("redis-rw: violations %d changed reads %d lost %d ops %d, want 0 0 0 >= 100", r.Violations, r.ChangedReads, r.LostUpdates, r.Ops)
	}
	if r.PeakHolders < 2 {
		t.Errorf("redis-rw: peak holders %d: readers never shared the lock", r.PeakHolders)
	}
}

// TestSemaphoreLeakCaught runs the built-in redis-semaphore-holder-dies,
// shortened: a holder frozen for good keeps the leaky semaphore's only
// permit, and nobody enters again; the expiring semaphore gives it back
// after the TTL and holds at most its permits otherwise (its entries past
// the frozen holder's lease are client faults, never the lock's).
func TestSemaphoreLeakCaught(t *testing.T) {
	testenv.RequireBinaries(t, "redis-server")
	res := runScenario(t, builtin(t, "redis-semaphore-holder-dies", 5*time.Second))
	if res.ExpectMet == nil || !*res.ExpectMet {
		for _, r := range res.Runs {
			t.Logf("%s: verdict %s: %s", r.Lock, r.Verdict, r.VerdictReason)
		}
		t.Errorf("expectations not met")
	}
	got := byLock(res)
	leaky, good := got["redis-semaphore-leaky"], got["redis-semaphore"]
	if leaky.Lock == "" || good.Lock == "" {
		t.Fatalf("runs %d: want redis-semaphore and redis-semaphore-leaky", len(res.Runs))
	}
	if a := leaky.AvailabilityDuringFault; a == nil || *a > 0.1 {
		t.Errorf("leaky: availability during the fault %v, want ~0 (the dead holder's permit leaked)", a)
	}
	// The leaky semaphore's dead holder promised a TTL it never kept: the
	// permit is free, by its promise, from a TTL after the fault on.
	if l := leaky.PermitsLeakedMs; l == nil || *l < 1000 {
		t.Errorf("leaky: permits leaked %v ms, want >= 1000", l)
	}
	if l := good.PermitsLeakedMs; l == nil || *l >= 100 {
		t.Errorf("redis-semaphore: permits leaked %v ms, want < 100 (hand-offs only)", l)
	}
	if good.LockFaults != 0 || good.Permits != 1 || good.Kind != "semaphore" {
		t.Errorf("redis-semaphore: lock faults %d permits %d kind %q", good.LockFaults, good.Permits, good.Kind)
	}
}

// TestRWPartitionWriter runs the built-in redis-rw-partition-writer: the
// holder cut from the server outlives its hold, and whoever gets in after
// it expired is its client's fault, never redis-rw's; the partition bit;
// fencing under enforce lets no stale write through. redis-rw-naive's
// racing reader registration makes lock faults.
func TestRWPartitionWriter(t *testing.T) {
	testenv.RequireBinaries(t, "redis-server")
	res := runScenario(t, builtin(t, "redis-rw-partition-writer", 9*time.Second))
	if res.ExpectMet == nil || !*res.ExpectMet {
		for _, r := range res.Runs {
			t.Logf("%s: verdict %s: %s", r.Lock, r.Verdict, r.VerdictReason)
		}
		t.Errorf("expectations not met")
	}
	for _, r := range res.Runs {
		if len(r.Faults) != 1 || r.Faults[0].Bit == nil || !*r.Faults[0].Bit {
			t.Errorf("%s: the partition did not bite: %+v", r.Lock, r.Faults)
		}
		if r.StaleAccepted != 0 {
			t.Errorf("%s: %d stale writes accepted under fencing enforce", r.Lock, r.StaleAccepted)
		}
	}
	if rw := byLock(res)["redis-rw"]; rw.Kind != "rw" || rw.LockFaults != 0 {
		t.Errorf("redis-rw: kind %q lock faults %d, want rw 0", rw.Kind, rw.LockFaults)
	}
}
