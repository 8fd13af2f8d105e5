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
		Backends: map[string]cluster.Settings{"zookeeper": {"nodes": 3}}, Clients: 2}
	local := cluster.Spec{Redis: &cluster.RedisSpec{Replicas: 1}, Clients: 2}
	for _, tc := range []struct {
		name string
		spec cluster.Spec
		f    Fault
		want string // "" = accepted
		// perClient: clients run as processes of their own
		perClient bool
	}{
		{"loss", netns, Fault{Type: Loss, Node: "redis-0", Percent: 10}, "", false},
		{"loss percent 0", netns, Fault{Type: Loss, Node: "redis-0"}, "percent (loss): must be 1..100", false},
		{"loss percent 101", netns, Fault{Type: Loss, Node: "redis-0", Percent: 101}, "percent (loss): must be 1..100", false},
		{"loss local", local, Fault{Type: Loss, Node: "redis-0", Percent: 10}, "needs provider netns", false},
		{"blackhole", netns, Fault{Type: Blackhole, Link: "clients->redis-0"}, "", false},
		{"blackhole peer link", netns, Fault{Type: Blackhole, Link: "zk-1->zk-0"}, "", false},
		{"blackhole local", local, Fault{Type: Blackhole, Link: "clients->redis-0"}, "needs provider netns", false},
		{"latency netns", netns, Fault{Type: Latency, Node: "redis-0", Latency: time.Second}, "latency acts through a proxy", false},
		{"bandwidth netns", netns, Fault{Type: Bandwidth, Node: "redis-0", RateKbps: 8}, "bandwidth acts through a proxy", false},
		{"reset netns", netns, Fault{Type: Reset, Node: "redis-0"}, "", false},
		{"one client", netns, Fault{Type: Loss, Link: "client-1->redis-0", Percent: 5}, "cannot single out client-1: set workload.process_per_client: true", false},
		{"holder", netns, Fault{Type: Partition, Isolate: Holder}, "cannot single out holder", false},
		{"one client process", netns, Fault{Type: Loss, Link: "client-1->redis-0", Percent: 5}, "", true},
		{"holder process", netns, Fault{Type: Partition, Isolate: Holder}, "", true},
		{"one-way", netns, Fault{Type: Partition, Isolate: "zk-0", Direction: DirectionOut}, "", false},
		{"one-way in", netns, Fault{Type: Partition, Groups: [][]string{{"zk-0"}, {"zk-1", "zk-2"}}, Direction: DirectionIn}, "", false},
		{"one-way local", local, Fault{Type: Partition, Isolate: "redis-0", Direction: DirectionOut}, "needs provider netns", false},
		{"bad direction", netns, Fault{Type: Partition, Isolate: "zk-0", Direction: "up"}, `direction "up"`, false},
		{"both local", local, Fault{Type: Partition, Isolate: "redis-0", Direction: DirectionBoth}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(cluster.PlanOf(tc.spec), tc.perClient, []Fault{tc.f})
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

// TestSinglesOutClient: which faults act on one client's links.
func TestSinglesOutClient(t *testing.T) {
	for _, tc := range []struct {
		f    Fault
		want bool
	}{
		{Fault{Type: Partition, Isolate: Holder}, true},
		{Fault{Type: Loss, Link: "client-2 -> redis-0", Percent: 5}, true},
		{Fault{Type: Partition, Groups: [][]string{{"zk-0", "client-0"}, {"zk-1"}}}, true},
		{Fault{Type: Partition, Isolate: "zk-0"}, false},
		{Fault{Type: Blackhole, Link: "clients->redis-0"}, false},
		{Fault{Type: PauseClient, Client: Holder}, false}, // sets process_per_client by itself
	} {
		if got := SinglesOutClient([]Fault{tc.f}); got != tc.want {
			t.Errorf("%+v: %v, want %v", tc.f, got, tc.want)
		}
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
