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

// endpoints are client i's endpoints (credentials included) for the lock
// packages, converted as the runner does.
func (e *testEnv) endpoints(i int) locks.Endpoints {
	ce := e.c.Endpoints(i)
	return locks.Endpoints{
		Redis: ce.Redis, Sentinels: ce.Sentinels, MasterNames: ce.MasterNames,
		ZooKeeper: ce.ZooKeeper, Etcd: ce.Etcd, Redirect: ce.Redirect,
		Auth: locks.Auth(ce.Auth),
	}
}

// cut cuts every link of client i (no byte passes either way).
func (e *testEnv) cut(t testing.TB, i int) { t.Helper(); testenv.CutClient(t, e.c, i) }

// heal heals every link of client i.
func (e *testEnv) heal(t testing.TB, i int) { t.Helper(); testenv.HealClient(t, e.c, i) }
