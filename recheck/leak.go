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
// no bound when unbounded or absent). A hold that its release's return did
// not end owes its permit until a later entry, taking no permit a release
// gave back, settles it. The figure is how long, per lock and summed, an
// attempt that was refused, timed out or still waiting was in progress
// while fewer visits than the permits occupied one and a permit was owed.
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

// end is when h stops occupying its permit (noEnd: never), and whether
// its release's return is what ended it.
func (h *hold) end() (int64, bool) {
	e := noEnd
	if h.promised {
		e = h.until + h.slack
	}
	if h.freed >= 0 && h.freed <= e {
		return h.freed, true
	}
	if h.exit >= 0 {
		return min(e, h.exit), false
	}
	return e, false
}

// leaked is the figure over the locks whose kind is semaphore.
func (b *leakBook) leaked(kind map[string]string, permits map[string]int) time.Duration {
	var total int64
	for lock, waits := range b.attempts {
		if kind[lock] != "semaphore" {
			continue
		}
		var holds []*hold
		for _, h := range b.holds {
			if e, _ := h.end(); h.lock == lock && h.entered && e > h.enter {
				holds = append(holds, h)
			}
		}
		owed := owedSpans(holds, max(permits[lock], 1))
		for _, w := range mergeSpans(waits) {
			for _, f := range owed {
				lo, hi := max(w[0], f[0]), min(w[1], f[1])
				if hi > lo {
					total += hi - lo
				}
			}
		}
	}
	return time.Duration(total)
}

// owedSpans returns, in order, the stretches of time where fewer than
// permits of holds are in progress and at least one permit is owed.
func owedSpans(holds []*hold, permits int) [][2]int64 {
	// Each instant's changes: how many holds end given back, end owing,
	// and start. At one instant the ends are applied first.
	type change struct{ back, owe, start int }
	at := map[int64]*change{}
	get := func(t int64) *change {
		if at[t] == nil {
			at[t] = &change{}
		}
		return at[t]
	}
	for _, h := range holds {
		get(h.enter).start++
		if e, released := h.end(); e == noEnd {
			continue
		} else if released {
			get(e).back++
		} else {
			get(e).owe++
		}
	}
	times := make([]int64, 0, len(at))
	for t := range at {
		times = append(times, t)
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	var out [][2]int64
	inside, back, owe := 0, 0, 0
	open := false
	var from int64
	for _, t := range times {
		c := at[t]
		inside += c.start - c.back - c.owe
		back += c.back
		owe += c.owe
		for n := c.start; n > 0; n-- {
			if back > 0 {
				back--
			} else if owe > 0 {
				owe--
			}
		}
		leaking := inside < permits && owe > 0
		if leaking && !open {
			from, open = t, true
		} else if !leaking && open {
			out = append(out, [2]int64{from, t})
			open = false
		}
	}
	if open {
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
