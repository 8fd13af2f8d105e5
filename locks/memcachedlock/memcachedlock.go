// Package memcachedlock is the lock of memcached's add, as Laravel's
// Cache::lock, Django's cache locks, Rails' write(unless_exist: true) and
// ShedLock's memcached provider take it: memcached-add stores a random
// owner id under the lock's key with `add` (stored only if the key holds
// nothing) and an expiry, polling with a short backoff while someone
// holds it. Release reads the key with `gets` and, only if it still holds
// this holder's id, overwrites it by `cas` with exptime -1 (expired at
// once: memcached has no conditional delete). No renewal: the key expires
// on its own and the holder is never told (Lost is never closed).
//
// memcached counts expiry in whole seconds on a clock that ticks once a
// second, so an item may expire up to a second before its exptime: the
// key is stored with the TTL rounded up to whole seconds plus one, and the
// lease promises the send time of the add plus the TTL, less the drift
// allowance. The fencing token is an incr of <key>:fence after the grant
// (created at 0 when missing), a second round trip: a holder whose key
// expired in between may draw a token above its successor's. memcached
// keeps everything in memory: a restarted server has lost the key (a
// second holder is granted) and the counter (tokens start over at 1).
// The client speaks the text protocol itself; see docs/backends.md.
//
// Of locklab it imports only locks.
package memcachedlock

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/locklab/locklab/locks"
)

// Name is the lock's name (contract).
const Name = "memcached-add"

// Backend is the server family of the lock: the memcached row of the
// cluster's backend table.
const Backend = locks.Backend("memcached")

// Defaults used when the Config leaves a value at zero.
const (
	DefaultTTL   = 10 * time.Second
	DefaultRetry = 10 * time.Millisecond
	// DialTimeout bounds one connection attempt to the server.
	DialTimeout = 5 * time.Second
)

func init() {
	locks.Register(locks.Spec{
		Name: Name, Backend: Backend, Fencing: true, LeaseBased: true,
		Summary: "memcached add with a random owner id and a whole-second expiry, released by gets + cas to an expired item; no renewal, token from incr",
		New: func(ctx context.Context, cfg locks.Config) (locks.Client, error) {
			return New(ctx, cfg)
		},
	})
}

// Client is one harness client's connections to the server. Safe for
// concurrent use.
type Client struct {
	addr     string
	prefix   string
	ttl      time.Duration
	exptime  int // seconds the key is stored with
	retry    time.Duration
	requests atomic.Int64

	mu     sync.Mutex
	idle   []*conn
	closed bool
	rngMu  sync.Mutex
	rng    *rand.Rand
}

var (
	_ locks.Client = (*Client)(nil)
	_ locks.Stats  = (*Client)(nil)
)

// New connects to the first server in cfg.Endpoints.Table["memcached"]
// and checks that it answers, within ctx.
func New(ctx context.Context, cfg locks.Config) (*Client, error) {
	addrs := cfg.Endpoints.Table[string(Backend)]
	if len(addrs) == 0 {
		return nil, errors.New("memcachedlock: no memcached servers in the endpoints")
	}
	ttl := cfg.TTL
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	retry := cfg.Retry
	if retry <= 0 {
		retry = DefaultRetry
	}
	c := &Client{addr: cfg.Endpoints.Dial(addrs[0]), prefix: cfg.Prefix, ttl: ttl, exptime: Exptime(ttl), retry: retry,
		rng: rand.New(rand.NewPCG(uint64(cfg.Seed), 0x6d656d63))}
	if _, _, _, err := c.gets(ctx, c.key("ping")); err != nil {
		c.Close()
		return nil, fmt.Errorf("memcachedlock: connect to %s: %w", c.addr, err)
	}
	return c, nil
}

// Exptime is the expiry in seconds a key taken with ttl is stored with:
// ttl rounded up to whole seconds, plus one, as memcached's clock may
// expire it up to a second early.
func Exptime(ttl time.Duration) int {
	return int((ttl+time.Second-1)/time.Second) + 1
}

// key is the memcached key of lock name: prefix+name when it is a valid
// key (at most 200 bytes, no spaces or control characters), else a hash.
func (c *Client) key(name string) string {
	k := c.prefix + name
	ok := len(k) <= 200
	for i := 0; ok && i < len(k); i++ {
		ok = k[i] > ' ' && k[i] != 0x7f
	}
	if ok {
		return k
	}
	h := fnv.New64a()
	h.Write([]byte(k))
	return fmt.Sprintf("locklab:%x", h.Sum64())
}

// Locker returns the lock called name under the config's prefix.
func (c *Client) Locker(name string) locks.Locker {
	k := c.key(name)
	return &Locker{c: c, key: k, fence: k + ":fence"}
}

