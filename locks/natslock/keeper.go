package natslock

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/locklab/locklab/locks"
)

// keeper is a watchdog: it renews a held key every ttl/3 until stopped, and
// closes lost when a renewal finds the key gone or someone else's, or when
// no renewal has succeeded for a whole TTL (the key may have aged out: the
// holder must assume it did).
type keeper struct {
	ttl      time.Duration
	mu       sync.Mutex
	okSent   time.Time // send time of the acquisition or the last successful renewal
	lost     chan struct{}
	lostOnce sync.Once
	cancel   context.CancelFunc
	done     chan struct{}
}

// startKeeper starts renewing a key written by a request sent at sent (it
// ages out no sooner than sent+ttl, the bound the keeper counts from).
func startKeeper(sent time.Time, ttl time.Duration, renew func(context.Context) (bool, error), log *slog.Logger) *keeper {
	ctx, cancel := context.WithCancel(context.Background())
	k := &keeper{ttl: ttl, okSent: sent, lost: make(chan struct{}), cancel: cancel, done: make(chan struct{})}
	go k.run(ctx, sent, renew, log)
	return k
}

func (k *keeper) run(ctx context.Context, lastOK time.Time, renew func(context.Context) (bool, error), log *slog.Logger) {
	defer close(k.done)
	every := max(k.ttl/3, time.Millisecond)
	timer := time.NewTimer(time.Until(lastOK.Add(every)))
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		start := time.Now()
		deadline := lastOK.Add(k.ttl) // our key may be gone from here on
		if !start.Before(deadline) {
			log.Warn("lease lost: no renewal succeeded for a whole ttl", "ttl", k.ttl)
			k.markLost()
			return
		}
		// A renewal that answers after the deadline is worth nothing.
		callCtx, cancelCall := context.WithDeadline(ctx, minTime(start.Add(every), deadline))
		ok, err := renew(callCtx)
		cancelCall()
		if ctx.Err() != nil {
			return // stopped by Release while the call ran
		}
		next := time.Now().Add(every / 3) // retry sooner after a failure
		switch {
		case err != nil:
			log.Debug("renewal failed", "err", err, "left", time.Until(deadline))
		case !ok:
			log.Warn("lease lost: key gone or taken over")
			k.markLost()
			return
		default:
			lastOK = start
			k.mu.Lock()
			k.okSent = start
			k.mu.Unlock()
			next = start.Add(every)
		}
		timer.Reset(time.Until(minTime(next, lastOK.Add(k.ttl))))
	}
}

// promise is the last successful send + ttl - drift.
func (k *keeper) promise() locks.Promise {
	k.mu.Lock()
	defer k.mu.Unlock()
	return locks.TTLPromise(k.okSent, k.ttl)
}

func (k *keeper) markLost() { k.lostOnce.Do(func() { close(k.lost) }) }

// stop ends the renewal and waits until no renewal call is in flight, so
// nothing touches the key after stop returns.
func (k *keeper) stop() {
	k.cancel()
	<-k.done
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
