package zklock_test

import (
	"testing"

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
	return &testEnv{c: testenv.Cluster(t, cluster.Spec{ZooKeeper: &cluster.ZooKeeperSpec{Nodes: 3}, Clients: clients})}
}

func (e *testEnv) endpoints(i int) locks.Endpoints { return locks.Endpoints(e.c.Endpoints(i)) }

// cut cuts every link of client i (no byte passes either way).
func (e *testEnv) cut(t testing.TB, i int) { t.Helper(); testenv.CutClient(t, e.c, i) }

// heal heals every link of client i.
func (e *testEnv) heal(t testing.TB, i int) { t.Helper(); testenv.HealClient(t, e.c, i) }
