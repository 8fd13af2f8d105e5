package nats_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
	natsserver "github.com/locklab/locklab/cluster/backends/nats"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/natslock"
	"github.com/locklab/locklab/locktest"
	"github.com/locklab/locklab/testenv"
)

// TestNetns starts cluster.nats {nodes: 3} under provider netns (each
// server in its namespace at its own address, routes over kernel links),
// takes and releases a lock dialing the servers directly, kills the bucket
// stream's leader and takes the lock again once another leads.
func TestNetns(t *testing.T) {
	if !testenv.Netns(t) {
		return
	}
	c := testenv.Cluster(t, cluster.Spec{Provider: cluster.ProviderNetns, Clients: 1,
		Backends: map[string]cluster.Settings{natsserver.Name: {"nodes": 3}}})
	e := c.Endpoints(0)
	for i, a := range e.Table[natsserver.Name] {
		n, _ := c.Node(natsserver.NodeName(i))
		if !strings.HasPrefix(a, "198.1") || a != n.Addr() {
			t.Fatalf("client 0 dials %s for %s at %s: want its own address in 198.18.0.0/15", a, n.Name, n.Addr())
		}
	}
	for _, l := range []string{"nats-0->nats-1", "nats-2->nats-0", "client-0->nats-1"} {
		if ls, err := c.Links(l); err != nil || len(ls) != 1 || !ls[0].Kernel() {
			t.Errorf("link %s: %v, %v; want one kernel link", l, ls, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	lock := locktest.Connect(t, natslock.Name, locks.Config{Endpoints: e, TTL: 10 * time.Second, Prefix: "locklab-test/"}).
		Locker(locktest.Name(t))
	locktest.Release(t, locktest.Acquire(t, lock), "client 0")
	var leader *cluster.Node
	testenv.Eventually(t, 30*time.Second, "a nats leader", func() error {
		var err error
		leader, err = c.Leader(ctx, natsserver.Kind)
		return err
	})
	if err := leader.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 60*time.Second, "another nats leader", func() error {
		n, err := c.Leader(ctx, natsserver.Kind)
		if err == nil && n.Name == leader.Name {
			t.Fatalf("killed %s still leads", n.Name)
		}
		return err
	})
	locktest.Release(t, locktest.AcquireWithin(t, lock, 60*time.Second), "client 0 with "+leader.Name+" killed")
}
