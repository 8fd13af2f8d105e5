package natslock

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// waiter is a blocked Acquire's watch on the key. A nil waiter, or one
// whose watch could not start, only sleeps: polling is the fallback.
type waiter struct {
	c      *Client
	w      jetstream.KeyWatcher
	cancel context.CancelFunc
}

// WatchTimeout bounds the start of a watch: a JetStream that cannot place
// the watch's consumer (no meta leader) must not hold up the poll.
const WatchTimeout = time.Second

// watch starts watching l's key for changes to come; a failure (or a start
// slower than WatchTimeout) is logged and leaves a waiter that polls.
func (l *Locker) watch(ctx context.Context) *waiter {
	l.c.counts.requests.Add(1)
	// The watch's context also bounds the re-creation of its consumer
	// (after a leader change), so it lasts the watch's life; a start
	// beyond WatchTimeout gives up.
	wctx, cancel := context.WithCancel(ctx)
	timer := time.AfterFunc(WatchTimeout, cancel)
	kw, err := l.c.kv.Watch(wctx, l.key, jetstream.UpdatesOnly())
	if !timer.Stop() || err != nil {
		cancel()
		if err == nil {
			_ = kw.Stop()
			err = context.DeadlineExceeded
		}
		l.c.log.Debug("watch failed, polling", "key", l.key, "err", err)
		return &waiter{c: l.c}
	}
	return &waiter{c: l.c, w: kw, cancel: cancel}
}

// watching reports whether the waiter's watch runs.
func (w *waiter) watching() bool { return w != nil && w.w != nil }

// wait returns when the key was deleted or purged, d has passed, or ctx
// ended (then ctx's error). Writes (the holder's renewals) do not end it.
func (w *waiter) wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	var updates <-chan jetstream.KeyValueEntry
	if w.w != nil {
		updates = w.w.Updates()
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			return nil
		case e, ok := <-updates:
			if !ok {
				updates = nil // the watch ended: poll from here on
				continue
			}
			if e == nil {
				continue // the end of the initial values (none asked for)
			}
			w.c.counts.watchEvents.Add(1)
			if e.Operation() != jetstream.KeyValuePut {
				return nil
			}
		}
	}
}

// stop ends the watch, if any.
func (w *waiter) stop() {
	if w.watching() {
		_ = w.w.Stop()
		w.cancel()
	}
}
