package redislock

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/locks"
)

// The lock kinds beyond the mutex (locks.Kind), see the package
// documentation.
const (
	// RW is a read-write lock after Redisson's RReadWriteLock.
	RW Variant = "redis-rw"
	// RWNaive is RW whose readers check the mode and register in two round
	// trips: a writer taking the lock in between is overwritten (broken).
	RWNaive Variant = "redis-rw-naive"
	// Fair is a mutex granting in request order, after Redisson's RFairLock.
	Fair Variant = "redis-fair"
	// Semaphore is a semaphore of expiring permits, after Redisson's
	// RPermitExpirableSemaphore and the redis-semaphore library.
	Semaphore Variant = "redis-semaphore"
	// SemaphoreLeaky counts permits in a plain counter without expiry: a
	// dead holder's permit is never given back (broken).
	SemaphoreLeaky Variant = "redis-semaphore-leaky"
)

// FairWait is how long a queued redis-fair waiter keeps its place without
// asking again (Redisson's threadWaitTime): a waiter that died leaves the
// queue after it.
const FairWait = 5 * time.Second

// Modes of a read-write hold, as the scripts spell them.
const (
	modeRead  = "read"
	modeWrite = "write"
)

var (
	rwAcquireScript    = script("rw_acquire")
	rwNaiveReadScript  = script("rw_naive_read")
	rwRenewScript      = script("rw_renew")
	rwReleaseScript    = script("rw_release")
	fairAcquireScript  = script("fair_acquire")
	fairLeaveScript    = script("fair_leave")
	semAcquireScript   = script("sem_acquire")
	semRenewScript     = script("sem_renew")
	semReleaseScript   = script("sem_release")
	leakyAcquireScript = script("leaky_acquire")
	leakyReleaseScript = script("leaky_release")
)

// kindOf is the lock kind of variant v.
func kindOf(v Variant) locks.Kind {
	switch v {
	case RW, RWNaive:
		return locks.KindRW
	case Fair:
		return locks.KindFair
	case Semaphore, SemaphoreLeaky:
		return locks.KindSemaphore
	}
	return locks.KindMutex
}

// notifying reports whether v's waiters wake on the lock's release
// messages (and poll only as a fallback).
func notifying(v Variant) bool { return v == Reentrant || kindOf(v) != locks.KindMutex }

// RWLocker is the Locker of redis-rw and redis-rw-naive: Acquire takes the
// write side, AcquireShared the read side. Each call is its own holding
// with its own owner id.
type RWLocker struct{ *Locker }

var _ locks.SharedLocker = RWLocker{}

// AcquireShared takes the read side: it waits while a writer holds the
// lock (not while other readers do).
func (r RWLocker) AcquireShared(ctx context.Context) (locks.Lease, error) {
	lease, err := r.acquireRW(ctx, modeRead)
	if err != nil {
		return nil, err
	}
	return lease, nil
}

// acquireKind is Acquire for the kinds' variants (the write side of a
// read-write lock).
func (l *Locker) acquireKind(ctx context.Context) (*Lease, error) {
	switch l.c.variant {
	case RW, RWNaive:
		return l.acquireRW(ctx, modeWrite)
	case Fair:
		return l.acquireFair(ctx)
	case Semaphore:
		owner := newOwner()
		return l.notifyPoll(ctx, func(ctx context.Context) (*Lease, time.Duration, error) {
			return l.tryKind(ctx, semAcquireScript, []string{l.key, l.fence}, owner, modeWrite,
				owner, l.c.ttl.Milliseconds(), l.c.permits)
		})
	case SemaphoreLeaky:
		return l.notifyPoll(ctx, func(ctx context.Context) (*Lease, time.Duration, error) {
			return l.tryKind(ctx, leakyAcquireScript, []string{l.key, l.fence}, "", modeWrite, l.c.permits)
		})
	}
	return nil, fmt.Errorf("redislock: %s is not a lock kind", l.c.variant)
}

// acquireRW takes one side of a read-write lock. redis-rw-naive's reader
// first reads the mode, then registers without checking again.
func (l *Locker) acquireRW(ctx context.Context, mode string) (*Lease, error) {
	owner := newOwner()
	ttl := l.c.ttl.Milliseconds()
	return l.notifyPoll(ctx, func(ctx context.Context) (*Lease, time.Duration, error) {
		if l.c.variant == RWNaive && mode == modeRead {
			m, err := l.c.rdb.HGet(ctx, l.key, "mode").Result()
			switch {
			case err != nil && err != redis.Nil:
				return nil, 0, err
			case m == modeWrite:
				return nil, -1, nil
			}
			return l.tryKind(ctx, rwNaiveReadScript, []string{l.key, l.fence}, owner, mode, owner, ttl)
		}
		return l.tryKind(ctx, rwAcquireScript, []string{l.key, l.fence}, owner, mode, owner, ttl, mode)
	})
}

