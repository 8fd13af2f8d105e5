package zklock

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/locklab/locklab/locks"
)

// herdLocker is zk-herd, the naive ZooKeeper lock: whoever creates the
// ephemeral node /<prefix>/<name>/lock holds the lock; everybody else sets a
// watch on that node and tries to create it again when it is deleted. Every
// release wakes every waiter, and all of them race to create the node while
// only one can win: the herd effect, visible in the requests and
// watch_events counters growing with the number of waiters per hand-off.
// There is no queue, so no FIFO order either.
//
// The node's data is a random owner id. It identifies our node after a
// create whose reply was lost, and guards Release: the node is deleted only
// when it still carries our id and czxid, with the version just read.
// ZooKeeper has no delete conditioned on a czxid, so one window remains: if
// our session expires between that read and the delete, and another client
// creates the node in between, the delete (sent on the library's new
// session) could remove the newcomer's node. zk-recipe has no such window:
// its node paths are never reused.
//
// The fencing token is the node's czxid: every creation of the node is a
// later transaction than the previous one.
type herdLocker struct {
	s     *Session
	dir   string
	retry time.Duration
}

// Acquire implements locks.Locker.
func (l *herdLocker) Acquire(ctx context.Context) (locks.Lease, error) {
	node := l.dir + "/lock"
	owner := []byte(randomID())
	for {
		ls, err := l.attempt(ctx, node, owner)
		if ls != nil {
			return ls, nil
		}
		if connLoss(err) {
			err = l.s.waitUp(ctx)
		}
		if err != nil {
			return nil, fmt.Errorf("zk-herd %s: %w", l.dir, err)
		}
	}
}

// attempt tries once to take the lock: a lease; nil and nil to try again
// at once (or after the holder's node went); a lost connection to try again
// once the session is back; any other error ends Acquire.
func (l *herdLocker) attempt(ctx context.Context, node string, owner []byte) (locks.Lease, error) {
	abandon := func() { l.removeOwned(node, owner) }
	locks.Tried(ctx)
	epoch := l.s.Epoch()
	_, err := l.s.create(ctx, node, owner, zk.FlagEphemeral, abandon)
	switch {
	case err == nil, errors.Is(err, zk.ErrNodeExists):
		// Ours now, ours from an earlier attempt whose reply was lost,
		// or somebody else's: the read below tells.
	case errors.Is(err, zk.ErrNoNode):
		return nil, l.s.ensurePath(ctx, l.dir)
	case connLoss(err), ctx.Err() != nil:
		return nil, err
	default:
		return nil, fmt.Errorf("create: %w", err)
	}
	created := err == nil

	// After our own create a plain read suffices; otherwise set the watch
	// every waiter sets on the same node.
	var data []byte
	var stat *zk.Stat
	var watch <-chan zk.Event
	err = l.s.call(ctx, func() error {
		var err error
		if created {
			data, stat, err = l.s.conn.Get(node)
		} else {
			data, stat, watch, err = l.s.conn.GetW(node)
		}
		return err
	})
	switch {
	case err == nil:
	case errors.Is(err, zk.ErrNoNode):
		return nil, nil
	case connLoss(err):
		return nil, err
	case ctx.Err() != nil:
		if created {
			l.s.background(abandon)
		}
		return nil, err
	default:
		return nil, fmt.Errorf("read: %w", err)
	}
	// The owner check covers a node of ours whose session died (a
	// lagging follower may still show it after go-zookeeper opened a
	// new session): it is on its way out, wait for its deletion.
	if bytes.Equal(data, owner) && stat.EphemeralOwner == l.s.conn.SessionID() {
		czxid := stat.Czxid
		lost, untrack := l.s.Track(epoch)
		return &lease{
			s: l.s, epoch: epoch,
			token:   uint64(czxid),
			lost:    lost,
			untrack: untrack,
			release: func(ctx context.Context) error { return l.release(ctx, node, owner, czxid) },
		}, nil
	}
	if watch == nil {
		return nil, nil // our create succeeded, yet the node is not ours now: our session expired meanwhile
	}
	return nil, awaitWatch(ctx, watch, l.retry)
}

// release deletes the node if it is still ours (same owner id and czxid).
//
// Like zk-recipe's, a delete cut short by a lost connection is tried again
// once the session is back, until ctx ends; if the node is then gone or
// someone else's while the session is the same, our earlier delete was
// applied.
func (l *herdLocker) release(ctx context.Context, node string, owner []byte, czxid int64) error {
	same, err := l.s.retryDelete(ctx, func() error { return l.deleteOwned(ctx, node, owner, czxid) })
	switch {
	case err == nil:
		return nil
	case same && errors.Is(err, locks.ErrNotHeld):
		return nil
	case errors.Is(err, locks.ErrNotHeld):
		return fmt.Errorf("zk-herd %s: %w", l.dir, err)
	default:
		l.s.background(func() { l.removeOwned(node, owner) })
		return fmt.Errorf("zk-herd %s: %w", l.dir, err)
	}
}

// deleteOwned deletes node when it carries owner (and czxid, unless 0);
// ErrNotHeld when it is gone or someone else's.
func (l *herdLocker) deleteOwned(ctx context.Context, node string, owner []byte, czxid int64) error {
	var data []byte
	var stat *zk.Stat
	err := l.s.call(ctx, func() error {
		var err error
		data, stat, err = l.s.conn.Get(node)
		return err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("node gone (session expired): %w", locks.ErrNotHeld)
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", node, err)
	}
	if !bytes.Equal(data, owner) || (czxid != 0 && stat.Czxid != czxid) {
		return fmt.Errorf("node now another holder's (czxid %d): %w", stat.Czxid, locks.ErrNotHeld)
	}
	version := stat.Version
	err = l.s.call(ctx, func() error { return l.s.conn.Delete(node, version) })
	if errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrBadVersion) {
		return fmt.Errorf("node changed before delete: %w", locks.ErrNotHeld)
	}
	if err != nil {
		return fmt.Errorf("delete %s: %w", node, err)
	}
	return nil
}

// removeOwned deletes our node in the background (abandoned acquisition,
// failed release).
func (l *herdLocker) removeOwned(node string, owner []byte) {
	l.s.retryBackground("remove "+node, func(ctx context.Context) error {
		err := l.deleteOwned(ctx, node, owner, 0)
		if errors.Is(err, locks.ErrNotHeld) {
			return nil
		}
		return err
	})
}
