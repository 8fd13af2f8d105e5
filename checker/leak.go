package checker

import (
	"cmp"
	"slices"
	"time"
)

// A semaphore's leaked permits (Summary.PermitsLeaked, result field
// permits_leaked_ms; docs/history-format.md states the rule for users):
// a visit occupies a permit from its entry until the earliest of its
// release's return, its exit when no release line follows, and the end of
// its promise (its latest valid_until, plus its clock uncertainty; not
// bounded by an unbounded or missing promise). A visit whose occupancy
// ended otherwise than by its release's return (its holder died, or its
// promise ran out first) leaves its permit owed: the server may still
// count it, until a later entry takes a permit that no release gave back.
// A permit leaked while a client was refused or kept waiting (an attempt
// line that granted nothing, acquire_error aside), fewer visits occupied
// permits than the semaphore has, and some permit was owed: the figure
// is how long that lasted, each instant counted once. A permit given back
// by a release and taken by the next waiter is a hand-off, never a leak.

// leakLog is what a semaphore's resource keeps for the figure: each
// visit's occupancy and each lock's refused or waiting attempts. Every
// method needs s.mu held.
type leakLog struct {
	occ      map[uint64]*occupancy // by visit id
	attempts map[string][]span     // by lock: [invoke, return] of each attempt
}

// occupancy is one visit's hold on a permit, as far as known so far.
type occupancy struct {
	lock     string
	enter    time.Duration
	exit     time.Duration // -1: still inside
	released time.Duration // -1: no release line (yet)
	until    time.Duration // the promise's end; forever: not bounded by it
	slack    time.Duration // the client's clock uncertainty
}

// end is when the visit stops occupying its permit (forever: never), and
// whether its release's return ended it.
func (o *occupancy) end() (time.Duration, bool) {
	end := o.until
	if end != forever {
		end += o.slack
	}
	switch {
	case o.released >= 0 && o.released <= end:
		return o.released, true
	case o.exit >= 0:
		end = min(end, o.exit)
	}
	return end, false
}

// leakEnter starts v's occupancy, entered at now with in's promise; a
// semaphore's only.
func (s *Shared) leakEnter(v *visit, in Visit, now time.Duration) {
	if s.kind != KindSemaphore {
		return
	}
	if s.leak.occ == nil {
		s.leak.occ = map[uint64]*occupancy{}
	}
	until := forever
	if !in.Unbounded && in.ValidUntil != 0 {
		until = in.ValidUntil
	}
	s.leak.occ[v.id] = &occupancy{lock: v.lock, enter: now, exit: -1, released: -1, until: until, slack: in.Uncertainty}
}

// leakExit records that visit id left at now.
func (s *Shared) leakExit(id uint64, now time.Duration) {
	if o := s.leak.occ[id]; o != nil {
		o.exit = now
	}
}

// leakRecord takes a client's line: a release or a renewal of a visit, or
// an attempt that granted nothing. Attempts are kept while the kind is
// not known yet (a replay learns it from the first acquire line).
func (s *Shared) leakRecord(op Op) {
	switch op.Op {
	case OpAttempt:
		if op.Outcome != AttemptRefused && op.Outcome != AttemptTimedOut && op.Outcome != AttemptWaiting {
			return
		}
		if s.kind != KindSemaphore && s.granted {
			return
		}
		if s.leak.attempts == nil {
			s.leak.attempts = map[string][]span{}
		}
		s.leak.attempts[op.Lock] = append(s.leak.attempts[op.Lock], span{time.Duration(op.Invoke), time.Duration(op.Return)})
	case OpRelease:
		if o := s.leak.occ[op.Visit]; o != nil && o.released < 0 {
			o.released = time.Duration(op.Return)
		}
	case OpRenew:
		if o := s.leak.occ[op.Visit]; o != nil && o.until != forever {
			o.until = max(o.until, time.Duration(op.ValidUntil))
		}
	}
}

// permitsLeaked sums, over locks, how long an attempt was refused or
// waiting while fewer than the semaphore's permits were occupied; 0 for
// other kinds.
func (s *Shared) permitsLeaked() time.Duration {
	if s.kind != KindSemaphore {
		return 0
	}
	byLock := map[string][]tenure{}
	for _, o := range s.leak.occ {
		end, released := o.end()
		byLock[o.lock] = append(byLock[o.lock], tenure{span{o.enter, end}, released})
	}
	var total time.Duration
	for lock, waits := range s.leak.attempts {
		total += leakedTime(byLock[lock], waits, s.permits)
	}
	return total
}

// tenure is one visit's occupancy and whether its release ended it.
type tenure struct {
	span
	released bool
}

// leakedTime sweeps the endpoints of the occupancies and the waits in
// time order: between two endpoints, the time counts when some wait is in
// progress, fewer than permits occupancies are, and a permit is owed. An
// occupancy's end gives its permit back (released) or owes it; an entry
// takes a given-back permit first, else settles an owed one. At one
// instant, ends come before entries.
func leakedTime(occupied []tenure, waits []span, permits int) time.Duration {
	type edge struct {
		at       time.Duration
		order    int // 0 an end, 1 an entry, 2 a wait's edge
		wait     int // +1 at a wait's start, -1 at its end
		released bool
	}
	var edges []edge
	for _, o := range occupied {
		if o.to <= o.from {
			continue // its promise ran out before it entered
		}
		edges = append(edges, edge{at: o.from, order: 1})
		if o.to != forever {
			edges = append(edges, edge{at: o.to, order: 0, released: o.released})
		}
	}
	for _, w := range waits {
		if w.to > w.from {
			edges = append(edges, edge{at: w.from, order: 2, wait: 1}, edge{at: w.to, order: 2, wait: -1})
		}
	}
	slices.SortStableFunc(edges, func(a, b edge) int {
		return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.order, b.order))
	})
	var total time.Duration
	occ, waiting, givenBack, owed := 0, 0, 0, 0
	for i, e := range edges {
		if i > 0 && waiting > 0 && occ < permits && owed > 0 {
			total += e.at - edges[i-1].at
		}
		switch {
		case e.order == 1:
			occ++
			if givenBack > 0 {
				givenBack--
			} else if owed > 0 {
				owed--
			}
		case e.order == 0:
			occ--
			if e.released {
				givenBack++
			} else {
				owed++
			}
		default:
			waiting += e.wait
		}
	}
	return total
}
