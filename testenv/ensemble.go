package testenv

import (
	"testing"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/locks"
)

// Ensemble is a running cluster as the lock packages' tests see it: each
// client's endpoints in the lock packages' terms, and cuts of one client's
// links.
type Ensemble struct {
	C *cluster.Cluster
}

// NewEnsemble starts 3 nodes of a table backend (a ZooKeeper ensemble,
// an etcd cluster, nats, ...) for clients
// clients, every client with its own proxied links (Cluster: skipped under
// -short, fails in CI when a binary is missing).
func NewEnsemble(t testing.TB, backend locks.Backend, clients int) *Ensemble {
	t.Helper()
	spec := cluster.Spec{Clients: clients}
	if _, ok := cluster.LookupBackend(string(backend)); !ok {
		t.Fatalf("no test ensemble for backend %q", backend)
	}
	spec.Backends = map[string]cluster.Settings{string(backend): {"nodes": 3}}
	return &Ensemble{C: Cluster(t, spec)}
}

// Endpoints are client i's endpoints (credentials included), converted as
// the runner does.
func (e *Ensemble) Endpoints(i int) locks.Endpoints { return e.C.Endpoints(i) }

// Cut cuts every link of client i (no byte passes either way).
func (e *Ensemble) Cut(t testing.TB, i int) { t.Helper(); CutClient(t, e.C, i) }

// Heal heals every link of client i.
func (e *Ensemble) Heal(t testing.TB, i int) { t.Helper(); HealClient(t, e.C, i) }
