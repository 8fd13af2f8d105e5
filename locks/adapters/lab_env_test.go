package adapters_test

import (
	"testing"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/internal/testenv"
	"github.com/locklab/locklab/locks"
)

// labEnv is a real 3-node ensemble per test, every client with its own
// proxied links (cluster package).
type labEnv struct {
	c *cluster.Cluster
}

// newLabEnv starts a 3-node ensemble of backend for clients clients
// (testenv.Cluster: skipped under -short, fails in CI when a binary is
// missing).
func newLabEnv(t testing.TB, clients int, backend locks.Backend) *labEnv {
	t.Helper()
	spec := cluster.Spec{Clients: clients}
	switch backend {
	case locks.ZooKeeper:
		spec.ZooKeeper = &cluster.ZooKeeperSpec{Nodes: 3}
	case locks.Etcd:
		spec.Etcd = &cluster.EtcdSpec{Nodes: 3}
	default:
		t.Fatalf("no test cluster for backend %q", backend)
	}
	return &labEnv{c: testenv.Cluster(t, spec)}
}

// endpoints are client i's endpoints (credentials included) for the lock
// packages, converted as the runner does.
func (e *labEnv) endpoints(i int) locks.Endpoints {
	ce := e.c.Endpoints(i)
	return locks.Endpoints{
		Redis: ce.Redis, Sentinels: ce.Sentinels, MasterNames: ce.MasterNames,
		ZooKeeper: ce.ZooKeeper, Etcd: ce.Etcd, Redirect: ce.Redirect,
		Auth: locks.Auth(ce.Auth),
	}
}

// cut cuts every link of client i (no byte passes either way).
func (e *labEnv) cut(t testing.TB, i int) { t.Helper(); testenv.CutClient(t, e.c, i) }

// heal heals every link of client i.
func (e *labEnv) heal(t testing.TB, i int) { t.Helper(); testenv.HealClient(t, e.c, i) }
