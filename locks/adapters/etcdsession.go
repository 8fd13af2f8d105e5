package adapters

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/etcdlock"
)

// etcdSession keeps one concurrency.Session (a lease of ttl seconds, kept
// alive by clientv3's KeepAlive) for the etcd library adapters: started on
// first use, started again once the last one ended or was dropped.
type etcdSession struct {
	cli *clientv3.Client
	ttl int

	mu     sync.Mutex
	sess   *concurrency.Session
	stop   context.CancelFunc // ends the session's keep-alives
	closed bool
}

// get returns the live session, starting one when there is none or the
// last one ended. The Grant is bounded by ctx; the session's keep-alives are
// not (they end on close).
func (e *etcdSession) get(ctx context.Context) (*concurrency.Session, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, errors.New("client closed")
	}
	if e.sess != nil {
		select {
		case <-e.sess.Done():
			// As a careful application would, revoke the ended session's
			// lease before starting a new one: the client gave up on it
			// (keep-alive deadline passed), but keep-alives held up by a
			// partition can reach the server later and renew it, leaving
			// its lock key to block the queue for a whole TTL.
			e.endLocked()
		default:
			return e.sess, nil
		}
	}
	sctx, stop := context.WithCancel(context.Background())
	type result struct {
		s   *concurrency.Session
		err error
	}
	done := make(chan result, 1)
	go func() {
		s, err := concurrency.NewSession(e.cli, concurrency.WithTTL(e.ttl), concurrency.WithContext(sctx))
		done <- result{s, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			stop()
			return nil, fmt.Errorf("new session: %w", r.err)
		}
		e.sess, e.stop = r.s, stop
		return r.s, nil
	case <-ctx.Done():
		stop() // aborts the Grant, or ends the session it made
		return nil, ctx.Err()
	}
}

// drop ends s when it is still the current session: its lease is revoked in
// the background (every key on it goes) and the next get starts another.
func (e *etcdSession) drop(s *concurrency.Session) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.sess == s && s != nil {
		e.endLocked()
	}
}

// endLocked revokes the current session's lease in the background and
// forgets the session; e.mu is held.
func (e *etcdSession) endLocked() {
	old := e.sess.Lease()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), etcdlock.DialTimeout)
		defer cancel()
		e.cli.Revoke(ctx, old)
	}()
	e.stop()
	e.sess = nil
}

// close revokes the session's lease (bounded by DialTimeout) and stops its
// keep-alives; later gets fail. It reports whether it was already closed.
func (e *etcdSession) close() (already bool) {
	e.mu.Lock()
	s, stop, closed := e.sess, e.stop, e.closed
	e.closed, e.sess = true, nil
	e.mu.Unlock()
	if closed {
		return true
	}
	if s != nil {
		s.Orphan()
		ctx, cancel := context.WithTimeout(context.Background(), etcdlock.DialTimeout)
		e.cli.Revoke(ctx, s.Lease())
		cancel()
		stop()
	}
	return false
}

// sessionEnded reports whether s has ended (its Done is closed).
func sessionEnded(s *concurrency.Session) bool {
	select {
	case <-s.Done():
		return true
	default:
		return false
	}
}

// etcdLease is what the leases of the etcd library adapters share: a key
// held on a concurrency.Session, whose end is the lease's loss, released
// once.
type etcdLease struct {
	until time.Time
	s     *concurrency.Session
	token uint64
	once  sync.Once
}

// newEtcdLease is the lease of a key with token, taken on s by a call made
// at start with a session of ttl.
func newEtcdLease(s *concurrency.Session, token uint64, start time.Time, ttl time.Duration) etcdLease {
	return etcdLease{s: s, token: token, until: start.Add(ttl - ttl/3)}
}

func (ls *etcdLease) Token() uint64 { return ls.token }

// Promise is an estimate: clientv3 keeps the session's lease alive every
// ttl/3 and shows the adapter none of it, so while keep-alives flow at least
// 2/3 of the TTL remains at any moment; counted from before the call that
// took the key was sent, not moved by later keep-alives. Estimated.
func (ls *etcdLease) Promise() locks.Promise {
	return locks.Promise{Until: ls.until, Estimated: true}
}

// Lost is the session's Done(): it closes when clientv3's keep-alive
// channel closes.
func (ls *etcdLease) Lost() <-chan struct{} { return ls.s.Done() }

// release calls unlock the first time, which deletes the key whatever
// happened to it: the libraries cannot tell whether it was still there, so
// release reports ErrNotHeld when the session had already ended. what
// names the lock in errors ("etcd-mutex <prefix>").
func (ls *etcdLease) release(what string, unlock func() error) error {
	err := fmt.Errorf("%s: released twice: %w", what, locks.ErrNotHeld)
	ls.once.Do(func() {
		ended := sessionEnded(ls.s)
		err = unlock()
		switch {
		case err != nil:
			err = fmt.Errorf("%s: unlock: %w", what, err)
		case ended:
			err = fmt.Errorf("%s: session ended: %w", what, locks.ErrNotHeld)
		}
	})
	return err
}
