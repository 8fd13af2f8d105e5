package checker

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/locklab/locklab/recheck"
)

// fake drives a Shared with a clock the test sets: no server, no sleeping.
type fake struct {
	t   *testing.T
	s   *Shared
	now time.Duration
	ids map[string]uint64
}

func newFake(t *testing.T, f Fencing) *fake {
	fk := &fake{t: t, s: New(f, time.Time{}), ids: map[string]uint64{}}
	fk.s.clock = func() time.Duration { return fk.now }
	return fk
}

func (f *fake) at(ms int) *fake { f.now = time.Duration(ms) * time.Millisecond; return f }

func (f *fake) enter(name string, v Visit) *fake {
	f.t.Helper()
	id, err := f.s.Enter(context.Background(), v)
	if err != nil {
		f.t.Fatal(err)
	}
	f.ids[name] = id
	return f
}

func (f *fake) exit(name string) *fake {
	f.t.Helper()
	if err := f.s.Exit(context.Background(), f.ids[name]); err != nil {
		f.t.Fatal(err)
	}
	return f
}

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// lease is a visit granted at acq (requested 1ms before) promising ttl.
func lease(client int, token uint64, acq, ttl int) Visit {
	return Visit{Lock: "L", Client: client, Token: token, Requested: ms(acq - 1), Acquired: ms(acq), ValidUntil: ms(acq - 1 + ttl)}
}

type figures struct {
	Violations, Incidents, LockFaults, ClientFaults, Duplicates, Regressions int
	Overlap                                                                  time.Duration
}

func figuresOf(s Summary) figures {
	return figures{s.Violations, s.Incidents, s.LockFaults, s.ClientFaults, s.DuplicateTokens, s.TokenRegressions, s.OverlapTotal}
}

