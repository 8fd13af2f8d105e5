package scenarios

import (
	"strings"
	"testing"

	"github.com/locklab/locklab/checker"
)

func TestVerdictFields(t *testing.T) {
	s := mustParse(t, `name: t
cluster: {redis: {primaries: 1}}
locks: [redis-cad]
workload: {on_lost: abort}
expect:
  default: {violations: 0, lock_faults: 0, client_faults: ">0", incidents: "<=2", duplicate_tokens: 0, token_regressions: 0, min_visits: 5}
`)
	if s.Workload.OnLost != "abort" {
		t.Errorf("on_lost = %q", s.Workload.OnLost)
	}
	e, ok := s.ExpectFor(Lock{Name: "redis-cad"})
	if !ok || e.LockFaults != "0" || e.ClientFaults != ">0" || e.Incidents != "<=2" || e.MinVisits != 5 || e.TokenRegressions != "0" {
		t.Fatalf("expect %+v", e)
	}
	// enough evidence: judged as usual
	checks := e.Evaluate(Counts{SafetyFigures: checker.SafetyFigures{ClientFaults: 1, Incidents: 1, Violations: 1}}, "")
	if v := Verdict(checks); v != checker.VerdictFailed {
		t.Errorf("verdict %s, want failed (violations 1): %+v", v, checks)
	}
	// no evidence: zero safety counts are inconclusive, a non-zero one is judged
	checks = e.Evaluate(Counts{}, "fault 0 did not apply")
	for _, c := range checks {
		if c.Verdict != checker.VerdictInconclusive || !strings.Contains(c.Reason, "did not apply") {
			t.Errorf("check %+v: want inconclusive with the reason", c)
		}
	}
	if v := Verdict(checks); v != checker.VerdictInconclusive {
		t.Errorf("verdict %s, want inconclusive", v)
	}
	if v := Verdict(e.Evaluate(Counts{SafetyFigures: checker.SafetyFigures{Violations: 3, ClientFaults: 1, Incidents: 1}}, "too few visits")); v != checker.VerdictFailed {
		t.Errorf("verdict %s, want failed: non-zero violations are evidence", v)
	}
	if v := Verdict(e.Evaluate(Counts{SafetyFigures: checker.SafetyFigures{ClientFaults: 2, Incidents: 2}}, "")); v != checker.VerdictMet {
		t.Errorf("verdict %s, want met", v)
	}
	for _, bad := range []string{"{on_lost: maybe}", "{lock_faults: x}"} {
		src := "name: t\ncluster: {redis: {primaries: 1}}\nlocks: [redis-cad]\n"
		if strings.Contains(bad, "on_lost") {
			src += "workload: " + bad + "\n"
		} else {
			src += "expect:\n  default: " + bad + "\n"
		}
		if _, err := Parse("x.yaml", []byte(src)); err == nil || !strings.Contains(err.Error(), "x.yaml:") {
			t.Errorf("%s: error %v, want one naming the file and line", bad, err)
		}
	}
	if _, err := Parse("x.yaml", []byte("name: t\ncluster: {redis: {primaries: 1}}\nlocks: [redis-cad]\nexpect:\n  default: {min_visits: -1}\n")); err == nil {
		t.Error("min_visits: -1 accepted")
	}
}

// TestExpectZeroTokens: zero_tokens is a condition like duplicate_tokens:
// grants without a token from a fencing lock fail "0", and a 0 with no
// evidence is inconclusive; a bad value names the file and line.
func TestExpectZeroTokens(t *testing.T) {
	s := mustParse(t, "name: t\ncluster: {redis: {primaries: 1}}\nlocks: [redis-cad]\nexpect:\n  default: {zero_tokens: 0}\n")
	e, ok := s.ExpectFor(Lock{Name: "redis-cad"})
	if !ok || e.ZeroTokens != "0" {
		t.Fatalf("expect %+v", e)
	}
	checks := e.Evaluate(Counts{SafetyFigures: checker.SafetyFigures{ZeroTokens: 3}}, "")
	if len(checks) != 1 || checks[0].Verdict != checker.VerdictFailed || checks[0].Line() != "zero_tokens: got 3, want 0" {
		t.Errorf("checks %+v, want zero_tokens failed: got 3, want 0", checks)
	}
	if v := Verdict(e.Evaluate(Counts{}, "fault 0 did not apply")); v != checker.VerdictInconclusive {
		t.Errorf("verdict %s without evidence, want inconclusive", v)
	}
	_, err := Parse("x.yaml", []byte("name: t\ncluster: {redis: {primaries: 1}}\nlocks: [redis-cad]\nexpect:\n  default: {zero_tokens: many}\n"))
	if err == nil || !strings.Contains(err.Error(), "x.yaml:5") || !strings.Contains(err.Error(), "zero_tokens") {
		t.Errorf("zero_tokens: many: error %v, want one naming x.yaml:5 and the field", err)
	}
}
