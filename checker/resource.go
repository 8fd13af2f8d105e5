package checker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"
)

// Fencing says what the resource does with tokens.
type Fencing int

// Fencing modes (contract values of resource.fencing).
const (
	FencingOff     Fencing = iota // tokens are recorded, stale ones counted, nothing rejected
	FencingObserve                // stale writes are applied and counted
	FencingEnforce                // stale writes are rejected and counted
)

// ParseFencing parses "off", "observe" or "enforce"; "" is off.
func ParseFencing(s string) (Fencing, error) {
	switch s {
	case "", "off":
		return FencingOff, nil
	case "observe":
		return FencingObserve, nil
	case "enforce":
		return FencingEnforce, nil
	}
	return 0, fmt.Errorf("fencing %q: allowed off, observe, enforce", s)
}

// String returns the contract spelling.
func (f Fencing) String() string {
	switch f {
	case FencingObserve:
		return "observe"
	case FencingEnforce:
		return "enforce"
	}
	return "off"
}

// Errors returned to clients.
var (
	// ErrStaleToken is returned by Write under FencingEnforce when the
	// visit's token is lower than one already seen for the lock.
	ErrStaleToken = errors.New("checker: stale fencing token rejected")
	// ErrUnknownVisit means the visit id was never issued or already exited.
	ErrUnknownVisit = errors.New("checker: unknown visit")
)

// Resource is what a client does inside its critical section. Shared
// implements it in process; the value returned by Dial implements it over
// loopback for clients in their own OS process.
type Resource interface {
	// Enter records that a client entered a lock's resource and returns the
	// visit's id.
	Enter(ctx context.Context, v Visit) (uint64, error)
	// Read returns the lock's counter.
	Read(ctx context.Context, visit uint64) (int64, error)
	// Write sets the lock's counter; ErrStaleToken when fencing rejects it.
	Write(ctx context.Context, visit uint64, value int64) error
	// Exit records that the visit left the resource.
	Exit(ctx context.Context, visit uint64) error
}

// Violation is one overlap of two visits to the same lock's resource.
type Violation struct {
	Lock string `json:"lock"`
	// First is the client that was inside; Second the one that entered.
	First       int    `json:"first_client"`
	Second      int    `json:"second_client"`
	FirstToken  uint64 `json:"first_token"`
	SecondToken uint64 `json:"second_token"`
	// At is when Second entered, since the resource's base time.
	At time.Duration `json:"at_ns"`
	// Overlap is how long both were inside (until the first of them left,
	// or until Summary was taken when neither had left).
	Overlap time.Duration `json:"overlap_ns"`
	// Open is true while both are still inside.
	Open bool `json:"open,omitempty"`
	// FirstShared and SecondShared say the visit was a reader's (the
	// shared side of a read-write lock).
	FirstShared  bool `json:"first_shared,omitempty"`
	SecondShared bool `json:"second_shared,omitempty"`
}

// Summary is the resource's ground truth at one moment.
type Summary struct {
	// SafetyFigures are the run's safety counts: violations (overlapping
	// visit pairs), lost updates (Writes - Counter), stale tokens,
	// incidents and token figures.
	SafetyFigures
	Visits       int   // Enter calls
	Writes       int   // writes applied
	Counter      int64 // sum of every lock's counter
	MaxOverlap   time.Duration
	TotalOverlap time.Duration // sum over violation pairs
	Events       []Violation   // every violation, in order of At
	Inside       int           // visits not yet exited
	// KeyClients is the most distinct clients that visited any one lock
	// key: under 2, nobody ever contended for a key.
	KeyClients int

	// OverlapTotal is how long, summed over locks, two or more visits were
	// inside one lock's resource at once (each instant counted once).
	OverlapTotal time.Duration
	// IncidentList is the first MaxIncidents incidents, in order of Start.
	IncidentList []Incident
	// Kind is the lock's kind ("mutex" unless SetKind said otherwise) and
	// Permits a semaphore's permits (0 for other kinds).
	Kind    string
	Permits int
	// PeakHolders is the most visits inside one lock's resource at once.
	PeakHolders int
	// Fair is the order figures of a fair lock (Kind "fair"), zero else.
	Fair FairFigures
	// Zombies are the lost leases and their zombie times (LostLeases);
	// visits still inside are measured up to now.
	Zombies Zombies
	// PermitsLeaked is a semaphore's leaked permits (leak.go): how long
	// a client was refused or kept waiting while fewer visits than its
	// permits occupied one. 0 for other kinds.
	PermitsLeaked time.Duration

	// Promise is "unbounded" when some visit promised no time bound, else
	// "unreported" when some visit reported no promise at all (a client
	// program that sent neither validity_ms nor session_ms), else
	// "estimated" when some promise was an adapter's estimate, else
	// "measured"; "" without visits.
	Promise string
}

