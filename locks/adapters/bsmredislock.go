package adapters

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/locks"
	ownredislock "github.com/locklab/locklab/locks/redislock"
)

// DefaultBSMRetry is bsm-redislock's retry interval when Config.Retry is 0:
// the LinearBackoff(100ms) of the library's README.
const DefaultBSMRetry = 100 * time.Millisecond

func init() {
	locks.Register(locks.Spec{
		Name:    "bsm-redislock",
		Backend: locks.Redis,
		Summary: "bsm/redislock Obtain with LinearBackoff retry, unmodified: SET NX PX + Lua compare-and-delete on one primary; " +
			"no renewal unless renew=true (Refresh every ttl/3)",
		LeaseBased: true,
		MinRedis:   1,
		// One key per lock: on a Redis Cluster the client follows its
		// slot map (redislock.ConnectUniversal).
		RedisCluster: true,
		Options:      []locks.Option{renewOption},
		New: func(ctx context.Context, cfg locks.Config) (locks.Client, error) {
			return NewBSM(ctx, cfg)
		},
	})
}

// BSM is a client of the bsm/redislock library on the first primary.
type BSM struct {
	rdb   redis.UniversalClient
	lc    *redislock.Client
	ttl   time.Duration
	retry time.Duration
	key   string // prefix
	renew bool
	log   *slog.Logger
	reqs  atomic.Int64
}

var (
	_ locks.Client = (*BSM)(nil)
	_ locks.Stats  = (*BSM)(nil)
)

// NewBSM connects to Endpoints' first primary (see redislock.Connect in
// locklab's own package). TTL is the lock's (default
// redislock.DefaultTTL), Retry the LinearBackoff interval (default
// DefaultBSMRetry); the library's retry has no randomness to seed.
func NewBSM(ctx context.Context, cfg locks.Config) (*BSM, error) {
	s, err := parseCommon("bsm-redislock", cfg)
	if err != nil {
		return nil, err
	}
	c := &BSM{
		ttl: s.ttl, retry: cfg.Retry, key: s.prefix, renew: s.renew,
		log: cfg.Log().With("lock", "bsm-redislock"),
	}
	if c.retry == 0 {
		c.retry = DefaultBSMRetry
	}
	if c.rdb, err = ownredislock.ConnectUniversal(ctx, cfg.Endpoints, 0); err != nil {
		return nil, err
	}
	ownredislock.CountCommands(c.rdb, &c.reqs)
	c.lc = redislock.New(c.rdb)
	return c, nil
}

// Locker returns a Locker for the lock name (key Prefix+name).
func (c *BSM) Locker(name string) locks.Locker { return &bsmLocker{c: c, key: c.key + name} }

// Close closes the connection.
func (c *BSM) Close() error { return c.rdb.Close() }

// Counters implements locks.Stats: "requests" counts commands sent.
func (c *BSM) Counters() map[string]int64 {
	return map[string]int64{"requests": c.reqs.Load()}
}

type bsmLocker struct {
	c   *BSM
	key string
}

// Acquire calls Obtain with a LinearBackoff retry until ctx ends. Obtain
// gives up after one TTL when its ctx has no deadline, so each call gets at
// most a TTL and Acquire calls again while ctx lasts.
func (l *bsmLocker) Acquire(ctx context.Context) (locks.Lease, error) {
	c := l.c
	for {
		start := time.Now()
		try, cancel := context.WithTimeout(ctx, c.ttl)
		locks.Tried(ctx)
		lock, err := c.lc.Obtain(try, l.key, c.ttl, &redislock.Options{
			RetryStrategy: triedBackoff{ctx, redislock.LinearBackoff(c.retry)},
		})
		budgetSpent := locks.ContextDone(try) != nil
		cancel()
		switch {
		case err == nil:
			return l.lease(lock, start), nil
		case locks.ContextDone(ctx) != nil:
			return nil, locks.AcquireError(ctx, l.key, err)
		case budgetSpent || errors.Is(err, redislock.ErrNotObtained):
			continue
		default:
			return nil, fmt.Errorf("acquire %s: %w", l.key, err)
		}
	}
}

func (l *bsmLocker) lease(lock *redislock.Lock, start time.Time) *bsmLease {
	c := l.c
	s := &bsmLease{lock: lock, key: l.key, lost: neverLost, ttl: c.ttl, sent: start}
	if c.renew {
		s.ext = extendEvery(c.ttl/3, func(ctx context.Context) error {
			sent := time.Now()
			err := lock.Refresh(ctx, c.ttl, nil)
			if err == nil {
				s.mu.Lock()
				s.sent = sent
				s.mu.Unlock()
			}
			return err
		}, c.log.With("key", l.key))
		s.lost = s.ext.lost
	}
	return s
}

type bsmLease struct {
	ttl  time.Duration
	mu   sync.Mutex
	sent time.Time // Obtain's call, or the last successful Refresh's send
	lock *redislock.Lock
	key  string
	ext  *extender
	lost <-chan struct{}
}

func (s *bsmLease) Token() uint64 { return 0 }

func (s *bsmLease) Lost() <-chan struct{} { return s.lost }

// Promise is sent + ttl - drift where sent is when Obtain was called (the
// library retries inside it, so the successful SET was sent then or later:
// the promise may be shorter than the key's life), moved by each
// successful Refresh from its send time. Estimated.
func (s *bsmLease) Promise() locks.Promise {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := locks.TTLPromise(s.sent, s.ttl)
	p.Estimated = true
	return p
}

// Release stops the refresh, then Release; the library's ErrLockNotHeld is
// locks.ErrNotHeld.
func (s *bsmLease) Release(ctx context.Context) error {
	if s.ext != nil {
		s.ext.stop()
	}
	err := s.lock.Release(ctx)
	if errors.Is(err, redislock.ErrLockNotHeld) {
		return fmt.Errorf("release %s: %w", s.key, locks.ErrNotHeld)
	}
	if err != nil {
		return fmt.Errorf("release %s: %w", s.key, err)
	}
	return nil
}

// triedBackoff tells locks.Tried of each failed try of Obtain: the
// library asks for the next backoff right after one.
type triedBackoff struct {
	ctx context.Context
	redislock.RetryStrategy
}

// NextBackoff implements redislock.RetryStrategy.
func (b triedBackoff) NextBackoff() time.Duration {
	locks.Tried(b.ctx)
	return b.RetryStrategy.NextBackoff()
}