func TestClassification(t *testing.T) {
	tests := []struct {
		name string
		run  func(f *fake)
		want figures
	}{{
		name: "perfect mutex: nothing",
		run: func(f *fake) {
			for i := 0; i < 50; i++ {
				f.at(10*i).enter("a", lease(i%3, uint64(i+1), 10*i, 100)).at(10*i + 9).exit("a")
			}
		},
	}, {
		// an always-grant lock: three holders inside at once, each granted
		// while the others' promises ran: one incident, the lock's fault.
		name: "always-grant lock is caught as a lock fault",
		run: func(f *fake) {
			f.at(0).enter("a", lease(0, 1, 0, 1000)).at(10).enter("b", lease(1, 2, 10, 1000)).
				at(20).enter("c", lease(2, 3, 20, 1000)).at(30).exit("a").at(40).exit("b").at(50).exit("c")
		},
		want: figures{Violations: 3, Incidents: 1, LockFaults: 1, Overlap: ms(30)},
	}, {
		// a holder paused inside past its promise, overlapped by three
		// short visits of others: one incident (not three), the client's.
		name: "paused holder inside: one client fault",
		run: func(f *fake) {
			f.at(0).enter("a", lease(0, 1, 0, 100))
			for i, t := range []int{200, 300, 400} {
				f.at(t).enter("b", lease(1, uint64(2+i), t, 100)).at(t + 10).exit("b")
			}
			f.at(450).exit("a")
		},
		want: figures{Violations: 3, Incidents: 1, ClientFaults: 1, Overlap: ms(30)},
	}, {
		// a granted at 0, paused between Acquire and Enter; b granted at 150
		// after a's promise (100) ran out, then a enters on its old grant
		// while b is inside: a's fault, though a entered second.
		name: "holder paused between acquire and enter: client fault",
		run: func(f *fake) {
			f.at(150).enter("b", lease(1, 2, 150, 100)).at(160).enter("a", lease(0, 1, 2, 100)).
				at(170).exit("a").at(200).exit("b")
		},
		want: figures{Violations: 1, Incidents: 1, ClientFaults: 1, Overlap: ms(10)},
	}, {
		name: "a renewal extends the promise: overlap within it is the lock's",
		run: func(f *fake) {
			f.at(0).enter("a", lease(0, 1, 0, 100)).at(90)
			if err := f.s.Record(context.Background(), Op{Op: OpRenew, Visit: f.ids["a"], ValidUntil: int64(ms(190))}); err != nil {
				t.Fatal(err)
			}
			f.at(150).enter("b", lease(1, 2, 150, 100)).at(160).exit("a").at(170).exit("b")
		},
		want: figures{Violations: 1, Incidents: 1, LockFaults: 1, Overlap: ms(10)},
	}, {
		name: "no time bound: an overlap within the other's promise is the lock's",
		run: func(f *fake) {
			a := Visit{Lock: "L", Client: 0, Token: 1, Acquired: ms(1), Unbounded: true}
			f.at(0).enter("a", a).at(5000).enter("b", lease(1, 2, 5000, 100)).at(5001).exit("b").at(5002).exit("a")
		},
		want: figures{Violations: 1, Incidents: 1, LockFaults: 1, Overlap: ms(1)},
	}, {
		// docs/verdicts.md's example: B's request went out at 0 and its
		// reply came at 150, its promise ran to 100; the key expired and D
		// was granted at 121; B entered at 150, after its own promise: B's
		// fault, though B's reply came after D's grant.
		name: "grant replied late, holder entered after its promise: client fault",
		run: func(f *fake) {
			b := Visit{Lock: "L", Client: 1, Token: 1, Requested: ms(1), Acquired: ms(150), ValidUntil: ms(100)}
			f.at(121).enter("d", lease(3, 2, 121, 100)).at(150).enter("b", b).at(160).exit("b").at(200).exit("d")
		},
		want: figures{Violations: 1, Incidents: 1, ClientFaults: 1, Overlap: ms(10)},
	}, {
		// the grant windows overlap: if D (granted at 100-105, promise to
		// 130) came first, B was granted at up to 150, after D's promise,
		// and the overlap from 150 is D's staying: not provably the lock's.
		name: "grant order unknown: not the lock's",
		run: func(f *fake) {
			b := Visit{Lock: "L", Client: 1, Token: 1, Requested: ms(1), Acquired: ms(150), ValidUntil: ms(300)}
			d := Visit{Lock: "L", Client: 3, Token: 2, Requested: ms(100), Acquired: ms(105), ValidUntil: ms(130)}
			f.at(105).enter("d", d).at(150).enter("b", b).at(160).exit("b").at(200).exit("d")
		},
		want: figures{Violations: 1, Incidents: 1, ClientFaults: 1, Overlap: ms(10)},
	}, {
		// B's reply came before D's request: B certainly first, D granted
		// within B's promise, both entered within theirs: the lock's.
		name: "grant order certain: the lock's",
		run: func(f *fake) {
			b := Visit{Lock: "L", Client: 1, Token: 1, Requested: ms(1), Acquired: ms(90), ValidUntil: ms(300)}
			d := Visit{Lock: "L", Client: 3, Token: 2, Requested: ms(100), Acquired: ms(121), ValidUntil: ms(300)}
			f.at(121).enter("d", d).at(150).enter("b", b).at(160).exit("b").at(200).exit("d")
		},
		want: figures{Violations: 1, Incidents: 1, LockFaults: 1, Overlap: ms(10)},
	}, {
		// the first holder entered after its promise; the lock had granted
		// the second within it, but the overlap is the late entry's doing.
		name: "earlier holder entered after its promise: client fault",
		run: func(f *fake) {
			f.at(50).enter("b", lease(1, 2, 50, 300)).at(150).enter("a", lease(0, 1, 0, 100)).at(160).exit("a").at(200).exit("b")
		},
		want: figures{Violations: 1, Incidents: 1, ClientFaults: 1, Overlap: ms(10)},
	}, {
		name: "no promise: never the lock's",
		run: func(f *fake) {
			a := Visit{Lock: "L", Client: 0, Token: 1, Requested: ms(0), Acquired: ms(1)}
			f.at(1).enter("a", a).at(10).enter("b", lease(1, 2, 10, 100)).at(20).exit("b").at(30).exit("a")
		},
		want: figures{Violations: 1, Incidents: 1, ClientFaults: 1, Overlap: ms(10)},
	}, {
		// a's promise runs to 99 and b was granted at 70-80. With a's clock
		// known to within 30ms the promise counts only to 69, with 20ms to
		// 79 (a grant at 80 is not covered): not provably the lock's; with
		// 5ms, to 94: the lock's.
		name: "uncertain clock shortens the promise",
		run: func(f *fake) {
			for i, u := range []int{30, 20, 5} {
				a := lease(0, uint64(2*i+1), 1000*i, 100)
				a.Uncertainty = ms(u)
				b := Visit{Lock: "L", Client: 1, Token: uint64(2*i + 2), Requested: ms(1000*i + 70), Acquired: ms(1000*i + 80), ValidUntil: ms(1000*i + 200)}
				f.at(1000*i).enter("a", a).at(1000*i+80).enter("b", b).at(1000*i + 90).exit("a").at(1000*i + 95).exit("b")
			}
		},
		want: figures{Violations: 3, Incidents: 3, LockFaults: 1, ClientFaults: 2, Overlap: ms(30)},
	}, {
		// a's promise ran out at 99; b was granted at 150; a reports a
		// renewal only at 160: it covers a from 160, not b's grant.
		name: "a renewal reported after the other's grant does not cover it",
		run: func(f *fake) {
			f.at(0).enter("a", lease(0, 1, 0, 100)).at(150).enter("b", lease(1, 2, 150, 100)).at(160)
			if err := f.s.Record(context.Background(), Op{Op: OpRenew, Visit: f.ids["a"], ValidUntil: int64(ms(300))}); err != nil {
				t.Fatal(err)
			}
			f.at(170).exit("a").at(180).exit("b")
		},
		want: figures{Violations: 1, Incidents: 1, ClientFaults: 1, Overlap: ms(20)},
	}, {
		// a failover lost the INCR counter: the next holders get 3 again
		// (duplicate) and then 2 (regression), serially, with no overlap.
		name: "duplicate and regressing tokens without any overlap",
		run: func(f *fake) {
			f.at(0).enter("a", lease(0, 3, 0, 100)).at(10).exit("a").
				at(20).enter("b", lease(1, 3, 20, 100)).at(30).exit("b").
				at(40).enter("c", lease(2, 2, 40, 100)).at(50).exit("c")
		},
		want: figures{Duplicates: 1, Regressions: 2},
	}, {
		name: "separate incidents on one lock count apart",
		run: func(f *fake) {
			f.at(0).enter("a", lease(0, 1, 0, 100)).at(1).enter("b", lease(1, 2, 1, 100)).at(2).exit("a").at(3).exit("b").
				at(10).enter("a", lease(0, 3, 10, 100)).at(11).enter("b", lease(1, 4, 11, 100)).at(12).exit("a").at(13).exit("b")
		},
		want: figures{Violations: 2, Incidents: 2, LockFaults: 2, Overlap: ms(2)},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, FencingObserve)
			tt.run(f)
			if got := figuresOf(f.s.Summary()); got != tt.want {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// TestRandomAgainstBruteForce compares the resource's online figures with
// a brute-force computation over the intervals of >= 10,000 generated
// histories (late replies, renewals, no-promise and unbounded locks,
// clients whose clocks are known only to within an uncertainty), and
// checks that replaying the history reproduces them.
func TestRandomAgainstBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(42, 7))
	n := 10000
	if testing.Short() {
		n = 1000
	}
	for h := 0; h < n; h++ {
		vs := genHistory(rng)
		got, lines := drive(t, vs)
		want := brute(vs)
		if got != want {
			t.Fatalf("history %d (%d visits): checker %+v, brute force %+v\n%+v", h, len(vs), got, want, vs)
		}
		sums, err := Replay(bytes.NewReader(lines), FencingObserve)
		if err != nil {
			t.Fatal(err)
		}
		if r := figuresOf(sums[0]); len(vs) > 0 && r != got {
			t.Fatalf("history %d: replay %+v, live %+v", h, r, got)
		}
		// porcupine's second opinion: no strictly increasing order of the
		// tokens consistent with real time exactly when the checker counts
		// a duplicate or a regression.
		orders, err := CheckTokenOrder(bytes.NewReader(lines), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		wantViolation := got.Duplicates+got.Regressions > 0
		if v := orders[0].Verdict; (v == TokenOrderViolation) != wantViolation || v == TokenOrderUnknown {
			t.Fatalf("history %d: porcupine says %q, checker %d duplicates %d regressions\n%+v", h, v, got.Duplicates, got.Regressions, vs)
		}
	}
}

// drive feeds generated visits to a resource in time order (enter, the
// renewal if any, exit) and returns its figures and its history.
func drive(t *testing.T, vs []genVisit) (figures, []byte) {
	t.Helper()
	f := newFake(t, FencingObserve)
	var buf bytes.Buffer
	hist := NewHistory(&buf, 0)
	f.s.SetHistory(hist)
	type ev struct {
		t    time.Duration
		kind int // 0 enter, 1 renew, 2 exit
		i    int
	}
	var evs []ev
	for i, v := range vs {
		evs = append(evs, ev{v.enter, 0, i}, ev{v.exit, 2, i})
		if v.renewAt != 0 {
			evs = append(evs, ev{v.renewAt, 1, i})
		}
	}
	// times are distinct by construction
	sort.Slice(evs, func(a, b int) bool { return evs[a].t < evs[b].t })
	ctx := context.Background()
	ids := make([]uint64, len(vs))
	for _, e := range evs {
		f.now = e.t
		var err error
		switch e.kind {
		case 0:
			ids[e.i], err = f.s.Enter(ctx, vs[e.i].Visit)
		case 1:
			err = f.s.Record(ctx, Op{Op: OpRenew, Client: vs[e.i].Client, Lock: vs[e.i].Lock, Visit: ids[e.i],
				Invoke: int64(e.t), Return: int64(e.t), ValidUntil: int64(vs[e.i].renewTo), Outcome: "ok"})
		case 2:
			err = f.s.Exit(ctx, ids[e.i])
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	got := figuresOf(f.s.Summary())
	if err := hist.Flush(); err != nil {
		t.Fatal(err)
	}
	return got, buf.Bytes()
}

type genVisit struct {
	Visit
	enter, exit time.Duration
	// renewAt, when not 0, is when the client reports a renewal moving
	// its promise to renewTo.
	renewAt, renewTo time.Duration
}

// genHistory makes up to 12 visits on up to 2 locks with distinct times
// of entry, renewal and exit; grants that may reply long after their
// request (up to 30 instants), promises of every kind (none, unbounded,
// some expired before entry, some renewed, some renewed too late), clock
// uncertainties of 0 to 3, and small random tokens (so duplicates and
// regressions happen).
func genHistory(rng *rand.Rand) []genVisit {
	n := rng.IntN(12)
	times := rng.Perm(4 * (n + 1))
	out := make([]genVisit, n)
	for i := range out {
		ts := []int{times[3*i] + 1, times[3*i+1] + 1, times[3*i+2] + 1}
		sort.Ints(ts)
		enter, exit := time.Duration(ts[0]), time.Duration(ts[2])
		if rng.IntN(2) == 0 {
			exit = time.Duration(ts[1]) // no renewal: a shorter visit
		}
		acq := max(enter-time.Duration(rng.IntN(5)), 1)
		req := max(acq-time.Duration(rng.IntN(5)), 0) // 0 is a time like any other
		if rng.IntN(4) == 0 {
			req = max(acq-time.Duration(rng.IntN(30)), 0) // a late reply
		}
		v := Visit{
			Lock: []string{"L", "M"}[rng.IntN(2)], Client: i, Token: uint64(rng.IntN(6)), // a client acquires one lock at a time
			Requested: req, Acquired: acq, Uncertainty: time.Duration([]int{0, 0, 0, 1, 3}[rng.IntN(5)]),
		}
		switch rng.IntN(8) {
		case 0:
			v.Unbounded = true
		case 1: // no promise
		default:
			v.ValidUntil = req + time.Duration(rng.IntN(30)+1)
		}
		g := genVisit{Visit: v, enter: enter, exit: exit}
		if exit == time.Duration(ts[2]) && rng.IntN(3) > 0 {
			g.renewAt, g.renewTo = time.Duration(ts[1]), time.Duration(ts[1]+rng.IntN(30)-5)
		}
		out[i] = g
	}
	return out
}

// heldAt says, by definition, whether v's promise certainly ran at
// instant t (harness clock): always when unbounded; else before its end
// or within a renewal (from its report on), every bound of a client whose
// clock is uncertain moved inwards by the uncertainty.
func heldAt(v genVisit, t time.Duration) bool {
	u := v.Uncertainty
	switch {
	case v.Unbounded:
		return true
	case v.ValidUntil != 0 && t < v.ValidUntil-u:
		return true
	case v.renewAt != 0 && v.renewAt+u <= t && t < v.renewTo-u:
		return true
	}
	return false
}

// oracleFault classifies an overlapping pair by brute force over every
// pair of grant instants the history allows (each grant anywhere in
// [request, reply] widened by the client's uncertainty): a visit that
// entered after its own promise ran out is its client's fault; else the
// pair is the lock's only when, in every ordering, the later grant fell
// while the earlier holder's promise ran (a tie: either's).
func oracleFault(a, b genVisit) string {
	if !heldAt(a, a.enter) || !heldAt(b, b.enter) {
		return FaultClient
	}
	for ga := a.Requested - a.Uncertainty; ga <= a.Acquired+a.Uncertainty; ga++ {
		for gb := b.Requested - b.Uncertainty; gb <= b.Acquired+b.Uncertainty; gb++ {
			var lock bool
			switch {
			case ga < gb:
				lock = heldAt(a, gb)
			case gb < ga:
				lock = heldAt(b, ga)
			default:
				lock = heldAt(a, ga) || heldAt(b, ga)
			}
			if !lock {
				return FaultClient // an ordering that does not blame the lock
			}
		}
	}
	return FaultLock
}

// TestPairFaultAgainstEnumeration: the rule as the checker computes it
// (interval coverage) answers as the enumeration of every ordering, for
// 100,000 generated pairs.
func TestPairFaultAgainstEnumeration(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 11))
	counts := map[string]int{}
	for i := 0; i < 100000; i++ {
		vs := genHistory(rng)
		if len(vs) < 2 {
			continue
		}
		a, b := vs[0], vs[1]
		want := oracleFault(a, b)
		got := pairFault(promiseOf(a), promiseOf(b))
		if got != want {
			t.Fatalf("pair %d: checker %s, enumeration %s\na %+v\nb %+v", i, got, want, a, b)
		}
		counts[want]++
	}
	// both verdicts must be exercised, or the comparison proves nothing
	if counts[FaultLock] < 1000 || counts[FaultClient] < 1000 {
		t.Fatalf("generated verdicts %v: too few of one kind", counts)
	}
}

// promiseOf is what Enter and Record make of a generated visit.
func promiseOf(v genVisit) promise {
	p := promise{requested: v.Requested, acquired: v.Acquired, entered: v.enter, validUntil: v.ValidUntil,
		unbounded: v.Unbounded, uncertainty: v.Uncertainty}
	if v.renewAt != 0 {
		p.renewals = []renewal{{known: v.renewAt, until: v.renewTo}}
	}
	return p
}

// brute computes the figures of intervals by definition: O(n²) pairs,
// components by union-find, each pair classified by oracleFault, union
// length by scanning every instant.
func brute(vs []genVisit) figures {
	var f figures
	parent := make([]int, len(vs))
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		if parent[i] != i {
			parent[i] = find(parent[i])
		}
		return parent[i]
	}
	overlaps := func(a, b genVisit) bool {
		return a.Lock == b.Lock && a.enter < b.exit && b.enter < a.exit
	}
	lockPair := map[[2]int]bool{}
	for i := range vs {
		for j := i + 1; j < len(vs); j++ {
			if !overlaps(vs[i], vs[j]) {
				continue
			}
			f.Violations++
			parent[find(i)] = find(j)
			if oracleFault(vs[i], vs[j]) == FaultLock {
				lockPair[[2]int{i, j}] = true
			}
		}
	}
	comps := map[int]bool{} // root -> has a lock-fault pair
	for i := range vs {
		for j := i + 1; j < len(vs); j++ {
			if overlaps(vs[i], vs[j]) {
				comps[find(i)] = comps[find(i)] || lockPair[[2]int{i, j}]
			}
		}
	}
	for _, lock := range comps {
		f.Incidents++
		if lock {
			f.LockFaults++
		} else {
			f.ClientFaults++
		}
	}
	for _, lock := range []string{"L", "M"} {
		for t := time.Duration(0); t < 200; t++ {
			in := 0
			for _, v := range vs {
				if v.Lock == lock && v.enter <= t && t < v.exit {
					in++
				}
			}
			if in >= 2 {
				f.Overlap++
			}
		}
	}
	seen := map[string]map[uint64]bool{}
	for i, v := range vs {
		if v.Token == 0 {
			continue
		}
		if seen[v.Lock] == nil {
			seen[v.Lock] = map[uint64]bool{}
		}
		// duplicates count in order of entry, as the resource sees them
		_ = i
		seen[v.Lock][v.Token] = true
	}
	byLock := map[string][]genVisit{}
	for _, v := range vs {
		if v.Token != 0 {
			byLock[v.Lock] = append(byLock[v.Lock], v)
		}
	}
	for _, g := range byLock {
		f.Duplicates += len(g) - len(distinct(g))
		for _, b := range g {
			for _, a := range g {
				if a.Acquired < b.Requested && a.Token >= b.Token {
					f.Regressions++
					break
				}
			}
		}
	}
	return f
}

func distinct(g []genVisit) map[uint64]bool {
	m := map[uint64]bool{}
	for _, v := range g {
		m[v.Token] = true
	}
	return m
}

// TestTokenOrderVisualization: a regression found by porcupine comes with
// its HTML visualisation.
func TestTokenOrderVisualization(t *testing.T) {
	f := newFake(t, FencingObserve)
	var buf bytes.Buffer
	h := NewHistory(&buf, 3)
	f.s.SetHistory(h)
	f.at(0).enter("a", lease(0, 3, 1, 100)).at(10).exit("a").at(20).enter("b", lease(1, 2, 20, 100)).at(30).exit("b")
	if err := h.Flush(); err != nil {
		t.Fatal(err)
	}
	orders, err := CheckTokenOrder(&buf, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	o := orders[3]
	if o.Verdict != TokenOrderViolation || o.Visualize == nil {
		t.Fatalf("verdict %q", o.Verdict)
	}
	var html bytes.Buffer
	if err := o.Visualize(&html); err != nil || !bytes.Contains(html.Bytes(), []byte("<html")) {
		t.Fatalf("visualisation: %v, %d bytes", err, html.Len())
	}
}

// TestOpJSON: the hand-written encoding of a history line is what
// encoding/json writes.
func TestOpJSON(t *testing.T) {
	for _, op := range []Op{
		{Run: 1, Seq: 2, Client: 3, Lock: "lock-0", Op: OpAcquire, Visit: 7, Invoke: -5, Return: 9, Token: 4, ValidUntil: 100, Estimated: true, Outcome: "ok"},
		{Lock: "a\"b<é>\n", Op: OpWrite, Value: -3, Unbounded: true, Outcome: "stale_rejected"},
		{},
		everyField(),
	} {
		want, err := json.Marshal(op)
		if err != nil {
			t.Fatal(err)
		}
		if got := op.appendJSON(nil); string(got) != string(want)+"\n" {
			t.Errorf("appendJSON\n got %s\nwant %s", got, want)
		}
	}
}

// everyField returns an Op with every field set, so that a field added to
// Op and forgotten by appendJSON fails TestOpJSON.
func everyField() Op {
	var op Op
	v := reflect.ValueOf(&op).Elem()
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.Int, reflect.Int64:
			f.SetInt(int64(i + 1))
		case reflect.Uint64:
			f.SetUint(uint64(i + 1))
		case reflect.String:
			f.SetString("s" + strconv.Itoa(i))
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Slice:
			f.Set(reflect.ValueOf([]int64{int64(i), 2}))
		case reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
		default:
			panic("everyField: set field " + v.Type().Field(i).Name)
		}
	}
	return op
}

