package locks

import (
	"context"
	"log/slog"
	"time"
)

// KeepRenewed is the watchdog loop of a key held with ttl and taken by a
// request sent at sent (its expiry is at least sent+ttl, the bound the loop
// counts from): it calls renew every ttl/3 (a third of that after a failed
// call), each call bounded by the next period and by the key's possible
// expiry, until ctx ends or the key is lost. renew resets the key's expiry
// to ttl; false means the key is no longer ours. After each successful
// renewal, renewed gets that call's send time.
//
// KeepRenewed returns true when the key is lost: a renewal found it gone or
// someone else's, or no renewal succeeded for a whole ttl (the key may have
// expired: the holder must assume it did). It returns false when ctx ended,
// also while a call ran, and so makes no call after it returns.
func KeepRenewed(ctx context.Context, sent time.Time, ttl time.Duration, renew func(context.Context) (bool, error), renewed func(sent time.Time), log *slog.Logger) (lost bool) {
	lastOK := sent
	every := max(ttl/3, time.Millisecond)
	timer := time.NewTimer(time.Until(lastOK.Add(every)))
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-timer.C:
		}
		start := time.Now()
		deadline := lastOK.Add(ttl) // our key may be gone from here on
		if !start.Before(deadline) {
			log.Warn("lease lost: no renewal succeeded for a whole ttl", "ttl", ttl)
			return true
		}
		// A renewal that answers after the deadline is worth nothing.
		callCtx, cancelCall := context.WithDeadline(ctx, minTime(start.Add(every), deadline))
		ok, err := renew(callCtx)
		cancelCall()
		if ctx.Err() != nil {
			return false // stopped while the call ran
		}
		next := time.Now().Add(every / 3) // retry sooner after a failure
		switch {
		case err != nil:
			log.Debug("renewal failed", "err", err, "left", time.Until(deadline))
		case !ok:
			log.Warn("lease lost: key gone or taken over")
			return true
		default:
			lastOK = start
			renewed(start)
			next = start.Add(every)
		}
		timer.Reset(time.Until(minTime(next, lastOK.Add(ttl))))
	}
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
