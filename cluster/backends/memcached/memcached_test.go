package memcached_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/backends/memcached"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/memcachedlock"
	"github.com/locklab/locklab/locktest"
	"github.com/locklab/locklab/testenv"
)

// TestStartRestartClose starts memcached-0 behind client 0's proxy, takes
// a lock, restarts the server (which comes back empty: a second client is
// granted the lock the first still holds, and the fencing counter starts
// over), and checks that Close leaves no server process behind.
func TestStartRestartClose(t *testing.T) {
	c := testenv.Cluster(t, cluster.Spec{Clients: 2, Backends: map[string]cluster.Settings{memcached.Name: {}}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	n, ok := c.Node("memcached-0")
	if !ok || n.Kind != memcached.Kind {
		t.Fatalf("no memcached-0 node: %v", c.Plan().Nodes)
	}
	if got := c.Endpoints(0).Table[memcached.Name]; len(got) != 1 || got[0] == n.Addr() {
		t.Fatalf("client 0's memcached addresses = %v, want one proxied address (server at %s)", got, n.Addr())
	}
	if v := c.Info().Versions[memcached.Name]; v == "" {
		t.Errorf("no memcached version in %v", c.Info().Versions)
	}
	lockOf := func(i int) locks.Locker {
		return locktest.Connect(t, memcachedlock.Name, locks.Config{Endpoints: c.Endpoints(i), TTL: time.Minute}).Locker("restart")
	}
	first := locktest.Acquire(t, lockOf(0))
	if err := n.Restart(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if r, err := n.Role(ctx); err != nil || r != "primary" {
		t.Fatalf("role after restart = %q, %v", r, err)
	}
	second := locktest.AcquireWithin(t, lockOf(1), 5*time.Second)
	if second.Token() != 1 || first.Token() != 1 {
		t.Errorf("tokens %d then %d, want 1 and 1: the restart lost the counter", first.Token(), second.Token())
	}
	pid := n.Pid()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
		t.Errorf("memcached (pid %d) still running after Close", pid)
	}
}
