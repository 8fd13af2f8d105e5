package redlock

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/locks"
)

// Locker acquires one lock name on the Client's primaries. It may be
// shared by goroutines.
type Locker struct {
	c   *Client
	key string
}

var _ locks.Locker = (*Locker)(nil)

// Acquire runs Redlock attempts until one holds the lock or ctx ends.
//
// One attempt: a fresh random value is SET NX PX ttl on every primary in
// parallel, each call bounded by the node timeout. It holds the lock when a
// quorum (N/2+1) took the key and the validity left, ttl - elapsed - drift
// with elapsed measured from before the first SET was sent to after the
// last reply, is positive. Otherwise the value is deleted (compare-and-
// delete) from every node that took it or did not answer — a SET that timed
// out may still have been executed — and the next attempt follows after a
// random delay in [Retry/2, Retry]. A node that does not confirm the
// delete within the node timeout is sent it again in the background
// (janitor.go). Nodes that answered that the key is someone else's hold no
// value of ours and are left alone.
//
// When ctx ends the error wraps ctx.Err() and the error of the last
// attempt that ran its course (or of the one ctx cut short, when it was
// the first): ErrNoQuorum or ErrNoValidity, joined with each failed
// node's *locks.NodeError.
func (l *Locker) Acquire(ctx context.Context) (locks.Lease, error) {
	var last error
	for {
		if err := locks.ContextDone(ctx); err != nil {
			return nil, l.acquireErr(err, last)
		}
		locks.Tried(ctx)
		lease, err := l.try(ctx)
		if lease != nil {
			return lease, nil
		}
		l.c.log.Debug("attempt failed", "key", l.key, "err", err)
		if ctxErr := locks.ContextDone(ctx); ctxErr != nil {
			// An attempt cut short by ctx says little: report the last
			// one that ran its course, if any.
			if last == nil {
				last = err
			}
			return nil, l.acquireErr(ctxErr, last)
		}
		last = err
		if err := locks.Sleep(ctx, l.c.delay()); err != nil {
			return nil, l.acquireErr(err, last)
		}
	}
}

func (l *Locker) acquireErr(ctxErr, last error) error {
	if last == nil {
		return fmt.Errorf("acquire %s: %w", l.key, ctxErr)
	}
	return fmt.Errorf("acquire %s: %w; last attempt: %w", l.key, ctxErr, last)
}

// try is one attempt: a Lease, or nil and why not.
func (l *Locker) try(ctx context.Context) (*Lease, error) {
	c := l.c
	value := newValue()
	start := time.Now()
	rs := c.each(ctx, nil, c.nodeTimeout, func(ctx context.Context, rdb *redis.Client) (bool, error) {
		return rdb.SetNX(ctx, l.key, value, c.ttl).Result()
	})
	elapsed := time.Since(start)
	ok, _, nodeErr := tally(rs, nil)
	validity := c.ttl - elapsed - c.drift
	if ok >= c.quorum && validity > 0 {
		c.grants.Add(1)
		if ok == c.quorum && ok < len(rs) {
			c.bareGrants.Add(1)
		}
		acked := make([]bool, len(rs))
		for i, r := range rs {
			acked[i] = r.ok
		}
		return newLease(l, value, start, validity, acked), nil
	}

	// Not held: take the value back wherever it may be, even when ctx has
	// ended meanwhile.
	mayHold := make([]bool, len(rs))
	some := false
	for i, r := range rs {
		mayHold[i] = !r.refused()
		some = some || mayHold[i]
	}
	if some {
		rel := c.each(context.WithoutCancel(ctx), mayHold, c.nodeTimeout, l.releaseOne(value))
		c.retryLater(l.key, value, rel)
	}
	var why error
	if ok >= c.quorum {
		why = fmt.Errorf("%w: %d of %d nodes took the key but %v of the %v ttl went by",
			ErrNoValidity, ok, len(rs), elapsed.Round(time.Microsecond), c.ttl)
	} else {
		why = fmt.Errorf("%w: %d of %d nodes took the key, %d needed", ErrNoQuorum, ok, len(rs), c.quorum)
	}
	if nodeErr != nil {
		return nil, fmt.Errorf("%w\n%w", why, nodeErr)
	}
	return nil, why
}

// releaseOne is compare-and-delete of value on one node.
func (l *Locker) releaseOne(value string) func(context.Context, *redis.Client) (bool, error) {
	return func(ctx context.Context, rdb *redis.Client) (bool, error) {
		n, err := rdb.Eval(ctx, releaseSrc, []string{l.key}, value).Int64()
		return n == 1, err
	}
}

// extendOne is compare-and-pexpire of value to the ttl on one node.
func (l *Locker) extendOne(value string) func(context.Context, *redis.Client) (bool, error) {
	ttl := l.c.ttl.Milliseconds()
	return func(ctx context.Context, rdb *redis.Client) (bool, error) {
		n, err := rdb.Eval(ctx, extendSrc, []string{l.key}, value, ttl).Int64()
		return n == 1, err
	}
}
