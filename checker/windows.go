package checker

import "time"

// entryBucket is the resolution of VisitsAfter and InWindows.
const entryBucket = 100 * time.Millisecond

// evidence is what the resource keeps to tell whether a fault was
// exercised: visits begun per entryBucket (VisitsAfter), each client's
// visits as spans of entryBucket indexes (InWindows), whether some client
// was inside each lock's resource in each bucket, and the waits of acquire
// attempts that granted nothing (OpAttempt lines). A client's visits that
// entered in one bucket and left in one bucket share a span, so a run of a
// million short visits keeps about one span per client per bucket (12
// bytes each), not one per visit; occupancy is a byte per lock and bucket.
type evidence struct {
	entries  []int
	spans    map[int][]visitSpan // by client, in order of exit
	occupied map[string][]bool   // by lock, indexed by bucket: someone was inside
	waits    map[int][]waitSpan  // by client
}

// waitSpan is an acquire attempt of one lock that granted nothing and was
// in progress through every bucket from first to last (the buckets it
// covered whole).
type waitSpan struct {
	lock        string
	first, last uint32
}

// visitSpan is n visits of one client that entered in bucket enter and left in
// bucket exit.
type visitSpan struct {
	enter, exit, n uint32
}

func bucketOf(t time.Duration) uint32 { return uint32(max(int64(t/entryBucket), 0)) }

func (s *Shared) countEntry(now time.Duration) {
	i := int(bucketOf(now))
	for len(s.ev.entries) <= i {
		s.ev.entries = append(s.ev.entries, 0)
	}
	s.ev.entries[i]++
}

// countExit records v's [enter, exit] interval; s.mu must be held.
func (s *Shared) countExit(v *visit, now time.Duration) {
	if s.ev.spans == nil {
		s.ev.spans = map[int][]visitSpan{}
	}
	e, x := bucketOf(v.entered), bucketOf(now)
	s.occupy(v.lock, e, x)
	sp := s.ev.spans[v.client]
	if n := len(sp); n > 0 && sp[n-1].enter == e && sp[n-1].exit == x {
		sp[n-1].n++
		return
	}
	s.ev.spans[v.client] = append(sp, visitSpan{enter: e, exit: x, n: 1})
}

// occupy records that some client was inside lock's resource in every
// bucket from e to x; s.mu must be held.
func (s *Shared) occupy(lock string, e, x uint32) {
	if s.ev.occupied == nil {
		s.ev.occupied = map[string][]bool{}
	}
	occ := s.ev.occupied[lock]
	for uint32(len(occ)) <= x {
		occ = append(occ, false)
	}
	for b := e; b <= x; b++ {
		occ[b] = true
	}
	s.ev.occupied[lock] = occ
}

// Attempt outcomes (OpAttempt lines) that show contention: the lock
// refused or kept the client waiting. An attempt that failed otherwise
// (AttemptFailed: the backend could not be reached) shows none.
const (
	AttemptRefused  = "not_obtained"    // the lock said no (locks.ErrNotObtained)
	AttemptTimedOut = "acquire_timeout" // the client gave up waiting
	AttemptWaiting  = "waiting"         // still waiting when the run ended
	AttemptFailed   = "acquire_error"   // any other failure
)

// countWait records an attempt line's wait, when its outcome shows
// contention and it covered a bucket whole; s.mu must be held.
func (s *Shared) countWait(op Op) {
	if op.Outcome != AttemptRefused && op.Outcome != AttemptTimedOut && op.Outcome != AttemptWaiting {
		return
	}
	// The buckets the attempt covered whole: from the first that begins
	// at or after its send to the last that ends by its return.
	first := uint32((max(op.Invoke, 0) + int64(entryBucket) - 1) / int64(entryBucket))
	end := bucketOf(time.Duration(op.Return)) // begins at or before the return
	if end == 0 || first > end-1 {
		return
	}
	if s.ev.waits == nil {
		s.ev.waits = map[int][]waitSpan{}
	}
	s.ev.waits[op.Client] = append(s.ev.waits[op.Client], waitSpan{lock: op.Lock, first: first, last: end - 1})
}

// VisitsAfter returns how many visits began after t (since base): the
// evidence that a fault starting at t was exercised. It counts whole
// 100ms buckets after the one holding t, so it never counts a visit that
// began before t.
func (s *Shared) VisitsAfter(t time.Duration) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for i := int(bucketOf(t)) + 1; i < len(s.ev.entries); i++ {
		n += s.ev.entries[i]
	}
	return n
}

