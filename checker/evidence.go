package checker

import "time"

// entryBucket is the resolution of VisitsAfter and InWindows.
const entryBucket = 100 * time.Millisecond

// evidence is what the resource keeps to tell whether a fault was
// exercised: visits begun per entryBucket (VisitsAfter), and each client's
// visits as spans of entryBucket indexes (InWindows). A client's visits
// that entered in one bucket and left in one bucket share a span, so a run
// of a million short visits keeps about one span per client per bucket
// (12 bytes each), not one per visit.
type evidence struct {
	entries []int
	spans   map[int][]visitSpan // by client, in order of exit
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
	sp := s.ev.spans[v.client]
	if n := len(sp); n > 0 && sp[n-1].enter == e && sp[n-1].exit == x {
		sp[n-1].n++
		return
	}
	s.ev.spans[v.client] = append(sp, visitSpan{enter: e, exit: x, n: 1})
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
// distinct clients that made them.
type WindowEvidence struct {
	Visits  int
	Clients int
}

// InWindows returns, for each of ws, the visits that overlapped it (they
// entered no later than its end and left no earlier than its start; a
// visit still inside counts as leaving now) and how many distinct clients
// made them; union is the same over the union of ws, each visit counted
// once. Times have entryBucket resolution and the count errs on the side
// of fewer: a visit counts only when its entry bucket ends by the window's
// end and its exit bucket begins after the bucket of the window's start,
// so it never counts a visit that missed the window (a window shorter
// than a bucket counts only visits that spanned it whole).
func (s *Shared) InWindows(ws []Window) (each []WindowEvidence, union WindowEvidence) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := bucketOf(s.clock())
	type bounds struct{ start, end uint32 }
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
	client := func(spans ...[]visitSpan) {
		clear(seen)
		for _, sps := range spans {
			for _, sp := range sps {
				count(sp)
			}
		}
		any := false
		for i, ok := range seen {
			if ok {
				each[i].Clients++
				any = true
			}
		}
		if any {
			union.Clients++
		}
	}
	for c, sps := range s.ev.spans {
		client(sps, open[c])
		delete(open, c)
	}
	for _, sps := range open {
		client(sps)
	}
	return each, union
}
