package runner_test

import (
	"strings"
	"testing"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/testenv"
)

// restartEmpty is the restart-empty schedule for bsm-redislock at a 1s
// lease: %s is the fault's firing rule.
const restartEmpty = `name: restart-empty
seed: 7
cluster:
  redis: {primaries: 1, persistence: none}
locks: [bsm-redislock]
workload: {clients: 3, duration: 4500ms, ttl: 1000ms, critical_section: 250ms, process_per_client: true}
faults:
  - {at: 1500ms, type: restart, node: redis-0, delay: 0s%s}
expect:
  default: {incidents: 0, lock_faults: 0}
`

// TestFixedPhaseNeverReadsSafe is the old atlas schedule: the restart fires
// at a fixed time, which the workload's rhythm dodges (the holder leaves
// just after the kill, before the server serves again). Such a run may
// never read safe: either the race opened and the lock granted twice, or
// the verdict says the race never opened (or nobody tried). The same
// schedule aimed at a holder 100 ms into its critical section breaks it
// (a section of 500 ms there, so that a restart slowed by a loaded
// machine still serves again before the holder leaves).
func TestFixedPhaseNeverReadsSafe(t *testing.T) {
	testenv.RequireBinaries(t, "redis-server")
	for i := 0; i < 2; i++ {
		res := runScenario(t, parse(t, strings.Replace(restartEmpty, "%s", "", 1)))
		r := res.Runs[0]
		t.Logf("fixed phase: verdict %s (%s); fault %+v", r.Verdict, r.VerdictReason, r.Faults[0])
		if r.Verdict == checker.VerdictMet {
			t.Fatalf("fixed-phase restart read safe: %s", r.VerdictReason)
		}
		if r.LockFaults == 0 && !strings.Contains(r.VerdictReason, "race never opened") && !strings.Contains(r.VerdictReason, "nobody tried") {
			t.Errorf("inconclusive without saying the race did not open: %s", r.VerdictReason)
		}
	}
	var faulted int
	for i := 0; i < 3 && faulted == 0; i++ {
		aimed := strings.Replace(restartEmpty, "%s", ", when: holder-inside, after_enter: 100ms", 1)
		aimed = strings.Replace(aimed, "critical_section: 250ms", "critical_section: 500ms", 1)
		res := runScenario(t, parse(t, aimed))
		r := res.Runs[0]
		f := r.Faults[0]
		t.Logf("aimed: verdict %s; lock faults %d; exposed %v %.0f ms, %d requests", r.Verdict, r.LockFaults, f.Exposed != nil && *f.Exposed, f.ExposureMs, f.ContendersInExposure)
		if f.Exposed == nil || !*f.Exposed || f.Holder == "" {
			t.Fatalf("aimed restart did not open the race: %+v", f)
		}
		faulted += r.LockFaults
	}
	if faulted == 0 {
		t.Fatal("aimed restart-empty never made bsm-redislock grant twice in 3 runs")
	}
}

// TestKeyPerClientPauseIsNoEvidence: with a key per client, nobody wants
// the paused holder's key, so its pause is no evidence of safety.
func TestKeyPerClientPauseIsNoEvidence(t *testing.T) {
	testenv.RequireBinaries(t, "redis-server")
	res := runScenario(t, parse(t, `name: kpc
cluster:
  redis: {primaries: 1}
locks: [redis-cad]
workload: {clients: 3, duration: 4s, ttl: 1s, critical_section: 200ms, key_per_client: true, process_per_client: true}
faults:
  - {at: 1s, for: 500ms, type: pause-client, client: holder}
expect:
  default: {violations: 0}
`))
	r := res.Runs[0]
	if r.Verdict != checker.VerdictInconclusive {
		t.Fatalf("verdict %s (%s), want inconclusive: the holder's key had no other client", r.Verdict, r.VerdictReason)
	}
	t.Logf("reason: %s", r.VerdictReason)
}
