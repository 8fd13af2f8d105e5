package explore

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/locklab/locklab/faults"
)

// TestPaceMayDraw: with a budget, a schedule is drawn only while the
// budget left can shrink every finding waiting, one per draw under way
// and one for the new draw; never drawn when the backlog outgrows it,
// drawn again once it is shrunk; without a budget always; with nothing
// found, while a run fits.
func TestPaceMayDraw(t *testing.T) {
	// A shrinking costs 20 runs of 10 s (200 run-seconds) and 60 s from
	// start to end; 3 runs at once.
	p := Pace{Parallel: 3, Budget: true, Remaining: 1000, RunS: 10, ShrinkRuns: 20, ShrinkS: 60, Found: 5}
	if got, want := p.Capacity(), 3*(1000-60.0); got != want {
		t.Errorf("capacity %v, want %v", got, want)
	}
	if !p.MayDraw() {
		t.Errorf("no backlog, 1000 s left: may not draw (need %v, capacity %v)", p.Need(), p.Capacity())
	}
	p.Backlog = 12 // 12+1 shrinkings: 2600+10 run-seconds > 2820 - nothing else
	if !p.MayDraw() {
		t.Errorf("12 waiting: need %v <= capacity %v, may not draw", p.Need(), p.Capacity())
	}
	p.Drawing = 2 // 15 shrinkings reserved: 3010 > 2820
	if p.MayDraw() {
		t.Errorf("12 waiting and 2 draws under way: need %v > capacity %v, may draw", p.Need(), p.Capacity())
	}
	p.Backlog, p.Drawing = 0, 0
	p.Remaining = 60 + 210.0/3 - 1 // one run-second short of one shrinking and its run
	if p.MayDraw() {
		t.Errorf("%v s left: need %v > capacity %v, may draw", p.Remaining, p.Need(), p.Capacity())
	}
	p.Remaining += 2
	if !p.MayDraw() {
		t.Errorf("%v s left: need %v <= capacity %v, may not draw", p.Remaining, p.Need(), p.Capacity())
	}
	p.Found, p.Remaining = 0, 30
	if !p.MayDraw() {
		t.Error("nothing found, 30 s left (a run lasts 10): may not draw")
	}
	p.Remaining = 5
	if p.MayDraw() {
		t.Error("nothing found, 5 s left (a run lasts 10): may draw")
	}
	if q := (Pace{Parallel: 1, Backlog: 1000, RunS: 10, ShrinkRuns: 20}); !q.MayDraw() {
		t.Error("no budget: may not draw")
	}
	// A shrinking under way may be at its first step: it counts whole; the
	// longest shrinking seen must still fit before the end.
	q := Pace{Parallel: 2, Remaining: 500, RunS: 10, ShrinkRuns: 20, ShrinkS: 60, LongestShrinkS: 150, Shrinking: 2}
	if got, want := q.Need(), 3*200+10.0; got != want {
		t.Errorf("2 shrinkings under way: need %v, want %v", got, want)
	}
	if got, want := q.Capacity(), 2*(500-150.0); got != want {
		t.Errorf("longest shrinking 150 s: capacity %v, want %v", got, want)
	}
}

