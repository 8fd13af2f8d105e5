package faults

import (
	"testing"

	"github.com/locklab/locklab/cluster"
	_ "github.com/locklab/locklab/cluster/backends/all" // the backend table's rows
)

// TestNATSLeaderSelector: a table row's leader selector (nats-leader)
// names a node of its backend, stays in a plan that has that backend, and
// is dropped from one that has not.
func TestNATSLeaderSelector(t *testing.T) {
	if k := leaderKinds()["nats-leader"]; k != "nats" {
		t.Fatalf("nats-leader names kind %q, want nats (selectors %v)", k, leaderNames())
	}
	if err := Check(natsPlanOf(), false, []Fault{{Type: Partition, Isolate: "nats-leader", For: 1}}); err != nil {
		t.Errorf("partition isolating nats-leader: %v", err)
	}
	natsPlan := natsPlanOf()
	zkPlan := cluster.PlanOf(cluster.Spec{Backends: map[string]cluster.Settings{"zookeeper": {"nodes": 3}}, Clients: 2})
	f := Fault{Type: "partition", Isolate: "nats-leader"}
	if n := Narrow(f, natsPlan); len(n.Dropped) != 0 || n.NotApplicable != "" {
		t.Errorf("on a nats plan: dropped %v, not applicable %q", n.Dropped, n.NotApplicable)
	}
	if n := Narrow(f, zkPlan); len(n.Dropped) != 1 || n.NotApplicable == "" {
		t.Errorf("on a zookeeper plan: dropped %v, not applicable %q; want nats-leader dropped", n.Dropped, n.NotApplicable)
	}
	a := leaderChoice{"nats-leader": "nats-2"}
	got := withLeaders(f, a, nil)
	if got.Isolate != "nats-2" {
		t.Errorf("isolate resolves to %q, want nats-2", got.Isolate)
	}
}

func natsPlanOf() cluster.Plan {
	return cluster.PlanOf(cluster.Spec{Clients: 2, Backends: map[string]cluster.Settings{"nats": {"nodes": 3}}})
}
