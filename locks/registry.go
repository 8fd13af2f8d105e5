package locks

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sort"
	"strings"
	"sync"
	"time"
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
	// ZooKeeper and Etcd are the ensemble members' client addresses.
	ZooKeeper []string
	Etcd      []string
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

// Auth are credentials for the backends' servers, the same for every node
// of a backend. The zero value means none. The harness fills it from the
// LOCKLAB_* environment variables for provider external only (see
// cluster.Credentials, whose fields it mirrors one for one: the runner
// converts one into the other).
//
// Clients reach the servers through proxies on 127.0.0.1, so TLS clients
// verify each server's certificate against the host of its real address
// (Endpoints.Real), not against the address they dial.
type Auth struct {
	// RedisUsername is the Redis 6 ACL user; "" with a RedisPassword means
	// the default user (AUTH password). Sentinels get the same credentials.
	RedisUsername string
	RedisPassword string
	// RedisTLS makes Redis connections (Sentinel's too) use TLS, verified
	// against RedisCACert (a PEM file) or, when it is empty, the system's
	// roots.
	RedisTLS    bool
	RedisCACert string

	// EtcdUsername and EtcdPassword log in to etcd (auth enabled).
	EtcdUsername string
	EtcdPassword string
	// EtcdCACert (PEM file) verifies the members' certificates; EtcdCert
	// and EtcdKey are a client certificate and its key. TLS is on when any
	// is set (EtcdTLS).
	EtcdCACert string
	EtcdCert   string
	EtcdKey    string

	// ZooKeeperDigest is "user:password": the session adds it as digest
	// auth, and nodes the locks create get a digest ACL for that identity
	// only (instead of world:anyone).
	ZooKeeperDigest string
}

// EtcdTLS reports whether etcd connections use TLS.
func (a Auth) EtcdTLS() bool { return a.EtcdCACert != "" || a.EtcdCert != "" }

// IsZero reports whether no credential is set.
func (a Auth) IsZero() bool { return a == Auth{} }

// String says which credentials are set (user names, "password ***",
// "tls"), without a secret or a file name.
func (a Auth) String() string {
	var parts []string
	if a.RedisPassword != "" || a.RedisTLS {
		s := "redis:"
		if a.RedisUsername != "" {
			s += " user " + a.RedisUsername
		}
		if a.RedisPassword != "" {
			s += " password ***"
		}
		if a.RedisTLS {
			s += " tls"
		}
		parts = append(parts, s)
	}
	if a.EtcdPassword != "" || a.EtcdTLS() {
		s := "etcd:"
		if a.EtcdUsername != "" {
			s += " user " + a.EtcdUsername
		}
		if a.EtcdPassword != "" {
			s += " password ***"
		}
		if a.EtcdTLS() {
			s += " tls"
		}
		if a.EtcdCert != "" {
			s += " client-cert"
		}
		parts = append(parts, s)
	}
	if a.ZooKeeperDigest != "" {
		user, _, _ := strings.Cut(a.ZooKeeperDigest, ":")
		parts = append(parts, "zookeeper: digest "+user+":***")
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}

// GoString redacts like String (for %#v).
func (a Auth) GoString() string { return "locks.Auth{" + a.String() + "}" }

// LogValue redacts like String (slog).
func (a Auth) LogValue() slog.Value { return slog.StringValue(a.String()) }

// ZooKeeperUser splits ZooKeeperDigest into user and password; ok is false
// when no digest is set.
func (a Auth) ZooKeeperUser() (user, password string, ok bool) {
	if a.ZooKeeperDigest == "" {
		return "", "", false
	}
	user, password, _ = strings.Cut(a.ZooKeeperDigest, ":")
	return user, password, true
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
		slog.Any("redis", e.Redis), slog.Any("sentinels", e.Sentinels),
		slog.Any("master_names", e.MasterNames), slog.Any("zookeeper", e.ZooKeeper),
		slog.Any("etcd", e.Etcd), slog.Any("redirect", e.Redirect),
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

// Config is what a constructor gets: where the servers are and the lock's
// options from the scenario.
type Config struct {
	Endpoints Endpoints
	// TTL is the lease length for lease-based locks (Redis key expiry, etcd
	// lease TTL, ZooKeeper session timeout when not set in Options).
	TTL time.Duration
	// Retry is the longest a blocked Acquire waits between attempts when no
	// notification arrives (the poll fallback). 0 means the package default.
	Retry time.Duration
	// Prefix namespaces every key or path the lock creates ("locklab/").
	Prefix string
	// Options holds backend-specific options by name (wait_replicas,
	// session_timeout, ...), already validated against Spec.Options.
	Options map[string]string
	// Seed seeds the client's retry jitter (every random choice in a run
	// derives from the scenario seed). Owner ids are random regardless.
	Seed int64
	// Logger receives diagnostics; nil means discard.
	Logger *slog.Logger
}

// LogValue logs the config with the endpoints' Auth redacted.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.Any("endpoints", c.Endpoints), slog.Duration("ttl", c.TTL),
		slog.Duration("retry", c.Retry), slog.String("prefix", c.Prefix),
		slog.Any("options", c.Options), slog.Int64("seed", c.Seed),
	)
}

