package checker

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"time"
)

// Operations of a history line (Op.Op).
const (
	OpAcquire = "acquire" // a grant as it reached the resource: invoke = request sent, return = granted
	OpEnter   = "enter"
	OpRead    = "read"
	OpWrite   = "write"
	OpExit    = "exit"
	OpRelease = "release"
	OpRenew   = "renew" // the holder's promise moved to ValidUntil
	OpLost    = "lost"  // the holder learnt it no longer holds the lock
	// OpFault is a fault as it happened (written after the run's last
	// visit): invoke = its start, return = its end, client = the holder it
	// was aimed at or named (-1: none); Fault says the rest.
	OpFault = "fault"
	// OpAttempt is an acquire that granted nothing: invoke = request sent,
	// return = when the client stopped waiting; Outcome says why
	// (AttemptRefused, AttemptTimedOut, AttemptWaiting, AttemptFailed).
	OpAttempt = "attempt"
)

// Op is one line of history.jsonl: one client operation. Times are on the
// harness clock in nanoseconds. Operations the resource performs (enter,
// read, write, exit) happen at one instant of its clock: invoke = return.
// Lines are written in the resource's order (Seq), which is the order of
// its one mutex, so replaying them reproduces every figure (Replay).
type Op struct {
	Run    int    `json:"run"` // index of the run in result.json's runs[]
	Seq    uint64 `json:"seq"`
	Client int    `json:"client"`
	Lock   string `json:"lock"`
	Op     string `json:"op"`
	Visit  uint64 `json:"visit,omitempty"`
	Invoke int64  `json:"invoke_ns"`
	Return int64  `json:"return_ns"`
	Token  uint64 `json:"token,omitempty"`
	// ValidUntil is the promise (harness clock) on acquire and renew lines.
	ValidUntil int64 `json:"valid_until_ns,omitempty"`
	Unbounded  bool  `json:"unbounded,omitempty"`
	Estimated  bool  `json:"estimated,omitempty"`
	// Fences, on acquire lines, says the lock reports fencing tokens: a
	// grant of it without a token is a fencing defect (ZeroTokens).
	Fences bool `json:"fences,omitempty"`
	// Uncertainty is how far the client's times may be off (acquire lines
	// of clients whose clock is known only to within it; see Visit).
	Uncertainty int64 `json:"uncertainty_ns,omitempty"`
	Value       int64 `json:"value,omitempty"` // counter read or written
	// Outcome is "ok", "stale_rejected", or an error kind.
	Outcome string `json:"outcome"`
	// Tries are when the client sent each request of an acquire or attempt
	// line that could have granted the lock (its first try, its retries,
	// its re-checks after a notification), as the lock reported them
	// (locks.Tried); empty when it reports none, and then invoke is the
	// one send known. At most MaxTries are kept: a call that sent more
	// keeps every 2nd, 4th, ... send, spread over the whole call.
	Tries []int64 `json:"tries_ns,omitempty"`
	// Fault is a fault line's fault.
	Fault *FaultLine `json:"fault,omitempty"`
	// Mode, on acquire and enter lines, is "shared" for a visit that took
	// the shared side of a read-write lock; "" (absent) is exclusive.
	Mode string `json:"mode,omitempty"`
	// Kind, on acquire lines, is the lock's kind when it is not a mutex
	// ("rw", "semaphore", "fair"), and Permits a semaphore's permits.
	Kind    string `json:"kind,omitempty"`
	Permits int    `json:"permits,omitempty"`
	// Standing, on acquire and attempt lines, says the lock's waiters
	// stand in the race while they wait: the server itself answers a
	// waiting acquire when the holder's state goes (a ZooKeeper or etcd
	// watch on the node or key before it, a blocked advisory lock call),
	// so the call contends over its whole [invoke, return], not only at
	// its sends (Shared.SetStanding).
	Standing bool `json:"standing,omitempty"`
}

// MaxTries bounds the tries kept per acquire call.
const MaxTries = 4096

// FaultLine is what a verdict needs to know of one fault: which it was,
// whether it bit, and when it took the lock state (LostAt, harness clock;
// nil when it was not seen to).
type FaultLine struct {
	Index  int    `json:"index"`
	Type   string `json:"type"`
	Target string `json:"target,omitempty"`
	Bit    *bool  `json:"bit,omitempty"`
	Error  string `json:"error,omitempty"`
	LostAt *int64 `json:"lost_at_ns,omitempty"`
	// Lease is the run's lease (ns): a held fault's requests count up to
	// a lease after the holder left.
	Lease int64 `json:"lease_ns,omitempty"`
}

