package natslock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/locklab/locklab/locks"
)

// Locker acquires one lock name for its Client. It may be shared by
// goroutines: each Acquire is an independent holding with its own owner id.
type Locker struct {
	c   *Client
	key string
}

var _ locks.Locker = (*Locker)(nil)

// Acquire blocks until the lock is held or ctx ends (the error wraps
// ctx.Err()). A request that fails otherwise is returned at once: the key
// may then have been created all the same, and ages out after the TTL.
func (l *Locker) Acquire(ctx context.Context) (locks.Lease, error) {
	var w *waiter
	defer func() { w.stop() }()
	for {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("acquire %s: %w", l.key, err)
		}
		locks.Tried(ctx)
		lease, err := l.try(ctx)
		if err == nil {
			return lease, nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return nil, locks.AcquireError(ctx, l.key, err)
		}
		if !w.watching() {
			// Watch first, then read the holder's entry: a release
			// between the two is then seen by the watch. A watch that
			// could not start is tried again at the next round.
			w = l.watch(ctx)
		}
		left, err := l.left(ctx)
		if err != nil {
			return nil, locks.AcquireError(ctx, l.key, err)
		}
		if err := w.wait(ctx, l.c.backoff(left)); err != nil {
			return nil, fmt.Errorf("acquire %s: %w", l.key, err)
		}
	}
}

// try is one create-if-absent of the key; an error wrapping
// jetstream.ErrKeyExists means someone holds it.
func (l *Locker) try(ctx context.Context) (*Lease, error) {
	owner := newOwner()
	sent := time.Now()
	l.c.counts.requests.Add(1)
	rev, err := l.c.kv.Create(ctx, l.key, []byte(owner))
	if err != nil && !errors.Is(err, jetstream.ErrKeyExists) && ctx.Err() == nil {
		// The write may have been stored with its answer lost (a timeout
		// while the stream elects a leader): then the key is ours, and
		// giving up would leave it held by nobody for a whole ttl.
		if r, found := l.created(ctx, owner); found {
			rev, err = r, nil
		}
	}
	if err != nil {
		return nil, err
	}
	s := &Lease{l: l, token: rev, owner: owner, rev: rev}
	s.keeper = startKeeper(sent, l.c.ttl, s.renew, l.c.log.With("key", l.key))
	return s, nil
}

// created reports whether the key holds owner (a create whose answer was
// lost), with its revision.
func (l *Locker) created(ctx context.Context, owner string) (uint64, bool) {
	l.c.counts.requests.Add(1)
	e, err := l.c.kv.Get(ctx, l.key)
	if err != nil || string(e.Value()) != owner {
		return 0, false
	}
	return e.Revision(), true
}

// left is how long the holder's key has until it ages out, measured from
// its last write's server time (servers and harness share one clock on a
// test machine; elsewhere it only bounds a poll); -1 when unknown, 0 when
// the key is gone already.
func (l *Locker) left(ctx context.Context) (time.Duration, error) {
	l.c.counts.requests.Add(1)
	e, err := l.c.kv.Get(ctx, l.key)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound), errors.Is(err, jetstream.ErrKeyDeleted):
		return 0, nil
	case err != nil:
		return 0, err
	}
	return max(0, time.Until(e.Created().Add(l.c.ttl))), nil
}

// Lease is one holding of a Locker's lock.
type Lease struct {
	l        *Locker
	token    uint64
	owner    string
	keeper   *keeper
	released atomic.Bool

	mu  sync.Mutex
	rev uint64 // the revision this holding last wrote
}

var (
	_ locks.Lease    = (*Lease)(nil)
	_ locks.Promiser = (*Lease)(nil)
)

// Token returns the key's revision at the grant: strictly increasing per
// lock name (a revision is the bucket stream's sequence number).
func (s *Lease) Token() uint64 { return s.token }

// Lost is closed when a renewal finds the key gone or someone else's, or
// none has succeeded for a whole TTL.
func (s *Lease) Lost() <-chan struct{} { return s.keeper.lost }

// Promise is the last successful write's send time + ttl - drift.
func (s *Lease) Promise() locks.Promise { return s.keeper.promise() }

// renew rewrites the key conditioned on the revision last written; false
// means the key is no longer ours.
func (s *Lease) renew(ctx context.Context) (bool, error) {
	s.mu.Lock()
	rev := s.rev
	s.mu.Unlock()
	s.l.c.counts.requests.Add(1)
	next, err := s.l.c.kv.Update(ctx, s.l.key, []byte(s.owner), rev)
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		// Our last write may have been stored with its answer lost: the
		// key is still ours when it holds our owner id.
		next, err = s.adopt(ctx)
	}
	if err != nil || next == 0 {
		return false, err
	}
	s.mu.Lock()
	s.rev = next
	s.mu.Unlock()
	return true, nil
}

// adopt reads the key after a revision mismatch: its revision when it
// still holds this holding's owner id, 0 when it is gone or someone else's.
func (s *Lease) adopt(ctx context.Context) (uint64, error) {
	s.l.c.counts.requests.Add(1)
	e, err := s.l.c.kv.Get(ctx, s.l.key)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound), errors.Is(err, jetstream.ErrKeyDeleted):
		return 0, nil
	case err != nil:
		return 0, err
	case string(e.Value()) != s.owner:
		return 0, nil
	}
	return e.Revision(), nil
}

// Release stops the renewal, then deletes the key conditioned on the
// revision last written. It returns an error wrapping locks.ErrNotHeld
// when the lease was released already or the key is gone or someone
// else's. After a failed request the key ages out on its own.
func (s *Lease) Release(ctx context.Context) error {
	key := s.l.key
	if !s.released.CompareAndSwap(false, true) {
		return fmt.Errorf("release %s: already released: %w", key, locks.ErrNotHeld)
	}
	s.keeper.stop()
	s.mu.Lock()
	rev := s.rev
	s.mu.Unlock()
	kv := s.l.c.kv
	s.l.c.counts.requests.Add(1)
	err := kv.Delete(ctx, key, jetstream.LastRevision(rev))
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		if rev, err = s.adopt(ctx); err == nil && rev != 0 {
			s.l.c.counts.requests.Add(1)
			err = kv.Delete(ctx, key, jetstream.LastRevision(rev))
		}
		if err == nil && rev == 0 {
			return fmt.Errorf("release %s: %w", key, locks.ErrNotHeld)
		}
	}
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return fmt.Errorf("release %s: %w", key, locks.ErrNotHeld)
	}
	if err != nil {
		return fmt.Errorf("release %s: %w", key, err)
	}
	return nil
}

// newOwner returns a random owner id: the key's value while held.
func newOwner() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}
