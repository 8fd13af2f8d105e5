package checker

import (
	"context"
	"fmt"
	"sort"
	"sync/atomic"
	"time"
)

// Inside returns the clients inside some lock's resource now, in the order
// they entered.
func (s *Shared) Inside() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.insideLocked()
}

func (s *Shared) insideLocked() []int {
	vs := make([]*visit, 0, len(s.visits))
	for _, v := range s.visits {
		vs = append(vs, v)
	}
	sort.Slice(vs, func(i, j int) bool { return vs[i].id < vs[j].id })
	out := make([]int, len(vs))
	for i, v := range vs {
		out[i] = v.client
	}
	return out
}

// WaitInside blocks until some client is inside the resource, has read
// the counter and not yet written it back (it is mid-critical-section,
// holding data it will write), and returns the one that entered first
// among those: the "holder" of fault scenarios. Choosing that moment makes
// a fault on the holder deterministic: pausing a client between Enter and
// Read would let it read fresh data after the pause and lose no update,
// and pausing it after its write (before its Exit) would freeze a client
// whose work is done, so the resumed holder would write nothing stale.
func (s *Shared) WaitInside(ctx context.Context) (int, error) {
	var c int
	err := s.untilReader(ctx, func(v *visit) { c = v.client })
	return c, err
}

// untilReader waits until some visit has read and not yet written (Enter
// wakes the waiters) and calls found with the first such visit, s.mu held.
func (s *Shared) untilReader(ctx context.Context, found func(v *visit)) error {
	for {
		s.mu.Lock()
		if v := s.firstReaderVisit(); v != nil {
			found(v)
			s.mu.Unlock()
			return nil
		}
		if s.waiters == nil {
			s.waiters = make(chan struct{})
		}
		ch := s.waiters
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("wait for a holder: %w", ctx.Err())
		}
	}
}

// firstReaderVisit is the visit that entered first among those that read
// and did not write yet; nil when none. s.mu must be held.
func (s *Shared) firstReaderVisit() *visit {
	var best *visit
	for _, v := range s.visits {
		if v.read && !v.wrote && (best == nil || v.id < best.id) {
			best = v
		}
	}
	return best
}

// Hold is a holder picked by HoldInside: its visit's write and exit wait
// until Release, so the holder cannot leave between being picked and a
// fault on it taking effect.
type Hold struct {
	s        *Shared
	v        *visit
	e        *held
	picked   time.Duration
	released bool
}

func (e *held) released() bool {
	select {
	case <-e.release:
		return true
	default:
		return false
	}
}

// holdSet are the held visits of a resource; any lets Write and Exit skip
// the lookup (and the mutex) in runs that never hold.
type holdSet struct {
	any atomic.Bool
	m   map[uint64]*held
}

// held is the state of one held visit, shared by its Holds.
type held struct {
	release chan struct{} // closed when the last Hold released it
	count   int           // Holds not released yet
	exited  time.Duration // when the visit exited; -1 while inside
}

// HoldSeen is what became of a held visit, for a fault's evidence: times
// count from the resource's base.
type HoldSeen struct {
	Client int
	// Inside is true while the visit has not exited.
	Inside bool
	// Contenders counts the visits of other clients to the same lock that
	// entered while the held visit was inside, since it was picked.
	Contenders int
	// Expired is true when the holder's promised validity ran out by Now
	// (never for an unbounded promise or a visit that reported none).
	Expired    bool
	Unbounded  bool
	ValidUntil time.Duration
	Picked     time.Duration
	Now        time.Duration
}

// HoldInside waits like WaitInside for a client that has read the counter
// and not yet written it back, and holds it there: its Write and Exit
// block until the Hold's Release. A fault on "the holder" picks it this way
// so the holder is inside when the fault applies, however quickly it was
// about to leave. The caller must call Release (a SIGSTOPped or cut-off
// holder cannot move anyway; the hold only bridges the moment between
// picking and stopping).
func (s *Shared) HoldInside(ctx context.Context) (*Hold, error) {
	var h *Hold
	err := s.untilReader(ctx, func(v *visit) {
		if s.holds.m == nil {
			s.holds.m = map[uint64]*held{}
			s.holds.any.Store(true)
		}
		e := s.holds.m[v.id]
		if e == nil {
			e = &held{release: make(chan struct{}), exited: -1}
			s.holds.m[v.id] = e
		}
		if e.count == 0 && e.released() {
			e.release = make(chan struct{}) // held again after a release
		}
		e.count++
		h = &Hold{s: s, v: v, e: e, picked: s.clock()}
	})
	return h, err
}