// Visit describes one entry into the resource. It is also the wire format
// of remote clients (net/rpc, gob: fields are matched by name), so a client
// in any process or language reports its grant and promise here.
//
// Times named "harness clock" are offsets from the run's base: a client in
// its own process learns the base from the "start <ns>" line of the worker
// protocol (workload/process.go) and converts its monotonic readings with
// it, never comparing wall clocks.
type Visit struct {
	Lock   string
	Client int
	Token  uint64 // fencing token; 0 = none
	// Waited is how long the client had been acquiring the lock when it
	// entered, measured on its own clock. The resource uses it to tell a
	// hand-off (the client was already waiting when the previous holder
	// left) from an uncontended acquisition.
	Waited time.Duration

	// Requested is when the client sent its acquiring request (harness
	// clock): the grant happened after it. 0 is the run's base, not
	// "unknown".
	Requested time.Duration
	// Tries are when the client sent each request of the acquire call
	// (harness clock, nanoseconds; Op.Tries); empty when the lock reports
	// none.
	Tries []int64
	// Acquired is when Acquire returned (harness clock): the grant happened
	// no later. 0 means unknown: the resource uses the Enter time.
	Acquired time.Duration
	// ValidUntil is when the lease's promised validity runs out (harness
	// clock), measured conservatively by the holder (locks.Promise). A
	// renewal moves it later through an OpRenew line sent with Record.
	// Ignored when Unbounded.
	//
	// A client that reports no promise (ValidUntil 0, Unbounded false)
	// promises nothing: its overlaps are never blamed on the lock.
	ValidUntil time.Duration
	// Unbounded says the lease promises validity with no time bound (a
	// lock without expiry): any overlap with it is the lock's fault.
	Unbounded bool
	// Estimated says the promise was computed by an adapter from outside a
	// library that does not expose it.
	Estimated bool
	// Uncertainty is how far the client's harness-clock times (Requested,
	// Acquired, ValidUntil, renewals) may be off: a client in its own
	// process knows the run's base only to within it. The classification
	// widens the grant by it and shortens the promise by it; 0: exact.
	Uncertainty time.Duration
	// Shared says the visit took the shared (read) side of a read-write
	// lock: it reads the counter at entry and again before it exits,
	// writes nothing, and may overlap other shared visits (SetKind).
	Shared bool
}

type visit struct {
	id      uint64
	lock    string
	client  int
	token   uint64
	entered time.Duration
	read    bool // the visit has read the counter: truly mid-section
	wrote   bool // ... and has written it back: its work is done
	shared  bool // Visit.Shared
	// firstRead is the value of the visit's first Read: a shared visit's
	// later Read must see the same (nobody wrote while it read).
	firstRead int64
	// overlaps are indexes into Shared.events this visit takes part in.
	overlaps []int
	promise  promise
	inc      *incident // the incident this visit belongs to, if any
}

type lockState struct {
	inside   map[uint64]*visit
	counter  int64
	writes   int
	maxTok   uint64
	lastExit time.Duration // -1: nobody has left yet
	// inc is the open incident while two or more visits are (or were,
	// without the resource emptying since) inside; multiSince is when the
	// current stretch of two or more inside began.
	inc        *incident
	multiSince time.Duration
	// grants are the visits with a non-zero token, for the token figures.
	grants []grant
	// clients are the clients that visited (Summary.KeyClients), up to 2.
	clients []int
	// exclusive counts the visits inside that are not shared; peak is the
	// most visits ever inside at once.
	exclusive, peak int
	// asks are every grant's request and reply, kept for a fair lock's
	// order figures only.
	asks []grant
}