// OpRecorder is implemented by resources that also take the client-side
// operations (release, lost, renew) into the history; Shared and Remote do.
type OpRecorder interface {
	Record(ctx context.Context, op Op) error
}

// History streams history lines to a writer as they happen; nothing is
// kept in memory beyond the writer's buffer. A nil *History records
// nothing.
type History struct {
	run int
	w   *bufio.Writer
	buf []byte
	seq uint64
	err error
}

// NewHistory returns a history writing the lines of run index run to w.
func NewHistory(w io.Writer, run int) *History {
	return &History{run: run, w: bufio.NewWriterSize(w, 64<<10)}
}

func (h *History) write(op Op) {
	if h == nil || h.err != nil {
		return
	}
	h.seq++
	op.Run, op.Seq = h.run, h.seq
	h.buf = op.appendJSON(h.buf[:0])
	if _, err := h.w.Write(h.buf); err != nil {
		h.err = fmt.Errorf("history: %w", err)
	}
}

// Flush writes what is buffered and returns the first write error.
func (h *History) Flush() error {
	if h == nil {
		return nil
	}
	if err := h.w.Flush(); err != nil && h.err == nil {
		h.err = fmt.Errorf("history: %w", err)
	}
	return h.err
}

func (h *History) visit(in Visit, id uint64, requested, acquired, now time.Duration, fences, standing bool, kind string, permits int) {
	if h == nil {
		return
	}
	mode := ""
	if in.Shared {
		mode = ModeShared
	}
	h.write(Op{Client: in.Client, Lock: in.Lock, Op: OpAcquire, Visit: id, Invoke: int64(requested), Return: int64(acquired),
		Token: in.Token, ValidUntil: int64(in.ValidUntil), Unbounded: in.Unbounded, Estimated: in.Estimated,
		Fences: fences, Uncertainty: int64(in.Uncertainty), Outcome: "ok", Tries: in.Tries,
		Mode: mode, Kind: kind, Permits: permits, Standing: standing})
	h.write(Op{Client: in.Client, Lock: in.Lock, Op: OpEnter, Visit: id, Invoke: int64(now), Return: int64(now), Token: in.Token,
		Outcome: "ok", Mode: mode})
}

// logOp writes a resource operation's line and notes its time as the
// latest line's.
func (s *Shared) logOp(v *visit, op string, now time.Duration, outcome string, value int64) {
	s.last = max(s.last, now)
	s.history.op(v, op, now, outcome, value)
}

func (h *History) op(v *visit, op string, now time.Duration, outcome string, value int64) {
	if h == nil {
		return
	}
	h.write(Op{Client: v.client, Lock: v.lock, Op: op, Visit: v.id, Invoke: int64(now), Return: int64(now),
		Token: v.token, Value: value, Outcome: outcome})
}

// SetHistory makes the resource stream every operation to h (nil: none).
// Call it before the first visit.
func (s *Shared) SetHistory(h *History) {
	s.mu.Lock()
	s.history = h
	s.mu.Unlock()
}

// Record implements OpRecorder: a client-side operation goes into the
// history in the resource's order. A renew line also extends the promise
// of the visit it names from the line's return time on (the renewal had
// certainly happened by then); a line without times gets the resource's
// time of recording, in the history too.
func (s *Shared) Record(_ context.Context, op Op) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if op.Op == OpRenew && op.Return == 0 {
		now := int64(s.clock())
		op.Invoke, op.Return = now, now
	}
	if op.Op == OpAttempt {
		s.countWait(op)
		op.Standing = op.Standing || s.standing
		if op.Kind == "" && s.kind != "" {
			// A run whose lock granted nothing still tells its kind.
			op.Kind, op.Permits = s.kind, s.permits
		}
		answered := op.Outcome == AttemptRefused || op.Outcome == AttemptTimedOut
		s.sent(op.Lock, op.Client, time.Duration(op.Invoke), time.Duration(op.Return), answered, op.Standing, op.Tries)
	}
	if op.Op == OpRenew && op.Visit != 0 {
		if v := s.visits[op.Visit]; v != nil && !v.promise.unbounded {
			v.promise.renewals = append(v.promise.renewals, renewal{known: time.Duration(op.Return), until: time.Duration(op.ValidUntil)})
		}
	}
	if op.Op != OpAttempt {
		s.last = max(s.last, time.Duration(op.Return))
	}
	s.lostLine(op)
	s.leakRecord(op)
	s.history.write(op)
	return nil
}
