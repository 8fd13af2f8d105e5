package mariadb_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/backends/mariadb"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/mysqllock"
	"github.com/locklab/locklab/locktest"
	"github.com/locklab/locklab/testenv"
)

// TestDocker starts mariadb-0 under provider docker (in its container,
// published on 127.0.0.1), takes and releases a lock through the client's
// proxy, pauses the container (a lock cannot be taken, the server does not
// answer), resumes it, kills it and starts it again on the same data dir,
// and takes the lock again.
func TestDocker(t *testing.T) {
	testenv.RequireDockerImages(t)
	c := testenv.Cluster(t, cluster.Spec{Provider: cluster.ProviderDocker, Clients: 1,
		Backends: map[string]cluster.Settings{mariadb.Name: {}}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n, _ := c.Node("mariadb-0")
	if got := c.Endpoints(0).Table[mariadb.Name]; len(got) != 1 || got[0] == n.Addr() || slices.Contains(got, "") {
		t.Fatalf("client 0 dials %v, want its proxy to %s", got, n.Addr())
	}
	if v := c.Info().Versions[mariadb.Name]; v == "" {
		t.Errorf("no version of the server in the container")
	}
	cfg := locks.Config{Endpoints: c.Endpoints(0), Prefix: "locklab-test/"}
	lock := locktest.Connect(t, mysqllock.Name, cfg).Locker(locktest.Name(t))
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
