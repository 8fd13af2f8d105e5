package scenarios

import (
	"strings"
	"testing"

	"github.com/locklab/locklab/checker"
)

func TestRealCondition(t *testing.T) {
	tests := []struct {
		in, canon string
		hold, no  []float64
	}{
		{">=5000", ">=5000", []float64{5000, 5000.1}, []float64{4999.9}},
		{"<= 20", "<=20", []float64{0, 20}, []float64{20.01}},
		{">0.5", ">0.5", []float64{0.51, 1}, []float64{0.5, 0}},
		{"==0", "0", []float64{0}, []float64{0.001}},
		{"0.25", "0.25", []float64{0.25}, []float64{0.2}},
		{"<1.0", "<1", []float64{0.99}, []float64{1}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			c, err := ParseRealCondition(tt.in)
			if err != nil {
				t.Fatalf("ParseRealCondition(%q): %v", tt.in, err)
			}
			if c.String() != tt.canon {
				t.Errorf("String() = %q, want %q", c, tt.canon)
			}
			for _, v := range tt.hold {
				if !c.CheckReal(v) {
					t.Errorf("CheckReal(%g) = false", v)
				}
			}
			for _, v := range tt.no {
				if c.CheckReal(v) {
					t.Errorf("CheckReal(%g) = true", v)
				}
			}
		})
	}
	for _, bad := range []string{"", ">= fast", "-1", "<0", "1e3", "inf", "NaN", ".5", "5.", ">+2", "!=3", "0x10"} {
		if _, err := ParseRealCondition(bad); err == nil {
			t.Errorf("ParseRealCondition(%q) succeeded", bad)
		}
	}
	// Counts stay whole numbers.
	if _, err := ParseCondition("0.5"); err == nil {
		t.Error(`ParseCondition("0.5") succeeded: counts are whole`)
	}
}

const gateHead = "name: t\ncluster: {redis: {primaries: 1}}\nlocks: [redis-cad]\n"

