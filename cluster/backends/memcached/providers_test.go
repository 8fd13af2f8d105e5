package memcached_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/backends/memcached"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/memcachedlock"
	"github.com/locklab/locklab/locktest"
	"github.com/locklab/locklab/testenv"
)

// TestNetns starts memcached-0 under provider netns (in its namespace at
// its own address), dials it directly, takes and releases a lock and runs
// killAndStart.
func TestNetns(t *testing.T) {
	if !testenv.Netns(t) {
		return
	}
	c, n, ctx := server(t, cluster.ProviderNetns)
	if !strings.HasPrefix(n.Addr(), "198.1") {
		t.Fatalf("memcached-0 at %s, want an address of 198.18.0.0/15", n.Addr())
	}
	if got := c.Endpoints(0).Table[memcached.Name]; !slices.Equal(got, []string{n.Addr()}) {
		t.Fatalf("client 0 dials %v, want the server's own address %s", got, n.Addr())
	}
	lock := lockOf(t, c)
	locktest.Release(t, locktest.Acquire(t, lock), "client 0")
	killAndStart(t, ctx, n, lock)
}

// TestDocker starts memcached-0 under provider docker (in its container,
// published on 127.0.0.1), takes and releases a lock through the client's
// proxy, pauses the container (the server does not answer), resumes it,
// and runs killAndStart.
func TestDocker(t *testing.T) {
	testenv.RequireDockerImages(t)
	c, n, ctx := server(t, cluster.ProviderDocker)
	if got := c.Endpoints(0).Table[memcached.Name]; len(got) != 1 || got[0] == n.Addr() || slices.Contains(got, "") {
		t.Fatalf("client 0 dials %v, want its proxy to %s", got, n.Addr())
	}
	if v := c.Info().Versions[memcached.Name]; v == "" {
		t.Errorf("no version of the server in the container")
	}
	lock := lockOf(t, c)
	locktest.Release(t, locktest.Acquire(t, lock), "client 0")

	if err := n.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	rctx, rcancel := context.WithTimeout(ctx, 2*time.Second)
	if r, err := n.Role(rctx); err == nil {
		t.Errorf("a paused server answers: role %q", r)
	}
	rcancel()
	if err := n.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	locktest.Release(t, locktest.Acquire(t, lock), "client 0 after the pause")
	killAndStart(t, ctx, n, lock)
}

// server starts memcached-0 under provider.
func server(t *testing.T, provider string) (*cluster.Cluster, *cluster.Node, context.Context) {
	t.Helper()
	c := testenv.Cluster(t, cluster.Spec{Provider: provider, Clients: 1,
		Backends: map[string]cluster.Settings{memcached.Name: {}}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	n, _ := c.Node("memcached-0")
	return c, n, ctx
}

// lockOf is client 0's lock of the test.
func lockOf(t *testing.T, c *cluster.Cluster) locks.Locker {
	t.Helper()
	cfg := locks.Config{Endpoints: c.Endpoints(0), Prefix: "locklab-test/"}
	return locktest.Connect(t, memcachedlock.Name, cfg).Locker(locktest.Name(t))
}

// killAndStart kills n (it answers nothing and a lock cannot be taken),
// starts it again and takes the lock again.
func killAndStart(t *testing.T, ctx context.Context, n *cluster.Node, lock locks.Locker) {
	t.Helper()
	if err := n.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if r, err := n.Role(ctx); err == nil {
		t.Fatalf("a killed server answers: role %q", r)
	}
	actx, acancel := context.WithTimeout(ctx, 2*time.Second)
	if ls, err := lock.Acquire(actx); err == nil {
		t.Errorf("acquired on a killed server (token %d)", ls.Token())
	}
	acancel()
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	locktest.Release(t, locktest.Acquire(t, lock), "client 0 after the restart")
}
