package recheck

import (
	"io"
	"sort"
)

// Zombie is a run's zombie time as docs/verdicts.md ("Zombie time")
// defines it, recomputed from the history's acquire, enter, renew, exit,
// lost and fault lines: LostLeases counts the visits whose lock state was
// lost on the server while their holder was inside; P50Ns is the median
// of their zombie times (from the loss to the holder learning it; the
// mean of the middle two for an even count), MaxNs the longest.
type Zombie struct {
	LostLeases   int
	P50Ns, MaxNs int64
}

// Zombies reads a history and returns each run's zombie time (by run
// index; a run without a lost lease has the zero Zombie).
func Zombies(r io.Reader) (map[int]Zombie, error) {
	j, err := Judge(r)
	return j.Zombies, err
}

// zombies is the run's zombie time over its visits.
func (rn *expRun) zombies() Zombie {
	var times []int64
	for _, s := range rn.order {
		if t, ok := rn.zombie(s); ok {
			times = append(times, t)
		}
	}
	return medianMax(times)
}

// zombie is the zombie time of visit s, and whether its lease was lost
// while it was inside at all.
func (rn *expRun) zombie(s *stay) (int64, bool) {
	out := s.out
	if out < 0 {
		out = rn.last // still inside at the end
	}
	var losses []int64
	if s.promised && !s.unbounded && s.upTo < out {
		losses = append(losses, max(s.upTo, s.in))
	}
	for _, f := range rn.faults {
		struck := s.in <= f.from && f.from < out
		if f.failed || !f.lost || !struck || (f.client >= 0 && f.client != s.client) {
			continue
		}
		if at := max(f.lostAt, s.in); at < out {
			losses = append(losses, at)
		}
	}
	if len(losses) == 0 {
		return 0, false
	}
	loss := losses[0]
	for _, l := range losses[1:] {
		loss = min(loss, l)
	}
	learnt := out
	if t, ok := rn.told[s.id]; ok && t < out {
		learnt = t
	}
	if learnt < loss {
		return 0, true
	}
	return learnt - loss, true
}

func medianMax(ts []int64) Zombie {
	if len(ts) == 0 {
		return Zombie{}
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
	z := Zombie{LostLeases: len(ts), MaxNs: ts[len(ts)-1], P50Ns: ts[len(ts)/2]}
	if len(ts)%2 == 0 {
		z.P50Ns = (ts[len(ts)/2-1] + ts[len(ts)/2]) / 2
	}
	return z
}
