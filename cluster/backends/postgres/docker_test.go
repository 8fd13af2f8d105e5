package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/backends/postgres"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/pglock"
	"github.com/locklab/locklab/locktest"
	"github.com/locklab/locklab/testenv"
)

// TestDocker starts a primary with a replica under provider docker (each
// in its container, the replica made by pg_basebackup and streaming
// through the link's proxy on the network's gateway), takes and releases a
// lock through the client's proxies, pauses the primary's container (a
// lock cannot be taken until it resumes), fails over and takes the lock on
// the promoted replica.
func TestDocker(t *testing.T) {
	testenv.RequireDockerImages(t)
	c := testenv.Cluster(t, cluster.Spec{Provider: cluster.ProviderDocker, Clients: 1,
		Backends: map[string]cluster.Settings{postgres.Name: {"replicas": 1}}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, _ := c.Node("postgres-0")
	r, _ := c.Node("postgres-0-r0")
	for n, want := range map[*cluster.Node]string{p: "primary", r: "replica"} {
		if got, err := n.Role(ctx); err != nil || got != want {
			t.Fatalf("role of %s = %q, %v; want %s", n.Name, got, err, want)
		}
	}
	if ls, err := c.Links("postgres-0-r0->postgres-0"); err != nil || len(ls) != 1 || ls[0].Kernel() {
		t.Fatalf("replication link: %v, %v; want one proxied link", ls, err)
	}
	cl := locktest.Connect(t, pglock.NameSession, locks.Config{Endpoints: c.Endpoints(0), Prefix: "locklab-test/"})
	lock := cl.Locker(locktest.Name(t))
	locktest.Release(t, locktest.Acquire(t, lock), "client 0")

	if err := p.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	actx, acancel := context.WithTimeout(ctx, 2*time.Second)
	if ls, err := lock.Acquire(actx); err == nil {
		t.Errorf("acquired on a paused primary (token %d)", ls.Token())
		defer ls.Release(ctx)
	}
	acancel()
	if err := p.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	locktest.Release(t, locktest.Acquire(t, lock), "client 0 after resume")

	detail, err := c.Failover(ctx, "postgres-0")
	if err != nil {
		t.Fatal(err)
	}
	t.Log(detail)
	if got, err := r.Role(ctx); err != nil || got != "primary" {
		t.Fatalf("after failover, role of %s = %q, %v; want primary", r.Name, got, err)
	}
	cl2 := locktest.Connect(t, pglock.NameSession, locks.Config{Endpoints: c.Endpoints(0), Prefix: "locklab-test/"})
	locktest.Release(t, locktest.Acquire(t, cl2.Locker(locktest.Name(t))), "client 0 after failover")
}
