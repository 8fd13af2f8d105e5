package workload

import (
	"context"
	"testing"
	"time"
)

// TestSleepNoticing: the critical section's wait records when Lost closed
// inside it and still lasts its whole length; it ends early only with ctx.
func TestSleepNoticing(t *testing.T) {
	lost := make(chan struct{})
	start := time.Now()
	time.AfterFunc(50*time.Millisecond, func() { close(lost) })
	elapsed, noticed := sleepNoticing(context.Background(), 300*time.Millisecond, lost)
	took := time.Since(start)
	if !elapsed || took < 300*time.Millisecond {
		t.Errorf("elapsed %v after %v, want the whole 300ms", elapsed, took)
	}
	if at := noticed.Sub(start); noticed.IsZero() || at < 50*time.Millisecond || at >= took {
		t.Errorf("noticed %v after the start, want at 50ms or a little later, before the end (%v)", at, took)
	}
	elapsed, noticed = sleepNoticing(context.Background(), 20*time.Millisecond, make(chan struct{}))
	if !elapsed || !noticed.IsZero() {
		t.Errorf("open lost channel: elapsed %v, noticed %v; want true and zero", elapsed, noticed)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if elapsed, _ := sleepNoticing(ctx, time.Second, nil); elapsed {
		t.Error("a cancelled wait reports elapsed")
	}
}
