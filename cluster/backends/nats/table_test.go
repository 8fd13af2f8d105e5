package nats_test

import (
	"context"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
	natsserver "github.com/locklab/locklab/cluster/backends/nats"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/natslock"
	"github.com/locklab/locklab/testenv"
)

// TestTableRow starts cluster.nats {nodes: 3} through the backend table
// (local provider, routes and client links proxied), takes a lock through
// a client's proxies, finds the bucket stream's leader by the nodes' Role
// (what nats-leader resolves to), kills it, and takes the lock again once
// the other two elected a new one.
func TestTableRow(t *testing.T) {
	c := testenv.Cluster(t, cluster.Spec{Clients: 1, Backends: map[string]cluster.Settings{natsserver.Name: {"nodes": 3}}})
	if v := c.Info().Versions[natsserver.Name]; v == "" {
		t.Errorf("no nats version in %v", c.Info().Versions)
	}
	e := c.Endpoints(0)
	if got := len(e.Table[natsserver.Name]); got != 3 {
		t.Fatalf("client endpoints %v: want 3 nats addresses", e.Table)
	}
	for _, l := range []string{"nats-0->nats-1", "nats-2->nats-0", "client-0->nats-1"} {
		if _, err := c.Links(l); err != nil {
			t.Errorf("link %s: %v", l, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := natslock.New(ctx, locks.Config{Endpoints: e, TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	acquire := func() {
		t.Helper()
		actx, acancel := context.WithTimeout(ctx, 30*time.Second)
		defer acancel()
		for {
			lease, err := cl.Locker("row").Acquire(actx)
			if err == nil {
				if err := lease.Release(actx); err != nil {
					t.Fatalf("release: %v", err)
				}
				return
			}
			if actx.Err() != nil {
				t.Fatalf("acquire: %v", err)
			}
		}
	}
	acquire()
	var leader *cluster.Node
	testenv.Eventually(t, 30*time.Second, "a nats leader", func() error {
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
	acquire()
}
