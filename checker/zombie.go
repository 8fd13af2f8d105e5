package checker

import (
	"slices"
	"time"
)

// Zombies are a run's lost leases and how long each holder went on as a
// zombie (docs/verdicts.md, "Zombie time"). A lost lease is a visit whose
// lock state was lost on the server while its holder was still inside:
// from the earliest such loss (a fault's LostAt, or the holder's promise
// running out) to when the holder learnt it (its first lost line, else
// when it left) the holder acts on a lock it no longer has.
type Zombies struct {
	// LostLeases counts them; P50 is the median zombie time over them
	// (the mean of the middle two for an even count) and Max the longest,
	// both 0 when there is none.
	LostLeases int
	P50, Max   time.Duration
}

// LostLeases judges every visit of visits (Exit -1: still inside at end,
// the run's end) against the faults of fs that took the lock state
// (Lost): the way Exposures reads a visit and a fault, with the holder's
// learning added (ExpVisit.Told, Learnt).
func LostLeases(fs []FaultSpan, visits []ExpVisit, end time.Duration) Zombies {
	var zs []time.Duration
	for _, v := range visits {
		if z, lost := zombieOf(fs, v, end); lost {
			zs = append(zs, z)
		}
	}
	if len(zs) == 0 {
		return Zombies{}
	}
	slices.Sort(zs)
	m := len(zs) / 2
	p50 := zs[m]
	if len(zs)%2 == 0 {
		p50 = (zs[m-1] + zs[m]) / 2
	}
	return Zombies{LostLeases: len(zs), P50: p50, Max: zs[len(zs)-1]}
}

// zombieOf is v's zombie time, and whether v is a lost lease at all.
func zombieOf(fs []FaultSpan, v ExpVisit, end time.Duration) (time.Duration, bool) {
	exit := v.Exit
	if exit < 0 {
		exit = end
	}
	loss, lost := time.Duration(0), false
	earliest := func(t time.Duration) {
		if t < exit && (!lost || t < loss) {
			loss, lost = t, true
		}
	}
	for _, f := range fs {
		// A fault acts on the visits inside when it struck (the one it
		// was aimed at, if any), as in Exposures.
		if f.Lost && v.Enter <= f.Start && exit > f.Start && (f.Client < 0 || f.Client == v.Client) {
			earliest(max(f.LostAt, v.Enter))
		}
	}
	if v.Promised && !v.Unbounded {
		earliest(max(v.PromiseEnd, v.Enter)) // paused or cut off past its lease
	}
	if !lost {
		return 0, false
	}
	learnt := exit // it left, or the run ended, still not told
	if v.Told {
		learnt = min(v.Learnt, exit)
	}
	return max(learnt-loss, 0), true
}

// lapsed reports whether v was still inside at exit after its promise ran
// out: a lost lease whatever the faults, kept when no fault is tracked.
func lapsed(v ExpVisit) bool {
	return v.Promised && !v.Unbounded && v.PromiseEnd < v.Exit
}

// lostLine notes the first lost line of each visit (its time: when the
// holder learnt its lease was lost) and each applied fault line that took
// the lock state; s.mu must be held.
func (s *Shared) lostLine(op Op) {
	switch {
	case op.Op == OpLost && op.Visit != 0:
		if s.exp.learnt == nil {
			s.exp.learnt = map[uint64]time.Duration{}
		}
		if _, seen := s.exp.learnt[op.Visit]; !seen {
			s.exp.learnt[op.Visit] = time.Duration(op.Return)
		}
	case op.Op == OpFault && op.Fault != nil && op.Fault.Error == "" && op.Fault.LostAt != nil:
		s.exp.lostFaults = append(s.exp.lostFaults, FaultSpan{Start: time.Duration(op.Invoke), End: time.Duration(op.Return),
			Client: op.Client, Lost: true, LostAt: time.Duration(*op.Fault.LostAt), Lease: time.Duration(op.Fault.Lease)})
	}
}

// zombies are the lost leases so far, visits still inside leaving at now;
// s.mu must be held.
func (s *Shared) zombies(now time.Duration) Zombies {
	vs := make([]ExpVisit, 0, len(s.exp.visits)+len(s.visits))
	vs = append(vs, s.exp.visits...)
	for _, v := range s.visits {
		vs = append(vs, expVisit(v, -1))
	}
	for i := range vs {
		vs[i].Learnt, vs[i].Told = s.exp.learnt[vs[i].ID]
	}
	return LostLeases(s.exp.lostFaults, vs, now)
}
