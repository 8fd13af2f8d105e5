package locks_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locklab/locklab/locks"
)

// fakeSession answers pings while answer is set and counts its unlocks
// and drops; unlock is what Unlock returns.
type fakeSession struct {
	t       *testing.T
	answer  atomic.Bool
	unlock  func() (bool, error)
	unlocks atomic.Int64
	drops   atomic.Int64
}

func (s *fakeSession) Ping(ctx context.Context) error {
	if _, ok := ctx.Deadline(); !ok {
		s.t.Error("ping without a deadline")
	}
	if !s.answer.Load() {
		return errors.New("no answer")
	}
	return nil
}

func (s *fakeSession) Unlock(context.Context) (bool, error) {
	s.unlocks.Add(1)
	return s.unlock()
}

func (s *fakeSession) Drop() { s.drops.Add(1) }

// TestSessionLease checks the promise moved on by answered pings, the loss
// after a failed one, and that Release unlocks once, never after the
// session was lost, and drops the session when the unlock fails.
func TestSessionLease(t *testing.T) {
	const bound, check = 30 * time.Millisecond, time.Second
	held := func() (bool, error) { return true, nil }
	start := func(answer bool, unlock func() (bool, error)) (*locks.SessionLease, *fakeSession) {
		fs := &fakeSession{t: t, unlock: unlock}
		fs.answer.Store(answer)
		return locks.StartSessionLease("test", fs, 7, time.Now(), bound, check), fs
	}
	released := func(t *testing.T, s *locks.SessionLease, fs *fakeSession, wantErr error, unlocks, drops int64) {
		t.Helper()
		if err := s.Release(context.Background()); !errors.Is(err, wantErr) {
			t.Errorf("Release = %v, want %v", err, wantErr)
		}
		if fs.unlocks.Load() != unlocks || fs.drops.Load() != drops {
			t.Errorf("%d unlocks, %d drops; want %d, %d", fs.unlocks.Load(), fs.drops.Load(), unlocks, drops)
		}
	}

	t.Run("held", func(t *testing.T) {
		s, fs := start(true, held)
		first := s.Promise()
		if first.Unbounded || first.Estimated {
			t.Fatalf("promise %+v, want bounded", first)
		}
		if s.Token() != 7 {
			t.Errorf("token %d, want 7", s.Token())
		}
		// Pings every bound/3 move the promise on.
		deadline := time.Now().Add(10 * time.Second)
		for !s.Promise().Until.After(first.Until) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond) // polling interval
		}
		if !s.Promise().Until.After(first.Until) {
			t.Errorf("promise still %v after answered pings", first.Until)
		}
		released(t, s, fs, nil, 1, 0)
		released(t, s, fs, locks.ErrNotHeld, 1, 0) // twice
		select {
		case <-s.Lost():
			t.Error("Lost closed for a released lease")
		default:
		}
	})
	t.Run("lost", func(t *testing.T) {
		s, fs := start(false, held)
		select {
		case <-s.Lost():
		case <-time.After(10 * time.Second):
			t.Fatal("Lost not closed after a failed ping")
		}
		released(t, s, fs, locks.ErrNotHeld, 0, 1)
	})
	t.Run("not held", func(t *testing.T) {
		s, fs := start(true, func() (bool, error) { return false, nil })
		released(t, s, fs, locks.ErrNotHeld, 1, 0)
	})
	t.Run("unlock failed", func(t *testing.T) {
		gone := errors.New("connection reset")
		s, fs := start(true, func() (bool, error) { return false, gone })
		released(t, s, fs, gone, 1, 1)
		released(t, s, fs, locks.ErrNotHeld, 1, 1)
		select {
		case <-s.Lost():
		default:
			t.Error("Lost open after a failed unlock")
		}
	})
}