// acquireFair queues once and asks again on every release message (and
// at least every Retry, well within FairWait); a caller that gives up
// leaves the queue.
func (l *Locker) acquireFair(ctx context.Context) (*Lease, error) {
	owner := newOwner()
	keys := []string{l.key, l.fence, l.key + ":queue", l.key + ":timeout"}
	lease, err := l.notifyPoll(ctx, func(ctx context.Context) (*Lease, time.Duration, error) {
		return l.tryKind(ctx, fairAcquireScript, keys, owner, modeWrite, owner, l.c.ttl.Milliseconds(), FairWait.Milliseconds())
	})
	if err != nil {
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		_ = fairLeaveScript.Run(lctx, l.c.rdb, []string{keys[2], keys[3], l.channel}, owner).Err()
		cancel()
		return nil, err
	}
	return lease, nil
}

// tryKind runs one acquire script; on a grant it starts the watchdog of
// the variants that renew.
func (l *Locker) tryKind(ctx context.Context, s *redis.Script, keys []string, owner, mode string, args ...any) (*Lease, time.Duration, error) {
	locks.Tried(ctx)
	start := time.Now()
	res, err := s.Run(ctx, l.c.rdb, keys, args...).Int64Slice()
	switch {
	case err != nil:
		return nil, 0, err
	case len(res) != 2:
		return nil, 0, fmt.Errorf("acquire script returned %v", res)
	case res[0] == 0:
		return nil, time.Duration(res[1]) * time.Millisecond, nil
	}
	lease := &Lease{l: l, token: uint64(res[1]), owner: owner, mode: mode, sent: start}
	if renew := l.renewKind(owner, mode); renew != nil {
		lease.keeper = startKeeper(start, l.c.ttl, renew, l.c.log.With("key", l.key))
	}
	return lease, 0, nil
}

// renewKind is the watchdog's renewal of owner's hold; nil for the leaky
// semaphore, whose permits never expire.
func (l *Locker) renewKind(owner, mode string) renewFunc {
	ttl := l.c.ttl.Milliseconds()
	var s *redis.Script
	var args []any
	switch l.c.variant {
	case RW, RWNaive:
		s, args = rwRenewScript, []any{owner, ttl, mode}
	case Fair:
		s, args = reentrantRenewScript, []any{owner, ttl}
	case Semaphore:
		s, args = semRenewScript, []any{owner, ttl}
	default:
		return nil
	}
	return func(ctx context.Context) (bool, error) {
		n, err := s.Run(ctx, l.c.rdb, []string{l.key}, args...).Int64()
		return n == 1, err
	}
}

// releaseKind gives a kind's hold back (the watchdog already stopped).
func (l *Locker) releaseKind(ctx context.Context, s *Lease) (bool, error) {
	var n int64
	var err error
	switch l.c.variant {
	case RW, RWNaive:
		n, err = rwReleaseScript.Run(ctx, l.c.rdb, []string{l.key, l.channel}, s.owner, s.mode).Int64()
	case Fair:
		n, err = reentrantReleaseScript.Run(ctx, l.c.rdb, []string{l.key, l.channel}, s.owner, l.c.ttl.Milliseconds()).Int64()
		n++ // 0 (deleted) is released, -1 not held
	case Semaphore:
		n, err = semReleaseScript.Run(ctx, l.c.rdb, []string{l.key, l.channel}, s.owner).Int64()
	case SemaphoreLeaky:
		n, err = leakyReleaseScript.Run(ctx, l.c.rdb, []string{l.key, l.channel}).Int64()
	}
	return n >= 1, err
}

// notifyPoll retries try until it grants: at once, then on every message
// on the lock's channel, and at the latest after backoff(pttl) (a holder
// whose hold expired publishes nothing; Retry covers lost messages).
func (l *Locker) notifyPoll(ctx context.Context, try attempt) (*Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("acquire %s: %w", l.key, err)
	}
	lease, pttl, err := try(ctx)
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
			if err := waitAny(ctx, l.c.backoff(pttl), ready); err != nil {
				return nil, fmt.Errorf("acquire %s: %w", l.key, err)
			}
		}
		lease, pttl, err = try(ctx)
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