// TestGatesParse: the performance gates parse beside the counts, per lock
// or default; bad values name file, line and field and say what is allowed.
func TestGatesParse(t *testing.T) {
	s := mustParse(t, gateHead+`faults: [{type: pause, at: 1s, for: 1s, node: redis-0}]
expect:
  default: {violations: 0, throughput: ">= 5000", acquire_p50_ms: "<=20", acquire_p99_ms: "<100.5", handoff_p50_ms: "<=2", availability_during_fault: ">0.5"}
  redis-cad: {throughput: ">=100"}
`)
	e, ok := s.ExpectFor(s.Locks[0])
	if !ok || e.Violations != "0" || e.Throughput != ">=100" || e.AcquireP50Ms != "<=20" || e.AcquireP99Ms != "<100.5" ||
		e.HandoffP50Ms != "<=2" || e.AvailabilityDuringFault != ">0.5" {
		t.Fatalf("expect %+v", e)
	}
	tests := []struct{ expect, want string }{
		{`{throughput: ">= fast"}`, `x.yaml:6: expect.default.throughput: ">= fast" is not a condition (use N, ">N", ">=N", "<N", "<=N" or "==N")`},
		{`{acquire_p99_ms: "<0"}`, `x.yaml:6: expect.default.acquire_p99_ms: "<0" can never hold`},
		{`{availability_during_fault: ">=1.5"}`, `x.yaml:6: expect.default.availability_during_fault: >=1.5: availability is a fraction, N within 0..1`},
		{`{violations: "0.5"}`, `x.yaml:6: expect.default.violations: "0.5" is not a condition (use 0, N,`},
		{`{handoff_p50_ms: [1]}`, `x.yaml:6: expect.default.handoff_p50_ms: must be a condition`},
	}
	for _, tt := range tests {
		t.Run(tt.expect, func(t *testing.T) {
			_, err := Parse("x.yaml", []byte(gateHead+"faults: [{type: pause, at: 1s, for: 1s, node: redis-0}]\nexpect:\n  default: "+tt.expect+"\n"))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
	_, err := Parse("x.yaml", []byte(gateHead+"expect:\n  default: {availability_during_fault: \">0.5\"}\n"))
	if err == nil || !strings.Contains(err.Error(), "x.yaml:5: expect.default.availability_during_fault: the scenario has no faults") {
		t.Errorf("availability without faults: error %v", err)
	}
}

// TestGatesEvaluate: a gate not met fails the run with the figure in the
// reason; gates are judged even when the safety claims have no evidence;
// a figure the run did not measure fails its gate.
func TestGatesEvaluate(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	e := Expect{Violations: "0", Throughput: ">=5000", AcquireP50Ms: "<=20", HandoffP50Ms: "<=2", AvailabilityDuringFault: ">0.5"}
	good := Counts{Throughput: f(6000), AcquireP50Ms: f(3.2), HandoffP50Ms: f(1.5), AvailabilityDuringFault: f(0.8)}
	tests := []struct {
		name       string
		c          Counts
		noEvidence string
		verdict    string
		reasons    []string
	}{
		{"all met", good, "", checker.VerdictMet, nil},
		{"slow", Counts{Throughput: f(3120.5), AcquireP50Ms: f(25), HandoffP50Ms: f(1), AvailabilityDuringFault: f(0.5)}, "", checker.VerdictFailed,
			[]string{"throughput 3120.5 ops/s, want >=5000", "acquire_p50_ms 25 ms, want <=20", "availability_during_fault 0.5, want >0.5"}},
		{"gates met, claim without evidence", good, "0 visits by 0 clients in the window of fault 0", checker.VerdictInconclusive,
			[]string{"0 visits by 0 clients in the window of fault 0"}},
		{"gate failed beats no evidence", Counts{Throughput: f(10), AcquireP50Ms: f(1), HandoffP50Ms: f(1), AvailabilityDuringFault: f(1)}, "no fault", checker.VerdictFailed,
			[]string{"throughput 10 ops/s, want >=5000", "no fault"}},
		{"not measured", Counts{Throughput: f(6000), AcquireP50Ms: f(1)}, "", checker.VerdictFailed,
			[]string{"handoff_p50_ms not measured (no hand-off", "availability_during_fault not measured"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checks := e.Evaluate(tt.c, tt.noEvidence)
			if len(checks) != 5 {
				t.Fatalf("%d checks, want 5: %+v", len(checks), checks)
			}
			if v := Verdict(checks); v != tt.verdict {
				t.Errorf("verdict %s, want %s: %+v", v, tt.verdict, checks)
			}
			var lines []string
			for _, c := range checks {
				if c.Verdict != checker.VerdictMet {
					lines = append(lines, c.Line())
				}
				if IsGate(c.Field) && c.Verdict == checker.VerdictInconclusive {
					t.Errorf("gate %s inconclusive", c.Field)
				}
			}
			all := strings.Join(lines, "; ")
			for _, r := range tt.reasons {
				if !strings.Contains(all, r) {
					t.Errorf("reasons %q, want one containing %q", all, r)
				}
			}
			if tt.reasons == nil && all != "" {
				t.Errorf("reasons %q, want none", all)
			}
		})
	}
	// The counts' own verdicts are unchanged by the gates.
	if got := (Expect{Violations: "0"}).Unmet(Counts{SafetyFigures: checker.SafetyFigures{Violations: 2}}); len(got) != 1 || got[0] != "violations: got 2, want 0" {
		t.Errorf("Unmet = %q", got)
	}
	if got := (Expect{Throughput: ">=5000"}).Unmet(Counts{Throughput: f(3120.5)}); len(got) != 1 || got[0] != "throughput 3120.5 ops/s, want >=5000" {
		t.Errorf("Unmet = %q", got)
	}
}