// Shared is the in-process resource. It is safe for concurrent use; every
// operation takes one mutex, which also gives the resource a single order of
// events (its "one clock").
type Shared struct {
	fencing Fencing
	base    time.Time
	// kind is the lock's kind ("" a mutex) and permits a semaphore's
	// permits (SetKind).
	kind    string
	permits int
	// changed counts shared visits whose reads saw the counter change.
	changed int

	mu      sync.Mutex
	nextID  uint64
	visits  map[uint64]*visit
	locks   map[string]*lockState
	events  []Violation
	nvisits int
	stale   int
	reject  int
	// fences says the lock reports fencing tokens (SetFences); zero counts
	// its grants that came without one.
	fences  bool
	zero    int
	waiters chan struct{} // closed at the next Enter; see WaitInside
	onViol  func(Violation)
	handoff []time.Duration // samples since the last TakeHandoffs

	incidents    []*incident
	overlapTotal time.Duration
	ev           evidence // visits per entryBucket and per client (windows.go)
	exp          exposureLog
	// standing: the lock's waiters stand in the race while they wait
	// (SetStanding).
	standing bool
	// last is the latest time of a history line other than acquire and
	// attempt: the run's end as its history tells it (Exposure).
	last    time.Duration
	history *History
	// granted, unbounded, unreported and estimated say whether any visit
	// entered, and whether one's promise was unbounded, missing or
	// estimated (Summary.Promise).
	granted, unbounded, unreported, estimated bool
	// clock returns the time since base; tests replace it.
	clock func() time.Duration
	// holds are the visits held by HoldInside: their Write and Exit wait
	// until released (holders.go).
	holds holdSet
	// leak is what a semaphore's leaked permits are measured from (leak.go).
	leak leakLog
}

var _ Resource = (*Shared)(nil)

// New returns an empty resource. base is the run's time origin: every time
// in a Violation counts from it.
func New(fencing Fencing, base time.Time) *Shared {
	s := &Shared{
		fencing: fencing,
		base:    base,
		visits:  map[uint64]*visit{},
		locks:   map[string]*lockState{},
	}
	s.clock = func() time.Duration { return time.Since(s.base) }
	return s
}

// SetBase moves the resource's time origin to base (the workload's real
// start, when clients took time to connect). Call it before the first visit.
func (s *Shared) SetBase(base time.Time) {
	s.mu.Lock()
	s.base = base
	s.mu.Unlock()
}

// SetFences says the lock reports fencing tokens (its registry entry's
// Fencing): a grant without a token (token 0) is then counted as a
// fencing defect (ZeroTokens), and its acquire line says the lock fences.
// Call it before the first visit.
func (s *Shared) SetFences(fences bool) {
	s.mu.Lock()
	s.fences = fences
	s.mu.Unlock()
}

// OnViolation registers f to be called (under the resource's lock, so it
// must be quick) for each violation as it happens.
func (s *Shared) OnViolation(f func(Violation)) {
	s.mu.Lock()
	s.onViol = f
	s.mu.Unlock()
}

// Fencing returns the resource's fencing mode.
func (s *Shared) Fencing() Fencing { return s.fencing }

func (s *Shared) lock(name string) *lockState {
	l := s.locks[name]
	if l == nil {
		l = &lockState{inside: map[uint64]*visit{}, lastExit: -1}
		s.locks[name] = l
	}
	return l
}

