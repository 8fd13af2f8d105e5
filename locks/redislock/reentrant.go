package redislock

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/locks"
)

// holding is one redis-reentrant holding of a Locker: the hash Redis holds
// for the Locker's owner, shared by every Lease acquired while it lasts.
type holding struct {
	token  uint64
	refs   int     // Leases not yet released, guarded by Locker.mu
	keeper *keeper // one watchdog per holding
}

// acquireReentrant takes or re-enters the lock. A blocked acquirer first
// subscribes to the lock's channel, then retries on every release message,
// and at the latest after backoff(pttl): the key's remaining PTTL covers a
// dead holder (its key expires without a message), Retry lost messages.
func (l *Locker) acquireReentrant(ctx context.Context) (*Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("acquire %s: %w", l.key, err)
	}
	// Uncontended fast path, without touching pub/sub.
	lease, pttl, err := l.tryReentrant(ctx)
	if err != nil {
		return nil, locks.AcquireError(ctx, l.key, err)
	}
	if lease != nil {
		return lease, nil
	}
	sub := l.c.subscriber()
	if sub == nil {
		return nil, fmt.Errorf("acquire %s: %w", l.key, redis.ErrClosed)
	}
	for first := true; ; first = false {
		wake, ready := sub.watch(ctx, l.channel)
		if first {
			// A release published before the subscription is active would
			// be missed: wait for it, but no longer than a poll.
			if err := waitAny(ctx, l.c.backoff(pttl), ready); err != nil {
				return nil, fmt.Errorf("acquire %s: %w", l.key, err)
			}
		}
		lease, pttl, err = l.tryReentrant(ctx)
		if err != nil {
			return nil, locks.AcquireError(ctx, l.key, err)
		}
		if lease != nil {
			return lease, nil
		}
		if err := waitAny(ctx, l.c.backoff(pttl), wake); err != nil {
			return nil, fmt.Errorf("acquire %s: %w", l.key, err)
		}
	}
}

// tryReentrant is one run of the acquire script for the Locker's owner.
func (l *Locker) tryReentrant(ctx context.Context) (*Lease, time.Duration, error) {
	c := l.c
	locks.Tried(ctx)
	start := time.Now()
	token, pttl, err := l.runAcquire(ctx, reentrantAcquireScript, l.owner)
	if token == 0 {
		return nil, pttl, err
	}

	l.mu.Lock()
	h, stale := l.hold, (*holding)(nil)
	if h == nil || h.token != token {
		// A new holding. One we still had is over: its key was deleted or
		// expired before the script created this one.
		stale = h
		h = &holding{token: token, keeper: startKeeper(start, c.ttl, l.renewReentrant, c.log.With("key", l.key))}
		l.hold = h
	}
	h.refs++
	l.mu.Unlock()
	if stale != nil {
		stale.keeper.markLost()
		stale.keeper.stop()
	}
	return &Lease{l: l, token: token, owner: l.owner, hold: h, sent: start}, 0, nil
}

func (l *Locker) renewReentrant(ctx context.Context) (bool, error) {
	n, err := reentrantRenewScript.Run(ctx, l.c.rdb, []string{l.key}, l.owner, l.c.ttl.Milliseconds()).Int64()
	return n == 1, err
}

// releaseReentrant drops s's hold; the last one stops the watchdog first,
// and the script deletes the key and publishes the release.
func (l *Locker) releaseReentrant(ctx context.Context, s *Lease) (bool, error) {
	l.mu.Lock()
	h := s.hold
	if l.hold != h {
		// A newer holding replaced this one: releasing would decrement
		// the newer holding's count (same owner), not ours.
		l.mu.Unlock()
		return false, nil
	}
	h.refs--
	last := h.refs == 0
	if last {
		l.hold = nil
	}
	l.mu.Unlock()
	if last {
		h.keeper.stop()
	}
	left, err := reentrantReleaseScript.Run(ctx, l.c.rdb, []string{l.key, l.channel}, l.owner, l.c.ttl.Milliseconds()).Int64()
	if err != nil {
		return false, err
	}
	if last && left > 0 {
		// Redis counts more holds than we have leases (an earlier Release
		// failed after the server decremented, or never reached it): the
		// watchdog is stopped, so the key expires after the TTL.
		l.c.log.Warn("holds left after the last release", "key", l.key, "left", left)
	}
	return left >= 0, nil
}

// waitAny waits for d, a close of ch, or the end of ctx (returning
// ctx.Err()).
func waitAny(ctx context.Context, d time.Duration, ch <-chan struct{}) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-ch:
	case <-t.C:
	}
	return nil
}
