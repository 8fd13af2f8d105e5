package checker

import (
	"fmt"
	"io"
)

// lineCheck validates history lines in file order against the rules of
// docs/history-format.md ("A valid history"): every way a line can
// contradict the lines before it is an error, so the replay never reads a
// figure out of a history the resource could not have written.
type lineCheck struct {
	runs map[int]*runCheck
}

// runCheck is what the rules need to remember of one run.
type runCheck struct {
	seq     uint64
	now     int64         // the latest resource instant (enter, read, write, exit)
	granted map[int]int64 // per client: return of its latest acquire line
	visits  map[uint64]*visitCheck
	pending *visitCheck // the acquire whose enter must be the next line
}

// visitCheck is one visit as its lines so far describe it.
type visitCheck struct {
	id            uint64
	client        int
	lock          string
	line          int // its acquire line
	entered, left bool
	enter         int64
	shared        bool
}

// check validates line n (from 1) of the history.
func (c *lineCheck) check(n int, op Op) error {
	if c.runs == nil {
		c.runs = map[int]*runCheck{}
	}
	r := c.runs[op.Run]
	if r == nil {
		r = &runCheck{granted: map[int]int64{}, visits: map[uint64]*visitCheck{}}
		c.runs[op.Run] = r
	}
	if err := r.check(n, op); err != nil {
		return fmt.Errorf("history line %d: %w", n, err)
	}
	return nil
}

func (r *runCheck) check(n int, op Op) error {
	if op.Seq <= r.seq {
		return fmt.Errorf("seq %d after seq %d of run %d: seq must increase along the lines", op.Seq, r.seq, op.Run)
	}
	r.seq = op.Seq
	if op.Invoke > op.Return {
		return fmt.Errorf("%s returned (%d ns) before it was invoked (%d ns)", op.Op, op.Return, op.Invoke)
	}
	if p := r.pending; p != nil && (op.Op != OpEnter || op.Visit != p.id) {
		return fmt.Errorf("%s line after the acquire of visit %d (line %d), whose enter must come next", op.Op, p.id, p.line)
	}
	switch op.Op {
	case OpAcquire:
		return r.acquire(n, op)
	case OpAttempt:
		if op.Visit != 0 {
			return fmt.Errorf("attempt names visit %d: an attempt granted nothing", op.Visit)
		}
		return r.request(op)
	case OpEnter, OpRead, OpWrite, OpExit:
		return r.resource(op)
	case OpFault:
		if op.Visit != 0 || op.Fault == nil {
			return fmt.Errorf("fault line without its fault, or naming visit %d", op.Visit)
		}
		return nil
	case OpRenew, OpRelease, OpLost:
		if op.Visit == 0 {
			return nil
		}
		v := r.visits[op.Visit]
		if v == nil || !v.entered {
			return fmt.Errorf("%s of visit %d, which never entered", op.Op, op.Visit)
		}
		if v.client != op.Client {
			return fmt.Errorf("%s of visit %d by client %d: the visit is client %d's", op.Op, op.Visit, op.Client, v.client)
		}
		return nil
	}
	return fmt.Errorf("unknown op %q", op.Op)
}

// request checks that a client's acquiring request was sent after its
// previous grant returned: a client acquires one lock at a time, and
// both times are on its own clock.
func (r *runCheck) request(op Op) error {
	if g, ok := r.granted[op.Client]; ok && op.Invoke < g {
		return fmt.Errorf("time moved backward for client %d: %s sent at %d ns, before its previous grant returned at %d ns",
			op.Client, op.Op, op.Invoke, g)
	}
	return nil
}

func (r *runCheck) acquire(n int, op Op) error {
	if op.Visit == 0 {
		return fmt.Errorf("acquire without a visit")
	}
	if r.visits[op.Visit] != nil {
		return fmt.Errorf("acquire of visit %d, which an earlier line already named", op.Visit)
	}
	if err := r.request(op); err != nil {
		return err
	}
	switch op.Kind {
	case "", KindMutex, KindRW, KindSemaphore, KindFair:
	default:
		return fmt.Errorf("kind %q (allowed mutex, rw, semaphore, fair)", op.Kind)
	}
	if op.Mode != "" && (op.Mode != ModeShared || op.Kind != KindRW) {
		return fmt.Errorf("mode %q on a lock of kind %q: only a read-write lock (kind rw) has a shared side", op.Mode, op.Kind)
	}
	r.granted[op.Client] = op.Return
	v := &visitCheck{id: op.Visit, client: op.Client, lock: op.Lock, line: n, shared: op.Mode == ModeShared}
	r.visits[op.Visit], r.pending = v, v
	return nil
}

// resource checks a line the resource wrote itself: at one instant, no
// earlier than the run's previous such line, of the visit inside.
func (r *runCheck) resource(op Op) error {
	if op.Invoke != op.Return {
		return fmt.Errorf("%s is an instant of the resource, but invoke_ns %d differs from return_ns %d", op.Op, op.Invoke, op.Return)
	}
	v := r.visits[op.Visit]
	switch {
	case op.Op == OpEnter && (v == nil || v.entered):
		return fmt.Errorf("enter of visit %d without its acquire line", op.Visit)
	case op.Op != OpEnter && (v == nil || !v.entered):
		return fmt.Errorf("%s of visit %d, which has not entered", op.Op, op.Visit)
	case op.Op != OpEnter && v.left:
		return fmt.Errorf("%s of visit %d, which has already exited", op.Op, op.Visit)
	case v.client != op.Client || v.lock != op.Lock:
		return fmt.Errorf("%s of visit %d by client %d on %q: the visit is client %d's on %q", op.Op, op.Visit, op.Client, op.Lock, v.client, v.lock)
	case op.Op != OpEnter && op.Return < v.enter:
		return fmt.Errorf("%s of visit %d at %d ns, before its enter at %d ns", op.Op, op.Visit, op.Return, v.enter)
	case op.Return < r.now:
		return fmt.Errorf("time moved backward: %s at %d ns, after a line of the resource at %d ns", op.Op, op.Return, r.now)
	case op.Op == OpWrite && v.shared:
		return fmt.Errorf("write of visit %d, a shared visit: readers write nothing", op.Visit)
	case op.Op == OpWrite && op.Outcome != "ok" && op.Outcome != "stale_rejected":
		return fmt.Errorf("write outcome %q (want ok or stale_rejected)", op.Outcome)
	}
	r.now = op.Return
	switch op.Op {
	case OpEnter:
		v.entered, v.enter, r.pending = true, op.Return, nil
	case OpExit:
		v.left = true
	}
	return nil
}

// ValidateHistory reads a whole history and returns the first line that
// breaks a rule of docs/history-format.md, as an error naming its number.
func ValidateHistory(r io.Reader) error {
	return readHistory(r, func(int, Op) error { return nil })
}
