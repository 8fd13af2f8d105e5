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
