package runner

import (
	"context"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/report"
	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/workload"
)

// TestEvaluateVerdicts: a safety claim is inconclusive without evidence (a
// fault that did not apply, too few visits or a single client in a fault's
// window, a resource-call error), failed when the counts contradict it,
// met otherwise; a performance gate is met or failed, never inconclusive.
func TestEvaluateVerdicts(t *testing.T) {
	sc := &scenarios.Scenario{Expect: map[string]scenarios.Expect{"default": {Violations: "0", LockFaults: "0"}}}
	kill := report.FaultWindow{Type: "kill", Target: "redis-0", StartS: 1, EndS: 3, VisitsAfter: 10}
	pause := report.FaultWindow{Type: "pause-client", Target: "holder", StartS: 2, EndS: 4, VisitsAfter: 10}
	contended := checker.WindowEvidence{Visits: 5, Contenders: 3}
	tests := []struct {
		name, want, reason string
		run                report.Run
		inWindow           []checker.WindowEvidence
	}{
		{"evidence", checker.VerdictMet, "", report.Run{Faults: []report.FaultWindow{kill}}, []checker.WindowEvidence{contended}},
		{"failed fault", checker.VerdictInconclusive, "did not apply",
			report.Run{Faults: []report.FaultWindow{{Type: "kill", Target: "redis-0", Error: "no such node", VisitsAfter: 10}}}, []checker.WindowEvidence{contended}},
		{"few visits in the window", checker.VerdictInconclusive, "2 visits, 2 contenders in the window of fault 0 (kill redis-0 1.0s-3.0s, to a lease after its heal), min_visits 3, >= 2 contenders",
			report.Run{Faults: []report.FaultWindow{kill}}, []checker.WindowEvidence{{Visits: 2, Contenders: 2}}},
		{"one client in the window", checker.VerdictInconclusive, "2 visits, 1 contender in the window of fault 1 (pause-client holder 2.0s-4.0s, to a lease after its heal), min_visits 3, >= 2 contenders",
			report.Run{Faults: []report.FaultWindow{kill, pause}}, []checker.WindowEvidence{contended, {Visits: 2, Contenders: 1}}},
		{"one client re-taking the lock while two wait", checker.VerdictMet, "",
			report.Run{Faults: []report.FaultWindow{kill}}, []checker.WindowEvidence{{Visits: 3, Contenders: 3, Waiting: 2}}},
		{"one client re-taking the lock, nobody else trying", checker.VerdictInconclusive, "3 visits, 1 contender in the window of fault 0",
			report.Run{Faults: []report.FaultWindow{kill}}, []checker.WindowEvidence{{Visits: 3, Contenders: 1}}},
		{"waiters do not stand in for visits", checker.VerdictInconclusive, "2 visits, 3 contenders (2 waiting) in the window of fault 0",
			report.Run{Faults: []report.FaultWindow{kill}}, []checker.WindowEvidence{{Visits: 2, Contenders: 3, Waiting: 2}}},
		{"visits after the heal do not count", checker.VerdictInconclusive, "0 visits, 0 contenders in the window of fault 0",
			report.Run{Faults: []report.FaultWindow{kill}}, nil},
		{"an instant fault spanned by one visit", checker.VerdictInconclusive, "1 visit, 1 contender in the window of fault 0 (restart redis-2 6.5s-6.6s, to a lease",
			report.Run{Faults: []report.FaultWindow{{Type: "restart", Target: "redis-2", StartS: 6.5, EndS: 6.6, VisitsAfter: 4}}}, []checker.WindowEvidence{{Visits: 1, Contenders: 1}}},
		{"resource error", checker.VerdictInconclusive, "resource-call errors",
			report.Run{Faults: []report.FaultWindow{kill}, Errors: map[string]int64{workload.ErrResource: 1}}, []checker.WindowEvidence{contended}},
		{"violation", checker.VerdictFailed, "violations: got 2",
			report.Run{Faults: []report.FaultWindow{kill}, SafetyFigures: checker.SafetyFigures{Violations: 2, Incidents: 1, ClientFaults: 1}}, nil},
		{"no faults, enough visits", checker.VerdictMet, "", report.Run{KeyClients: 2}, nil},
		{"no faults, one client per key", checker.VerdictInconclusive, "nobody contended", report.Run{KeyClients: 1}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := tt.run
			run.Lock, run.LockName, run.Complete, run.Visits = "redis-cad", "redis-cad", true, 50
			res := &report.Result{Runs: []report.Run{run}}
			evaluate(sc, res, map[int][]checker.WindowEvidence{0: tt.inWindow})
			got := res.Runs[0]
			if got.Verdict != tt.want || !strings.Contains(got.VerdictReason, tt.reason) || res.Verdict != tt.want {
				t.Errorf("verdict %q (%q), result %q; want %q containing %q", got.Verdict, got.VerdictReason, res.Verdict, tt.want, tt.reason)
			}
			if met := *got.ExpectMet; met != (tt.want == checker.VerdictMet) {
				t.Errorf("expect_met %v", met)
			}
		})
	}
}