// Counters reports "requests": the commands sent.
func (c *Client) Counters() map[string]int64 {
	return map[string]int64{"requests": c.requests.Load()}
}

// Close closes the idle connections; held keys expire on their own.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for _, cn := range c.idle {
		cn.nc.Close()
	}
	c.idle = nil
	return nil
}

// backoff is Retry less a random part of up to half.
func (c *Client) backoff() time.Duration {
	c.rngMu.Lock()
	defer c.rngMu.Unlock()
	return c.retry - time.Duration(c.rng.Int64N(int64(c.retry/2)+1))
}

// Locker is one named lock. It may be shared by goroutines: each Acquire
// is an independent holding with its own owner id.
type Locker struct {
	c     *Client
	key   string
	fence string
}

var _ locks.Locker = (*Locker)(nil)

// Acquire adds the key, again after a backoff while someone holds it,
// until it is stored or ctx ends (the error wraps ctx.Err()). A command
// that fails otherwise is returned at once: the key may then have been
// stored all the same, and expires after the TTL.
func (l *Locker) Acquire(ctx context.Context) (locks.Lease, error) {
	owner := newOwner() // one holding: the same id on every try
	for {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("acquire %s: %w", l.key, err)
		}
		locks.Tried(ctx)
		sent := time.Now()
		ok, err := l.c.add(ctx, l.key, owner, l.c.exptime)
		if err != nil {
			return nil, locks.AcquireError(ctx, l.key, err)
		}
		if ok {
			s := &Lease{l: l, owner: owner, sent: sent}
			if s.token, err = l.token(ctx); err != nil {
				// Give the key back rather than leave it held by nobody.
				rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
				_ = s.Release(rctx)
				cancel()
				return nil, locks.AcquireError(ctx, l.key, err)
			}
			return s, nil
		}
		if err := locks.Sleep(ctx, l.c.backoff()); err != nil {
			return nil, fmt.Errorf("acquire %s: %w", l.key, err)
		}
	}
}

// token increments the fencing counter, creating it at 0 (with no expiry)
// when missing.
func (l *Locker) token(ctx context.Context) (uint64, error) {
	for range 2 {
		n, found, err := l.c.incr(ctx, l.fence)
		if err != nil || found {
			return n, err
		}
		if _, err := l.c.add(ctx, l.fence, "0", 0); err != nil {
			return 0, err
		}
	}
	return 0, fmt.Errorf("incr %s: not found after add", l.fence)
}

// Lease is one holding of a Locker's lock.
type Lease struct {
	l        *Locker
	token    uint64
	owner    string
	sent     time.Time // before the add was sent
	released atomic.Bool
}

var (
	_ locks.Lease    = (*Lease)(nil)
	_ locks.Promiser = (*Lease)(nil)
)

// Token returns the fencing counter's value drawn after the grant:
// increasing per lock name while the server lives (it starts over after
// a restart).
func (s *Lease) Token() uint64 { return s.token }

// never is the Lost channel: without renewal the holder never learns that
// its key expired.
var never = make(chan struct{})

// Lost is never closed (no renewal).
func (s *Lease) Lost() <-chan struct{} { return never }

// Promise is the add's send time + TTL - drift: the key, stored for the
// TTL rounded up plus a second, lives at least that long.
func (s *Lease) Promise() locks.Promise { return locks.TTLPromise(s.sent, s.l.c.ttl) }

// Release reads the key and, when it still holds this holding's owner id,
// expires it at once by cas (exptime -1) on the id it read. It returns an
// error wrapping locks.ErrNotHeld when the lease was released already, or
// the key is gone or someone else's (or changed between the two
// commands). After a failed command the key expires on its own.
func (s *Lease) Release(ctx context.Context) error {
	l := s.l
	if !s.released.CompareAndSwap(false, true) {
		return fmt.Errorf("release %s: already released: %w", l.key, locks.ErrNotHeld)
	}
	value, casID, found, err := l.c.gets(ctx, l.key)
	if err != nil {
		return fmt.Errorf("release %s: %w", l.key, err)
	}
	if !found || value != s.owner {
		return fmt.Errorf("release %s: %w", l.key, locks.ErrNotHeld)
	}
	ok, err := l.c.cas(ctx, l.key, s.owner, -1, casID)
	if err != nil {
		return fmt.Errorf("release %s: %w", l.key, err)
	}
	if !ok {
		return fmt.Errorf("release %s: %w", l.key, locks.ErrNotHeld)
	}
	return nil
}

// newOwner returns a random owner id: the key's value while held.
func newOwner() string {
	b := make([]byte, 16)
	_, _ = crand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}
