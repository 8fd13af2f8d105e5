package checker

import (
	"context"
	"testing"
	"time"
)

// TestHoldInside: the holder picked is held at its write and its exit until
// Release, so it is inside when a fault on it applies however quickly it
// was about to leave; Seen reports a contender entering meanwhile and a
// promise that ran out while the holder was inside.
func TestHoldInside(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r := New(FencingOff, time.Now())
	now := time.Duration(0)
	r.clock = func() time.Duration { return now }
	id, err := r.Enter(ctx, Visit{Lock: "L", Client: 3, ValidUntil: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Read(ctx, id); err != nil {
		t.Fatal(err)
	}
	h, err := r.HoldInside(ctx)
	if err != nil || h.Client() != 3 {
		t.Fatalf("HoldInside = %v, %v; want client 3", h, err)
	}
	done := make(chan error, 1)
	go func() {
		if err := r.Write(ctx, id, 1); err != nil {
			done <- err
			return
		}
		done <- r.Exit(ctx, id)
	}()
	select {
	case err := <-done:
		t.Fatalf("the held holder wrote and left before Release (%v)", err)
	case <-time.After(50 * time.Millisecond): // a bounded check for absence
	}
	if s := h.Seen(); !s.Inside || s.Contenders != 0 || s.Expired {
		t.Fatalf("held: %+v, want inside, no contender, not expired", s)
	}
	now = time.Second
	other, err := r.Enter(ctx, Visit{Lock: "L", Client: 5})
	if err != nil {
		t.Fatal(err)
	}
	now = 3 * time.Second
	if s := h.Seen(); !s.Inside || s.Contenders != 1 || !s.Expired {
		t.Fatalf("after a contender and 3s: %+v, want inside, 1 contender, expired", s)
	}
	h.Release()
	h.Release() // harmless
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if s := h.Seen(); s.Inside {
		t.Fatalf("after its exit: %+v, want outside", s)
	}
	_ = r.Exit(ctx, other)
}

// TestHoldSeenExpiredOnlyInside: a promise that runs out after the holder
// left is not the holder's lease running out under it.
func TestHoldSeenExpiredOnlyInside(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r := New(FencingOff, time.Now())
	now := time.Duration(0)
	r.clock = func() time.Duration { return now }
	id, _ := r.Enter(ctx, Visit{Lock: "L", Client: 1, ValidUntil: 2 * time.Second})
	_, _ = r.Read(ctx, id)
	h, err := r.HoldInside(ctx)
	if err != nil {
		t.Fatal(err)
	}
	h.Release()
	now = time.Second
	if err := r.Exit(ctx, id); err != nil {
		t.Fatal(err)
	}
	now = 5 * time.Second
	if s := h.Seen(); s.Inside || s.Expired {
		t.Fatalf("%+v: want outside, not expired (it left at 1s, promise to 2s)", s)
	}
}
