// Package recheck recomputes the safety figures of a run from its
// history.jsonl alone, independently of package checker: it shares no code
// with it (it does not import it), and was written from the user-facing
// description of the format (docs/history-format.md) and of the verdicts
// (docs/verdicts.md). Where the checker keeps a live resource's bookkeeping
// line by line, recheck first gathers every visit, then sweeps each lock's
// visit endpoints in order; it decides a pair's fault by searching for an
// ordering of the grants that acquits the lock, and asks porcupine for the
// token order itself. `bench check` runs both and reports any disagreement.
// It imports nothing of locklab (docs/architecture.md).
package recheck

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"time"
)

// Figures are one run's safety figures, as result.json names them.
type Figures struct {
	Visits           int
	Violations       int
	Incidents        int
	LockFaults       int
	ClientFaults     int
	LostUpdates      int
	StaleTokens      int
	StaleRejected    int
	StaleAccepted    int
	DuplicateTokens  int
	TokenRegressions int
	// ZeroTokens counts grants without a token from a lock whose acquire
	// lines say it fences.
	ZeroTokens int
	// ChangedReads counts shared visits whose two reads differ (each is
	// also a lost update); PeakHolders is the most visits inside one
	// lock at once.
	ChangedReads int
	PeakHolders  int
	// OutOfOrder and MaxOvertakenWait are a fair lock's order figures
	// (docs/verdicts.md, "Lock kinds").
	OutOfOrder       int
	MaxOvertakenWait time.Duration
	OverlapTotal     time.Duration // two or more inside, each instant once
	MaxOverlap       time.Duration // the longest overlap of one pair
	// PermitsLeaked is how long a semaphore refused or kept a client
	// waiting while a permit should have been free (leak.go).
	PermitsLeaked time.Duration
	// TokenOrder is porcupine's verdict on the tokens ("ok", "violation",
	// "unknown" when it ran out of time, "skipped: ..."), "" when the run
	// has no tokens.
	TokenOrder string
}

// line is one history line (docs/history-format.md).
type line struct {
	Run         int    `json:"run"`
	Seq         uint64 `json:"seq"`
	Client      int    `json:"client"`
	Lock        string `json:"lock"`
	Op          string `json:"op"`
	Visit       uint64 `json:"visit"`
	Invoke      int64  `json:"invoke_ns"`
	Return      int64  `json:"return_ns"`
	Token       uint64 `json:"token"`
	ValidUntil  int64  `json:"valid_until_ns"`
	Unbounded   bool   `json:"unbounded"`
	Fences      bool   `json:"fences"`
	Uncertainty int64  `json:"uncertainty_ns"`
	Value       int64  `json:"value"`
	Outcome     string `json:"outcome"`
	Mode        string `json:"mode"`
	Kind        string `json:"kind"`
	Permits     int    `json:"permits"`
}

// visit is one critical section as the lines describe it.
type visit struct {
	id          uint64
	client      int
	lock        string
	token       uint64
	req, acq    int64 // the grant's window (client's clock)
	validUntil  int64 // 0: no promise
	unbounded   bool
	fences      bool // the lock says it gives tokens
	uncertainty int64
	renewals    [][2]int64 // (reported at, valid until)
	enter, exit int64      // resource's clock; exit -1 while inside
	enterSeq    uint64
	exitSeq     uint64
	shared      bool    // took the shared side (mode "shared")
	reads       []int64 // values of its read lines
}

// run is what one run's lines leave behind.
type run struct {
	visits  map[uint64]*visit
	order   []*visit          // in order of entry
	pending map[uint64]*visit // acquired, not yet entered
	end     int64             // the latest time of the run's lines but acquire
	grants  map[string][]*visit
	counter map[string]int64 // last applied write per lock
	// kind and permits per lock, from its acquire lines ("" a mutex)
	kind    map[string]string
	permits map[string]int
	maxTok  map[string]uint64
	writes  int
	fig     Figures
	// what validating the next line needs (docs/history-format.md, "A
	// valid history")
	seq       uint64
	resNow    int64           // the latest instant of enter, read, write, exit
	lastGrant map[int]int64   // per client: its latest acquire's return_ns
	named     map[uint64]bool // visit ids of acquire lines so far
	awaiting  *visit          // an acquire line whose enter must come next
	leak      leakBook
}

// MaxTokenOrderOps bounds the grants handed to porcupine per run, as the
// harness does: beyond it the run's token order is skipped.
const MaxTokenOrderOps = 50000

