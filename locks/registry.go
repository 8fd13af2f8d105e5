package locks

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"
)

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
// specs): "redis", "zookeeper", "etcd", "nats".
type Backend string

// Backends known to the harness.
const (
	Redis     Backend = "redis"
	ZooKeeper Backend = "zookeeper"
	Etcd      Backend = "etcd"
	// Postgres, MariaDB and NATS are backends of the cluster's backend
	// table (their addresses are in Endpoints.Table).
	Postgres Backend = "postgres"
	MariaDB  Backend = "mariadb"
	NATS     Backend = "nats"
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

// CheckBool is the Check of a boolean option: true, false, 1, 0 and the
// other spellings strconv.ParseBool accepts.
func CheckBool(v string) error {
	if _, err := strconv.ParseBool(v); err != nil {
		return fmt.Errorf("must be true or false (got %q)", v)
	}
	return nil
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
	// Renews reports whether the lock keeps its lease alive by itself while
	// held (watchdog renewal, session heartbeats, lease keep-alives), so a
	// holder loses it only when it cannot reach the servers; false for a
	// lease that runs out one TTL after the grant unless an option (renew)
	// says otherwise.
	Renews bool
	// Broken marks variants that are unsafe by design (kept to show why).
	Broken bool
	// Kind is what the lock promises about holders inside at once ("" is
	// a mutex); a KindRW lock's Lockers implement SharedLocker, a
	// KindSemaphore lock declares PermitsOptionSpec among its Options.
	Kind Kind
	// InProcess marks locks that are real only among the clients of one
	// process (the calibration lock "mem"): they cannot run with
	// process_per_client or pause-client faults.
	InProcess bool
	// MinRedis is the least number of Redis primaries the lock needs (redlock).
	MinRedis int
	// Standing marks locks whose waiters stand in the race while they
	// wait: a waiting acquire is a request the server itself answers when
	// the holder's state goes (a ZooKeeper watch on the node before it, an
	// etcd watch on the key before it, a PostgreSQL or MariaDB lock call
	// blocked in the server), sessions and leases included. A fault's
	// exposure counts such a call as a contender over its whole wait, not
	// only at its sends (docs/verdicts.md). Not a Redis lock that waits
	// for a release message: a key that expires or vanishes sends none.
	Standing bool
	// Quorum marks locks that take a majority of independent Redis
	// primaries (Redlock, redsync): they use every primary of the cluster
	// and tolerate the loss of a minority of them.
	Quorum bool
	// RedisCluster reports whether a Redis lock runs on a Redis Cluster
	// (cluster.redis.mode: cluster): its client follows the cluster's
	// redirects (Endpoints.RedisCluster) and every key it touches for one
	// lock name falls in one hash slot. Scenario validation refuses the
	// others there.
	RedisCluster bool
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
