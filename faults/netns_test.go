package faults

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
)

// TestCheckNetns: what provider netns changes in Check — packet faults
// only there, proxy faults never there, no single client.
func TestCheckNetns(t *testing.T) {
	netns := cluster.Spec{Provider: cluster.ProviderNetns, Redis: &cluster.RedisSpec{Replicas: 1},
		ZooKeeper: &cluster.ZooKeeperSpec{Nodes: 3}, Clients: 2}
	local := cluster.Spec{Redis: &cluster.RedisSpec{Replicas: 1}, Clients: 2}
	for _, tc := range []struct {
		name string
		spec cluster.Spec
		f    Fault
		want string // "" = accepted
	}{
		{"loss", netns, Fault{Type: Loss, Node: "redis-0", Percent: 10}, ""},
		{"loss percent 0", netns, Fault{Type: Loss, Node: "redis-0"}, "percent (loss): must be 1..100"},
		{"loss percent 101", netns, Fault{Type: Loss, Node: "redis-0", Percent: 101}, "percent (loss): must be 1..100"},
		{"loss local", local, Fault{Type: Loss, Node: "redis-0", Percent: 10}, "needs provider netns"},
		{"blackhole", netns, Fault{Type: Blackhole, Link: "clients->redis-0"}, ""},
		{"blackhole peer link", netns, Fault{Type: Blackhole, Link: "zk-1->zk-0"}, ""},
		{"blackhole local", local, Fault{Type: Blackhole, Link: "clients->redis-0"}, "needs provider netns"},
		{"latency netns", netns, Fault{Type: Latency, Node: "redis-0", Latency: time.Second}, "latency acts through a proxy"},
		{"bandwidth netns", netns, Fault{Type: Bandwidth, Node: "redis-0", RateKbps: 8}, "bandwidth acts through a proxy"},
		{"reset netns", netns, Fault{Type: Reset, Node: "redis-0"}, ""},
		{"one client", netns, Fault{Type: Loss, Link: "client-1->redis-0", Percent: 5}, "cannot single out client-1"},
		{"holder", netns, Fault{Type: Partition, Isolate: Holder}, "cannot single out holder"},
		{"one-way", netns, Fault{Type: Partition, Isolate: "zk-0", Direction: DirectionOut}, ""},
		{"one-way in", netns, Fault{Type: Partition, Groups: [][]string{{"zk-0"}, {"zk-1", "zk-2"}}, Direction: DirectionIn}, ""},
		{"one-way local", local, Fault{Type: Partition, Isolate: "redis-0", Direction: DirectionOut}, "needs provider netns"},
		{"bad direction", netns, Fault{Type: Partition, Isolate: "zk-0", Direction: "up"}, `direction "up"`},
		{"both local", local, Fault{Type: Partition, Isolate: "redis-0", Direction: DirectionBoth}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(cluster.PlanOf(tc.spec), false, []Fault{tc.f})
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("rejected: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			case tc.want != "" && strings.Contains(tc.want, "netns") && !errors.Is(err, ErrUnsupported):
				t.Fatalf("%v does not wrap ErrUnsupported", err)
			}
		})
	}
}

// TestCutWays: which packets of a link a partition drops per direction.
func TestCutWays(t *testing.T) {
	groups := [][]string{{"zk-0"}, {"zk-1", cluster.Clients}}
	group := func(end string) int {
		for gi, g := range groups {
			for _, m := range g {
				if matchEnd(m, end) {
					return gi
				}
			}
		}
		return -1
	}
	into := &cluster.Link{From: "zk-1", To: "zk-0"}
	out := &cluster.Link{From: "zk-0", To: "zk-1"}
	client := &cluster.Link{From: "client-0", To: "zk-0"}
	for _, tc := range []struct {
		dir       string
		l         *cluster.Link
		fwd, back bool
	}{
		{"", into, true, true},
		{DirectionOut, into, false, true},
		{DirectionOut, out, true, false},
		{DirectionIn, into, true, false},
		{DirectionIn, client, true, false},
		{DirectionOut, client, false, true},
	} {
		fwd, back := cutWays(tc.dir, tc.l, group)
		if fwd != tc.fwd || back != tc.back {
			t.Errorf("%q %s->%s: forward %v backward %v, want %v %v", tc.dir, tc.l.From, tc.l.To, fwd, back, tc.fwd, tc.back)
		}
	}
}
