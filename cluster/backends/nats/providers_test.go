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
// server in its namespace at its own address, routes over kernel links)
// and runs lockThroughLeaderKill dialing the servers directly.
func TestNetns(t *testing.T) {
	if !testenv.Netns(t) {
		return
	}
	c := threeNodes(t, cluster.ProviderNetns)
	for i, a := range c.Endpoints(0).Table[natsserver.Name] {
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
	lockThroughLeaderKill(t, c)
}

// TestDocker starts cluster.nats {nodes: 3} under provider docker (each
// server in its container, routes through the links' proxies on the
// network's gateway) and runs lockThroughLeaderKill through the client's
// proxies.
func TestDocker(t *testing.T) {
	testenv.RequireDockerImages(t)
	c := threeNodes(t, cluster.ProviderDocker)
	for _, l := range []string{"nats-0->nats-1", "nats-2->nats-0"} {
		if ls, err := c.Links(l); err != nil || len(ls) != 1 || ls[0].Kernel() {
			t.Errorf("link %s: %v, %v; want one proxied link", l, ls, err)
		}
	}
	lockThroughLeaderKill(t, c)
}

func threeNodes(t *testing.T, provider string) *cluster.Cluster {
	t.Helper()
	return testenv.Cluster(t, cluster.Spec{Provider: provider, Clients: 1,
		Backends: map[string]cluster.Settings{natsserver.Name: {"nodes": 3}}})
}

// lockThroughLeaderKill takes and releases a lock, kills the bucket
// stream's leader and takes the lock again once another leads.
func lockThroughLeaderKill(t *testing.T, c *cluster.Cluster) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	lock := locktest.Connect(t, natslock.Name, locks.Config{Endpoints: c.Endpoints(0), TTL: 10 * time.Second, Prefix: "locklab-test/"}).
		Locker(locktest.Name(t))
	locktest.Release(t, locktest.Acquire(t, lock), "client 0")
	leader := killLeader(t, ctx, c)
	locktest.Release(t, locktest.AcquireWithin(t, lock, 60*time.Second), "client 0 with "+leader.Name+" killed")
}

// killLeader waits for the bucket stream's leader, kills it, waits until
// another leads and returns the killed one.
func killLeader(t *testing.T, ctx context.Context, c *cluster.Cluster) *cluster.Node {
	t.Helper()
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
	return leader
}
