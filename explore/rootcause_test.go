package explore

import (
	"slices"
	"testing"
)

// TestRootCauses: findings that shrank to the same minimal fault types
// are one root cause with their signatures as variants, a subsumed one
// joins the finding that subsumed it, and an unshrunk one stands alone
// and is counted, as does one whose shrinking the budget stopped (with
// the fault types of its last step kept, marked stopped); lock faults
// come before client faults.
func TestRootCauses(t *testing.T) {
	fs := []*Finding{
		{Signature: "redlock--client-fault--pause-client", Lock: "redlock", Broke: ClientFault, FaultTypes: []string{"pause-client"},
			Runs: []int{1}, FirstAtS: 10, Shrink: "done", Minimal: "min/a.yaml", MinimalTypes: []string{"pause-client"}, Rate: 1, Tries: 5, Reproduced: 5},
		{Signature: "redlock--client-fault--latency+pause-client", Lock: "redlock", Broke: ClientFault, FaultTypes: []string{"latency", "pause-client"},
			Runs: []int{2, 3}, FirstAtS: 5, Shrink: "subsumed", Minimal: "min/a.yaml", MinimalTypes: []string{"pause-client"}, Rate: 1},
		{Signature: "redlock--client-fault--pause-client+reset", Lock: "redlock", Broke: ClientFault, FaultTypes: []string{"pause-client", "reset"},
			Runs: []int{4}, FirstAtS: 20, Shrink: "done", Minimal: "min/b.yaml", MinimalTypes: []string{"pause-client"}, Rate: 0.6},
		{Signature: "redlock--lock-fault--clock-jump+reset", Lock: "redlock", Broke: LockFault, FaultTypes: []string{"clock-jump", "reset"},
			Runs: []int{7}, FirstAtS: 30},
		{Signature: "redlock--client-fault--latency+pause-client+reset", Lock: "redlock", Broke: ClientFault, FaultTypes: []string{"latency", "pause-client", "reset"},
			Runs: []int{8}, FirstAtS: 40, Shrink: "stopped", Minimal: "min/c.yaml", MinimalTypes: []string{"pause-client"}},
	}
	cs := RootCauses(fs)
	if len(cs) != 3 {
		t.Fatalf("%d root causes, want 2: %+v", len(cs), cs)
	}
	if c := cs[0]; c.Name() != "redlock--lock-fault--clock-jump+reset" || c.Shrunk || c.Minimal != "" {
		t.Errorf("first root cause %+v, want the unshrunk lock fault", c)
	}
	c := cs[1]
	if c.Name() != "redlock--client-fault--pause-client" || !c.Shrunk || c.Minimal != "min/a.yaml" || c.Runs != 4 || c.FirstAtS != 5 {
		t.Errorf("second root cause %+v, want pause-client with min/a.yaml (the best rate), 4 runs, first at 5 s", c)
	}
	if !slices.Equal(c.Variants, []string{fs[0].Signature, fs[1].Signature, fs[2].Signature}) {
		t.Errorf("variants %v", c.Variants)
	}
	if c := cs[2]; c.Name() != "redlock--client-fault--pause-client" || c.Shrunk || !c.Stopped || c.Minimal != "min/c.yaml" || len(c.Variants) != 1 {
		t.Errorf("third root cause %+v, want the stopped pause-client one, apart, with min/c.yaml", c)
	}
	if n := unshrunk(fs); n != 2 {
		t.Errorf("unshrunk %d, want 2", n)
	}
}
