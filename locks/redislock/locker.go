package redislock

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/locks"
)

// Locker acquires one lock name for its Client. For every variant but
// redis-reentrant a Locker may be shared by goroutines: each Acquire is an
// independent holding with its own random owner id. A redis-reentrant Locker
// is one owner (Redisson's client+thread): a second Acquire while it holds
// the lock re-enters it instead of waiting, so give each goroutine its own.
type Locker struct {
	c       *Client
	key     string // the lock key
	fence   string // the fencing counter key
	channel string // redis-reentrant's release channel
	owner   string // redis-reentrant's owner id, fixed per Locker

	mu   sync.Mutex
	hold *holding // redis-reentrant's current holding, nil when not held
}

var _ locks.Locker = (*Locker)(nil)

// Acquire blocks until the lock is held, ctx ends (the error wraps
// ctx.Err()), or a command fails (the error is returned at once: the lock
// may then have been taken, and will expire after the TTL).
func (l *Locker) Acquire(ctx context.Context) (locks.Lease, error) {
	var (
		lease *Lease
		err   error
	)
	switch l.c.variant {
	case SetNXExpire:
		lease, err = l.poll(ctx, l.trySetNX)
	case SetDel, CAD, Watchdog:
		lease, err = l.poll(ctx, l.trySet)
	case Reentrant:
		lease, err = l.acquireReentrant(ctx)
	default:
		lease, err = l.acquireKind(ctx)
	}
	if err != nil {
		return nil, err
	}
	return lease, nil
}

// attempt is one try at taking the lock: a lease when taken, else the key's
// remaining PTTL (negative when it has none or it is unknown).
type attempt func(ctx context.Context) (*Lease, time.Duration, error)

// poll retries try until it takes the lock, sleeping c.backoff(pttl) in
// between.
func (l *Locker) poll(ctx context.Context, try attempt) (*Lease, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("acquire %s: %w", l.key, err)
		}
		locks.Tried(ctx)
		lease, pttl, err := try(ctx)
		if err != nil {
			return nil, locks.AcquireError(ctx, l.key, err)
		}
		if lease != nil {
			return lease, nil
		}
		if err := locks.Sleep(ctx, l.c.backoff(pttl)); err != nil {
			return nil, fmt.Errorf("acquire %s: %w", l.key, err)
		}
	}
}

// runAcquire runs an acquire script (plain or reentrant) for owner: the
// fencing token of the grant, or 0 and the key's time to live when another
// owner holds it, or 0 and the error.
func (l *Locker) runAcquire(ctx context.Context, script *redis.Script, owner string) (token uint64, pttl time.Duration, err error) {
	res, err := script.Run(ctx, l.c.rdb, []string{l.key, l.fence}, owner, l.c.ttl.Milliseconds()).Int64Slice()
	switch {
	case err != nil:
		return 0, 0, err
	case len(res) != 2:
		return 0, 0, fmt.Errorf("acquire script returned %v", res)
	case res[0] == 0:
		return 0, time.Duration(res[1]) * time.Millisecond, nil
	}
	return uint64(res[1]), 0, nil
}

// trySet is one attempt of redis-set-del, redis-cad and redis-watchdog:
// SET NX PX and INCR of the fence in one script, then, with wait_replicas,
// WAIT for the replicas; the watchdog's renewal starts once all that holds.
func (l *Locker) trySet(ctx context.Context) (*Lease, time.Duration, error) {
	c := l.c
	owner := newOwner()
	start := time.Now()
	token, pttl, err := l.runAcquire(ctx, acquireScript, owner)
	if token == 0 {
		return nil, pttl, err
	}
	lease := &Lease{l: l, token: token, owner: owner, sent: start}
	if c.waitReplicas > 0 && (c.variant == CAD || c.variant == Watchdog) {
		acks, err := c.rdb.Wait(ctx, c.waitReplicas, c.waitTimeout).Result()
		if err != nil || int(acks) < c.waitReplicas {
			// Not on enough replicas: a failover could lose the key, so
			// give it back and count the attempt as not obtained. Give it
			// back even when ctx ended during WAIT.
			relCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.waitTimeout+time.Second)
			relErr := releaseScript.Run(relCtx, c.rdb, []string{l.key}, owner).Err()
			cancel()
			if err != nil {
				return nil, 0, fmt.Errorf("wait for %d replicas: %w", c.waitReplicas, err)
			}
			if relErr != nil {
				return nil, 0, fmt.Errorf("release after %d of %d replica acks: %w", acks, c.waitReplicas, relErr)
			}
			c.log.Debug("too few replica acks", "key", l.key, "acks", acks, "want", c.waitReplicas)
			return nil, -1, nil
		}
	}
	if c.variant == Watchdog {
		lease.keeper = startKeeper(start, c.ttl, func(ctx context.Context) (bool, error) {
			n, err := renewScript.Run(ctx, c.rdb, []string{l.key}, owner, c.ttl.Milliseconds()).Int64()
			return n == 1, err
		}, c.log.With("key", l.key))
	}
	return lease, 0, nil
}

