package locks

import (
	"context"
	"fmt"
	"time"
)

// ContextDone is ctx.Err(), or context.DeadlineExceeded once ctx's
// deadline has passed: a socket deadline set from ctx can fire before
// ctx's own timer does, and a lock telling a timeout from a server error
// must not wait for that timer.
func ContextDone(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}

// Sleep waits for d or until ctx ends, returning ctx.Err() then; a lock's
// retry loop waits with it.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// triesKey is the context key of WithTries.
type triesKey struct{}

// WithTries returns ctx with f attached: an Acquire called with it calls
// f, through Tried, each time it sends a request that may grant the lock
// (its first try and every retry, or a re-check after a notification).
// The harness counts them as attempts while a fault has opened the race.
func WithTries(ctx context.Context, f func()) context.Context {
	return context.WithValue(ctx, triesKey{}, f)
}

// Tried tells the observer WithTries attached to ctx, if any, that an
// acquire request is being sent now. Lock implementations call it before
// each such request; it costs a context lookup when nobody listens.
func Tried(ctx context.Context) {
	if f, ok := ctx.Value(triesKey{}).(func()); ok {
		f()
	}
}

// AcquireError wraps err, a failed request of an Acquire of the lock at
// key, as "acquire <key>: <err>". When ctx has ended meanwhile
// (ContextDone) the chain holds ctx's error instead and err's text stands
// beside it, so errors.Is(err, context.DeadlineExceeded) tells a timeout
// from a server error even when the client reported the deadline as a
// socket timeout.
func AcquireError(ctx context.Context, key string, err error) error {
	if ctxErr := ContextDone(ctx); ctxErr != nil {
		return fmt.Errorf("acquire %s: %w (%v)", key, ctxErr, err)
	}
	return fmt.Errorf("acquire %s: %w", key, err)
}
