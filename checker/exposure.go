package checker

import (
	"fmt"
	"sort"
	"time"
)

// Exposure is whether a fault opened the race it exists for, and who
// tried to win it (docs/verdicts.md, "Exposure"). The race is open while a
// holder is inside its critical section and the lock's state no longer
// protects it: after the fault took the state from the server (LostAt) while
// the holder's promise still ran, or once the holder's promise ran out
// while it was still inside (a holder paused or cut off past its lease).
type Exposure struct {
	// Holder is the client inside when the fault struck (the one it was
	// aimed at or named, else the first inside); -1 when nobody was.
	Holder int
	Lock   string
	// Exposed says the race opened; Duration is how long it was open in
	// all (the union of its stretches).
	Exposed  bool
	Duration time.Duration
	// Until is when the race closed last (its last stretch's end).
	Until time.Duration
	// Held says the fault hit a live holder and the lock kept protecting it
	// throughout: its promise ran until it left or the fault ended, and the
	// fault took no state.
	Held bool
	// Attempts are the other clients' requests for the holder's key that
	// could have won the race: sent during the exposure (Exposed), or in
	// the fault's window until a lease after the holder left (Held: the
	// lock kept refusing them while it protected the holder, then handed
	// the key on in order).
	Attempts int
	// Why says, when neither Exposed nor Held, why the race never opened.
	Why string
	// Setting marks a fault in place before any client entered (a cut
	// that shapes the cluster, a lagging replica): it opens no race of its
	// own, and the run's other faults are judged instead.
	Setting bool
}

// FaultSpan is a fault as the exposure needs it: its window, the client
// it was aimed at (-1: none), when it took the lock state (Lost), and the
// run's lease: a held fault's requests are counted in its window up to a
// lease after the holder left.
type FaultSpan struct {
	Start, End time.Duration
	Client     int
	Lost       bool
	LostAt     time.Duration
	Lease      time.Duration
}

// ExpVisit is one visit as the exposure sees it: Exit is -1 while inside;
// PromiseEnd is the last instant its promise ran (renewals included),
// meaningless when Unbounded; Promised is false when it reported none.
// ID is its visit id; Told says a lost line reported the lease lost to
// its holder, first at Learnt (LostLeases).
type ExpVisit struct {
	ID          uint64
	Client      int
	Lock        string
	Enter, Exit time.Duration
	PromiseEnd  time.Duration
	Unbounded   bool
	Promised    bool
	Learnt      time.Duration
	Told        bool
}

// Send is one request for a lock key that could have granted it, or the
// moment its acquire call ended with an answer (End: granted, refused or
// timed out), which counts only when none of the call's sends does; or,
// for a lock whose waiters stand in the race (Standing), the whole call,
// from At to Until, which counts when it overlaps the interval and none
// of the call's sends or its answer does. Call groups the moments of one
// acquire call.
type Send struct {
	Client   int
	At       time.Duration
	Call     int
	End      bool
	Standing bool
	Until    time.Duration
}

// Exposures judges each fault of fs over visits and the sends per key,
// end being the run's end (open visits leave then).
func Exposures(fs []FaultSpan, visits []ExpVisit, sends map[string][]Send, end time.Duration) []Exposure {
	for _, ss := range sends {
		sort.Slice(ss, func(i, j int) bool { return ss[i].At < ss[j].At })
	}
	out := make([]Exposure, len(fs))
	for i, f := range fs {
		out[i] = exposureOf(f, visits, sends, end)
	}
	return out
}

type interval struct{ lo, hi time.Duration }