// Check reads a history and returns every run's figures, keyed by the
// run's index. timeout bounds porcupine's search per run. A malformed
// line is an error naming its line number and field.
func Check(r io.Reader, timeout time.Duration) (map[int]Figures, error) {
	runs := map[int]*run{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		var l line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return nil, fmt.Errorf("history line %d: %w", n, err)
		}
		rn := runs[l.Run]
		if rn == nil {
			rn = &run{visits: map[uint64]*visit{}, pending: map[uint64]*visit{}, grants: map[string][]*visit{},
				counter: map[string]int64{}, kind: map[string]string{}, permits: map[string]int{}, maxTok: map[string]uint64{}, lastGrant: map[int]int64{}, named: map[uint64]bool{}}
			runs[l.Run] = rn
		}
		if err := rn.valid(l); err != nil {
			return nil, fmt.Errorf("history line %d: %w", n, err)
		}
		if err := rn.add(l); err != nil {
			return nil, fmt.Errorf("history line %d: %w", n, err)
		}
		rn.leak.note(l)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read history: %w", err)
	}
	out := make(map[int]Figures, len(runs))
	for i, rn := range runs {
		rn.sweep()
		rn.tokens()
		rn.fairOrder()
		rn.fig.PermitsLeaked = rn.leak.leaked(rn.kind, rn.permits)
		rn.fig.TokenOrder = tokenOrder(rn.grants, timeout)
		out[i] = rn.fig
	}
	return out, nil
}

// add takes one line in file order.
func (rn *run) add(l line) error {
	if l.Op != "acquire" && l.Op != "attempt" && l.Op != "fault" && l.Return > rn.end {
		rn.end = l.Return
	}
	switch l.Op {
	case "acquire":
		if l.Visit == 0 {
			return fmt.Errorf("field visit: acquire without a visit")
		}
		rn.pending[l.Visit] = &visit{id: l.Visit, client: l.Client, lock: l.Lock, token: l.Token, req: l.Invoke, acq: l.Return,
			validUntil: l.ValidUntil, unbounded: l.Unbounded, fences: l.Fences, uncertainty: l.Uncertainty, exit: -1,
			shared: l.Mode == "shared"}
		if l.Kind != "" && l.Kind != "mutex" {
			rn.kind[l.Lock], rn.permits[l.Lock] = l.Kind, l.Permits
		}
		return nil
	case "enter":
		v := rn.pending[l.Visit]
		if v == nil {
			return fmt.Errorf("field visit: enter of visit %d without its acquire line", l.Visit)
		}
		delete(rn.pending, l.Visit)
		v.enter, v.enterSeq = l.Return, l.Seq
		rn.visits[v.id] = v
		rn.order = append(rn.order, v)
		rn.fig.Visits++
		if v.shared {
			// a reader writes nothing: its token fences nothing
			if v.token == 0 && v.fences {
				rn.fig.ZeroTokens++
			}
			return nil
		}
		if v.token > rn.maxTok[v.lock] {
			rn.maxTok[v.lock] = v.token
		}
		switch {
		case v.token == 0 && v.fences:
			rn.fig.ZeroTokens++ // a fencing lock granted without a token
		case v.token != 0 && rn.kind[v.lock] != "semaphore":
			// a semaphore's holders are inside together: their tokens fence nothing
			rn.grants[v.lock] = append(rn.grants[v.lock], v)
		}
		return nil
	case "read":
		if v := rn.visits[l.Visit]; v != nil && v.shared {
			v.reads = append(v.reads, l.Value)
		}
		return nil
	case "attempt":
		if l.Kind != "" && l.Kind != "mutex" {
			rn.kind[l.Lock], rn.permits[l.Lock] = l.Kind, l.Permits
		}
		fallthrough
	case "release", "lost", "fault":
		// no figure of this function depends on them (an attempt line is
		// evidence of contention in a fault's window, which the history
		// does not describe; permits_leaked reads release and attempt
		// lines in leak.go)
		return nil
	case "write":
		v := rn.visits[l.Visit]
		if v == nil || v.exit >= 0 {
			return fmt.Errorf("field visit: write of visit %d, which is not inside", l.Visit)
		}
		if rn.kind[v.lock] == "semaphore" {
			return nil // holders of permits write together by design: only the count is judged
		}
		stale := v.token != 0 && v.token < rn.maxTok[v.lock]
		if stale {
			rn.fig.StaleTokens++
		}
		switch l.Outcome {
		case "ok":
			rn.writes++
			rn.counter[v.lock] = l.Value
			if stale {
				rn.fig.StaleAccepted++
			}
		case "stale_rejected":
			if !stale {
				return fmt.Errorf("field outcome: write of visit %d rejected as stale, but token %d is not below %d", l.Visit, v.token, rn.maxTok[v.lock])
			}
			rn.fig.StaleRejected++
		default:
			return fmt.Errorf("field outcome: write outcome %q (want ok or stale_rejected)", l.Outcome)
		}
		return nil
	case "exit":
		v := rn.visits[l.Visit]
		if v == nil || v.exit >= 0 {
			return fmt.Errorf("field visit: exit of visit %d, which is not inside", l.Visit)
		}
		v.exit, v.exitSeq = l.Return, l.Seq
		return nil
	case "renew":
		// a renewal counts for a visit still inside with a bounded promise
		if v := rn.visits[l.Visit]; v != nil && v.exit < 0 && !v.unbounded {
			v.renewals = append(v.renewals, [2]int64{l.Return, l.ValidUntil})
		}
		return nil
	}
	return fmt.Errorf("field op: unknown operation %q", l.Op)
}

