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
	// promised validity still ran, and both entered within their own
	// promises. Nothing on the client side repairs this.
	FaultLock = "lock"
	// FaultClient: not provably the lock's: some holder entered or stayed
	// inside after its own promise ran out (or promised nothing). Fencing
	// tokens repair this.
	FaultClient = "client"
)

// promise is what the classification needs of one visit: when the grant
// happened, as far as it is known, and which instants its promise covers.
// Times are on the harness clock; a client whose clock is known only to
// within ±uncertainty (its own process) has every time it reported widened
// by that much, and its promise shortened by it.
type promise struct {
	requested   time.Duration // the grant happened no earlier (request sent)
	acquired    time.Duration // ... and no later (reply received)
	entered     time.Duration // on the resource's clock: exact
	validUntil  time.Duration // 0: no promise (unless renewed)
	unbounded   bool
	uncertainty time.Duration
	renewals    []renewal
}

// renewal is a promise extended during the visit: known is when the client
// reported it (it had certainly happened by then), until the new end.
type renewal struct{ known, until time.Duration }

// forever stands for the end of an unbounded promise.
const forever = time.Duration(1<<63 - 1)

// span is the half-open interval [from, to) of harness time.
type span struct{ from, to time.Duration }

// held returns the instants p's promise certainly covers: all of them
// when unbounded; else up to validUntil (none when 0) and, for each
// renewal, from its report to its new end; every bound moved inwards by
// the uncertainty.
func (p promise) held() []span {
	if p.unbounded {
		return []span{{-forever, forever}}
	}
	u := p.uncertainty
	var out []span
	if p.validUntil != 0 {
		out = append(out, span{-forever, p.validUntil - u})
	}
	for _, r := range p.renewals {
		out = append(out, span{r.known + u, r.until - u})
	}
	return out
}

// heldAt reports whether p's promise certainly covers instant t.
func (p promise) heldAt(t time.Duration) bool { return covered(p.held(), t, t) }

// covered reports whether every integer instant of [lo, hi] lies in some
// span of ss (true when lo > hi: nothing to cover).
func covered(ss []span, lo, hi time.Duration) bool {
	ss = slices.Clone(ss)
	slices.SortFunc(ss, func(a, b span) int { return cmp.Compare(a.from, b.from) })
	for _, s := range ss {
		if lo > hi {
			break
		}
		if s.from <= lo && s.to > lo {
			lo = s.to // [lo, s.to) is covered
		}
	}
	return lo > hi
}

// grantWindow is when p's grant may have happened: [requested, acquired]
// widened by the uncertainty.
func (p promise) grantWindow() (lo, hi time.Duration) {
	return p.requested - p.uncertainty, p.acquired + p.uncertainty
}

// pairFault classifies one overlapping pair (docs/verdicts.md states the
// rule for users). A visit that entered after its own promise ran out is
// its client's fault, whatever the lock did: the pair is a lock fault only
// when both a and b entered within their promises AND the later grant fell
// within the earlier holder's promise. Only the request and the reply of a
// grant are known, so the grant lies anywhere in [requested, acquired];
// the lock is blamed only when every ordering of the two grants consistent
// with those windows makes it the lock's fault. A holder that promised
// nothing is never the lock's fault: nothing was promised to break.
//
// pairFault is a variable only so that classify_test.go can break it on
// purpose (faultInjection).
var pairFault = func(a, b promise) string {
	if faultInjection.invertRule {
		if judgePair(a, b) == FaultLock {
			return FaultClient
		}
		return FaultLock
	}
	return judgePair(a, b)
}

func judgePair(a, b promise) string {
	if a.heldAt(a.entered) && b.heldAt(b.entered) && grantedWithin(a, b) {
		return FaultLock
	}
	return FaultClient
}