// TestEvidenceWindow: a fault's evidence is counted from its start to one
// lease after its heal, never past the run's end.
func TestEvidenceWindow(t *testing.T) {
	run := &report.Run{TTLMs: 1000, DurationS: 10}
	tests := []struct {
		name       string
		f          report.FaultWindow
		start, end time.Duration
	}{
		{"healed", report.FaultWindow{StartS: 2, EndS: 4}, 2 * time.Second, 5 * time.Second},
		{"instant", report.FaultWindow{StartS: 6.5, EndS: 6.6}, 6500 * time.Millisecond, 7600 * time.Millisecond},
		{"near the end", report.FaultWindow{StartS: 8, EndS: 9.5}, 8 * time.Second, 10 * time.Second},
		{"end before start", report.FaultWindow{StartS: 3, EndS: 0}, 3 * time.Second, 4 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := evidenceWindow(run, tt.f)
			if w.Start != tt.start || w.End != tt.end {
				t.Errorf("window %v-%v, want %v-%v", w.Start, w.End, tt.start, tt.end)
			}
		})
	}
}

// TestEvaluateGates: gates read the run's figures; one not met fails the
// run with the figure in its reason, also in a run without faults.
func TestEvaluateGates(t *testing.T) {
	sc := &scenarios.Scenario{Expect: map[string]scenarios.Expect{
		"default":   {Throughput: ">=5000", AcquireP99Ms: "<=20"},
		"redis-cad": {HandoffP50Ms: "<=1"},
	}}
	run := report.Run{Lock: "redis-cad", LockName: "redis-cad", Complete: true, Visits: 100, Throughput: 3120.5,
		Acquire: report.Latency{Count: 10, P50Ms: 1, P99Ms: 12.5}}
	res := &report.Result{Runs: []report.Run{run}}
	evaluate(sc, res, nil)
	got := res.Runs[0]
	if got.Verdict != checker.VerdictFailed ||
		!strings.Contains(got.VerdictReason, "throughput 3120.5 ops/s, want >=5000") ||
		!strings.Contains(got.VerdictReason, "handoff_p50_ms not measured") ||
		strings.Contains(got.VerdictReason, "acquire_p99_ms") {
		t.Errorf("verdict %q (%q)", got.Verdict, got.VerdictReason)
	}
	byField := map[string]report.Expectation{}
	for _, e := range got.Expectations {
		byField[e.Field] = e
	}
	if e := byField["throughput"]; e.Got != 3121 || e.Want != ">=5000" || e.Verdict != checker.VerdictFailed {
		t.Errorf("throughput expectation %+v", e)
	}
	if e := byField["acquire_p99_ms"]; e.Got != 13 || e.Verdict != checker.VerdictMet {
		t.Errorf("acquire_p99_ms expectation %+v", e)
	}
}

