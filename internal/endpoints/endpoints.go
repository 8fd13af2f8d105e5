// Package endpoints converts a client's cluster endpoints into the lock
// packages' endpoints: one conversion for the runner and the tests, as the
// lock packages never import cluster and cluster never imports locks.
package endpoints

import (
	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/locks"
)

// ForLocks converts a client's cluster endpoints (its proxied or direct
// addresses and the credentials) for the lock packages. locks.Auth mirrors
// cluster.Credentials field for field, so the conversion stops compiling
// when one gains a field the other lacks.
func ForLocks(e cluster.Endpoints) locks.Endpoints {
	return locks.Endpoints{
		Redis: e.Redis, Sentinels: e.Sentinels, MasterNames: e.MasterNames,
		ZooKeeper: e.ZooKeeper, Etcd: e.Etcd, Redirect: e.Redirect,
		Auth: locks.Auth(e.Auth),
	}
}
