package explore

import (
	"context"
	"sync"
	"time"
)

// Pacing: drawing and shrinking share --parallel run slots, shrinking
// first, and a schedule is drawn only while the budget left can shrink
// every finding waiting or under way plus one per draw under way and one
// for the new draw, and still end the longest shrinking seen
// (Pace.MayDraw). The costs are measured as the exploration goes; before
// the first shrinking ends they start from these priors.
const (
	// priorShrinkRuns is the runs a shrinking is taken to cost before one
	// has been measured; it weighs as one measured shrinking.
	priorShrinkRuns = 20
	// priorRunS is the seconds a run is taken to last before one ended.
	priorRunS = 10
)

// Pace is what the decision to draw reads.
type Pace struct {
	Parallel int
	// Remaining is the budget's seconds left; Budget false: no budget.
	Budget    bool
	Remaining float64
	// RunS is a run's mean seconds; ShrinkRuns a shrinking's mean runs;
	// ShrinkS a shrinking's mean seconds from start to end (its steps run
	// one after another, so the last one needs that much time left).
	RunS       float64
	ShrinkRuns float64
	ShrinkS    float64
	// LongestShrinkS is the longest shrinking that ended, in seconds.
	LongestShrinkS float64
	// Found counts the findings; Backlog those waiting to be shrunk (not
	// subsumed), Shrinking those under way; Drawing the drawn runs under
	// way.
	Found, Backlog, Shrinking, Drawing int
}

// Need is the run-seconds the budget must still hold before one more
// schedule is drawn: a shrinking for each finding waiting and each under
// way (it may be at its first step), one for each draw under way and for
// the new draw (each may find something new), and the new run itself.
// (Counting one under way as half left 2 of 35 findings stopped
// mid-shrinking in a 30-minute exploration.)
func (p Pace) Need() float64 {
	findings := float64(p.Backlog) + float64(p.Shrinking) + float64(p.Drawing) + 1
	return findings*p.ShrinkRuns*p.RunS + p.RunS
}

// Capacity is the run-seconds the budget left holds: every slot busy
// until the longest shrinking's length before the end (the last one to
// start must still end).
func (p Pace) Capacity() float64 {
	return float64(p.Parallel) * (p.Remaining - max(p.ShrinkS, p.LongestShrinkS))
}

// MayDraw reports whether one more schedule may be drawn: always without
// a budget (every finding is shrunk after the last run), else while the
// budget left holds Need; and, while nothing was found, as long as a run
// fits in the budget (a budget too short to shrink anything still
// explores; what it finds is reported not shrunk).
func (p Pace) MayDraw() bool {
	return !p.Budget || p.Need() <= p.Capacity() || p.Found == 0 && p.Remaining > p.RunS
}

// pace measures the exploration's pace. x.mu must be held.
func (x *explorer) pace() Pace {
	p := Pace{Parallel: x.o.Parallel, Found: len(x.e.Findings), Drawing: x.drawing, RunS: priorRunS}
	if b := x.e.Plan.Budget; b > 0 {
		p.Budget, p.Remaining = true, b.Seconds()-x.elapsed()
	}
	if x.runCount > 0 {
		p.RunS = x.runSum / float64(x.runCount)
	}
	runs, secs, n := float64(priorShrinkRuns), float64(priorShrinkRuns)*p.RunS/float64(min(p.Parallel, Need)), 1.0
	for _, f := range x.e.Findings {
		switch {
		case f.Shrink == "":
			p.Backlog++
		case f.Shrink == "running":
			p.Shrinking++
		case f.ShrinkRuns > 0 && f.Shrink != "stopped":
			runs, secs, n = runs+float64(f.ShrinkRuns), secs+f.ShrinkS, n+1
			p.LongestShrinkS = max(p.LongestShrinkS, f.ShrinkS)
		}
	}
	p.ShrinkRuns, p.ShrinkS = runs/n, secs/n
	return p
}

// slots bounds the runs at once to --parallel and serves shrinking
// first: a drawn run takes a slot only while no shrinking run waits.
type slots struct {
	mu      sync.Mutex
	cond    *sync.Cond
	free    int
	waiting int // shrinking runs waiting for a slot
}

func newSlots(n int) *slots {
	s := &slots{free: n}
	s.cond = sync.NewCond(&s.mu)
	return s
}

// acquire takes a slot for a shrinking run (shrink) or a drawn one; it
// returns false when ctx ends first. A nil slots bounds nothing.
func (s *slots) acquire(ctx context.Context, shrink bool) bool {
	if s == nil {
		return ctx.Err() == nil
	}
	stop := context.AfterFunc(ctx, func() {
		s.mu.Lock()
		s.cond.Broadcast()
		s.mu.Unlock()
	})
	defer stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	if shrink {
		s.waiting++
	}
	for ctx.Err() == nil && (s.free == 0 || !shrink && s.waiting > 0) {
		s.cond.Wait()
	}
	if shrink {
		s.waiting--
	}
	if ctx.Err() != nil {
		s.cond.Broadcast()
		return false
	}
	s.free--
	if shrink && s.waiting == 0 && s.free > 0 {
		s.cond.Broadcast() // draws waited for this one
	}
	return true
}

// release gives a slot back.
func (s *slots) release() {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.free++
	s.cond.Broadcast()
	s.mu.Unlock()
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