// Window is a stretch of the run, [Start, End] since base: a fault from
// its start to its heal (or to the run's end when it lasted to it).
type Window struct {
	Start, End time.Duration
}

// WindowEvidence counts the visits that overlapped a window and the
// clients that contended for the lock in it: Contenders are the distinct
// clients that visited in the window or waited in it while another client
// was inside the same lock's resource (an acquire attempt that the lock
// refused, that timed out or that was still waiting at the run's end);
// Waiting are those of them that only waited. A lock that keeps its holder
// and refuses everyone else under a fault shows contention by its waiters.
type WindowEvidence struct {
	Visits     int
	Contenders int
	Waiting    int
}

// InWindows returns, for each of ws, the visits that overlapped it (they
// entered no later than its end and left no earlier than its start; a
// visit still inside counts as leaving now), how many distinct clients
// made them or waited in it; union is the same over the union of ws, each
// visit counted once. Times have entryBucket resolution and the count errs
// on the side of fewer: a visit counts only when its entry bucket ends by
// the window's end and its exit bucket begins after the bucket of the
// window's start, so it never counts a visit that missed the window (a
// window shorter than a bucket counts only visits that spanned it whole);
// a wait counts only in a bucket it covered whole, that lies whole inside
// the window, and in which another client was inside the lock's resource.
// Occupancy and waits cost a byte per lock and bucket and one entry per
// wait of a bucket or longer.
func (s *Shared) InWindows(ws []Window) (each []WindowEvidence, union WindowEvidence) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := bucketOf(s.clock())
	bs := make([]bounds, len(ws))
	for i, w := range ws {
		bs[i] = bounds{bucketOf(w.Start), bucketOf(max(w.End, w.Start))}
	}
	each = make([]WindowEvidence, len(ws))
	seen := make([]bool, len(ws)) // per window: the current client visited it
	count := func(sp visitSpan) {
		in := false
		for i, b := range bs {
			if sp.exit > b.start && sp.enter < b.end {
				each[i].Visits += int(sp.n)
				seen[i], in = true, true
			}
		}
		if in {
			union.Visits += int(sp.n)
		}
	}
	open := map[int][]visitSpan{}
	for _, v := range s.visits {
		open[v.client] = append(open[v.client], visitSpan{enter: bucketOf(v.entered), exit: now, n: 1})
	}
	waited := make([]bool, len(ws)) // per window: the current client waited in it
	client := func(c int, spans ...[]visitSpan) {
		clear(seen)
		for _, sps := range spans {
			for _, sp := range sps {
				count(sp)
			}
		}
		clear(waited)
		s.waitedIn(c, bs, now, waited)
		visited, wait := false, false
		for i := range ws {
			switch {
			case seen[i]:
				each[i].Contenders++
				visited = true
			case waited[i]:
				each[i].Contenders++
				each[i].Waiting++
				wait = true
			}
		}
		switch {
		case visited:
			union.Contenders++
		case wait:
			union.Contenders++
			union.Waiting++
		}
	}
	clients := map[int]bool{}
	for c := range s.ev.spans {
		clients[c] = true
	}
	for c := range open {
		clients[c] = true
	}
	for c := range s.ev.waits {
		clients[c] = true
	}
	for c := range clients {
		client(c, s.ev.spans[c], open[c])
	}
	return each, union
}

// bounds are a window's first and last bucket.
type bounds struct{ start, end uint32 }

// waitedIn sets out[i] when client c waited in window bs[i]: one of its
// waits covered a bucket lying whole inside the window (after the start's
// bucket, before the end's) in which some client was inside the same
// lock's resource, counting visits still inside up to bucket now. That
// client is another one, or c's own visit would overlap the window and
// make c a contender by visiting already.
func (s *Shared) waitedIn(c int, bs []bounds, now uint32, out []bool) {
	for _, w := range s.ev.waits[c] {
		for i, b := range bs {
			if b.end == 0 {
				continue
			}
			lo, hi := max(w.first, b.start+1), min(w.last, b.end-1)
			for t := lo; t <= hi && !out[i]; t++ {
				out[i] = s.inside(w.lock, t, now)
			}
		}
	}
}

// inside reports whether some client was inside lock's resource during
// bucket t: a visit that exited (occupied) or one still inside, entered by
// t.
func (s *Shared) inside(lock string, t, now uint32) bool {
	if occ := s.ev.occupied[lock]; t < uint32(len(occ)) && occ[t] {
		return true
	}
	for _, v := range s.visits {
		if v.lock == lock && bucketOf(v.entered) <= t && t <= now {
			return true
		}
	}
	return false
}
