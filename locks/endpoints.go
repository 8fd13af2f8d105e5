package locks

import (
	"log/slog"
	"net"
)

// Endpoints are the addresses a client uses to reach the backends. Every
// address is the client's own (proxied) address; the harness never hands a
// lock the servers' real addresses.
type Endpoints struct {
	// Redis holds one address per independent primary (redis-0, redis-1, ...).
	Redis []string
	// Sentinels are Sentinel addresses; MasterNames the monitored master name
	// of each primary, in the order of Redis. Empty without Sentinel.
	Sentinels   []string
	MasterNames []string
	// RedisCluster says Redis holds the seed addresses of one Redis
	// Cluster (cluster.redis.mode: cluster), not independent primaries:
	// a client follows its slot map and redirects, dialing each address
	// the cluster announces through Dial.
	RedisCluster bool `json:",omitempty"`
	// Table holds the client addresses of the table backends' servers
	// (zookeeper, etcd, postgres, mariadb, ...) by backend name, in the
	// order of their nodes (zk-0, zk-1, ...; postgres-0, postgres-0-r0, ...).
	// A lock of a table backend reads Table[string(its Backend)].
	Table map[string][]string `json:",omitempty"`
	// Redirect maps a server's real address to this client's proxied address
	// for it. Backends that discover addresses (Sentinel reports the promoted
	// replica's real address) dial through it so traffic stays on the
	// client's proxied links. A missing entry means dial the address as is.
	Redirect map[string]string
	// Auth holds the credentials the clients log in with (none: the
	// servers need none). It is part of Endpoints so that it travels with
	// them to client processes (workload.WorkerSpec, JSON on the worker's
	// stdin); the harness never writes Endpoints to results or logs, and
	// Auth's String, GoString and LogValue redact every secret.
	Auth Auth `json:",omitzero"`
}

// Dial returns the address to dial for addr: its redirect when there is one.
func (e Endpoints) Dial(addr string) string {
	if r, ok := e.Redirect[addr]; ok {
		return r
	}
	return addr
}

// LogValue logs the endpoints with Auth redacted (a JSON handler would
// otherwise marshal the credentials).
func (e Endpoints) LogValue() slog.Value {
	return slog.GroupValue(
		slog.Any("redis", e.Redis), slog.Bool("redis_cluster", e.RedisCluster), slog.Any("sentinels", e.Sentinels),
		slog.Any("master_names", e.MasterNames),
		slog.Any("table", e.Table), slog.Any("redirect", e.Redirect),
		slog.String("auth", e.Auth.String()),
	)
}

// Real returns the real server address behind addr: addr itself when it
// is not a proxied address of e (a Redirect value), else the Redirect key
// that maps to it (when several do, aliases of one node, the first by host
// name before IP literal, then in sort order, so the choice is stable). TLS
// clients verify the server's certificate against Real's host.
func (e Endpoints) Real(addr string) string {
	if _, ok := e.Redirect[addr]; ok {
		return addr
	}
	var best string
	for real, proxied := range e.Redirect {
		if proxied != addr {
			continue
		}
		if best == "" || realBefore(real, best) {
			best = real
		}
	}
	if best == "" {
		return addr
	}
	return best
}

// realBefore orders candidate real addresses: host names first, then IP
// literals, each in sort order.
func realBefore(a, b string) bool {
	ipA, ipB := isIPAddr(a), isIPAddr(b)
	if ipA != ipB {
		return ipB
	}
	return a < b
}

func isIPAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	return net.ParseIP(host) != nil
}

// ServerName returns the host a TLS client dialing addr verifies the
// server's certificate against: the host of Real(addr).
func (e Endpoints) ServerName(addr string) string {
	real := e.Real(addr)
	host, _, err := net.SplitHostPort(real)
	if err != nil {
		return real
	}
	return host
}
