package faults

import (
	"reflect"
	"testing"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/backends/etcd"
)

func TestNarrow(t *testing.T) {
	zk := cluster.PlanOf(cluster.Spec{Backends: map[string]cluster.Settings{"zookeeper": {"nodes": 3}}, Clients: 3})
	part := Fault{Type: "partition", Groups: [][]string{{"holder"}, {"zk-0", "zk-1", "zk-2", "etcd-0", "etcd-1", "etcd-2"}}}
	for _, tc := range []struct {
		name    string
		f       Fault
		groups  [][]string
		dropped []string
		na      bool
	}{
		{"partition keeps its own backend", part, [][]string{{"holder"}, {"zk-0", "zk-1", "zk-2"}}, []string{"etcd-0", "etcd-1", "etcd-2"}, false},
		{"partition of another backend only", Fault{Type: "partition", Groups: [][]string{{"holder"}, {"etcd-0", "etcd-1"}}}, [][]string{{"holder"}}, []string{"etcd-0", "etcd-1"}, true},
		{"node of another backend", Fault{Type: "pause", Node: "etcd-1"}, nil, []string{"etcd-1"}, true},
		{"leader selector of another backend", Fault{Type: "kill", Node: etcd.LeaderSelector}, nil, []string{etcd.LeaderSelector}, true},
		{"own node", Fault{Type: "pause", Node: "zk-1"}, nil, nil, false},
		{"client fault", Fault{Type: "pause-client", Client: Holder}, nil, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := Narrow(tc.f, zk)
			if !reflect.DeepEqual(n.Dropped, tc.dropped) || (n.NotApplicable != "") != tc.na {
				t.Errorf("dropped %v, not applicable %q; want %v, %v", n.Dropped, n.NotApplicable, tc.dropped, tc.na)
			}
			if tc.groups != nil && !reflect.DeepEqual(n.Fault.Groups, tc.groups) {
				t.Errorf("groups %v, want %v", n.Fault.Groups, tc.groups)
			}
		})
	}
}
