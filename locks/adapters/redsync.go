package adapters

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/redislock"
)

// optRenew is the option both Redis adapters take.
const optRenew = "renew"

var renewOption = locks.Option{
	Name:    optRenew,
	Default: "false",
	Doc: "extend the lock every ttl/3 while held (what the library leaves to its user); " +
		"Lost closes on the first failed extension",
	Check: locks.CheckBool,
}

func init() {
	locks.Register(locks.Spec{
		Name:    "redsync",
		Backend: locks.Redis,
		Summary: "go-redsync/redsync/v4 Mutex, unmodified: Redlock quorum over every configured primary; " +
			"no renewal unless renew=true (Extend every ttl/3)",
		LeaseBased: true,
		MinRedis:   1,
		Quorum:     true,
		// On a Redis Cluster: one pool, a cluster client
		// (redislock.ConnectUniversal), so a quorum of one.
		RedisCluster: true,
		Options:      []locks.Option{renewOption},
		New: func(ctx context.Context, cfg locks.Config) (locks.Client, error) {
			return NewRedsync(ctx, cfg)
		},
	})
}

// Redsync is a client of the redsync library: one go-redis pool per
// configured primary (Endpoints.Redis, or Endpoints.MasterNames through
// Sentinel), locking on a majority of them.
type Redsync struct {
	rdbs  []redis.UniversalClient
	rs    *redsync.Redsync
	ttl   time.Duration
	retry time.Duration // 0: the library's 50-250ms, drawn from our seeded source
	key   string        // prefix
	renew bool
	log   *slog.Logger
	reqs  atomic.Int64

	rngMu sync.Mutex
	rng   *rand.Rand
}

var (
	_ locks.Client = (*Redsync)(nil)
	_ locks.Stats  = (*Redsync)(nil)
)

// NewRedsync connects to every primary (see redislock.Connect). TTL is the
// mutex's expiry (default redislock.DefaultTTL); Retry the longest delay
// between attempts, jittered down to half of it (default: redsync's own
// 50-250ms); Seed seeds that jitter.
func NewRedsync(ctx context.Context, cfg locks.Config) (*Redsync, error) {
	s, err := parseCommon("redsync", cfg)
	if err != nil {
		return nil, err
	}
	n := len(cfg.Endpoints.Redis)
	if len(cfg.Endpoints.Sentinels) > 0 {
		n = len(cfg.Endpoints.MasterNames)
	}
	if cfg.Endpoints.RedisCluster && n > 0 {
		n = 1
	}
	if n == 0 {
		return nil, errors.New("redsync: no Redis primaries")
	}
	c := &Redsync{
		ttl: s.ttl, retry: cfg.Retry, key: s.prefix, renew: s.renew,
		log: cfg.Log().With("lock", "redsync"),
		rng: rand.New(rand.NewPCG(uint64(cfg.Seed), 0x72656473796e63)), // "redsync"
	}
	pools := make([]redsyncredis.Pool, 0, n)
	for i := range n {
		rdb, err := redislock.ConnectUniversal(ctx, cfg.Endpoints, i)
		if err != nil {
			_ = c.Close()
			return nil, err
		}
		redislock.CountCommands(rdb, &c.reqs)
		c.rdbs = append(c.rdbs, rdb)
		pools = append(pools, goredis.NewPool(rdb))
	}
	c.rs = redsync.New(pools...)
	return c, nil
}

// Locker returns a Locker for the lock name (key Prefix+name).
func (c *Redsync) Locker(name string) locks.Locker {
	return &redsyncLocker{c: c, key: c.key + name}
}

// Close closes the connections.
func (c *Redsync) Close() error {
	var errs []error
	for _, rdb := range c.rdbs {
		errs = append(errs, rdb.Close())
	}
	return errors.Join(errs...)
}

// Counters implements locks.Stats: "requests" counts commands sent.
func (c *Redsync) Counters() map[string]int64 {
	return map[string]int64{"requests": c.reqs.Load()}
}

// delay is the mutex's retry delay: uniform in [50ms, 250ms) like
// redsync's default, or in [Retry/2, Retry], from the seeded source.
func (c *Redsync) delay(int) time.Duration {
	lo, hi := 50*time.Millisecond, 250*time.Millisecond
	if c.retry > 0 {
		lo, hi = c.retry/2, c.retry
	}
	c.rngMu.Lock()
	defer c.rngMu.Unlock()
	return lo + time.Duration(c.rng.Int64N(int64(hi-lo)+1))
}

type redsyncLocker struct {
	c   *Redsync
	key string
}

