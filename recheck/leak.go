package recheck

import (
	"sort"
	"time"
)

// leakBook gathers what permits_leaked needs, restated from
// docs/history-format.md: a visit of a semaphore occupies a permit from
// its enter until the earliest of its release line's return, its exit
// when no release line follows, and the end of its promise (the latest
// valid_until_ns of its acquire and renew lines, plus its uncertainty_ns;
// no bound when unbounded or absent). The figure is how long, per lock
// and summed, an attempt that was refused, timed out or still waiting
// was in progress while fewer visits than the permits occupied one.
type leakBook struct {
	holds    map[uint64]*hold
	attempts map[string][][2]int64 // per lock: [invoke_ns, return_ns]
}

// hold is one visit's claim on a permit.
type hold struct {
	lock               string
	enter, exit, freed int64 // exit, freed (a release's return): -1 none
	promised           bool  // a bounded promise
	until, slack       int64
	entered            bool
}

// note takes one history line in file order.
func (b *leakBook) note(l line) {
	if b.holds == nil {
		b.holds, b.attempts = map[uint64]*hold{}, map[string][][2]int64{}
	}
	h := b.holds[l.Visit]
	switch l.Op {
	case "acquire":
		b.holds[l.Visit] = &hold{lock: l.Lock, exit: -1, freed: -1, promised: !l.Unbounded && l.ValidUntil != 0,
			until: l.ValidUntil, slack: l.Uncertainty}
	case "enter":
		if h != nil {
			h.enter, h.entered = l.Return, true
		}
	case "exit":
		if h != nil {
			h.exit = l.Return
		}
	case "release":
		if h != nil && h.freed < 0 {
			h.freed = l.Return
		}
	case "renew":
		if h != nil && h.promised && l.ValidUntil > h.until {
			h.until = l.ValidUntil
		}
	case "attempt":
		switch l.Outcome {
		case "not_obtained", "acquire_timeout", "waiting":
			b.attempts[l.Lock] = append(b.attempts[l.Lock], [2]int64{l.Invoke, l.Return})
		}
	}
}

// noEnd stands for "not bounded": later than any time of a history.
const noEnd = int64(1<<63 - 1)

// end is when h stops occupying its permit (noEnd: never).
func (h *hold) end() int64 {
	e := noEnd
	if h.promised {
		e = h.until + h.slack
	}
	if h.freed >= 0 {
		return min(e, h.freed)
	}
	if h.exit >= 0 {
		return min(e, h.exit)
	}
	return e
}

// leaked is the figure over the locks whose kind is semaphore.
func (b *leakBook) leaked(kind map[string]string, permits map[string]int) time.Duration {
	var total int64
	for lock, waits := range b.attempts {
		if kind[lock] != "semaphore" {
			continue
		}
		var holds [][2]int64
		for _, h := range b.holds {
			if h.lock == lock && h.entered && h.end() > h.enter {
				holds = append(holds, [2]int64{h.enter, h.end()})
			}
		}
		free := freeSpans(holds, max(permits[lock], 1))
		for _, w := range mergeSpans(waits) {
			for _, f := range free {
				lo, hi := max(w[0], f[0]), min(w[1], f[1])
				if hi > lo {
					total += hi - lo
				}
			}
		}
	}
	return time.Duration(total)
}

// freeSpans returns the stretches of time (from -noEnd to noEnd) where
// fewer than permits of holds are in progress, in order.
func freeSpans(holds [][2]int64, permits int) [][2]int64 {
	starts, ends := make([]int64, 0, len(holds)), make([]int64, 0, len(holds))
	for _, h := range holds {
		starts = append(starts, h[0])
		if h[1] != noEnd {
			ends = append(ends, h[1])
		}
	}
	sort.Slice(starts, func(i, j int) bool { return starts[i] < starts[j] })
	sort.Slice(ends, func(i, j int) bool { return ends[i] < ends[j] })
	var out [][2]int64
	from, n := -noEnd, 0 // from: start of the current free stretch
	i, j := 0, 0
	for i < len(starts) || j < len(ends) {
		// ends first at a tie: a permit given back and taken at one
		// instant is never free
		var t int64
		if j < len(ends) && (i == len(starts) || ends[j] <= starts[i]) {
			t = ends[j]
			j++
			n--
			if n == permits-1 {
				from = t
			}
			continue
		}
		t = starts[i]
		i++
		n++
		if n == permits && t > from {
			out = append(out, [2]int64{from, t})
		}
	}
	if n < permits {
		out = append(out, [2]int64{from, noEnd})
	}
	return out
}

// mergeSpans returns the union of spans as disjoint spans in order.
func mergeSpans(spans [][2]int64) [][2]int64 {
	s := append([][2]int64(nil), spans...)
	sort.Slice(s, func(i, j int) bool { return s[i][0] < s[j][0] })
	var out [][2]int64
	for _, x := range s {
		if n := len(out); n > 0 && x[0] <= out[n-1][1] {
			out[n-1][1] = max(out[n-1][1], x[1])
			continue
		}
		out = append(out, x)
	}
	return out
}