// Log returns the config's logger, or one that discards.
func (c Config) Log() *slog.Logger {
	if c.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return c.Logger
}

// Client is one harness client's connection set to a backend. It hands out
// Lockers by lock name; all of them share the client's connections and
// identity. Close releases the connections (not the locks).
type Client interface {
	Locker(name string) Locker
	Close() error
}

// Stats is implemented by clients that count their server traffic, used to
// show e.g. the herd effect (requests or watch notifications per hand-off).
type Stats interface {
	// Counters returns monotonically increasing counts by name
	// ("requests", "watch_events", ...).
	Counters() map[string]int64
}

// Backend names the server family a lock needs (contract with cluster
// specs): "redis", "zookeeper", "etcd".
type Backend string

// Backends known to the harness.
const (
	Redis     Backend = "redis"
	ZooKeeper Backend = "zookeeper"
	Etcd      Backend = "etcd"
	// Memory is no server at all: the in-process calibration lock "mem".
	Memory Backend = "mem"
)

// Option documents one backend-specific option a lock accepts.
type Option struct {
	Name    string
	Default string
	Doc     string
	// Check validates a value; nil accepts any string.
	Check func(string) error
}

// Spec describes one registered lock implementation.
type Spec struct {
	// Name is the contract name used in scenario files ("redis-cad").
	Name string
	// Backend is the server family the lock runs against.
	Backend Backend
	// Summary is one line for `bench list`.
	Summary string
	// Fencing reports whether Token returns a real fencing token.
	Fencing bool
	// LeaseBased reports whether the lock expires on its own (a TTL, lease or
	// session) so a paused holder can lose it.
	LeaseBased bool
	// Broken marks variants that are unsafe by design (kept to show why).
	Broken bool
	// InProcess marks locks that are real only among the clients of one
	// process (the calibration lock "mem"): they cannot run with
	// process_per_client or pause-client faults.
	InProcess bool
	// MinRedis is the least number of Redis primaries the lock needs (redlock).
	MinRedis int
	// Options lists the accepted backend-specific options.
	Options []Option
	// New connects one client. ctx bounds the connection set-up only.
	New func(ctx context.Context, cfg Config) (Client, error)
}

var (
	mu       sync.RWMutex
	registry = map[string]Spec{}
)

// Register adds a lock implementation; it panics on a duplicate or empty
// name, as registration happens in init functions.
func Register(s Spec) {
	mu.Lock()
	defer mu.Unlock()
	if s.Name == "" || s.New == nil {
		panic("locks: Register needs a name and a constructor")
	}
	if _, dup := registry[s.Name]; dup {
		panic("locks: duplicate lock " + s.Name)
	}
	registry[s.Name] = s
}

// Lookup returns the spec registered under name.
func Lookup(name string) (Spec, bool) {
	mu.RLock()
	defer mu.RUnlock()
	s, ok := registry[name]
	return s, ok
}

// All returns every registered spec sorted by backend, then name.
func All() []Spec {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]Spec, 0, len(registry))
	for _, s := range registry {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Backend != out[j].Backend {
			return out[i].Backend < out[j].Backend
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// Names returns every registered lock name, sorted.
func Names() []string {
	all := All()
	out := make([]string, len(all))
	for i, s := range all {
		out[i] = s.Name
	}
	sort.Strings(out)
	return out
}

// CheckOptions validates opts against the spec's declared options.
func (s Spec) CheckOptions(opts map[string]string) error {
	for k, v := range opts {
		var found *Option
		for i := range s.Options {
			if s.Options[i].Name == k {
				found = &s.Options[i]
			}
		}
		if found == nil {
			allowed := make([]string, len(s.Options))
			for i, o := range s.Options {
				allowed[i] = o.Name
			}
			return fmt.Errorf("lock %s has no option %q (allowed: %v)", s.Name, k, allowed)
		}
		if found.Check != nil {
			if err := found.Check(v); err != nil {
				return fmt.Errorf("lock %s option %s: %w", s.Name, k, err)
			}
		}
	}
	return nil
}
