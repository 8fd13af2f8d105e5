package locks_test

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locklab/locklab/locks"
)

// TestKeepRenewed drives the loop with renewals that succeed, fail, or
// find the key taken, and checks when it reports the key lost.
func TestKeepRenewed(t *testing.T) {
	const ttl = 60 * time.Millisecond
	log := slog.New(slog.DiscardHandler)
	type result struct {
		lost    bool
		calls   int64
		renewed int64
	}
	run := func(ctx context.Context, renew func(n int64) (bool, error)) result {
		var calls, renewed atomic.Int64
		var last time.Time
		sent := time.Now()
		lost := locks.KeepRenewed(ctx, sent, ttl, func(ctx context.Context) (bool, error) {
			if _, ok := ctx.Deadline(); !ok {
				t.Error("renewal call without a deadline")
			}
			return renew(calls.Add(1))
		}, func(at time.Time) {
			if !at.After(sent) || at.Before(last) {
				t.Errorf("renewed(%v): not after the acquisition and the last renewal", at)
			}
			last = at
			renewed.Add(1)
		}, log)
		return result{lost, calls.Load(), renewed.Load()}
	}

	t.Run("taken", func(t *testing.T) {
		r := run(context.Background(), func(n int64) (bool, error) { return n < 3, nil })
		if !r.lost || r.calls != 3 || r.renewed != 2 {
			t.Errorf("got %+v, want lost after 3 calls, 2 renewed", r)
		}
	})
	t.Run("failing", func(t *testing.T) {
		start := time.Now()
		r := run(context.Background(), func(int64) (bool, error) { return false, errors.New("no answer") })
		if !r.lost || r.renewed != 0 || r.calls < 2 {
			t.Errorf("got %+v, want lost after retries, none renewed", r)
		}
		if d := time.Since(start); d < ttl {
			t.Errorf("lost after %s, before a whole ttl (%s) without renewal", d, ttl)
		}
	})
	t.Run("stopped", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		r := run(ctx, func(n int64) (bool, error) {
			if n == 5 {
				cancel()
			}
			return true, nil
		})
		if r.lost || r.calls != 5 || r.renewed != 4 {
			t.Errorf("got %+v, want not lost, stopped during call 5, 4 renewed", r)
		}
	})
}