// TestAvailabilityDuringFault: completions per second inside the union of
// the fault windows over completions per second before the first fault,
// from 100 ms buckets shared out at the windows' edges.
func TestAvailabilityDuringFault(t *testing.T) {
	timeline := func(perBucket ...int64) []report.TimelineBucket {
		var out []report.TimelineBucket
		for _, n := range perBucket {
			out = append(out, report.TimelineBucket{Completions: n})
		}
		return out
	}
	// 10 per bucket for 1 s, then 2 per bucket.
	tl := timeline(10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 10, 10)
	tests := []struct {
		name   string
		faults []report.FaultWindow
		want   float64 // -1: nil
	}{
		{"one window", []report.FaultWindow{{StartS: 1, EndS: 2}}, 0.2},
		{"overlapping windows count once", []report.FaultWindow{{StartS: 1, EndS: 1.6}, {StartS: 1.4, EndS: 2}}, 0.2},
		// half of bucket 10 before the fault, half inside it; half of bucket 19
		{"edges inside buckets", []report.FaultWindow{{StartS: 1.05, EndS: 1.95}}, (18 / 0.9) / (101 / 1.05)},
		{"disjoint windows", []report.FaultWindow{{StartS: 1, EndS: 1.5}, {StartS: 2, EndS: 2.2}}, (5*2 + 2*10) / 0.7 / 100},
		{"fault that did not apply is ignored", []report.FaultWindow{{StartS: 0.2, EndS: 0.2, Error: "never started"}, {StartS: 1, EndS: 2}}, 0.2},
		{"fault from the start", []report.FaultWindow{{StartS: 0, EndS: 2}}, -1},
		{"no fault", nil, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := &report.Run{TimelineBucketMs: 100, Timeline: tl, Faults: tt.faults, DurationS: 2.2}
			got := availabilityDuringFault(run)
			switch {
			case tt.want < 0 && got != nil:
				t.Errorf("got %v, want nil", *got)
			case tt.want >= 0 && (got == nil || math.Abs(*got-tt.want) > 1e-9):
				t.Errorf("got %s, want %v", fmtp(got), tt.want)
			}
		})
	}
	idle := &report.Run{TimelineBucketMs: 100, Timeline: timeline(0, 0, 5), Faults: []report.FaultWindow{{StartS: 0.2, EndS: 0.3}}}
	if got := availabilityDuringFault(idle); got != nil {
		t.Errorf("nothing completed before the fault: got %v, want nil", *got)
	}
	// 2 completions before the fault (one long critical section and a
	// hand-off): no baseline, not a ratio of 300x.
	few := &report.Run{TimelineBucketMs: 100, Timeline: timeline(1, 1, 50, 50), Faults: []report.FaultWindow{{StartS: 0.2, EndS: 0.4}}}
	if got := availabilityDuringFault(few); got != nil {
		t.Errorf("2 completions before the fault: got %v, want nil", *got)
	}
}

func fmtp(p *float64) string {
	if p == nil {
		return "nil"
	}
	return strconv.FormatFloat(*p, 'g', -1, 64)
}

// TestWindowEvidence: the run's visits in its fault windows come from the
// checker; a fault that did not apply adds nothing.
func TestWindowEvidence(t *testing.T) {
	ctx := context.Background()
	base := time.Now()
	res := checker.New(checker.FencingOff, base)
	var ids []uint64
	for c := range 3 {
		id, err := res.Enter(ctx, checker.Visit{Lock: "a", Client: c})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	// The visits entered at about 0 s and are still inside: moving the
	// origin a second back makes now read 1 s, so they span both windows.
	res.SetBase(base.Add(-time.Second))
	out := &report.Run{Faults: []report.FaultWindow{
		{Type: "kill", Target: "redis-0", StartS: 0.1, EndS: 0.2},
		{Type: "kill", Target: "redis-1", StartS: 0.1, EndS: 0.2, Error: "no such node"},
	}}
	each := windowEvidence(out, res)
	if len(each) != 2 || each[0] != (checker.WindowEvidence{Visits: 3, Contenders: 3}) || each[1] != (checker.WindowEvidence{}) {
		t.Errorf("per fault %+v", each)
	}
	if out.VisitsInWindow != 3 || out.ContendersInWindow != 3 {
		t.Errorf("visits_in_window %d, contenders_in_window %d; want 3 and 3", out.VisitsInWindow, out.ContendersInWindow)
	}
	for _, id := range ids {
		if err := res.Exit(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
}
