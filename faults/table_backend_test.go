package faults

import (
	"context"
	"strings"
	"testing"

	"github.com/locklab/locklab/cluster"
)

// A row of the backend table for this test only: three members, a leader
// selector, pause and kill acting on them.
func init() {
	cluster.RegisterBackend(cluster.TableBackend{
		Name: "faketable", Leader: "faketable-leader", Faults: []string{Pause, Kill},
		Kinds: []cluster.TableKind{{Kind: "faketable", Pattern: "faketable-N"}},
		Plan: func(cluster.Settings) ([]cluster.PlanNode, []cluster.PlanLink) {
			return []cluster.PlanNode{{Name: "faketable-0", Kind: "faketable"}, {Name: "faketable-1", Kind: "faketable"},
				{Name: "faketable-2", Kind: "faketable"}}, nil
		},
		Build: func(*cluster.Build) (cluster.Started, error) {
			return cluster.Started{Start: func(context.Context) error { return nil }}, nil
		},
	})
}

// TestTableBackendFaults: the table's rows decide which server faults act
// on their nodes, and a row's leader selector is a node name like
// zk-leader.
func TestTableBackendFaults(t *testing.T) {
	plan := cluster.PlanOf(cluster.Spec{Clients: 2, Backends: map[string]cluster.Settings{"faketable": {}}})
	for _, tc := range []struct {
		f    Fault
		want string // "" valid, else part of the error
	}{
		{Fault{Type: Kill, Node: "faketable-1"}, ""},
		{Fault{Type: Pause, Node: "faketable-leader", For: 1}, ""},
		{Fault{Type: Partition, Isolate: "faketable-leader", For: 1}, ""},
		{Fault{Type: Restart, Node: "faketable-1"}, "a restart fault acts on"},
		{Fault{Type: Failover, Node: "faketable-0"}, "is not one of"},
	} {
		err := Check(plan, false, []Fault{tc.f})
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s on %s%s: %v", tc.f.Type, tc.f.Node, tc.f.Isolate, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s on %s: %v, want an error containing %q", tc.f.Type, tc.f.Node, err, tc.want)
		}
	}
}
