package postgres_test

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/backends/postgres"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/pglock"
	"github.com/locklab/locklab/locktest"
	"github.com/locklab/locklab/testenv"
)

// TestNetns starts a primary with a replica under provider netns (each in
// its namespace at its own address, the replica streaming over the
// kernel's link), dials the primary directly, and runs pauseAndFailover;
// Close then leaves no server behind.
func TestNetns(t *testing.T) {
	if !testenv.Netns(t) {
		return
	}
	c, p, r, ctx := primaryAndReplica(t, cluster.ProviderNetns)
	for _, n := range []*cluster.Node{p, r} {
		if !strings.HasPrefix(n.Addr(), "198.1") {
			t.Fatalf("%s at %s, want an address of 198.18.0.0/15", n.Name, n.Addr())
		}
	}
	if got := c.Endpoints(0).Table[postgres.Name]; !slices.Equal(got, []string{p.Addr(), r.Addr()}) {
		t.Fatalf("client 0 dials %v, want the servers' own addresses %s %s", got, p.Addr(), r.Addr())
	}
	if ls, err := c.Links("postgres-0-r0->postgres-0"); err != nil || len(ls) != 1 || !ls[0].Kernel() {
		t.Fatalf("replication link: %v, %v; want one kernel link", ls, err)
	}
	pauseAndFailover(t, ctx, c, p, r)
	pid := r.Pid()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
		t.Errorf("postgres (pid %d) still running after Close", pid)
	}
}

// TestDocker starts a primary with a replica under provider docker (each
// in its container, the replica made by pg_basebackup and streaming
// through the link's proxy on the network's gateway), dials through the
// client's proxies, and runs pauseAndFailover (docker pause).
func TestDocker(t *testing.T) {
	testenv.RequireDockerImages(t)
	c, p, r, ctx := primaryAndReplica(t, cluster.ProviderDocker)
	if ls, err := c.Links("postgres-0-r0->postgres-0"); err != nil || len(ls) != 1 || ls[0].Kernel() {
		t.Fatalf("replication link: %v, %v; want one proxied link", ls, err)
	}
	pauseAndFailover(t, ctx, c, p, r)
}

// primaryAndReplica starts postgres-0 with one replica under provider and
// checks their roles.
func primaryAndReplica(t *testing.T, provider string) (*cluster.Cluster, *cluster.Node, *cluster.Node, context.Context) {
	t.Helper()
	c := testenv.Cluster(t, cluster.Spec{Provider: provider, Clients: 1,
		Backends: map[string]cluster.Settings{postgres.Name: {"replicas": 1}}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	p, _ := c.Node("postgres-0")
	r, _ := c.Node("postgres-0-r0")
	for n, want := range map[*cluster.Node]string{p: "primary", r: "replica"} {
		if got, err := n.Role(ctx); err != nil || got != want {
			t.Fatalf("role of %s = %q, %v; want %s", n.Name, got, err, want)
		}
	}
	return c, p, r, ctx
}

// pauseAndFailover takes and releases a lock, pauses the primary p (its
// sessions too: a lock cannot be taken, not even on the client's open
// connection, until it resumes), fails over and takes the lock on the
// promoted replica r.
func pauseAndFailover(t *testing.T, ctx context.Context, c *cluster.Cluster, p, r *cluster.Node) {
	t.Helper()
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
