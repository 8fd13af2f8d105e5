package faults

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/backends/etcd"
	"github.com/locklab/locklab/cluster/backends/zookeeper"
	"github.com/locklab/locklab/testenv"
)

func TestWithLeaders(t *testing.T) {
	rest := []string{"zk-0", "zk-1", "zk-2", "zk-3", "zk-4", "clients"}
	for _, tc := range []struct {
		name   string
		f      Fault
		leader string
		want   string // Target of the result
	}{
		{"isolate", Fault{Isolate: zookeeper.LeaderSelector}, "zk-3", "zk-3"},
		{"node", Fault{Node: zookeeper.LeaderSelector}, "zk-3", "zk-3"},
		{"link", Fault{Link: "clients->zk-leader"}, "zk-1", "clients->zk-1"},
		{"leader alone", Fault{Groups: [][]string{{zookeeper.LeaderSelector}, rest}}, "zk-4",
			"[zk-4] | [zk-0 zk-1 zk-2 zk-3 clients]"},
		{"leader and zk-0", Fault{Groups: [][]string{{zookeeper.LeaderSelector, "zk-0"}, rest[1:]}}, "zk-4",
			"[zk-4 zk-0] | [zk-1 zk-2 zk-3 clients]"},
		{"leader is zk-0", Fault{Groups: [][]string{{zookeeper.LeaderSelector, "zk-0"}, rest[1:]}}, "zk-0",
			"[zk-0] | [zk-1 zk-2 zk-3 zk-4 clients]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := leaderChoice{zookeeper.LeaderSelector: tc.leader}
			if got := withLeaders(tc.f, a, nil).Target(); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
			shown := withLeaders(tc.f, a, func(sel, n string) string { return sel + "=" + n }).Target()
			if !strings.Contains(shown, zookeeper.LeaderSelector+"="+tc.leader) {
				t.Errorf("shown as %s", shown)
			}
		})
	}
}

// TestRunLeader isolates etcd-leader: Run resolves it to the member that
// leads when the fault starts, cuts that member's links only, names both in
// the window, and heals.
func TestRunLeader(t *testing.T) {
	c := testenv.Cluster(t, cluster.Spec{Backends: map[string]cluster.Settings{"etcd": {"nodes": 3}}, Clients: 2})
	ctx := ctxT(t, 60*time.Second)
	env := testEnv(t, c)
	leader, err := c.Leader(ctx, "etcd")
	if err != nil {
		t.Fatal(err)
	}
	fs := []Fault{{Type: Partition, Isolate: etcd.LeaderSelector, For: time.Second}}
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var during []string
	probe := make(chan struct{})
	go func() {
		defer close(probe)
		// The most links seen cut at once while the run goes on.
		for rctx.Err() == nil {
			var cut []string
			for _, l := range c.AllLinks() {
				if l.IsCut() {
					cut = append(cut, l.Name)
				}
			}
			if len(cut) > len(during) {
				during = cut
			}
			if len(cut) == 0 && len(during) > 0 {
				return // healed
			}
			time.Sleep(10 * time.Millisecond) // sampling interval
		}
	}()
	ws := Run(rctx, env, fs)
	<-probe
	if len(ws) != 1 || ws[0].Err != "" {
		t.Fatalf("windows %+v", ws)
	}
	w := ws[0]
	t.Logf("%+v", w)
	if want := etcd.LeaderSelector + "=" + leader.Name; w.Target != want {
		t.Errorf("target %q, want %q", w.Target, want)
	}
	if !strings.Contains(w.Detail, "etcd-leader was "+leader.Name) {
		t.Errorf("detail %q", w.Detail)
	}
	// Two pair links each way, etcd-peers->leader and one per client.
	if len(during) != 7 {
		t.Errorf("cut during the fault: %v, want 7 links", during)
	}
	for _, name := range during {
		if !strings.Contains(name, leader.Name) {
			t.Errorf("%s cut: it does not touch %s", name, leader.Name)
		}
	}
	for _, l := range c.AllLinks() {
		if l.IsCut() {
			t.Errorf("%s still cut after the fault", l.Name)
		}
	}
}
