package locks

import (
	"log/slog"
	"time"
)

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
