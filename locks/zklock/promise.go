package zklock

import (
	"time"

	"github.com/locklab/locklab/locks"
)

// The promise of a ZooKeeper lock is its session's: the server expires the
// session (and our ephemeral node) no sooner than the session timeout after
// it last heard from us. The Session records the send time of its last
// successful request of the current epoch (any recipe call, or the
// heartbeat below) and promises that plus the session timeout. The timeout
// is the one requested: a server clamps it to [2, 20] x tickTime, so a
// request above the clamp makes the promise longer than the server's (the
// cluster's tickTime keeps requests inside it).

// noting wraps op so that its success moves the session's promise.
func (s *Session) noting(op func() error) func() error {
	return func() error {
		s.mu.Lock()
		epoch := s.epoch
		s.mu.Unlock()
		sent := time.Now()
		err := op()
		if err == nil {
			s.noteOK(epoch, sent)
		}
		return err
	}
}

func (s *Session) noteOK(epoch uint64, sent time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.epoch == epoch && s.connected && sent.After(s.okSent) {
		s.okSent = sent
	}
}

// heartbeat reads the root every timeout/3 so the promise follows the
// session while a holder makes no requests of its own (go-zookeeper's
// pings are not visible to us). It is not counted in requests.
func (s *Session) heartbeat() {
	every := max(s.timeout/3, 10*time.Millisecond)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		_ = s.noting(func() error {
			_, _, err := s.conn.Exists("/")
			return err
		})()
	}
}

// Promise returns the promise of ownership established in epoch: while
// that epoch lasts, the last successful request's send + the session
// timeout; after it ended, that value as it stood at its end.
func (s *Session) Promise(epoch uint64) locks.Promise {
	s.mu.Lock()
	defer s.mu.Unlock()
	if end, ok := s.ended[epoch]; ok {
		return locks.Promise{Until: end}
	}
	return locks.Promise{Until: s.okSent.Add(s.timeout)}
}
