package faults

import (
	"slices"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
	etcdrow "github.com/locklab/locklab/cluster/backends/etcd"
	"github.com/locklab/locklab/cluster/backends/zookeeper"
)

// TestClientProxies resolves each fault to the servers whose client links
// it may touch, and Check accepts every fault on the cluster proxied that
// way (a server left out would fail it).
func TestClientProxies(t *testing.T) {
	sentinel := cluster.Spec{Redis: &cluster.RedisSpec{Replicas: 1, Sentinels: 1}, Clients: 3}
	zk := cluster.Spec{Backends: map[string]cluster.Settings{"zookeeper": {"nodes": 3}}, Clients: 2}
	etcd := cluster.Spec{Backends: map[string]cluster.Settings{"etcd": {"nodes": 3}}, Clients: 2}
	s := time.Second
	for _, tc := range []struct {
		name string
		spec cluster.Spec
		ppc  bool
		fs   []Fault
		want []string
	}{
		{"no faults", sentinel, false, nil, []string{}},
		{"server faults only", sentinel, true, []Fault{{Type: Kill, At: s, Node: "redis-0"},
			{Type: Pause, At: s, For: s, Node: "sentinel-0"}, {Type: PauseClient, At: s, For: s, Client: Holder}}, []string{}},
		{"peer link", sentinel, false, []Fault{{Type: Latency, At: s, Link: "redis-0-r0->redis-0", Latency: s}}, []string{}},
		{"client link", sentinel, false, []Fault{{Type: Latency, At: s, Link: "clients->redis-0", Latency: s}}, []string{"redis-0"}},
		{"holder link", sentinel, false, []Fault{{Type: Reset, At: s, Link: "holder->sentinel-0"}}, []string{"sentinel-0"}},
		{"bare server", sentinel, false, []Fault{{Type: Bandwidth, At: s, Node: "redis-0-r0", RateKbps: 8}}, []string{"redis-0-r0"}},
		{"bare client", sentinel, false, []Fault{{Type: Latency, At: s, Node: "client-2", Latency: s}},
			[]string{"redis-0", "redis-0-r0", "sentinel-0"}},
		{"isolate server", sentinel, false, []Fault{{Type: Partition, At: s, Isolate: "redis-0"}}, []string{"redis-0"}},
		{"restart", sentinel, false, []Fault{{Type: Restart, At: s, Node: "redis-0-r0"}}, []string{"redis-0-r0"}},
		{"servers only partition", zk, false, []Fault{{Type: Partition, At: s, Groups: [][]string{{"zk-0"}, {"zk-1", "zk-2"}}}}, []string{}},
		{"leader partition", zk, false, []Fault{{Type: Partition, At: s,
			Groups: [][]string{{zookeeper.LeaderSelector}, {"zk-0", "zk-1", "zk-2", cluster.Clients}}}}, []string{"zk-0", "zk-1", "zk-2"}},
		{"leader link", etcd, false, []Fault{{Type: Latency, At: s, Link: "clients->" + etcdrow.LeaderSelector, Latency: s}},
			[]string{"etcd-0", "etcd-1", "etcd-2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ClientProxies(cluster.PlanOf(tc.spec), tc.ppc, tc.fs)
			if got == nil || !slices.Equal(got, tc.want) {
				t.Fatalf("ClientProxies = %#v, want %#v", got, tc.want)
			}
			spec := tc.spec
			spec.ClientProxies = got
			if err := Check(cluster.PlanOf(spec), tc.ppc, tc.fs); err != nil {
				t.Errorf("Check on the cluster proxied for %v: %v", got, err)
			}
		})
	}
}
