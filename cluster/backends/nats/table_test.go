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
	killLeader(t, ctx, c)
	acquire()
}

// TestPowerCut: a power cut on a single JetStream server drops what its
// store received since the last fsync (nats-server syncs its file store
// on an interval, 2 minutes by default), so a lock taken just before it
// is gone after the restart: another client takes it at once, though the
// first never released it and its TTL (30 s) is far from over.
func TestPowerCut(t *testing.T) {
	c := testenv.Cluster(t, cluster.Spec{Clients: 2, LossyDisks: true,
		Backends: map[string]cluster.Settings{natsserver.Name: {"nodes": 1}}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	connect := func(client int) locks.Client {
		t.Helper()
		cl, err := natslock.New(ctx, locks.Config{Endpoints: c.Endpoints(client), TTL: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cl.Close() })
		return cl
	}
	first := connect(0)
	if _, err := first.Locker("cut").Acquire(ctx); err != nil {
		t.Fatalf("first acquire: %v", err)
	}
	n, ok := c.Node("nats-0")
	if !ok {
		t.Fatal("no nats-0")
	}
	loss, err := n.PowerCut(ctx)
	if err != nil {
		t.Fatalf("power cut: %v", err)
	}
	t.Logf("dropped %d bytes in %v", loss.Bytes, loss.Files)
	if loss.Bytes == 0 {
		t.Fatal("the power cut dropped nothing: the store was fsynced")
	}
	if err := n.Start(ctx); err != nil {
		t.Fatalf("start again: %v", err)
	}
	second := connect(1)
	actx, acancel := context.WithTimeout(ctx, 20*time.Second)
	defer acancel()
	start := time.Now()
	for {
		_, err := second.Locker("cut").Acquire(actx)
		if err == nil {
			t.Logf("second client granted %v after the restart, the first still holding", time.Since(start))
			return
		}
		if actx.Err() != nil {
			t.Fatalf("the lock outlived the power cut (acquire: %v): nothing unsynced was lost", err)
		}
	}
}
