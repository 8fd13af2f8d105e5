package locks

import (
	"slices"
	"strings"
	"sync"
)

// The server backends a program lock (exec) may name: the built-in Redis,
// ZooKeeper and etcd, and every row of the cluster's backend table, which
// cluster.RegisterBackend adds here (lock packages never import cluster).
var servers = struct {
	sync.RWMutex
	table []Backend
}{}

// RegisterTableBackend records b, a row of the cluster's backend table, as
// a server backend; cluster.RegisterBackend calls it. Registering a name
// twice keeps one.
func RegisterTableBackend(b Backend) {
	servers.Lock()
	defer servers.Unlock()
	if !slices.Contains(servers.table, b) {
		servers.table = append(servers.table, b)
		slices.Sort(servers.table)
	}
}

// ServerBackends returns every server backend: redis, zookeeper, etcd,
// then the table's rows sorted by name.
func ServerBackends() []Backend {
	servers.RLock()
	defer servers.RUnlock()
	out := []Backend{Redis, ZooKeeper, Etcd}
	for _, b := range servers.table {
		if !slices.Contains(out, b) { // etcd is a row of the table too
			out = append(out, b)
		}
	}
	return out
}

// IsServerBackend reports whether b is a server backend (ServerBackends).
func IsServerBackend(b Backend) bool { return slices.Contains(ServerBackends(), b) }

// ServerBackendList names every server backend for messages:
// "redis, zookeeper, etcd, mariadb, nats or postgres".
func ServerBackendList() string {
	all := ServerBackends()
	names := make([]string, len(all))
	for i, b := range all {
		names[i] = string(b)
	}
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
