package zklock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/locklab/locklab/locks"
)

// Lock names registered by this package (contract names: docs/scenario-file.md, "Lock catalogue").
const (
	NameRecipe    = "zk-recipe"
	NameHerd      = "zk-herd"
	NameRW        = "zk-rw"
	NameSemaphore = "zk-semaphore"
)

// OptSessionTimeout is the option naming the requested session timeout.
const OptSessionTimeout = "session_timeout"

// DefaultPrefix is the root path component used when Config.Prefix is empty.
const DefaultPrefix = "locklab"

// SessionTimeoutOption documents and checks the session_timeout option
// (shared with the zk-lib adapter).
var SessionTimeoutOption = locks.Option{
	Name:    OptSessionTimeout,
	Default: "ttl, else 10s",
	Doc: "ZooKeeper session timeout the client asks for (a Go duration); the server " +
		"clamps it to [2, 20] x tickTime. Unset: the lock's ttl, else 10s. Locks are " +
		"reported lost as soon as the connection drops (after 2/3 of it without a reply).",
	Check: func(v string) error {
		d, err := time.ParseDuration(v)
		if err != nil {
			return err
		}
		if d <= 0 {
			return errors.New("must be positive")
		}
		return nil
	},
}

func init() {
	locks.Register(locks.Spec{
		Name:       NameRecipe,
		Renews:     true,
		Backend:    locks.ZooKeeper,
		Standing:   true,
		Summary:    "ephemeral sequential node, watch the predecessor (Curator InterProcessMutex)",
		Fencing:    true,
		LeaseBased: true,
		Options:    []locks.Option{SessionTimeoutOption},
		New: func(ctx context.Context, cfg locks.Config) (locks.Client, error) {
			return New(ctx, cfg, Recipe)
		},
	})
	locks.Register(locks.Spec{
		Name:       NameHerd,
		Renews:     true,
		Backend:    locks.ZooKeeper,
		Standing:   true,
		Summary:    "single ephemeral node, every waiter watches it (the herd effect)",
		Fencing:    true,
		LeaseBased: true,
		Options:    []locks.Option{SessionTimeoutOption},
		New: func(ctx context.Context, cfg locks.Config) (locks.Client, error) {
			return New(ctx, cfg, Herd)
		},
	})
	locks.Register(locks.Spec{
		Name:       NameRW,
		Kind:       locks.KindRW,
		Renews:     true,
		Backend:    locks.ZooKeeper,
		Standing:   true,
		Summary:    "read-/write- ephemeral sequential nodes, the shared-lock recipe of the ZooKeeper documentation",
		Fencing:    true,
		LeaseBased: true,
		Options:    []locks.Option{SessionTimeoutOption},
		New: func(ctx context.Context, cfg locks.Config) (locks.Client, error) {
			return New(ctx, cfg, RW)
		},
	})
	locks.Register(locks.Spec{
		Name:       NameSemaphore,
		Kind:       locks.KindSemaphore,
		Renews:     true,
		Backend:    locks.ZooKeeper,
		Standing:   true,
		Summary:    "lease nodes counted under a mutex (Curator InterProcessSemaphoreV2)",
		Fencing:    true,
		LeaseBased: true,
		Options:    []locks.Option{SessionTimeoutOption, locks.PermitsOptionSpec()},
		New: func(ctx context.Context, cfg locks.Config) (locks.Client, error) {
			return New(ctx, cfg, Semaphore)
		},
	})
}

// Kind selects the recipe a Client's Lockers use.
type Kind int

// The recipes.
const (
	// Recipe is zk-recipe: ephemeral sequential nodes, each waiter watches
	// its predecessor only.
	Recipe Kind = iota
	// Herd is zk-herd: one ephemeral node, every waiter watches it.
	Herd
	// RW is zk-rw: read- and write- nodes in one queue; its Lockers are
	// locks.SharedLockers.
	RW
	// Semaphore is zk-semaphore: lease nodes, at most Config's permits
	// (locks.Permits) at once.
	Semaphore
)

