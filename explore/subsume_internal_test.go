package explore

import "testing"

// TestSubsumeRest: a finding the budget left unshrunk joins a shrunk
// finding of the same lock and breakage whose minimal fault types are all
// among its own, with no run; one with another lock, another breakage, a
// fault type set that lacks the minimal ones, or whose candidate only
// reproduced rarely stays unshrunk.
func TestSubsumeRest(t *testing.T) {
	done := &Finding{Signature: "redis-cad--lock-fault--clock-jump+pause", Lock: "redis-cad", Broke: "lock-fault",
		FaultTypes: []string{"clock-jump", "pause"}, Shrink: "done", Minimal: "findings/a/minimal.yaml", MinimalTypes: []string{"clock-jump"}, Reproduced: 5, Tries: 5, Rate: 1}
	rare := &Finding{Signature: "redis-cad--client-fault--pause", Lock: "redis-cad", Broke: "client-fault",
		FaultTypes: []string{"pause"}, Shrink: "rare", Minimal: "findings/b/minimal.yaml", MinimalTypes: []string{"pause"}, Reproduced: 1, Tries: 5}
	joins := &Finding{Signature: "redis-cad--lock-fault--clock-jump+reset", Lock: "redis-cad", Broke: "lock-fault", FaultTypes: []string{"clock-jump", "reset"}}
	lacks := &Finding{Signature: "redis-cad--lock-fault--reset", Lock: "redis-cad", Broke: "lock-fault", FaultTypes: []string{"reset"}}
	other := &Finding{Signature: "redlock--lock-fault--clock-jump", Lock: "redlock", Broke: "lock-fault", FaultTypes: []string{"clock-jump"}}
	broke := &Finding{Signature: "redis-cad--lost-update--clock-jump", Lock: "redis-cad", Broke: "lost-update", FaultTypes: []string{"clock-jump"}}
	onRare := &Finding{Signature: "redis-cad--client-fault--pause+reset", Lock: "redis-cad", Broke: "client-fault", FaultTypes: []string{"pause", "reset"}}
	cut := &Finding{Signature: "redis-cad--lock-fault--clock-jump+latency", Lock: "redis-cad", Broke: "lock-fault", FaultTypes: []string{"clock-jump", "latency"},
		Shrink: "stopped", Minimal: "findings/c/minimal.yaml", MinimalTypes: []string{"clock-jump", "latency"}}
	x := &explorer{e: &Explore{Findings: []*Finding{done, rare, joins, lacks, other, broke, onRare, cut}}}
	if got := unshrunk(x.e.Findings); got != 6 {
		t.Errorf("before: unshrunk = %d, want 6 (a stopped shrinking counts)", got)
	}
	x.subsumeRest()
	if cut.Shrink != "subsumed" || cut.Minimal != done.Minimal {
		t.Errorf("stopped clock-jump+latency: shrink %q, minimal %q; want subsumed by %s", cut.Shrink, cut.Minimal, done.Signature)
	}
	if joins.Shrink != "subsumed" || joins.Minimal != done.Minimal || len(joins.MinimalTypes) != 1 || joins.Rate != 1 {
		t.Errorf("clock-jump+reset: shrink %q, minimal %q %v, rate %v; want subsumed by %s", joins.Shrink, joins.Minimal, joins.MinimalTypes, joins.Rate, done.Signature)
	}
	for _, f := range []*Finding{lacks, other, broke, onRare} {
		if f.Shrink != "" || f.Minimal != "" {
			t.Errorf("%s: shrink %q, minimal %q; want left unshrunk", f.Signature, f.Shrink, f.Minimal)
		}
	}
	causes := RootCauses(x.e.Findings)
	for _, c := range causes {
		if c.Name() == "redis-cad--lock-fault--clock-jump" && len(c.Variants) != 3 {
			t.Errorf("root cause %s has variants %v, want the shrunk finding and the two it subsumed", c.Name(), c.Variants)
		}
	}
	if got := unshrunk(x.e.Findings); got != 4 {
		t.Errorf("unshrunk = %d, want 4", got)
	}
}
