package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locklab/locklab/checker"
)

// incidents builds a run's incident figures the way runner's verdictFields
// does: one incident_events entry per incident, lock_faults and
// client_faults counting them by class, violations by pairs.
func incidents(run *Run, evs ...IncidentEvent) *Run {
	for _, e := range evs {
		e.Lock, e.Clients, e.Pairs = "lock-0", []int{0, 1}, 1
		if e.EndS == 0 {
			e.EndS = e.StartS + 0.01
		}
		run.IncidentEvents = append(run.IncidentEvents, e)
		run.Incidents++
		run.Violations++
		if e.Fault == "lock" {
			run.LockFaults++
		} else {
			run.ClientFaults++
		}
	}
	return run
}

// TestBlame: an incident is blamed on a fault only when it started within
// the fault's window extended by a lease (or to the end of its exposure);
// anything else happened without any fault, and the first line says so.
func TestBlame(t *testing.T) {
	pause := FaultWindow{Type: "pause-client", Target: "client-1", StartS: 2, EndS: 3, Bit: ptr(true),
		Exposed: ptr(true), ExposureMs: 640, ContendersInExposure: 12}
	// A restart whose lost key stayed exposed past a lease after the
	// heal: the holder's promise (renewed) still ran.
	restart := FaultWindow{Type: "restart", Target: "redis-0", StartS: 1.5, EndS: 1.53, Bit: ptr(true),
		LostAtS: ptr(1.56), Exposed: ptr(true), ExposureMs: 900, ContendersInExposure: 40}
	failed := FaultWindow{Type: "kill", Target: "redis-0", StartS: 1, EndS: 1, Error: "kill: no such process"}
	base := func(fs ...FaultWindow) *Run {
		return &Run{Lock: "checkset", TTLMs: 500, DurationS: 6, Clients: 3, Faults: fs}
	}
	tests := []struct {
		name     string
		run      *Run
		answer   string
		headline string
		free     int
	}{
		{"check-then-set: overlaps from the start, a pause at 2 s",
			incidents(base(pause), IncidentEvent{StartS: 0.008, Fault: "lock"}, IncidentEvent{StartS: 0.9, Fault: "lock"},
				IncidentEvent{StartS: 2.2, Fault: "lock"}, IncidentEvent{StartS: 4.1, Fault: "lock"}),
			BrokenWithoutFaults, "broken without faults: 3 lock faults without any fault, the first at 0.008 s (first fault at 2 s); 1 more incident during pause-client client-1", 3},
		{"a lock fault a lease after the heal is not the pause's",
			incidents(base(pause), IncidentEvent{StartS: 3.6, Fault: "lock"}),
			BrokenWithoutFaults, "1 lock fault without any fault, the first at 3.600 s", 1},
		{"a lock fault within a lease of the heal is the fault's",
			incidents(base(pause), IncidentEvent{StartS: 3.4, Fault: "lock"}),
			BrokenByFault, "broken by a fault (lock fault): 1 lock fault under pause-client client-1", 0},
		{"a lock fault in the exposure, past a lease after the heal",
			incidents(base(restart), IncidentEvent{StartS: 2.3, Fault: "lock"}),
			BrokenByFault, "1 lock fault under restart redis-0", 0},
		{"after the exposure, past a lease: without any fault",
			incidents(base(restart), IncidentEvent{StartS: 2.5, Fault: "lock"}),
			BrokenWithoutFaults, "1 lock fault without any fault", 1},
		{"a fault that failed is blamed for nothing",
			incidents(base(failed), IncidentEvent{StartS: 1.1, Fault: "lock"}),
			BrokenWithoutFaults, "(no fault in this run)", 1},
		{"a fault seen not to bite is blamed for nothing",
			incidents(base(FaultWindow{Type: "pause-client", Target: "client-0", StartS: 2, EndS: 3, Bit: ptr(false)}), IncidentEvent{StartS: 2.1, Fault: "client"}),
			BrokenWithoutFaults, "1 client fault without any fault", 1},
		{"no fault at all",
			incidents(base(), IncidentEvent{StartS: 0.3, Fault: "lock"}),
			BrokenWithoutFaults, "1 lock fault without any fault, the first at 0.300 s (no fault in this run)", 1},
		{"only client faults under the pause",
			incidents(base(pause), IncidentEvent{StartS: 2.6, Fault: "client"}, IncidentEvent{StartS: 2.9, Fault: "client"}),
			UnsafeNoFencing, "unsafe without fencing: 2 client faults under pause-client client-1", 0},
		{"a lock fault and a client fault under faults",
			incidents(base(pause, restart), IncidentEvent{StartS: 1.7, Fault: "lock"}, IncidentEvent{StartS: 2.6, Fault: "client"}),
			BrokenByFault, "1 lock fault under restart redis-0", 0},
		{"a fencing lock without tokens, no fault",
			&Run{Fences: true, TTLMs: 500, SafetyFigures: checker.SafetyFigures{ZeroTokens: 4}},
			BrokenWithoutFaults, "the fencing source broke (4 grants without a token) in a run without faults", 0},
		{"duplicate tokens under a failover",
			&Run{Fences: true, TTLMs: 500, Faults: []FaultWindow{restart}, SafetyFigures: checker.SafetyFigures{DuplicateTokens: 2}},
			BrokenByFault, "the fencing source broke (2 duplicate tokens) under restart", 0},
		{"safe under the pause", base(pause), AnswerSafe, "safe: no incident under pause-client", 0},
		{"safe without faults", base(), AnswerSafe, "safe: no incident (no fault in this run)", 0},
		{"no evidence", &Run{Faults: []FaultWindow{pause}, Verdict: checker.VerdictInconclusive}, AnswerInconclusive, "inconclusive: no incident", 0},
		{"an older result without incident_events keeps blaming its faults",
			&Run{TTLMs: 500, Faults: []FaultWindow{pause}, SafetyFigures: checker.SafetyFigures{Incidents: 2, LockFaults: 2, Violations: 2}},
			BrokenByFault, "2 lock faults under pause-client", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Answer(tt.run); got != tt.answer {
				t.Errorf("Answer = %q, want %q", got, tt.answer)
			}
			if got := Headline(tt.run); !strings.HasPrefix(got, tt.answer+": ") || !strings.Contains(got, tt.headline) {
				t.Errorf("Headline = %q, want it to start with %q and contain %q", got, tt.answer, tt.headline)
			}
			if got := BlameOf(tt.run).Free(); got != tt.free {
				t.Errorf("incidents without any fault = %d, want %d", got, tt.free)
			}
			// The reading never blames a fault for what happened without one.
			if tt.free > 0 && !strings.HasPrefix(Reading(tt.run), BrokenWithoutFaults) {
				t.Errorf("Reading = %q, want it to open with %q", Reading(tt.run), BrokenWithoutFaults)
			}
		})
	}
}