// Client is one harness client: one ZooKeeper session shared by all its
// Lockers. It implements locks.Client and locks.Stats.
type Client struct {
	s       *Session
	kind    Kind
	root    string
	retry   time.Duration
	permits int // Semaphore's
	closed  atomic.Bool
}

var (
	_ locks.Client = (*Client)(nil)
	_ locks.Stats  = (*Client)(nil)
	_ locks.Locker = (*recipeLocker)(nil)
	_ locks.Locker = (*herdLocker)(nil)
	_ locks.Lease  = (*lease)(nil)
)

// New connects one client (one session, see Dial) whose Lockers use kind.
// ctx bounds the connection set-up.
func New(ctx context.Context, cfg locks.Config, kind Kind) (*Client, error) {
	s, err := Dial(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &Client{s: s, kind: kind, root: Root(cfg.Prefix), retry: cfg.Retry, permits: locks.Permits(cfg.Options)}, nil
}

// Root turns Config.Prefix into an absolute ZooKeeper path without a
// trailing slash ("locklab/" -> "/locklab"); empty means DefaultPrefix.
func Root(prefix string) string {
	p := strings.Trim(prefix, "/")
	if p == "" {
		p = DefaultPrefix
	}
	return "/" + p
}

// Locker returns the Locker of the lock name, its nodes under
// /<prefix>/<name>. Lockers are cheap; many may share a name. An RW
// client's Lockers are locks.SharedLockers.
func (c *Client) Locker(name string) locks.Locker {
	dir := c.root + "/" + strings.Trim(name, "/")
	switch c.kind {
	case Herd:
		return &herdLocker{s: c.s, dir: dir, retry: c.retry}
	case RW:
		return &rwLocker{
			read:  &recipeLocker{s: c.s, dir: dir, retry: c.retry, q: readQueue},
			write: &recipeLocker{s: c.s, dir: dir, retry: c.retry, q: writeQueue},
		}
	case Semaphore:
		return newSemaphoreLocker(c.s, dir, c.permits, c.retry)
	}
	return &recipeLocker{s: c.s, dir: dir, retry: c.retry, q: mutexQueue}
}

// Session returns the client's session.
func (c *Client) Session() *Session { return c.s }

// Counters implements locks.Stats (see Session.Counters).
func (c *Client) Counters() map[string]int64 { return c.s.Counters() }

// Close closes the session: its ephemeral nodes, and so its locks, go away.
func (c *Client) Close() error {
	if c.closed.CompareAndSwap(false, true) {
		c.s.Close()
	}
	return nil
}

// lease is one holding, common to both recipes.
type lease struct {
	s       *Session
	epoch   uint64 // the session epoch the holding was established in
	token   uint64
	lost    <-chan struct{}
	untrack func()
	once    sync.Once
	release func(ctx context.Context) error
}

func (l *lease) Token() uint64          { return l.token }
func (l *lease) Promise() locks.Promise { return l.s.Promise(l.epoch) }
func (l *lease) Lost() <-chan struct{}  { return l.lost }
func (l *lease) Release(ctx context.Context) error {
	err := fmt.Errorf("zklock: released twice: %w", locks.ErrNotHeld)
	l.once.Do(func() {
		l.untrack()
		err = l.release(ctx)
	})
	return err
}

// awaitWatch waits for watch to fire, for retry to pass (the poll
// fallback of a blocked Acquire; 0: none) or for ctx to end, returning
// ctx.Err() then.
func awaitWatch(ctx context.Context, watch <-chan zk.Event, retry time.Duration) error {
	var poll <-chan time.Time
	if retry > 0 {
		t := time.NewTimer(retry)
		defer t.Stop()
		poll = t.C
	}
	select {
	case <-watch:
	case <-poll:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}