// TestPaceMeasured: the pace reads the explorer: the runs' mean length,
// a shrinking's mean runs and seconds over those that ended (the prior
// weighing as one), the backlog (not shrinks stopped, subsumed or
// running), the shrinkings and draws under way.
func TestPaceMeasured(t *testing.T) {
	x := &explorer{e: &Explore{Plan: Plan{Budget: time.Hour}, Findings: []*Finding{
		{Shrink: "done", ShrinkRuns: 30, ShrinkS: 100},
		{Shrink: "subsumed", ShrinkRuns: 4, ShrinkS: 20}, // joined a root cause by its steps
		{Shrink: "subsumed"},                             // no run: not a shrinking
		{Shrink: "stopped", ShrinkRuns: 7, ShrinkS: 50},  // cut short: not a measure
		{Shrink: "running"},
		{}, {},
	}}, o: Options{Parallel: 3}, start: time.Now(), drawing: 2, runSum: 80, runCount: 10}
	x.mu.Lock()
	p := x.pace()
	x.mu.Unlock()
	if p.RunS != 8 {
		t.Errorf("RunS %v, want 8", p.RunS)
	}
	if p.LongestShrinkS != 100 {
		t.Errorf("LongestShrinkS %v, want 100 (the stopped one is no measure)", p.LongestShrinkS)
	}
	if want := (priorShrinkRuns + 30 + 4) / 3.0; p.ShrinkRuns != want {
		t.Errorf("ShrinkRuns %v, want %v", p.ShrinkRuns, want)
	}
	if want := (priorShrinkRuns*8/3.0 + 100 + 20) / 3; p.ShrinkS != want {
		t.Errorf("ShrinkS %v, want %v", p.ShrinkS, want)
	}
	if p.Backlog != 2 || p.Shrinking != 1 || p.Drawing != 2 || p.Found != 7 {
		t.Errorf("backlog %d, shrinking %d, drawing %d, found %d; want 2, 1, 2, 7", p.Backlog, p.Shrinking, p.Drawing, p.Found)
	}
	if !p.Budget || p.Remaining > 3600 || p.Remaining < 3590 {
		t.Errorf("budget %v, remaining %v; want about 3600 s", p.Budget, p.Remaining)
	}
}

// TestSlotsShrinkFirst: with every slot taken, a shrinking run waiting
// gets the next free slot before a drawn run that waited longer; the
// drawn run gets one once no shrinking run waits.
func TestSlotsShrinkFirst(t *testing.T) {
	ctx := context.Background()
	s := newSlots(1)
	if !s.acquire(ctx, false) {
		t.Fatal("first slot refused")
	}
	got := make(chan string, 2)
	go func() { s.acquire(ctx, false); got <- "draw" }()
	time.Sleep(50 * time.Millisecond)
	go func() { s.acquire(ctx, true); got <- "shrink" }()
	time.Sleep(50 * time.Millisecond)
	s.release()
	if first := <-got; first != "shrink" {
		t.Fatalf("%s took the slot first, want shrink", first)
	}
	select {
	case who := <-got:
		t.Fatalf("%s took a slot none released", who)
	case <-time.After(50 * time.Millisecond):
	}
	s.release()
	if second := <-got; second != "draw" {
		t.Fatalf("second %s, want draw", second)
	}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan bool)
	go func() { done <- s.acquire(cctx, false) }()
	cancel()
	if <-done {
		t.Error("acquire with every slot taken returned true after cancel")
	}
}

// TestReductions: before dropping faults one at a time, shrinking tries
// the faults of the types of a root cause of the same lock and breakage
// already shrunk, then each fault alone, those of a type a shrunk root
// cause of the lock needs first; nothing with fewer than 3 faults.
func TestReductions(t *testing.T) {
	x := &explorer{e: &Explore{Findings: []*Finding{
		{Lock: "redis-cad", Broke: LockFault, Shrink: "done", MinimalTypes: []string{faults.Restart}},
		{Lock: "redis-cad", Broke: ClientFault, Shrink: "done", MinimalTypes: []string{faults.PauseClient}},
		{Lock: "redlock", Broke: LockFault, Shrink: "done", MinimalTypes: []string{faults.Latency}},
		{Lock: "redis-cad", Broke: LockFault, Shrink: "stopped", MinimalTypes: []string{faults.Latency}},
	}}}
	f := &Finding{Lock: "redis-cad", Broke: LockFault}
	cur := Schedule{Faults: []faults.Fault{{Type: faults.Latency}, {Type: faults.Restart}, {Type: faults.PauseClient}, {Type: faults.Restart}}}
	got := x.reductions(f, cur)
	want := [][]int{{1, 3}, {1}, {2}, {3}, {0}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("reductions %v, want %v", got, want)
	}
	cur.Faults = cur.Faults[:2]
	if got := x.reductions(f, cur); got != nil {
		t.Errorf("2 faults: reductions %v, want none", got)
	}
}
