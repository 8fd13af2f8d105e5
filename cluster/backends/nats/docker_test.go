package nats_test

import (
	"context"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
	natsserver "github.com/locklab/locklab/cluster/backends/nats"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/natslock"
	"github.com/locklab/locklab/locktest"
	"github.com/locklab/locklab/testenv"
)

// TestDocker starts cluster.nats {nodes: 3} under provider docker (each
// server in its container, routes through the links' proxies on the
// network's gateway), takes and releases a lock through the client's
// proxies, kills the bucket stream's leader and takes the lock again once
// another leads.
func TestDocker(t *testing.T) {
	testenv.RequireDockerImages(t)
	c := testenv.Cluster(t, cluster.Spec{Provider: cluster.ProviderDocker, Clients: 1,
		Backends: map[string]cluster.Settings{natsserver.Name: {"nodes": 3}}})
	for _, l := range []string{"nats-0->nats-1", "nats-2->nats-0"} {
		if ls, err := c.Links(l); err != nil || len(ls) != 1 || ls[0].Kernel() {
			t.Errorf("link %s: %v, %v; want one proxied link", l, ls, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	lock := locktest.Connect(t, natslock.Name, locks.Config{Endpoints: c.Endpoints(0), TTL: 10 * time.Second, Prefix: "locklab-test/"}).
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
