package checker

import (
	"cmp"
	"slices"
	"sort"
	"time"
)

// Incident is a maximal group of overlapping visits to one lock's resource:
// the connected part of the overlap graph (A overlaps B, B overlaps C: one
// incident of three visits, even when A and C never met). One paused holder
// overlapped by many short visits of the others counts once, so locks are
// compared on how often mutual exclusion broke, not on their throughput.
type Incident struct {
	Lock string `json:"lock"`
	// Start is when the first overlap of the group began, End when the
	// group's last overlap ended (both since the resource's base).
	Start time.Duration `json:"start_ns"`
	End   time.Duration `json:"end_ns"`
	// Clients are the clients of the group's visits, in order of entry.
	Clients []int `json:"clients"`
	// Pairs is how many overlapping visit pairs (violations) it contains.
	Pairs int `json:"pairs"`
	// Fault is "lock" or "client" (see Classify).
	Fault string `json:"fault"`
	// Open is true while visits of the group are still inside.
	Open bool `json:"open,omitempty"`
}

// Fault classes of an incident.
const (
	// FaultLock: the lock granted a second holder while the first one's
	// promised validity had not run out. Nothing on the client side
	// repairs this.
	FaultLock = "lock"
	// FaultClient: the earlier holder was still inside after its promise
	// ran out. Fencing tokens repair this.
	FaultClient = "client"
)

// promise is what the classification needs of one visit.
type promise struct {
	acquired   time.Duration // grant at the latest (Acquire returned)
	validUntil time.Duration
	unbounded  bool
}

// PairFault classifies one overlapping pair. The earlier grant is the one
// whose Acquire returned first (not the one that entered first: a holder
// paused between Acquire and Enter enters late on an old grant). The pair is
// a lock fault when the later grant returned before the earlier holder's
// promise ran out: the later grant happened no later than its return, so
// the lock certainly granted twice within its own promise. Otherwise the
// earlier holder stayed inside past its promise: a client fault. Promises
// are measured conservatively by the holders, so a lock is never blamed
// for a client's lateness.
func pairFault(a, b promise) string {
	if covers(a, b) || covers(b, a) {
		return FaultLock
	}
	return FaultClient
}

// covers reports whether b was granted no earlier than a, while a's promise
// still ran (two grants at the same instant are checked both ways).
func covers(a, b promise) bool {
	return a.acquired <= b.acquired && (a.unbounded || b.acquired < a.validUntil)
}

// incident is the online state of an Incident while it is open.
type incident struct {
	Incident
	members []*visit
	pairs   [][2]*visit
	closed  bool
}

// classify sets Fault from the members' promises as known now (renewals
// reported after the overlap began still count: a renewal that succeeded
// while another client held the lock is the lock's failure).
func (in *incident) classify() {
	in.Fault = FaultClient
	for _, p := range in.pairs {
		if pairFault(p[0].promise, p[1].promise) == FaultLock {
			in.Fault = FaultLock
			return
		}
	}
}

// snapshot returns the public form, classified with what is known now.
func (in *incident) snapshot(now time.Duration) Incident {
	if in.closed {
		return in.Incident
	}
	in.classify()
	out := in.Incident
	out.Clients = make([]int, len(in.members))
	for i, m := range in.members {
		out.Clients[i] = m.client
	}
	out.Pairs = len(in.pairs)
	if !in.closed {
		out.Open, out.End = true, now
	}
	return out
}

// joinIncident records that v entered while others were inside l: they all
// belong to l's current incident, which starts here if there is none.
func (s *Shared) joinIncident(l *lockState, v *visit, others []*visit, now time.Duration) {
	if l.inc == nil {
		l.inc = &incident{Incident: Incident{Lock: v.lock, Start: now}}
		s.incidents = append(s.incidents, l.inc)
	}
	for _, o := range others {
		if o.inc == nil {
			o.inc = l.inc
			l.inc.members = append(l.inc.members, o)
		}
		l.inc.pairs = append(l.inc.pairs, [2]*visit{o, v})
	}
	v.inc = l.inc
	l.inc.members = append(l.inc.members, v)
	if len(others) == 1 {
		l.multiSince = now // two inside from now on
	}
}

// leaveIncident records v's exit from l (v already removed from l.inside).
func (s *Shared) leaveIncident(l *lockState, now time.Duration) {
	if len(l.inside) == 1 && l.inc != nil {
		s.overlapTotal += now - l.multiSince
		l.inc.End = now
	}
	if len(l.inside) == 0 && l.inc != nil {
		// Every member has left: its promise is final. Keep only the
		// public form so a long run holds no visits of closed incidents.
		in := l.inc
		end := in.End
		in.Incident = in.snapshot(now)
		in.Open, in.End = false, end
		in.closed, in.members, in.pairs = true, nil, nil
		l.inc = nil
	}
}

// incidentFigures fills the incident fields of sum; s.mu is held.
func (s *Shared) incidentFigures(sum *Summary, now time.Duration) {
	sum.OverlapTotal = s.overlapTotal
	for _, l := range s.locks {
		if l.inc != nil && len(l.inside) >= 2 {
			sum.OverlapTotal += now - l.multiSince
		}
	}
	sum.Incidents = len(s.incidents)
	for i, in := range s.incidents {
		snap := in.snapshot(now)
		if snap.Fault == FaultLock {
			sum.LockFaults++
		} else {
			sum.ClientFaults++
		}
		if i < MaxIncidents {
			sum.IncidentList = append(sum.IncidentList, snap)
		}
	}
}

// MaxIncidents bounds Summary.IncidentList (the counts are never bounded).
const MaxIncidents = 1000

// grant is one lease with a non-zero token as it reached the resource, for
// the token figures: 24 bytes, kept per lock, since a fast run grants
// millions.
type grant struct {
	token     uint64
	requested time.Duration
	acquired  time.Duration
}

// tokenFigures returns one lock's duplicate tokens (a visit presenting a
// non-zero token another visit presented before) and token regressions (a
// grant whose token is not greater than that of a grant that returned
// before this one was requested: earlier in real time). Both come from
// every grant, whether or not a write carried its token. It sorts gs by
// return time in place and allocates one token per grant.
func tokenFigures(gs []grant) (duplicates, regressions int) {
	tokens := make([]uint64, len(gs))
	for i, g := range gs {
		tokens[i] = g.token
	}
	slices.Sort(tokens)
	for i := 1; i < len(tokens); i++ {
		if tokens[i] == tokens[i-1] {
			duplicates++
		}
	}
	// Prefix maxima of tokens in order of return (reusing tokens): the
	// largest token granted before each instant.
	slices.SortFunc(gs, func(a, b grant) int { return cmp.Compare(a.acquired, b.acquired) })
	prefix := tokens
	var m uint64
	for i, g := range gs {
		m = max(m, g.token)
		prefix[i] = m
	}
	for _, g := range gs {
		// grants that returned strictly before g was requested
		n := sort.Search(len(gs), func(i int) bool { return gs[i].acquired >= g.requested })
		if n > 0 && prefix[n-1] >= g.token {
			regressions++
		}
	}
	return duplicates, regressions
}
