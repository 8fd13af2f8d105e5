package etcdlock

import (
	"context"
	"time"

	"github.com/locklab/locklab/locks"
)

// AcquireUnkept is Acquire with a long lease whose keep-alive loop does not
// run, so the client never learns of the lease's end by itself: it stands
// for a waiter whose own deadline is late (a paused process, a slow clock)
// and leaves the re-check after the wait (etcd #11456) as the only guard.
func AcquireUnkept(ctx context.Context, lk locks.Locker) (locks.Lease, error) {
	l := lk.(*Locker)
	resp, err := l.c.cli.Grant(ctx, 600)
	if err != nil {
		return nil, err
	}
	done := make(chan struct{})
	close(done)
	k := &keeper{c: l.c, id: resp.ID, ttl: 600 * time.Second, lost: make(chan struct{}), stop: func() {}, done: done}
	return l.acquire(ctx, k)
}
