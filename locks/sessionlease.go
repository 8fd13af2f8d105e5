package locks

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Session is a database session holding a lock, as SessionLease uses it.
// SessionLease calls its methods one at a time.
type Session interface {
	// Ping asks the server whether the session still holds the lock: an
	// error means it does not, or cannot say.
	Ping(ctx context.Context) error
	// Unlock gives the lock back on the session; held false means the
	// server said the session did not hold it. After an error SessionLease
	// drops the session.
	Unlock(ctx context.Context) (held bool, err error)
	// Drop ends the session for good (closing its connection, which ends
	// every lock it held).
	Drop()
}

// SessionLease is the lease of a lock held by a database session (a
// PostgreSQL advisory lock, a MariaDB GET_LOCK): the lock lasts until the
// server notices the session is gone, so the lease pings the session
// periodically, promises validity from the send time of its last answered
// ping, and is released once.
type SessionLease struct {
	name    string
	bound   time.Duration
	token   uint64
	session Session

	mu       sync.Mutex // guards the session's use, lastOK, isLost and released
	lastOK   time.Time  // send time of the last answered request
	isLost   bool
	released bool

	lost     chan struct{}
	stop     chan struct{}
	done     chan struct{}
	lostOnce sync.Once
	stopOnce sync.Once
}

var (
	_ Lease    = (*SessionLease)(nil)
	_ Promiser = (*SessionLease)(nil)
)

// StartSessionLease starts pinging session, granted a lock by a request
// sent at sent, until Release; token is the lease's fencing token. name
// starts the lease's errors ("pglock").
// bound is how long the server takes at least to drop a client that
// stopped answering (its TCP keepalive time; 0 when it cannot be said).
// The session is pinged every bound/3, at most every check, each ping
// bounded by the larger of bound and check; a failed ping drops the
// session and the lease is lost.
func StartSessionLease(name string, session Session, token uint64, sent time.Time, bound, check time.Duration) *SessionLease {
	s := &SessionLease{name: name, bound: bound, token: token, session: session, lastOK: sent,
		lost: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	every := check
	if bound > 0 && bound/3 < every {
		every = bound / 3
	}
	go s.run(every, max(bound, check))
	return s
}

// Token is the fencing token given at start.
func (s *SessionLease) Token() uint64 { return s.token }

// Lost closes when a ping of the session failed, or a release could not
// reach the server (the session is dropped then, so the server ends it and
// its locks).
func (s *SessionLease) Lost() <-chan struct{} { return s.lost }

func (s *SessionLease) markLost() { s.lostOnce.Do(func() { close(s.lost) }) }

// Promise is the send time of the last answered request plus the server's
// keepalive time (bound) less the drift allowance: before then the server
// cannot have dropped the session. Unbounded when the server's settings do
// not say.
func (s *SessionLease) Promise() Promise {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bound <= 0 {
		return Promise{Unbounded: true}
	}
	return Promise{Until: s.lastOK.Add(s.bound - Drift(s.bound))}
}

// run pings the session every period until stopped; a failed ping drops
// the session and marks the lease lost.
func (s *SessionLease) run(every, timeout time.Duration) {
	defer close(s.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		s.mu.Lock()
		sent := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		err := s.session.Ping(ctx)
		cancel()
		if err != nil {
			s.isLost = true
			s.session.Drop()
			s.mu.Unlock()
			s.markLost()
			return
		}
		s.lastOK = sent
		s.mu.Unlock()
	}
}

// Release stops the pings and unlocks on the session (Session.Unlock);
// ErrNotHeld when the lease was already released, the session was lost,
// the server says the lock was not held, or the unlock failed (the session
// is dropped then, which ends the lock).
func (s *SessionLease) Release(ctx context.Context) error {
	s.stopOnce.Do(func() { close(s.stop) })
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.released {
		return fmt.Errorf("%s: release: already released: %w", s.name, ErrNotHeld)
	}
	s.released = true
	if s.isLost {
		return fmt.Errorf("%s: release: session lost: %w", s.name, ErrNotHeld)
	}
	held, err := s.session.Unlock(ctx)
	if err != nil {
		s.session.Drop()
		s.markLost()
		return fmt.Errorf("%s: release: %w: %w", s.name, ErrNotHeld, err)
	}
	if !held {
		return fmt.Errorf("%s: release: %w", s.name, ErrNotHeld)
	}
	return nil
}