// Enter implements Resource. A hand-off sample (previous holder's exit to
// this entry) is taken when the lock's resource is empty, someone left it
// before, and this client was already waiting at that moment.
func (s *Shared) Enter(_ context.Context, in Visit) (uint64, error) {
	lock, client, token := in.Lock, in.Client, in.Token
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock()
	s.nextID++
	v := &visit{id: s.nextID, lock: lock, client: client, token: token, entered: now, shared: in.Shared}
	v.promise = promise{acquired: in.Acquired, validUntil: in.ValidUntil, unbounded: in.Unbounded}
	if in.Acquired == 0 {
		v.promise.acquired = now
	}
	// Requested is a time like any other, 0 included (the run's base): a
	// request read as "unknown" would narrow the grant's window and could
	// blame the lock, or count a token regression, for a grant the client
	// asked for earlier. Every client reports it (workload, protocol).
	requested := in.Requested
	if requested > v.promise.acquired {
		requested = v.promise.acquired
	}
	v.promise.requested, v.promise.entered, v.promise.uncertainty = requested, now, in.Uncertainty
	s.granted = true
	s.unbounded = s.unbounded || in.Unbounded
	s.estimated = s.estimated || in.Estimated
	s.unreported = s.unreported || (!in.Unbounded && in.ValidUntil == 0)
	s.history.visit(in, v.id, requested, v.promise.acquired, now, s.fences, s.standing, s.kind, s.permits)
	s.last = max(s.last, now)
	s.sent(lock, client, requested, v.promise.acquired, true, s.standing, in.Tries)
	if s.fences && token == 0 {
		s.zero++
	}
	l := s.lock(lock)
	if len(l.clients) < 2 && !slices.Contains(l.clients, client) {
		l.clients = append(l.clients, client)
	}
	// A shared visit writes nothing, and a semaphore's holders are inside
	// together by design: their tokens fence nothing. Only exclusive
	// grants of the other kinds count in the token figures.
	if token != 0 && !v.shared && s.kind != KindSemaphore {
		l.grants = append(l.grants, grant{token: token, requested: requested, acquired: v.promise.acquired})
	}
	if s.kind == KindFair {
		l.asks = append(l.asks, grant{token: token, requested: requested, acquired: v.promise.acquired})
	}
	if len(l.inside) == 0 && l.lastExit >= 0 && now-in.Waited <= l.lastExit {
		s.handoff = append(s.handoff, now-l.lastExit)
	}
	// Every visit already inside overlaps this one, whoever they are: even
	// the same client entering twice (a reentrant lock is one visit per
	// outermost hold; the workload never nests visits). The common case,
	// nobody inside, allocates and sorts nothing.
	var others []*visit
	if len(l.inside) > 0 {
		others = make([]*visit, 0, len(l.inside))
		for _, o := range l.inside {
			others = append(others, o)
		}
		sort.Slice(others, func(i, j int) bool { return others[i].id < others[j].id })
	}
	was := s.broken(l)
	pairs, judged, need := s.conflicts(v, others)
	for _, o := range pairs {
		ev := Violation{
			Lock: lock, First: o.client, Second: client,
			FirstToken: o.token, SecondToken: token,
			At: now, Open: true, FirstShared: o.shared, SecondShared: v.shared,
		}
		s.events = append(s.events, ev)
		idx := len(s.events) - 1
		o.overlaps = append(o.overlaps, idx)
		v.overlaps = append(v.overlaps, idx)
		if s.onViol != nil {
			s.onViol(ev)
		}
	}
	if len(pairs) > 0 {
		s.joinIncident(l, v, pairs, judged, need, now)
	}
	if token > l.maxTok && !v.shared {
		l.maxTok = token
	}
	l.inside[v.id] = v
	if !v.shared {
		l.exclusive++
	}
	l.peak = max(l.peak, len(l.inside))
	s.brokenChange(l, was, now)
	s.visits[v.id] = v
	s.leakEnter(v, in, now)
	s.countEntry(now)
	s.nvisits++
	s.wake()
	return v.id, nil
}

// Read implements Resource.
func (s *Shared) Read(_ context.Context, id uint64) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.visits[id]
	if v == nil {
		return 0, fmt.Errorf("read visit %d: %w", id, ErrUnknownVisit)
	}
	val := s.locks[v.lock].counter
	if !v.read {
		v.read, v.firstRead = true, val
		s.wake()
	} else if v.shared && val != v.firstRead {
		// A writer wrote while this reader read: whatever the record of
		// overlaps says, the reader saw the value change under it.
		s.changed++
		v.firstRead = val
	}
	s.logOp(v, OpRead, s.clock(), "ok", val)
	return val, nil
}

// Write implements Resource.
func (s *Shared) Write(ctx context.Context, id uint64, value int64) error {
	s.heldWrite(ctx, id)
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.visits[id]
	if v == nil {
		return fmt.Errorf("write visit %d: %w", id, ErrUnknownVisit)
	}
	l := s.locks[v.lock]
	if s.kind == KindSemaphore {
		// A semaphore's holders are inside together by design: their
		// writes race and fence nothing. Only the count is judged.
		v.wrote = true
		s.logOp(v, OpWrite, s.clock(), "ok", value)
		return nil
	}
	if v.token != 0 && v.token < l.maxTok {
		s.stale++
		if s.fencing == FencingEnforce {
			s.reject++
			s.logOp(v, OpWrite, s.clock(), "stale_rejected", value)
			return fmt.Errorf("write token %d < seen %d on %s: %w", v.token, l.maxTok, v.lock, ErrStaleToken)
		}
	}
	if v.token > l.maxTok {
		l.maxTok = v.token
	}
	l.counter = value
	l.writes++
	v.wrote = true
	s.logOp(v, OpWrite, s.clock(), "ok", value)
	return nil
}

