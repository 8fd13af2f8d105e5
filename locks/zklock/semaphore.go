package zklock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/locklab/locklab/locks"
)

// leaseInfix names zk-semaphore's lease nodes ("_c_<guid>-lease-<seq>").
const leaseInfix = "-lease-"

// semaphoreLocker is zk-semaphore, Curator's InterProcessSemaphoreV2:
//
//  1. take a mutex, zk-recipe's queue on /<prefix>/<name>/locks, which
//     admits one acquirer at a time;
//  2. under it, create an ephemeral sequential lease node under
//     /<prefix>/<name>/leases;
//  3. list the leases with a watch: with at most permits of them (ours
//     included) we hold a permit; otherwise wait for the watch (a lease
//     deleted by a release or a session's end) and list again;
//  4. release the mutex, holding the permit or not.
//
// Lease nodes are only created under the mutex, and the holder of the
// mutex sees every node created before it got it (ZooKeeper's order: the
// node came before the mutex's release), so counting them is enough: no
// more than permits leases are ever granted. Only the holder of the mutex
// watches the leases (no herd), and acquirers queue in order on the mutex.
//
// A permit is a lease node of the client's session: it lives as long as
// the session, Lost closes as zk-recipe's does, Release deletes the node.
// The token is the lease node's czxid: leases are created, and granted, one
// after another in the mutex's order, so tokens increase in grant order.
type semaphoreLocker struct {
	s       *Session
	mutex   *recipeLocker // on <dir>/locks
	leases  *recipeLocker // <dir>/leases: only its enqueue and release are used
	permits int
	retry   time.Duration
}

var _ locks.Locker = (*semaphoreLocker)(nil)

// newSemaphoreLocker returns zk-semaphore's Locker of the lock at dir.
func newSemaphoreLocker(s *Session, dir string, permits int, retry time.Duration) *semaphoreLocker {
	mutex := queue{lock: NameSemaphore, infix: lockInfix, blocker: predecessor}
	leases := queue{lock: NameSemaphore, infix: leaseInfix}
	return &semaphoreLocker{
		s:       s,
		mutex:   &recipeLocker{s: s, dir: dir + "/locks", retry: retry, q: mutex},
		leases:  &recipeLocker{s: s, dir: dir + "/leases", retry: retry, q: leases},
		permits: permits,
		retry:   retry,
	}
}

// Acquire implements locks.Locker: it returns when the client holds one of
// the permits.
func (l *semaphoreLocker) Acquire(ctx context.Context) (locks.Lease, error) {
	for {
		m, err := l.mutex.Acquire(ctx)
		if err != nil {
			return nil, err // names zk-semaphore and the mutex's path
		}
		ls, err := l.lease(ctx)
		l.releaseMutex(ctx, m)
		if errors.Is(err, errNodeGone) {
			// Our session expired while we waited: the mutex and the lease
			// node went with it. Queue again.
			l.s.log.Debug("zk-semaphore: lease node gone, queueing again", "dir", l.leases.dir)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", NameSemaphore, l.leases.dir, err)
		}
		return ls, nil
	}
}

// releaseMutex gives the mutex up once the permit is decided. An acquirer
// whose ctx ended still releases it: the release is bounded by the
// session timeout instead, and zk-recipe's release carries on in the
// background when it cannot finish.
func (l *semaphoreLocker) releaseMutex(ctx context.Context, m locks.Lease) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.s.timeout)
	defer cancel()
	if err := m.Release(rctx); err != nil && !errors.Is(err, locks.ErrNotHeld) {
		l.s.log.Debug("zk-semaphore: mutex release", "err", err)
	}
}

// lease creates our lease node and waits until it is among the permits;
// on failure the node is removed.
func (l *semaphoreLocker) lease(ctx context.Context) (locks.Lease, error) {
	node, stat, err := l.leases.enqueue(ctx)
	if err != nil {
		return nil, err
	}
	ls, err := l.waitPermit(ctx, node, stat)
	if err != nil && !errors.Is(err, errNodeGone) {
		l.s.background(func() { l.s.removeNode(node) })
	}
	return ls, err
}

// waitPermit is step 3: list the leases with a watch until at most permits
// are there.
func (l *semaphoreLocker) waitPermit(ctx context.Context, node string, stat *zk.Stat) (locks.Lease, error) {
	name := node[strings.LastIndexByte(node, '/')+1:]
	for {
		// As in zk-recipe, ownership is established by the listing below,
		// and a disconnection after this point voids it.
		locks.Tried(ctx)
		epoch := l.s.Epoch()
		var children []string
		var watch <-chan zk.Event
		err := l.s.call(ctx, func() error {
			c, _, w, err := l.s.conn.ChildrenW(l.leases.dir)
			children, watch = c, w
			return err
		})
		if connLoss(err) {
			if err := l.s.waitUp(ctx); err != nil {
				return nil, err
			}
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", l.leases.dir, err)
		}
		if !slices.Contains(children, name) || l.s.conn.SessionID() != stat.EphemeralOwner {
			return nil, errNodeGone
		}
		if len(children) <= l.permits {
			lost, untrack := l.s.Track(epoch)
			return &lease{
				s: l.s, epoch: epoch,
				token:   uint64(stat.Czxid),
				lost:    lost,
				untrack: untrack,
				release: func(ctx context.Context) error { return l.leases.release(ctx, node) },
			}, nil
		}
		if err := awaitWatch(ctx, watch, l.retry); err != nil {
			return nil, err
		}
	}
}
