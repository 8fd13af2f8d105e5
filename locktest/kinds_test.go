package locktest_test

import (
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locktest"
)

func TestContendPermits(t *testing.T) {
	tests := []struct {
		name    string
		slots   int
		failure string // in the reported failures; "" means none
	}{
		{"as many slots as permits", 3, ""},
		// 8 clients holding 2ms each, 20 times, over 8 slots: more than 3
		// inside at once is as good as certain.
		{"more slots than permits", 8, "holders of 3 permits"},
		{"one slot", 1, "never more than one holder inside"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{TB: t}
			l := newFakeLock(tt.slots, increasing)
			var lockers []locks.Locker
			for range 8 {
				lockers = append(lockers, &fakeClient{l: l})
			}
			rec.run(func(tb testing.TB) { locktest.ContendPermits(tb, lockers, 3, 20, 2*time.Millisecond) })
			got := rec.failures()
			if tt.failure == "" && got != "" {
				t.Errorf("reported %q on a correct semaphore", got)
			}
			if !strings.Contains(got, tt.failure) {
				t.Errorf("reported %q, want %q", got, tt.failure)
			}
		})
	}
}

// TestAcquireAsync: a waiter behind a holder is Waiting, and Granted once
// the holder releases; Waiting fails for one that did not wait.
func TestAcquireAsync(t *testing.T) {
	l := newFakeLock(1, increasing)
	holder := locktest.Acquire(t, &fakeClient{l: l})
	w := locktest.AcquireAsync(t, (&fakeClient{l: l}).Acquire)
	locktest.Waiting(t, w, "waiter")
	locktest.Release(t, holder, "holder")
	locktest.Release(t, locktest.Granted(t, w, "waiter"), "waiter")

	rec := &recorder{TB: t}
	free := locktest.AcquireAsync(t, (&fakeClient{l: l}).Acquire)
	rec.run(func(tb testing.TB) { locktest.Waiting(tb, free, "free") })
	if got := rec.failures(); !strings.Contains(got, "free returned while it should wait") {
		t.Errorf("Waiting on a free lock reported %q", got)
	}
}
