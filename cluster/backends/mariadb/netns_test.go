package mariadb_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/backends/mariadb"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/mysqllock"
	"github.com/locklab/locklab/locktest"
	"github.com/locklab/locklab/testenv"
)

// TestNetns starts mariadb-0 under provider netns (in its namespace at its
// own address), takes and releases a lock dialing it directly, kills it (a
// lock cannot be taken), starts it again on the same data dir and takes
// the lock again.
func TestNetns(t *testing.T) {
	if !testenv.Netns(t) {
		return
	}
	c := testenv.Cluster(t, cluster.Spec{Provider: cluster.ProviderNetns, Clients: 1,
		Backends: map[string]cluster.Settings{mariadb.Name: {}}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n, _ := c.Node("mariadb-0")
	if !strings.HasPrefix(n.Addr(), "198.1") {
		t.Fatalf("mariadb-0 at %s, want an address of 198.18.0.0/15", n.Addr())
	}
	if got := c.Endpoints(0).Table[mariadb.Name]; !slices.Equal(got, []string{n.Addr()}) {
		t.Fatalf("client 0 dials %v, want the server's own address %s", got, n.Addr())
	}
	cfg := locks.Config{Endpoints: c.Endpoints(0), Prefix: "locklab-test/"}
	lock := locktest.Connect(t, mysqllock.Name, cfg).Locker(locktest.Name(t))
	locktest.Release(t, locktest.Acquire(t, lock), "client 0")

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
	lock = locktest.Connect(t, mysqllock.Name, cfg).Locker(locktest.Name(t))
	locktest.Release(t, locktest.Acquire(t, lock), "client 0 after the restart")
}