// endpoint is one entry or exit of a visit; open visits exit at the end.
type endpoint struct {
	t     int64
	seq   uint64
	enter bool
	v     *visit
}

// sweep walks each lock's visit endpoints in the resource's order and
// derives the overlap figures, the incidents and their faults.
func (rn *run) sweep() {
	byLock := map[string][]endpoint{}
	for _, v := range rn.order {
		byLock[v.lock] = append(byLock[v.lock], endpoint{t: v.enter, seq: v.enterSeq, enter: true, v: v})
		if v.exit >= 0 {
			byLock[v.lock] = append(byLock[v.lock], endpoint{t: v.exit, seq: v.exitSeq, v: v})
		}
	}
	parent := map[*visit]*visit{}
	var find func(v *visit) *visit
	find = func(v *visit) *visit {
		p, ok := parent[v]
		if !ok || p == v {
			return v
		}
		r := find(p)
		parent[v] = r
		return r
	}
	lockPair := map[*visit]bool{} // any member of a group with a lock-fault entry
	var members []*visit
	join := func(a, b *visit) {
		for _, x := range []*visit{a, b} {
			if _, ok := parent[x]; !ok {
				parent[x] = x
				members = append(members, x)
			}
		}
		parent[find(a)] = find(b)
	}
	for lock, eps := range byLock {
		rule := kindRule{kind: rn.kind[lock], permits: rn.permits[lock]}
		sort.Slice(eps, func(i, j int) bool {
			if eps[i].t != eps[j].t {
				return eps[i].t < eps[j].t
			}
			return eps[i].seq < eps[j].seq
		})
		var inside []*visit
		var brokeAt int64
		for _, e := range eps {
			before := rule.broken(inside)
			if !e.enter {
				for i, o := range inside {
					if o == e.v {
						inside = append(inside[:i], inside[i+1:]...)
						break
					}
				}
				if before && !rule.broken(inside) {
					rn.fig.OverlapTotal += time.Duration(e.t - brokeAt)
				}
				continue
			}
			forbidden, judged, need := rule.forbids(inside, e.v)
			for _, o := range forbidden {
				rn.fig.Violations++
				until := rn.end
				for _, x := range []int64{o.exit, e.v.exit} {
					if x >= 0 && x < until {
						until = x
					}
				}
				rn.fig.MaxOverlap = max(rn.fig.MaxOverlap, time.Duration(until-e.t))
			}
			locks := 0
			for _, o := range judged {
				join(o, e.v)
				if pairIsLocks(o, e.v) {
					locks++
				}
			}
			if len(judged) > 0 && locks >= need {
				lockPair[e.v] = true
			}
			inside = append(inside, e.v)
			rn.fig.PeakHolders = max(rn.fig.PeakHolders, len(inside))
			if !before && rule.broken(inside) {
				brokeAt = e.t
			}
		}
		if rule.broken(inside) {
			rn.fig.OverlapTotal += time.Duration(rn.end - brokeAt)
		}
	}
	groups := map[*visit]bool{}
	for _, m := range members {
		r := find(m)
		groups[r] = groups[r] || lockPair[m]
	}
	for _, lock := range groups {
		rn.fig.Incidents++
		if lock {
			rn.fig.LockFaults++
		} else {
			rn.fig.ClientFaults++
		}
	}
	var counter int64
	for _, c := range rn.counter {
		counter += c
	}
	if lost := int64(rn.writes) - counter; lost > 0 {
		rn.fig.LostUpdates = int(lost)
	}
	for _, v := range rn.order {
		for i := 1; i < len(v.reads); i++ {
			if v.reads[i] != v.reads[i-1] {
				rn.fig.ChangedReads++
			}
		}
	}
	rn.fig.LostUpdates += rn.fig.ChangedReads
}

// tokens counts duplicate tokens and token regressions per lock.
func (rn *run) tokens() {
	for _, gs := range rn.grants {
		seen := map[uint64]bool{}
		for _, g := range gs {
			if seen[g.token] {
				rn.fig.DuplicateTokens++
			}
			seen[g.token] = true
		}
		// walk grants by request time, admitting those that replied
		// strictly before it, keeping the largest token admitted
		byReq := append([]*visit(nil), gs...)
		sort.Slice(byReq, func(i, j int) bool { return byReq[i].req < byReq[j].req })
		byAcq := append([]*visit(nil), gs...)
		sort.Slice(byAcq, func(i, j int) bool { return byAcq[i].acq < byAcq[j].acq })
		var best uint64
		k := 0
		for _, g := range byReq {
			for k < len(byAcq) && byAcq[k].acq < g.req {
				best = max(best, byAcq[k].token)
				k++
			}
			if k > 0 && best >= g.token {
				rn.fig.TokenRegressions++
			}
		}
	}
}