// Client is the held client's index.
func (h *Hold) Client() int { return h.v.client }

// Release lets the held visit write and exit again (once every Hold on it
// released it). Calling it twice is harmless.
func (h *Hold) Release() {
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	if h.released {
		return
	}
	h.released = true
	if h.e.count--; h.e.count == 0 {
		close(h.e.release)
	}
}

// Seen tells what became of the held visit so far.
func (h *Hold) Seen() HoldSeen {
	s := h.s
	s.mu.Lock()
	defer s.mu.Unlock()
	v := h.v
	now := s.clock()
	out := HoldSeen{
		Client: v.client, Inside: s.visits[v.id] != nil, Unbounded: v.promise.unbounded,
		ValidUntil: v.promise.validUntil, Picked: h.picked, Now: now,
	}
	out.Inside = out.Inside && h.e.exited < 0
	until := now // the promise must have run out while the visit was inside
	if h.e.exited >= 0 {
		until = h.e.exited
	}
	out.Expired = !v.promise.unbounded && v.promise.validUntil > 0 && v.promise.validUntil <= until
	for _, idx := range v.overlaps {
		if ev := s.events[idx]; ev.First == v.client && ev.Second != v.client && ev.At >= h.picked {
			out.Contenders++
		}
	}
	return out
}

// heldWrite blocks while visit id is held (HoldInside) or until ctx ends.
func (s *Shared) heldWrite(ctx context.Context, id uint64) { s.waitHeld(ctx, id) }

// heldExit is heldWrite for an exit, which it also records for the Holds
// of the visit.
func (s *Shared) heldExit(ctx context.Context, id uint64) {
	if e := s.waitHeld(ctx, id); e != nil {
		s.mu.Lock()
		if e.exited < 0 {
			e.exited = s.clock()
		}
		s.mu.Unlock()
	}
}

func (s *Shared) waitHeld(ctx context.Context, id uint64) *held {
	if !s.holds.any.Load() {
		return nil
	}
	s.mu.Lock()
	e := s.holds.m[id]
	var ch chan struct{}
	if e != nil {
		ch = e.release
	}
	s.mu.Unlock()
	if e == nil {
		return nil
	}
	select {
	case <-ch:
	case <-ctx.Done():
	}
	return e
}

// ExitClient exits every visit of client still inside: a client process
// that died (or was killed) cannot exit on its own.
func (s *Shared) ExitClient(client int) {
	s.mu.Lock()
	var ids []uint64
	for id, v := range s.visits {
		if v.client == client {
			ids = append(ids, id)
		}
	}
	s.mu.Unlock()
	for _, id := range ids {
		_ = s.Exit(context.Background(), id)
	}
}

// ViolationCount returns the number of violations so far (cheap, for
// progress lines).
func (s *Shared) ViolationCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.events)
}

// WaitInsideFor blocks until some client has been inside its critical
// section for d, counting only visits that reach d at or after the call,
// and returns it with how long it had been inside: the moment a fault aimed
// with when: holder-inside fires. Among such clients, the one that entered
// first is taken.
func (s *Shared) WaitInsideFor(ctx context.Context, d time.Duration) (client int, inside time.Duration, err error) {
	s.mu.Lock()
	start := s.clock()
	s.mu.Unlock()
	for {
		s.mu.Lock()
		// A visit qualifies when it reaches d inside at or after the call:
		// one inside for longer already would fire at a phase the caller
		// did not ask for (d = 0 takes whoever is inside).
		var first *visit
		for _, v := range s.visits {
			if (d == 0 || v.entered+d >= start) && (first == nil || v.entered < first.entered) {
				first = v
			}
		}
		now := s.clock()
		if first != nil && now-first.entered >= d {
			s.mu.Unlock()
			return first.client, now - first.entered, nil
		}
		if s.waiters == nil {
			s.waiters = make(chan struct{})
		}
		ch := s.waiters
		s.mu.Unlock()
		// Wake at the next entry, or when the first one inside has been
		// there for d (it may have left by then: look again).
		wait := time.Hour
		if first != nil {
			wait = d - (now - first.entered)
		}
		t := time.NewTimer(wait)
		select {
		case <-ch:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return 0, 0, fmt.Errorf("wait for a client inside: %w", ctx.Err())
		}
		t.Stop()
	}
}
