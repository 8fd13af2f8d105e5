package cluster

// This file is the exported API of package cluster that the rest of locklab
// (runner, faults, tests) builds on. Keep these names; add freely.

import (
	"log/slog"
	"time"

	"github.com/locklab/locklab/locks"
)

// Provider values (contract: cluster.provider in scenario files).
const (
	ProviderLocal    = "local"
	ProviderDocker   = "docker"
	ProviderExternal = "external"
	// ProviderNetns runs every server as a child process in a network
	// namespace of its own.
	ProviderNetns = "netns"
)

// Persistence values for Redis (contract).
const (
	PersistNone     = "none"
	PersistEverysec = "everysec"
	PersistAlways   = "always"
)

// Redis modes (contract: cluster.redis.mode in scenario files).
const (
	// RedisStandalone is independent primaries, each with its replicas,
	// failed over by Sentinel when the topology has sentinels.
	RedisStandalone = "standalone"
	// RedisCluster is one Redis Cluster of the primaries (the 16384 hash
	// slots split evenly over them, redis-0 first) and their replicas,
	// which fails over by itself: no sentinels.
	RedisCluster = "cluster"
)

// Node kinds.
const (
	KindRedis    = "redis"    // a primary: redis-0, redis-1, ...
	KindReplica  = "replica"  // redis-0-r0, ...
	KindSentinel = "sentinel" // sentinel-0, ...
)

// RedisSpec is a Redis topology: Primaries independent primaries (redis-0..),
// each with Replicas replicas (redis-0-r0..), and Sentinels sentinels
// (sentinel-0..) monitoring every primary (master names "redis-0", ...).
//
// With Mode RedisCluster the primaries form one Redis Cluster instead:
// Sentinels must be 0 and Primaries at least 3 (a majority of primaries
// must survive to elect a replica).
type RedisSpec struct {
	// Mode is RedisStandalone (also "", the default) or RedisCluster.
	Mode        string
	Primaries   int
	Replicas    int
	Sentinels   int
	Persistence string // PersistNone (default), PersistEverysec, PersistAlways
	Image       string // docker provider only
}

// SettingsOf returns the section of row b in s (Redis's: Spec.Redis as
// its row's fields), with every default filled in, and whether s declares
// it.
func (s Spec) SettingsOf(b TableBackend) (Settings, bool) {
	if b.Name == BackendRedis {
		if s.Redis == nil {
			return nil, false
		}
		return b.Settle(s.Redis.settings()), true
	}
	set, ok := s.Backends[b.Name]
	return b.Settle(set), ok
}

// Declare puts the section of the row called name into s with settings
// set (fields it lacks at their defaults): Spec.Redis for Redis's row,
// Spec.Backends[name] for the others.
func (s *Spec) Declare(name string, set Settings) {
	if name == BackendRedis {
		r := RedisSpecOf(set)
		s.Redis = &r
		return
	}
	if s.Backends == nil {
		s.Backends = map[string]Settings{}
	}
	s.Backends[name] = set
}

// RedisSpecOf is the typed section of Redis's row for settings set, its
// row's defaults where set lacks a field (none when no package registered
// the row: Start then refuses the section).
func RedisSpecOf(set Settings) RedisSpec {
	if b, ok := LookupBackend(BackendRedis); ok {
		set = b.Settle(set)
	}
	return RedisSpec{Mode: set.String("mode"), Primaries: set.Int("primaries"), Replicas: set.Int("replicas"),
		Sentinels: set.Int("sentinels"), Persistence: set.String("persistence"), Image: set.String(ImageField)}
}

// settings are r as the fields of Redis's row (cluster/backends/redis):
// a mode, primaries or persistence left at its zero value takes the row's
// default (standalone, 1, none).
func (r RedisSpec) settings() Settings {
	s := Settings{"replicas": r.Replicas, "sentinels": r.Sentinels, ImageField: r.Image}
	if r.Mode != "" {
		s["mode"] = r.Mode
	}
	if r.Primaries != 0 {
		s["primaries"] = r.Primaries
	}
	if r.Persistence != "" {
		s["persistence"] = r.Persistence
	}
	return s
}

// ExternalSpec lists servers the user already runs (provider external).
type ExternalSpec struct {
	Redis []string
	// Table lists the servers of table backends by backend name
	// (cluster.external.etcd, cluster.external.postgres, ...).
	Table map[string][]string
}

// List is the servers of backend name (Redis's included).
func (e *ExternalSpec) List(name string) []string {
	if name == BackendRedis {
		return e.Redis
	}
	return e.Table[name]
}

// Set makes addrs the servers of backend name (Redis's included).
func (e *ExternalSpec) Set(name string, addrs []string) {
	if name == BackendRedis {
		e.Redis = addrs
		return
	}
	if e.Table == nil {
		e.Table = map[string][]string{}
	}
	e.Table[name] = addrs
}

// Spec is everything Start needs. Nil backend specs are not started.
type Spec struct {
	Provider string // default ProviderLocal
	Redis    *RedisSpec
	External *ExternalSpec
	// Backends are the sections of table backends (table.go) by backend
	// name: cluster.etcd, cluster.postgres, ... A backend without an
	// entry is not started.
	Backends map[string]Settings
	// Clients is how many harness clients get their own proxied links
	// (client-0 .. client-N-1) to every client-facing node.
	Clients int
	// ClientProxies names the servers whose client links go through
	// proxies: every client's link to each of them, so clients stay
	// symmetric. nil means every server; an empty non-nil slice none.
	// Clients reach the other servers directly (Endpoints), and faults
	// cannot act on those links (faults.ClientProxies says which a list of
	// faults needs).
	ClientProxies []string
	// Dir holds the nodes' data dirs and logs (Dir/logs/<node>.log). Logs
	// are kept after Close; data dirs are removed.
	Dir string
	// LossyDisks puts every node's data dir on a filesystem that loses
	// what the server never fsynced when the node's power is cut
	// (Node.PowerCut). Providers local and netns only; a power-cut fault
	// in a run sets it.
	LossyDisks bool
	// RunID labels containers (docker) and names the run in logs.
	RunID  string
	Logger *slog.Logger
}

// Endpoints are one client's addresses, all through that client's
// proxies, as the lock packages take them (Cluster.Endpoints): the
// cluster's own type is the locks package's, so nothing converts them.
type Endpoints = locks.Endpoints

// Info describes a started cluster for the result file.
type Info struct {
	Provider string
	Versions map[string]string        // backend kind -> server version
	Startup  map[string]time.Duration // backend kind -> time until ready
}