// grantedWithin reports whether, for every grant instant ga of a and gb of
// b in their windows, the later one fell within the earlier one's promise
// (at a tie either promise will do).
func grantedWithin(a, b promise) bool {
	if faultInjection.noOverlapCheck {
		return true
	}
	aLo, aHi := a.grantWindow()
	bLo, bHi := b.grantWindow()
	// gb > ga for some ga: a was granted first, b within a's promise.
	if !covered(a.held(), max(bLo, aLo+1), bHi) {
		return false
	}
	if !covered(b.held(), max(aLo, bLo+1), aHi) {
		return false
	}
	// ga = gb: granted at once, within either promise.
	return covered(append(a.held(), b.held()...), max(aLo, bLo), min(aHi, bHi))
}

// faultInjection is zero in production. classify_test.go sets it, one
// field at a time, to break the checker on purpose and show that its own
// tests and the independent re-check (package recheck) then fail.
var faultInjection struct {
	invertRule       bool // pairFault answers the other class
	noOverlapCheck   bool // the later grant need not fall within the earlier promise
	dropOverlap      bool // a visit entering while others are inside starts no incident
	acceptDuplicates bool // tokenFigures counts no duplicate token
}

// incident is the online state of an Incident while it is open.
type incident struct {
	Incident
	members []*visit
	entries []entry
	npairs  int
	inside  int // members not yet exited
	closed  bool
}

// entry is one visit's entry that broke the kind's promise: the lock is
// at fault for it when at least need of judged were granted so that the
// pair (judged, v) is the lock's fault (Shared.conflicts).
type entry struct {
	v      *visit
	judged []*visit
	need   int
}

// classify sets Fault from the members' promises as known now (renewals
// reported after the overlap began still count: a renewal that succeeded
// while another client held the lock is the lock's failure).
func (in *incident) classify() {
	in.Fault = FaultClient
	for _, e := range in.entries {
		n := 0
		for _, o := range e.judged {
			if pairFault(o.promise, e.v.promise) == FaultLock {
				n++
			}
		}
		if n >= e.need {
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
	out.Pairs = in.npairs
	if !in.closed {
		out.Open, out.End = true, now
	}
	return out
}

// joinIncident records that v's entry into l broke the kind's promise
// (pairs, judged, need: Shared.conflicts): v and the visits judged with it
// belong to l's current incident, which starts here if there is none.
func (s *Shared) joinIncident(l *lockState, v *visit, pairs, judged []*visit, need int, now time.Duration) {
	if faultInjection.dropOverlap {
		return
	}
	if l.inc == nil {
		l.inc = &incident{Incident: Incident{Lock: v.lock, Start: now}}
		s.incidents = append(s.incidents, l.inc)
	}
	for _, o := range judged {
		if o.inc == nil {
			o.inc = l.inc
			l.inc.members = append(l.inc.members, o)
			l.inc.inside++
		}
	}
	l.inc.npairs += len(pairs)
	l.inc.entries = append(l.inc.entries, entry{v: v, judged: judged, need: need})
	v.inc = l.inc
	l.inc.members = append(l.inc.members, v)
	l.inc.inside++
}

// leaveIncident records v's exit from l (v already removed from l.inside):
// l's incident closes when none of its members is inside any more (a
// mutex's resource is then empty; readers that overlapped nobody in a
// forbidden way may still be inside a read-write lock's).
func (s *Shared) leaveIncident(l *lockState, v *visit, now time.Duration) {
	if l.inc != nil && v.inc == l.inc {
		l.inc.inside--
	}
	if l.inc != nil && l.inc.inside == 0 {
		// Every member has left: its promise is final. Keep only the
		// public form so a long run holds no visits of closed incidents.
		in := l.inc
		end := in.End
		in.Incident = in.snapshot(now)
		in.Open, in.End = false, end
		in.closed, in.members, in.entries = true, nil, nil
		l.inc = nil
	}
}

// incidentFigures fills the incident fields of sum; s.mu is held.
func (s *Shared) incidentFigures(sum *Summary, now time.Duration) {
	sum.OverlapTotal = s.overlapTotal
	for _, l := range s.locks {
		if s.broken(l) {
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
		if tokens[i] == tokens[i-1] && !faultInjection.acceptDuplicates {
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
