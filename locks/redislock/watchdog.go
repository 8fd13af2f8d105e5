package redislock

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/locklab/locklab/locks"
)

// keeper is a watchdog: it renews a held key every ttl/3 until stopped, and
// closes lost when a renewal finds the key gone or someone else's, or when
// no renewal has succeeded for a whole TTL (the key may have expired: the
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

// renewFunc resets the key's expiry to the TTL; false means the key is no
// longer ours.
type renewFunc func(ctx context.Context) (bool, error)

// startKeeper starts renewing a key taken by a command sent at start (its
// expiry is at least start+ttl, the bound the keeper counts from).
func startKeeper(start time.Time, ttl time.Duration, renew renewFunc, log *slog.Logger) *keeper {
	ctx, cancel := context.WithCancel(context.Background())
	k := &keeper{ttl: ttl, okSent: start, lost: make(chan struct{}), cancel: cancel, done: make(chan struct{})}
	go k.run(ctx, start, ttl, renew, log)
	return k
}

func (k *keeper) run(ctx context.Context, lastOK time.Time, ttl time.Duration, renew renewFunc, log *slog.Logger) {
	defer close(k.done)
	if locks.KeepRenewed(ctx, lastOK, ttl, renew, k.renewed, log) {
		k.markLost()
	}
}

// renewed records the send time of a successful renewal.
func (k *keeper) renewed(sent time.Time) {
	k.mu.Lock()
	k.okSent = sent
	k.mu.Unlock()
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
