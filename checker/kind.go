package checker

import (
	"cmp"
	"slices"
	"time"
)

// Lock kinds the resource judges, spelled as locks.Kind spells them (the
// checker imports nothing of locks). Each states which visits may be
// inside one lock's resource at once (docs/verdicts.md, "Lock kinds").
const (
	// KindMutex: one visit at a time (the default).
	KindMutex = "mutex"
	// KindRW: shared visits (readers) may overlap each other; an
	// exclusive visit (a writer) overlaps nobody.
	KindRW = "rw"
	// KindSemaphore: at most Permits visits inside at once.
	KindSemaphore = "semaphore"
	// KindFair: a mutex that also promises grants in request order; its
	// order is a figure (FairFigures), not a violation.
	KindFair = "fair"
)

// ModeShared is the mode of a visit that took the shared (read) side of a
// read-write lock, in Visit.Shared's history spelling; "" is exclusive.
const ModeShared = "shared"

// SetKind says what the lock promises (one of the Kind constants, "" a
// mutex) and, for a semaphore, its permits (below 1: 1). Call it before
// the first visit.
func (s *Shared) SetKind(kind string, permits int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if kind == KindMutex {
		kind = ""
	}
	s.kind, s.permits = kind, max(permits, 1)
	if kind != KindSemaphore {
		s.permits = 0
	}
}

// kindOf returns the resource's kind, "mutex" when none was set.
func (s *Shared) kindOf() string {
	if s.kind == "" {
		return KindMutex
	}
	return s.kind
}

// conflicts returns, for v entering l while others (in order of entry)
// are inside, the visits its entry overlaps in a way the kind forbids:
// pairs are the violations it makes (v second in each), judged the
// visits whose promises decide the fault, and need how many of those
// must have been granted within their promise for the lock to be at
// fault. A mutex forbids every overlap (need 1); a read-write lock lets
// shared visits overlap each other; a semaphore of N permits forbids an
// entry that finds N inside: one violation (paired with the first of
// them), and the lock is at fault only when N of them held valid
// promises (a holder past its promise freed its permit, by its own
// doing).
func (s *Shared) conflicts(v *visit, others []*visit) (pairs, judged []*visit, need int) {
	switch s.kind {
	case KindRW:
		if !v.shared {
			return others, others, 1
		}
		for _, o := range others {
			if !o.shared {
				pairs = append(pairs, o)
			}
		}
		return pairs, pairs, 1
	case KindSemaphore:
		if len(others) < s.permits {
			return nil, nil, 0
		}
		return others[:1], others, s.permits
	}
	return others, others, 1
}

// broken reports whether l's inside breaks the kind's promise now.
func (s *Shared) broken(l *lockState) bool {
	switch s.kind {
	case KindRW:
		return l.exclusive >= 1 && len(l.inside) >= 2
	case KindSemaphore:
		return len(l.inside) > s.permits
	}
	return len(l.inside) >= 2
}

// brokenChange updates the overlap figures after l's inside changed at
// now; was is whether the promise was broken before the change.
func (s *Shared) brokenChange(l *lockState, was bool, now time.Duration) {
	switch is := s.broken(l); {
	case is && !was:
		l.multiSince = now
	case was && !is:
		s.overlapTotal += now - l.multiSince
		if l.inc != nil {
			l.inc.End = now
		}
	}
}

// FairFigures are a fair lock's order figures, from its grants: a grant
// is out of order when it returned before that of a client that had sent
// its request at least FairMargin earlier (it overtook that client), and
// MaxOvertakenWait is the longest wait (request to grant) among clients
// overtaken so.
type FairFigures struct {
	OutOfOrder       int
	MaxOvertakenWait time.Duration
}

// FairMargin is how much earlier a client must have sent its request to
// count as having asked first: requests sent closer together may reach
// the server in either order.
const FairMargin = 10 * time.Millisecond

// fairFigures computes FairFigures from one lock's grants (sorted in
// place by request time).
func fairFigures(gs []grant) FairFigures {
	var f FairFigures
	if len(gs) < 2 {
		return f
	}
	slices.SortFunc(gs, func(a, b grant) int { return cmp.Compare(a.requested, b.requested) })
	// A grant overtook someone when a grant requested FairMargin or more
	// before it returned after it: keep the latest reply among requests
	// old enough (j trails i by the margin).
	var latest time.Duration = -1
	j := 0
	for _, g := range gs {
		for ; j < len(gs) && gs[j].requested <= g.requested-FairMargin; j++ {
			latest = max(latest, gs[j].acquired)
		}
		if latest > g.acquired {
			f.OutOfOrder++
		}
	}
	// A grant was overtaken when one requested FairMargin or more after
	// it returned before it: the earliest reply among later requests.
	earliest := time.Duration(1<<63 - 1)
	j = len(gs) - 1
	for i := len(gs) - 1; i >= 0; i-- {
		g := gs[i]
		for ; j >= 0 && gs[j].requested >= g.requested+FairMargin; j-- {
			earliest = min(earliest, gs[j].acquired)
		}
		if earliest < g.acquired {
			f.MaxOvertakenWait = max(f.MaxOvertakenWait, g.acquired-g.requested)
		}
	}
	return f
}