// Lease is one holding of a Locker's lock.
type Lease struct {
	l        *Locker
	token    uint64
	owner    string
	keeper   *keeper   // redis-watchdog's renewal
	hold     *holding  // redis-reentrant's shared holding
	mode     string    // a read-write lock's side: "read" or "write"
	sent     time.Time // before the acquiring command was sent
	released atomic.Bool
}

var (
	_ locks.Lease    = (*Lease)(nil)
	_ locks.Promiser = (*Lease)(nil)
)

// Promise is sent + ttl - drift from the acquiring command's send time,
// moved by the renewal's last success for redis-watchdog and
// redis-reentrant (whose holding may be older than this Lease: re-entry
// keeps the outer holding's key and renewal). redis-semaphore-leaky
// claims the same lease as redis-semaphore and never enforces it: its
// permit outlives the promise, and a dead holder's permit leaks.
func (s *Lease) Promise() locks.Promise {
	switch {
	case s.keeper != nil:
		return s.keeper.promise()
	case s.hold != nil:
		return s.hold.keeper.promise()
	}
	return locks.TTLPromise(s.sent, s.l.c.ttl)
}

// never is the Lost channel of the variants without renewal: their holder
// has no way to learn that its key expired.
var never = make(chan struct{})

// Token returns the holding's fencing token, strictly increasing per lock
// name (re-entering a redis-reentrant lock returns the outer holding's).
func (s *Lease) Token() uint64 { return s.token }

// Lost is closed when renewal finds the key gone or someone else's, or has
// not succeeded for a whole TTL (redis-watchdog, redis-reentrant). The other
// variants never renew, so never learn, and their channel is never closed.
func (s *Lease) Lost() <-chan struct{} {
	switch {
	case s.keeper != nil:
		return s.keeper.lost
	case s.hold != nil:
		return s.hold.keeper.lost
	}
	return never
}

// Release gives the lock up. It returns an error wrapping locks.ErrNotHeld
// when the lease was already released, or the key was gone (or, for
// redis-cad, redis-watchdog and redis-reentrant, someone else's). The
// plain-DEL variants delete whoever's key is there: that is their bug. A
// renewal is stopped before the key is touched. A Lease is released once:
// after a failed command the key expires on its own, and calling Release
// again returns ErrNotHeld.
func (s *Lease) Release(ctx context.Context) error {
	l := s.l
	if !s.released.CompareAndSwap(false, true) {
		return fmt.Errorf("release %s: already released: %w", l.key, locks.ErrNotHeld)
	}
	var (
		ok  bool
		err error
	)
	switch l.c.variant {
	case SetNXExpire, SetDel:
		var n int64
		n, err = l.c.rdb.Del(ctx, l.key).Result()
		ok = n == 1
	case CAD, Watchdog:
		if s.keeper != nil {
			s.keeper.stop()
		}
		var n int64
		n, err = releaseScript.Run(ctx, l.c.rdb, []string{l.key}, s.owner).Int64()
		ok = n == 1
	case Reentrant:
		ok, err = l.releaseReentrant(ctx, s)
	default:
		if s.keeper != nil {
			s.keeper.stop()
		}
		ok, err = l.releaseKind(ctx, s)
	}
	if err != nil {
		return fmt.Errorf("release %s: %w", l.key, err)
	}
	if !ok {
		return fmt.Errorf("release %s: %w", l.key, locks.ErrNotHeld)
	}
	return nil
}
