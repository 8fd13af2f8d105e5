package redislock

import (
	"context"
	"fmt"
	"time"
)

// trySetNX is one attempt of redis-setnx-expire, the oldest recipe: SETNX,
// then INCR of the fence, then PEXPIRE (EXPIRE in milliseconds), each its
// own command. Between SETNX and PEXPIRE the key has no TTL: a holder that
// dies, or whose connection fails, there leaves the lock held forever. That
// is the bug this variant exists to show, so it makes no attempt to clean up.
//
// The token is drawn after SETNX succeeded, while the key cannot expire
// (it has no TTL yet), so token order is lock order as for the scripted
// variants.
func (l *Locker) trySetNX(ctx context.Context) (*Lease, time.Duration, error) {
	c := l.c
	owner := newOwner()
	sent := time.Now()
	ok, err := c.rdb.SetNX(ctx, l.key, owner, 0).Result()
	if err != nil {
		return nil, 0, err
	}
	if !ok {
		pttl, err := c.rdb.PTTL(ctx, l.key).Result()
		if err != nil {
			return nil, 0, err
		}
		switch pttl {
		case -2: // the key went away since SETNX: try again at once
			return nil, 0, nil
		case -1: // no TTL (maybe stuck for good): wait Retry
			return nil, -1, nil
		}
		return nil, pttl, nil
	}
	token, err := c.rdb.Incr(ctx, l.fence).Result()
	if err != nil {
		return nil, 0, fmt.Errorf("incr %s after setnx: %w", l.fence, err)
	}
	if err := c.rdb.PExpire(ctx, l.key, c.ttl).Err(); err != nil {
		return nil, 0, fmt.Errorf("pexpire %s after setnx: %w", l.key, err)
	}
	return &Lease{l: l, token: uint64(token), owner: owner, sent: sent}, 0, nil
}