// Exit implements Resource.
func (s *Shared) Exit(ctx context.Context, id uint64) error {
	s.heldExit(ctx, id)
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock()
	v := s.visits[id]
	if v == nil {
		return fmt.Errorf("exit visit %d: %w", id, ErrUnknownVisit)
	}
	s.logOp(v, OpExit, now, "ok", 0)
	for _, idx := range v.overlaps {
		ev := &s.events[idx]
		if ev.Open {
			ev.Open = false
			ev.Overlap = now - ev.At
		}
	}
	s.countExit(v, now)
	s.leakExit(id, now)
	if ev := expVisit(v, now); s.exp.on || lapsed(ev) {
		s.exp.visits = append(s.exp.visits, ev)
	}
	delete(s.visits, id)
	l := s.locks[v.lock]
	was := s.broken(l)
	delete(l.inside, id)
	if !v.shared {
		l.exclusive--
	}
	if len(l.inside) == 0 {
		l.lastExit = now
	}
	s.brokenChange(l, was, now)
	s.leaveIncident(l, v, now)
	return nil
}

// TakeHandoffs returns the hand-off samples recorded since the last call and
// forgets them (the caller folds them into a histogram).
func (s *Shared) TakeHandoffs() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.handoff
	s.handoff = nil
	return out
}

// wake releases WaitInside callers; s.mu must be held.
func (s *Shared) wake() {
	if s.waiters != nil {
		close(s.waiters)
		s.waiters = nil
	}
}

// Summary returns the ground truth so far. Overlaps still open are measured
// up to now and marked Open.
func (s *Shared) Summary() Summary {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock()
	sum := Summary{
		Visits: s.nvisits,
		Inside: len(s.visits),
		Events: make([]Violation, len(s.events)),
		SafetyFigures: SafetyFigures{Violations: len(s.events), StaleTokens: s.stale, StaleRejected: s.reject, StaleAccepted: s.stale - s.reject,
			ZeroTokens: s.zero, ChangedReads: s.changed},
		Kind: s.kindOf(), Permits: s.permits,
	}
	copy(sum.Events, s.events)
	for i := range sum.Events {
		ev := &sum.Events[i]
		if ev.Open {
			ev.Overlap = now - ev.At
		}
		sum.TotalOverlap += ev.Overlap
		if ev.Overlap > sum.MaxOverlap {
			sum.MaxOverlap = ev.Overlap
		}
	}
	for _, l := range s.locks {
		sum.Writes += l.writes
		sum.Counter += l.counter
		sum.KeyClients = max(sum.KeyClients, len(l.clients))
		sum.PeakHolders = max(sum.PeakHolders, l.peak)
		f := fairFigures(l.asks)
		sum.Fair.OutOfOrder += f.OutOfOrder
		sum.Fair.MaxOvertakenWait = max(sum.Fair.MaxOvertakenWait, f.MaxOvertakenWait)
		d, r := tokenFigures(l.grants)
		sum.DuplicateTokens += d
		sum.TokenRegressions += r
	}
	if lost := int64(sum.Writes) - sum.Counter; lost > 0 {
		sum.LostUpdates = int(lost)
	}
	// A read that changed under a reader is an update the reader lost
	// sight of: the lost-update class, counted there too.
	sum.LostUpdates += s.changed
	s.incidentFigures(&sum, now)
	sum.Zombies = s.zombies(now)
	sum.PermitsLeaked = s.permitsLeaked()
	switch {
	case !s.granted:
	case s.unbounded:
		sum.Promise = "unbounded"
	case s.unreported:
		sum.Promise = "unreported"
	case s.estimated:
		sum.Promise = "estimated"
	default:
		sum.Promise = "measured"
	}
	return sum
}