func exposureOf(f FaultSpan, visits []ExpVisit, sends map[string][]Send, end time.Duration) Exposure {
	var hs []ExpVisit
	for _, v := range visits {
		x := v.Exit
		if x < 0 {
			x = end
		}
		if v.Enter <= f.Start && x > f.Start && (f.Client < 0 || v.Client == f.Client) {
			v.Exit = x
			hs = append(hs, v)
		}
	}
	sort.Slice(hs, func(i, j int) bool { return hs[i].Enter < hs[j].Enter })
	if len(hs) == 0 {
		if !enteredBy(visits, f.Start) {
			return Exposure{Holder: -1, Setting: true, Why: "in place before the first visit: it sets the stage and opens no race of its own"}
		}
		why := "the fault missed its target: no client was inside its critical section when it struck"
		if f.Client >= 0 {
			why = fmt.Sprintf("the fault missed its target: client-%d had left its critical section when it struck", f.Client)
		}
		return Exposure{Holder: -1, Why: why}
	}
	fEnd := f.End
	if fEnd <= f.Start {
		fEnd = end // a one-shot fault's effect lasts
	}
	best := Exposure{Holder: hs[0].Client, Lock: hs[0].Lock}
	for _, h := range hs {
		e := holderExposure(f, h, fEnd, sends[h.Lock])
		if e.Exposed && (!best.Exposed || e.Attempts > best.Attempts) ||
			!best.Exposed && e.Held && (!best.Held || e.Attempts > best.Attempts) ||
			!best.Exposed && !best.Held && best.Why == "" {
			best = e
		}
	}
	return best
}

// enteredBy reports whether some visit entered at or before t.
func enteredBy(visits []ExpVisit, t time.Duration) bool {
	for _, v := range visits {
		if v.Enter <= t {
			return true
		}
	}
	return false
}

// holderExposure judges fault f for one holder h.
func holderExposure(f FaultSpan, h ExpVisit, fEnd time.Duration, sends []Send) Exposure {
	e := Exposure{Holder: h.Client, Lock: h.Lock}
	pe, bounded := h.PromiseEnd, !h.Unbounded
	if !h.Promised && !h.Unbounded {
		pe = h.Enter // promised nothing: never protected
	}
	var ivs []interval
	if f.Lost {
		hi := h.Exit
		if bounded {
			hi = min(hi, pe)
		}
		if lo := max(f.LostAt, h.Enter); hi > lo {
			ivs = append(ivs, interval{lo, hi})
		}
	}
	if bounded && pe < h.Exit && h.Promised {
		if lo := max(pe, f.Start); h.Exit > lo {
			ivs = append(ivs, interval{lo, h.Exit})
		}
	}
	ivs = union(ivs)
	for _, iv := range ivs {
		e.Duration += iv.hi - iv.lo
		e.Until = max(e.Until, iv.hi)
	}
	if e.Duration > 0 {
		e.Exposed = true
		e.Attempts = countSends(sends, h.Client, ivs)
		return e
	}
	until := min(fEnd, h.Exit+f.Lease)
	switch {
	case !h.Promised && !h.Unbounded:
		e.Why = fmt.Sprintf("the race never opened: client-%d reported no promise, so no stretch of it can be judged", h.Client)
	case f.Lost && f.LostAt >= h.Exit:
		e.Why = fmt.Sprintf("the race never opened: the holder (client-%d) left %s after the fault struck, before the lock state was lost (%s after)",
			h.Client, msText(h.Exit-f.Start), msText(f.LostAt-f.Start))
	case f.Lost:
		e.Why = fmt.Sprintf("the race never opened: the holder's (client-%d) promise had run out before the lock state was lost", h.Client)
	default:
		e.Held = true
		e.Attempts = countSends(sends, h.Client, []interval{{f.Start, until}})
	}
	return e
}

// countSends counts the sends of clients other than holder inside ivs
// (sorted, disjoint).
func countSends(sends []Send, holder int, ivs []interval) int {
	in := func(t time.Duration) bool {
		for _, iv := range ivs {
			if t >= iv.lo && t <= iv.hi {
				return true
			}
		}
		return false
	}
	overlaps := func(lo, hi time.Duration) bool {
		for _, iv := range ivs {
			if lo <= iv.hi && hi >= iv.lo {
				return true
			}
		}
		return false
	}
	n, counted := 0, map[int]bool{}
	for _, s := range sends {
		if s.Client != holder && !s.End && !s.Standing && in(s.At) {
			n++
			counted[s.Call] = true
		}
	}
	for _, s := range sends {
		if s.Client != holder && s.End && !counted[s.Call] && in(s.At) {
			n++
			counted[s.Call] = true
		}
	}
	for _, s := range sends {
		if s.Client != holder && s.Standing && !counted[s.Call] && overlaps(s.At, s.Until) {
			n++
			counted[s.Call] = true
		}
	}
	return n
}

