//go:build !devenv

package etcdlock_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/internal/testenv"
	"github.com/locklab/locklab/locks"
)

// testEnv is a real 3-node ensemble per test, every client with its own
// proxied links (cluster package).
type testEnv struct {
	c *cluster.Cluster
}

// newEnv starts the servers for clients clients (testenv.Cluster: skipped
// under -short, fails in CI when a binary is missing).
func newEnv(t testing.TB, clients int) *testEnv {
	t.Helper()
	return &testEnv{c: testenv.Cluster(t, cluster.Spec{Etcd: &cluster.EtcdSpec{Nodes: 3}, Clients: clients})}
}

func (e *testEnv) endpoints(i int) locks.Endpoints { return locks.Endpoints(e.c.Endpoints(i)) }

// cut cuts every link of client i (no byte passes either way).
func (e *testEnv) cut(t testing.TB, i int) {
	t.Helper()
	links, err := e.c.Links(fmt.Sprintf("client-%d", i))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range links {
		if err := l.Cut(); err != nil {
			t.Fatal(err)
		}
	}
}

// heal heals every link of client i.
func (e *testEnv) heal(t testing.TB, i int) {
	t.Helper()
	links, err := e.c.Links(fmt.Sprintf("client-%d", i))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, l := range links {
		if err := l.Heal(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