// recheckFigures is what package recheck, the independent implementation,
// makes of one generated history.
func recheckFigures(t *testing.T, lines []byte) (figures, bool) {
	t.Helper()
	rs, err := recheck.Check(bytes.NewReader(lines), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	r, ok := rs[0]
	return figures{r.Violations, r.Incidents, r.LockFaults, r.ClientFaults, r.DuplicateTokens, r.TokenRegressions, r.OverlapTotal}, ok
}

// TestRecheckAgrees: the live checker and the independent re-check give
// the same figures on 3,000 generated histories.
func TestRecheckAgrees(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 8))
	for h := 0; h < 3000; h++ {
		vs := genHistory(rng)
		got, lines := drive(t, vs)
		re, ok := recheckFigures(t, lines)
		if ok && re != got {
			t.Fatalf("history %d: checker %+v, recheck %+v\n%s", h, got, re, lines)
		}
	}
}

// TestRecheckCatchesMutations breaks the live checker on purpose, one way
// at a time (faultInjection, zero in production), and shows that the
// independent re-check then disagrees with it on some generated history:
// bench check would report it. The mutations are the inverted rule, the
// rule without its overlap check (the later grant within the earlier
// promise), an overlap dropped (a visit entering while others are inside
// starts no incident) and duplicate tokens accepted.
func TestRecheckCatchesMutations(t *testing.T) {
	for _, m := range []struct {
		name string
		set  func(on bool)
	}{
		{"inverted rule", func(on bool) { faultInjection.invertRule = on }},
		{"no overlap check", func(on bool) { faultInjection.noOverlapCheck = on }},
		{"dropped overlap", func(on bool) { faultInjection.dropOverlap = on }},
		{"accepted duplicate token", func(on bool) { faultInjection.acceptDuplicates = on }},
	} {
		t.Run(m.name, func(t *testing.T) {
			m.set(true)
			defer m.set(false)
			rng := rand.New(rand.NewPCG(5, 8))
			for h := 0; h < 3000; h++ {
				got, lines := drive(t, genHistory(rng))
				if re, ok := recheckFigures(t, lines); ok && re != got {
					return // caught
				}
			}
			t.Fatal("the re-check agreed with the broken checker on 3,000 histories")
		})
	}
}
