package cli

import (
	"strings"
	"testing"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/report"
)

// TestMatrixVocabulary: the matrix speaks result.json's words, met /
// failed / inconclusive, and returns the overall verdict.
func TestMatrixVocabulary(t *testing.T) {
	no := false
	tests := []struct {
		name string
		runs []report.Run
		want string
		cell string
	}{
		{"met", []report.Run{{Lock: "redis-cad", Verdict: checker.VerdictMet}}, checker.VerdictMet, "met 1/1"},
		{"failed", []report.Run{{Lock: "redis-cad", Verdict: checker.VerdictMet}, {Lock: "redis-cad", ExpectMet: &no}}, checker.VerdictFailed, "failed 1/2"},
		{"inconclusive", []report.Run{{Lock: "redis-cad", Verdict: checker.VerdictInconclusive, VerdictReason: "0 visits after fault 0"}}, checker.VerdictInconclusive, "inconclusive 0/1"},
		{"run error", []report.Run{{Lock: "redis-cad", Error: "start cluster: boom"}}, checker.VerdictFailed, "failed 0/1"},
		// A run no expectation applies to is never "met".
		{"not judged beside met", []report.Run{{Lock: "redis-cad", Verdict: checker.VerdictMet}, {Lock: "mine"}}, checker.VerdictMet, "not judged 0/1"},
		{"nothing judged", []report.Run{{Lock: "mine"}}, "", "not judged 0/1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var sb strings.Builder
			got := Matrix(&sb, []*report.Result{{Scenario: "s", Runs: tt.runs}})
			out := sb.String()
			if got != tt.want {
				t.Errorf("verdict %q, want %q", got, tt.want)
			}
			line := "verdict: " + tt.want
			if tt.want == "" {
				line = "verdict: none"
			}
			if !strings.Contains(out, tt.cell) || !strings.Contains(out, line) {
				t.Errorf("matrix lacks %q or %q:\n%s", tt.cell, line, out)
			}
			for _, old := range []string{"PASS", "FAIL", "INCONCLUSIVE"} {
				if strings.Contains(out, old) {
					t.Errorf("matrix still says %s:\n%s", old, out)
				}
			}
		})
	}
}

// TestMatrixAnswers: a broken and a correct program can both fail their
// expectations (and exit 1), but the answer line before the verdict
// tells them apart: the check-then-set program broke before any fault,
// the correct one only let a paused holder outlive its lease.
func TestMatrixAnswers(t *testing.T) {
	no := false
	bit := true
	pause := []report.FaultWindow{{Type: "pause-client", Target: "client-1", StartS: 2, EndS: 3, Bit: &bit}}
	run := func(lock string, start float64, class string) report.Run {
		r := report.Run{Lock: lock, TTLMs: 500, Faults: pause, ExpectMet: &no, Verdict: checker.VerdictFailed,
			IncidentEvents: []report.IncidentEvent{{Lock: "lock-0", StartS: start, EndS: start + 0.01, Clients: []int{0, 1}, Pairs: 1, Fault: class}}}
		r.Incidents, r.Violations = 1, 1
		if class == "lock" {
			r.LockFaults = 1
		} else {
			r.ClientFaults = 1
		}
		return r
	}
	for _, tt := range []struct {
		run  report.Run
		want string
	}{
		{run("checkset", 0.008, "lock"), "answer: broken without faults: 1 lock fault without any fault, the first at 0.008 s (first fault at 2 s)\nverdict: failed"},
		{run("redis-cad", 2.6, "client"), "answer: unsafe without fencing: 1 client fault under pause-client client-1"},
		{run("redlock", 2.1, "lock"), "answer: broken by a fault (lock fault): 1 lock fault under pause-client client-1"},
	} {
		var sb strings.Builder
		if got := Matrix(&sb, []*report.Result{{Scenario: "pause", Runs: []report.Run{tt.run}}}); got != checker.VerdictFailed {
			t.Errorf("%s: verdict %q, want failed (the exit code follows the expectations)", tt.run.Lock, got)
		}
		if !strings.Contains(sb.String(), tt.want) {
			t.Errorf("%s: matrix lacks %q:\n%s", tt.run.Lock, tt.want, sb.String())
		}
	}
}