// Acquire takes a new redsync.Mutex with LockContext, retrying until ctx
// ends (redsync then says ErrFailed; we return ctx.Err()).
func (l *redsyncLocker) Acquire(ctx context.Context) (locks.Lease, error) {
	c := l.c
	m := c.rs.NewMutex(l.key,
		redsync.WithExpiry(c.ttl),
		redsync.WithTries(math.MaxInt32), // bounded by ctx instead
		// Each delay follows a try that failed: that try is the one told.
		redsync.WithRetryDelayFunc(func(n int) time.Duration { locks.Tried(ctx); return c.delay(n) }),
	)
	locks.Tried(ctx)
	if err := m.LockContext(ctx); err != nil {
		return nil, locks.AcquireError(ctx, l.key, err)
	}
	lease := &redsyncLease{m: m, key: l.key, lost: neverLost}
	if c.renew {
		lease.ext = extendEvery(c.ttl/3, func(ctx context.Context) error {
			ok, err := m.ExtendContext(ctx)
			if err == nil && !ok {
				err = redsync.ErrExtendFailed
			}
			return err
		}, c.log.With("key", l.key))
		lease.lost = lease.ext.lost
	}
	return lease, nil
}

type redsyncLease struct {
	m    *redsync.Mutex
	key  string
	ext  *extender
	lost <-chan struct{}
}

func (s *redsyncLease) Token() uint64 { return 0 }

// Promise is redsync's own Mutex.Until (the successful attempt's start +
// expiry - drift, moved by each Extend), less locklab's 2ms drift
// allowance that redsync does not subtract. Estimated: the adapter reads
// the library's figure, it does not measure it.
func (s *redsyncLease) Promise() locks.Promise {
	return locks.Promise{Until: s.m.Until().Add(-2 * time.Millisecond), Estimated: true}
}

func (s *redsyncLease) Lost() <-chan struct{} { return s.lost }

// Release stops the extension, then UnlockContext. Fewer than a quorum of
// nodes where the key was still ours is ErrNotHeld unless a node failed.
func (s *redsyncLease) Release(ctx context.Context) error {
	if s.ext != nil {
		s.ext.stop()
	}
	ok, err := s.m.UnlockContext(ctx)
	if ok {
		return nil
	}
	var nodeErr *redsync.RedisError
	if err != nil && errors.As(err, &nodeErr) {
		return fmt.Errorf("release %s: %w", s.key, err)
	}
	return fmt.Errorf("release %s: %w (%v)", s.key, locks.ErrNotHeld, err)
}

// The rest is shared by the Redis adapters.

// neverLost is Lost for leases nobody renews: the holder never learns.
var neverLost = make(chan struct{})

// common is the configuration both Redis adapters read.
type common struct {
	ttl    time.Duration
	prefix string
	renew  bool
}

func parseCommon(name string, cfg locks.Config) (common, error) {
	s := common{ttl: cfg.TTL, prefix: cfg.Prefix}
	if spec, ok := locks.Lookup(name); ok {
		if err := spec.CheckOptions(cfg.Options); err != nil {
			return s, err
		}
	}
	if s.ttl == 0 {
		s.ttl = redislock.DefaultTTL
	}
	if s.ttl < time.Millisecond {
		return s, fmt.Errorf("%s: ttl %v is below 1ms", name, s.ttl)
	}
	if cfg.Retry < 0 {
		return s, fmt.Errorf("%s: negative retry %v", name, cfg.Retry)
	}
	if s.prefix == "" {
		s.prefix = redislock.DefaultPrefix
	}
	if v, ok := cfg.Options[optRenew]; ok {
		var err error
		if s.renew, err = strconv.ParseBool(v); err != nil {
			return s, fmt.Errorf("%s: %s: %w", name, optRenew, err)
		}
	}
	return s, nil
}

// extender calls extend every period until stopped; the first failure
// closes lost and ends it (a library user has nothing better to go on).
type extender struct {
	lost   chan struct{}
	cancel context.CancelFunc
	done   chan struct{}
}

func extendEvery(period time.Duration, extend func(context.Context) error, log *slog.Logger) *extender {
	period = max(period, time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	e := &extender{lost: make(chan struct{}), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(e.done)
		for locks.Sleep(ctx, period) == nil {
			callCtx, cancelCall := context.WithTimeout(ctx, period)
			err := extend(callCtx)
			cancelCall()
			if ctx.Err() != nil {
				return // stopped while extending
			}
			if err != nil {
				log.Warn("extension failed: lock lost", "err", err)
				close(e.lost)
				return
			}
		}
	}()
	return e
}

// stop ends the extension and waits for a call in flight.
func (e *extender) stop() {
	e.cancel()
	<-e.done
}