// TestResultHeadline: report.md opens with the worst answer over the runs
// and the run it comes from; the check-then-set program's report no longer
// says its lock faults happened under the pause.
func TestResultHeadline(t *testing.T) {
	pause := FaultWindow{Type: "pause-client", Target: "client-1", StartS: 2, EndS: 3, Bit: ptr(true)}
	broken := incidents(&Run{Lock: "checkset", TTLMs: 500, Faults: []FaultWindow{pause}},
		IncidentEvent{StartS: 0.008, Fault: "lock"}, IncidentEvent{StartS: 2.1, Fault: "lock"})
	correct := incidents(&Run{Lock: "redis-cad", TTLMs: 500, Faults: []FaultWindow{pause}},
		IncidentEvent{StartS: 2.6, Fault: "client"})
	r := &Result{Schema: Schema, Scenario: "pause", Runs: []Run{*correct, *broken}}
	got := ResultHeadline(r)
	want := "broken without faults (1 of 2 runs): checkset: 1 lock fault without any fault, the first at 0.008 s"
	if !strings.HasPrefix(got, want) {
		t.Errorf("ResultHeadline = %q, want it to start with %q", got, want)
	}
	r.Runs = r.Runs[:1]
	if got := ResultHeadline(r); !strings.HasPrefix(got, "unsafe without fencing: 1 client fault under pause-client client-1") {
		t.Errorf("ResultHeadline of the correct program = %q", got)
	}
	dir := outDir(t, "blame")
	r.Runs = []Run{*broken}
	if err := Render(dir, r); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	md := string(data)
	first := strings.Index(md, "> **Answer: broken without faults: 1 lock fault without any fault")
	if first < 0 || first > strings.Index(md, "## Summary") {
		t.Errorf("report.md does not open with the answer:\n%s", md[:min(len(md), 800)])
	}
	if strings.Contains(md, "lock fault under pause") || strings.Contains(md, "lock faults under pause") {
		t.Errorf("report.md still blames the pause for the lock faults")
	}
}