// union merges ivs into sorted disjoint intervals.
func union(ivs []interval) []interval {
	sort.Slice(ivs, func(i, j int) bool { return ivs[i].lo < ivs[j].lo })
	var out []interval
	for _, iv := range ivs {
		if n := len(out); n > 0 && iv.lo <= out[n-1].hi {
			out[n-1].hi = max(out[n-1].hi, iv.hi)
			continue
		}
		out = append(out, iv)
	}
	return out
}

func msText(d time.Duration) string { return fmt.Sprintf("%d ms", d.Milliseconds()) }

// exposureLog is what a resource keeps for Exposures once TrackExposure
// was called: every visit that left, and every send per key. Without it,
// visits keeps only those that stayed past their promise (lapsed): the
// lost leases a run without faults can have. learnt and lostFaults are
// what the lost and fault lines told (lostLine), for LostLeases.
type exposureLog struct {
	on         bool
	visits     []ExpVisit
	sends      map[string][]Send
	calls      int
	learnt     map[uint64]time.Duration
	lostFaults []FaultSpan
}

// TrackExposure makes the resource keep what Exposure needs (a record per
// visit and per acquire request). Call it before the first visit of a run
// with faults; a run without keeps nothing.
func (s *Shared) TrackExposure() {
	s.mu.Lock()
	s.exp.on = true
	s.exp.sends = map[string][]Send{}
	s.mu.Unlock()
}

// sent records the sends of one acquire call (tries, else invoke), when
// answered (a grant, a refusal, a timeout) its end, and when the lock's
// waiters stand in the race (standing) the whole call; s.mu must be held.
func (s *Shared) sent(lock string, client int, invoke, end time.Duration, answered, standing bool, tries []int64) {
	if !s.exp.on {
		return
	}
	s.exp.calls++
	call := s.exp.calls
	if len(tries) == 0 {
		s.exp.sends[lock] = append(s.exp.sends[lock], Send{Client: client, At: invoke, Call: call})
	}
	for _, t := range tries {
		s.exp.sends[lock] = append(s.exp.sends[lock], Send{Client: client, At: time.Duration(t), Call: call})
	}
	if answered {
		s.exp.sends[lock] = append(s.exp.sends[lock], Send{Client: client, At: end, Call: call, End: true})
	}
	if standing {
		s.exp.sends[lock] = append(s.exp.sends[lock], Send{Client: client, At: invoke, Until: end, Call: call, Standing: true})
	}
}

// SetStanding says the lock's waiters stand in the race while they wait
// (locks.Spec.Standing): an acquire call that overlaps a fault's race
// counts as a contender for it, not only its sends. It marks the
// history's acquire and attempt lines (Op.Standing). Call it before the
// first visit.
func (s *Shared) SetStanding(on bool) {
	s.mu.Lock()
	s.standing = on
	s.mu.Unlock()
}

// expVisit is v as Exposures sees it, leaving at exit (-1: inside).
func expVisit(v *visit, exit time.Duration) ExpVisit {
	p := v.promise
	e := ExpVisit{ID: v.id, Client: v.client, Lock: v.lock, Enter: v.entered, Exit: exit, Unbounded: p.unbounded,
		PromiseEnd: p.validUntil, Promised: p.unbounded || p.validUntil != 0 || len(p.renewals) > 0}
	for _, r := range p.renewals {
		e.PromiseEnd = max(e.PromiseEnd, r.until)
	}
	return e
}

// Exposure judges each fault of fs over what the resource kept since
// TrackExposure (nil when it was not called). A visit still inside leaves
// at the run's end as its history will tell it: the latest line other than
// an acquire or attempt, or a fault's end (the fault lines follow), as the
// re-check reads it.
func (s *Shared) Exposure(fs []FaultSpan) []Exposure {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.exp.on {
		return nil
	}
	vs := append([]ExpVisit(nil), s.exp.visits...)
	for _, v := range s.visits {
		vs = append(vs, expVisit(v, -1))
	}
	sends := make(map[string][]Send, len(s.exp.sends))
	for k, ss := range s.exp.sends {
		sends[k] = append([]Send(nil), ss...)
	}
	end := s.last
	for _, f := range fs {
		end = max(end, f.End)
	}
	return Exposures(fs, vs, sends, end)
}