// valid checks l against the lines of its run before it, by the rules
// of docs/history-format.md ("A valid history"), before add reads it.
func (rn *run) valid(l line) error {
	if l.Seq <= rn.seq {
		return fmt.Errorf("field seq: %d does not follow %d (seq increases along a run's lines)", l.Seq, rn.seq)
	}
	rn.seq = l.Seq
	if l.Return < l.Invoke {
		return fmt.Errorf("field return_ns: %s returned at %d, before its invoke_ns %d", l.Op, l.Return, l.Invoke)
	}
	if w := rn.awaiting; w != nil {
		if l.Op != "enter" || l.Visit != w.id {
			return fmt.Errorf("field op: %s where the enter of visit %d must follow its acquire line", l.Op, w.id)
		}
		rn.awaiting = nil
	}
	instant := false
	switch l.Op {
	case "acquire", "attempt":
		if last, ok := rn.lastGrant[l.Client]; ok && l.Invoke < last {
			return fmt.Errorf("field invoke_ns: client %d sent a request at %d, before its previous grant returned at %d", l.Client, l.Invoke, last)
		}
		if l.Op == "attempt" {
			if l.Visit != 0 {
				return fmt.Errorf("field visit: an attempt grants nothing, yet names visit %d", l.Visit)
			}
			break
		}
		if l.Visit != 0 && rn.named[l.Visit] {
			return fmt.Errorf("field visit: visit %d already had its acquire line", l.Visit)
		}
		switch l.Kind {
		case "", "mutex", "rw", "semaphore", "fair":
		default:
			return fmt.Errorf("field kind: %q (want mutex, rw, semaphore or fair)", l.Kind)
		}
		if l.Mode != "" && (l.Mode != "shared" || l.Kind != "rw") {
			return fmt.Errorf("field mode: %q on a lock of kind %q (only kind rw has a shared side)", l.Mode, l.Kind)
		}
		rn.named[l.Visit] = true
		rn.lastGrant[l.Client] = l.Return
		rn.awaiting = &visit{id: l.Visit}
	case "enter":
		instant = true
		if p := rn.pending[l.Visit]; p != nil && (p.client != l.Client || p.lock != l.Lock) {
			return fmt.Errorf("field client: enter of visit %d by client %d on %q, granted to client %d on %q", l.Visit, l.Client, l.Lock, p.client, p.lock)
		}
	case "read", "write", "exit":
		instant = true
		v := rn.visits[l.Visit]
		switch {
		case v == nil:
			return fmt.Errorf("field visit: %s of visit %d, which never entered", l.Op, l.Visit)
		case v.exit >= 0:
			return fmt.Errorf("field visit: %s of visit %d after its exit", l.Op, l.Visit)
		case v.client != l.Client || v.lock != l.Lock:
			return fmt.Errorf("field client: %s of visit %d by client %d on %q, entered by client %d on %q", l.Op, l.Visit, l.Client, l.Lock, v.client, v.lock)
		case l.Return < v.enter:
			return fmt.Errorf("field return_ns: %s of visit %d at %d, before it entered at %d", l.Op, l.Visit, l.Return, v.enter)
		case l.Op == "write" && v.shared:
			return fmt.Errorf("field op: write of visit %d, a reader's (shared) visit: readers write nothing", l.Visit)
		}
	case "fault":
		if l.Visit != 0 {
			return fmt.Errorf("field visit: a fault line names no visit, yet names %d", l.Visit)
		}
	case "renew", "release", "lost":
		if l.Visit == 0 {
			break
		}
		if v := rn.visits[l.Visit]; v == nil || v.client != l.Client {
			return fmt.Errorf("field visit: %s by client %d of visit %d, which that client never entered", l.Op, l.Client, l.Visit)
		}
	default:
		return fmt.Errorf("field op: unknown operation %q", l.Op)
	}
	if instant {
		if l.Invoke != l.Return {
			return fmt.Errorf("field invoke_ns: %s is one instant of the resource, yet invoke_ns %d differs from return_ns %d", l.Op, l.Invoke, l.Return)
		}
		if l.Return < rn.resNow {
			return fmt.Errorf("field return_ns: %s at %d, earlier than the resource's line before it at %d", l.Op, l.Return, rn.resNow)
		}
		rn.resNow = l.Return
	}
	return nil
}
