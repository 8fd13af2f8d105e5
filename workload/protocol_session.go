package workload

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/locks"
)

// phase is where a client program is in its loop, as the harness sees it.
type phase int32

const (
	phIdle      phase = iota // between operations: the next message is next
	phAcquiring              // go sent: acquired or acquire_failed expected
	phHeld                   // holding the lock, outside the resource
	phInside                 // entered the resource
	phStopping               // stop sent: the program exits
	phFinished               // gone
)

var phaseNames = [...]string{"idle", "acquiring", "holding the lock", "inside the critical section", "stopping", "finished"}

func (p phase) String() string { return phaseNames[p] }

// session serves one program's messages: the harness side of the client
// protocol (docs/client-protocol.md).
type session struct {
	p     *program
	cfg   Config
	res   checker.Resource
	rec   *Recorder
	sched *Schedule
	stop  context.Context // ends when no more work is handed out
	rng   *rand.Rand

	key        int
	goAt       time.Time // when go was sent
	sentAt     time.Time // when the request that won was sent (go without sent_us)
	intended   time.Time // open-loop intended start, else zero
	token      uint64
	waited     time.Duration
	acquiredAt time.Time // when the acquired line arrived
	// validUntil is the holding's promise on the harness clock (0: the
	// program reported none); estimated when the harness computed it from
	// a session timeout, from outside the library.
	validUntil time.Duration
	estimated  bool
	visit      uint64
	entered    bool
	completed  bool
	lost       bool
	// shared says the operation takes the shared side (go's mode); reads
	// counts its visit's reads: a reader's second read completes it.
	shared  bool
	reads   int
	backoff time.Duration
}

func (s *session) setPhase(ph phase) { s.p.phase.Store(int32(ph)) }
func (s *session) phase() phase      { return phase(s.p.phase.Load()) }

// serve runs until the program exits; it returns the reason when that was
// not a clean stop.
func (s *session) serve() error {
	p := s.p
	s.rng = rand.New(rand.NewPCG(uint64(s.cfg.Seed), uint64(p.client)+1))
	s.send(map[string]string{"op": "start"})
	hang := 2*s.cfg.AcquireTimeout + 30*time.Second
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				return s.eof()
			}
			if err := s.handle(l.b, l.at); err != nil {
				s.abandon()
				return p.errorf("%v", err)
			}
		case <-tick.C:
			if s.phase() == phAcquiring && !p.sp.isPaused() && time.Since(s.goAt) > hang {
				s.abandon()
				return p.errorf("no acquired or acquire_failed within %s of go: hung", hang)
			}
		}
	}
}

// eof handles the end of the program's stdout: the process ended.
func (s *session) eof() error {
	status := s.p.exitStatus()
	ph := s.phase()
	s.abandon()
	switch {
	case ph == phStopping || s.p.wasKilled():
		return nil
	case ph == phInside:
		return s.p.errorf("exited inside the critical section of %s (%s)", LockName(s.key), status)
	default:
		return s.p.errorf("exited early while %s (%s)", ph, status)
	}
}

// abandon makes the resource forget a visit the program can no longer
// end: a dead client holds nothing.
func (s *session) abandon() {
	switch s.phase() {
	case phInside:
		s.res.Exit(context.Background(), s.visit)
	case phAcquiring:
		if s.stop.Err() != nil {
			s.attempt(time.Now(), checker.AttemptWaiting) // killed at the run's end while it waited
		}
	}
	s.setPhase(phFinished)
}

func (s *session) send(v any) { s.p.send(v) } // a dead program shows as EOF

func (s *session) want(m message, phases ...phase) error {
	if ph := s.phase(); !slices.Contains(phases, ph) {
		return m.errorf("not allowed while %s", ph)
	}
	return nil
}

// handle serves one line the harness read at read.
func (s *session) handle(line []byte, read time.Time) error {
	m, err := decode(line)
	if err != nil {
		return err
	}
	switch m.op {
	case "next":
		if err := s.want(m, phIdle); err != nil {
			return err
		}
		s.next()
	case "acquired":
		if err := s.want(m, phAcquiring); err != nil {
			return err
		}
		return s.acquired(m, read)
	case "acquire_failed":
		if err := s.want(m, phAcquiring); err != nil {
			return err
		}
		return s.acquireFailed(m)
	case "enter":
		if err := s.want(m, phHeld); err != nil {
			return err
		}
		if s.entered {
			return m.errorf("second enter in one holding")
		}
		s.enter()
	case "read", "write", "exit":
		if err := s.want(m, phInside); err != nil {
			return err
		}
		return s.resource(m)
	case "lost":
		// A library's background thread may write it at any time: it
		// counts only while the program holds a lock.
		if ph := s.phase(); (ph == phHeld || ph == phInside) && !s.lost {
			s.lost = true
			now := time.Now()
			s.rec.Error(ErrLostWhileHeld, now)
			s.record(checker.Op{Op: checker.OpLost, Outcome: ErrLostWhileHeld}, now)
		}
	case "renewed":
		return s.renewed(m)
	case "released":
		if err := s.want(m, phHeld); err != nil {
			return err
		}
		return s.released(m)
	default:
		return m.errorf("unknown op %q (known: next, acquired, acquire_failed, enter, read, write, exit, lost, renewed, released)", m.op)
	}
	return nil
}

// next hands out the next operation, or stop.
func (s *session) next() {
	if s.backoff > 0 {
		jitter := time.Duration(s.rng.Int64N(int64(s.backoff)/2 + 1))
		locks.Sleep(s.stop, s.backoff/2+jitter)
	}
	intended, ok := s.sched.take(s.stop)
	if !ok || s.stop.Err() != nil {
		s.setPhase(phStopping)
		s.p.mu.Lock()
		s.p.stopSent = time.Now()
		s.p.mu.Unlock()
		s.send(map[string]string{"op": "stop"})
		return
	}
	s.key = s.rng.IntN(s.cfg.Keys)
	if s.cfg.KeyPerClient {
		s.key = s.p.client % s.cfg.Keys
	}
	s.shared = s.cfg.ReadShare > 0 && s.rng.Float64() < s.cfg.ReadShare
	s.goAt, s.intended = time.Now(), intended
	s.setPhase(phAcquiring)
	if s.shared {
		s.send(map[string]string{"op": "go", "key": LockName(s.key), "mode": checker.ModeShared})
		return
	}
	s.send(map[string]string{"op": "go", "key": LockName(s.key)})
}

// since returns how long the operation has taken until end: the
// program's own measure us (µs) when it gave one, from the intended start
// in open-loop runs.
func (s *session) since(m message, field string, end time.Time) (time.Duration, error) {
	us, ok, err := m.duration(field, float64(time.Microsecond))
	if err != nil {
		return 0, err
	}
	d := end.Sub(s.goAt)
	if ok {
		d = time.Duration(us)
	}
	if !s.intended.IsZero() {
		d += s.goAt.Sub(s.intended)
	}
	return d, nil
}

// acquired serves an acquired line the harness read at read: the grant
// happened no later.
func (s *session) acquired(m message, read time.Time) error {
	token, err := m.uint("token")
	if err != nil {
		return err
	}
	d, err := s.since(m, "us", read)
	if err != nil {
		return err
	}
	s.token, s.waited, s.acquiredAt = token, d, read
	if s.sentAt, err = s.winningSend(m); err != nil {
		return err
	}
	if err := s.promise(m); err != nil {
		return err
	}
	s.entered, s.completed, s.lost = false, false, false
	s.backoff = 0
	s.rec.Acquired(d)
	s.setPhase(phHeld)
	return nil
}

// winningSend is when the request that won was sent, from the acquired
// line's sent_us (µs from that send to writing the line): the line's read
// time less sent_us, never before go (the request went out after it; a
// larger sent_us is clamped). Without sent_us it is go: the earliest the
// winning request can have been sent.
func (s *session) winningSend(m message) (time.Time, error) {
	us, ok, err := m.duration("sent_us", float64(time.Microsecond))
	if err != nil || !ok {
		return s.goAt, err
	}
	sent := s.acquiredAt.Add(-time.Duration(us))
	if sent.Before(s.goAt) {
		sent = s.goAt
	}
	return sent, nil
}

// promise reads the promise of an acquired line, on the harness clock.
// Each promise counts from the send of the request that won (sentAt: go,
// unless the line carried sent_us). The program's first request went out
// after go was sent and its grant came no later than its acquired line,
// so counting from go is valid whether the program measured from its
// request or from the grant; a program that retries inside acquire sends
// sent_us, or its promise counts from before its own retries.
//
//   - validity_ms (a lease's TTL): locks.TTLPromise, the rule of the Go
//     lease locks (ttl minus the clock-drift allowance).
//   - session_ms (a ZooKeeper or etcd session): the rule of the Go
//     ZooKeeper recipes (zklock.Session.Promise): the send time of the
//     last successful request plus the session timeout. The acquire's
//     requests were sent after go; when the library says it last heard
//     from the server before go (last_ok_ms_ago), that earlier time counts.
//     Estimated: the harness computes it from outside the library.
func (s *session) promise(m message) error {
	v, hasV, err := m.duration("validity_ms", float64(time.Millisecond))
	if err != nil {
		return err
	}
	sess, hasS, err := m.duration("session_ms", float64(time.Millisecond))
	if err != nil {
		return err
	}
	ago, hasAgo, err := m.duration("last_ok_ms_ago", float64(time.Millisecond))
	if err != nil {
		return err
	}
	s.validUntil, s.estimated = 0, false
	var until time.Time
	if hasS && sess > 0 {
		sent := s.sentAt
		if heard := s.acquiredAt.Add(-time.Duration(ago)); hasAgo && heard.Before(sent) {
			sent = heard
		}
		until, s.estimated = sent.Add(time.Duration(sess)), true
	}
	if hasV && v > 0 {
		// Both given: the earlier one bounds the holding.
		if u := locks.TTLPromise(s.sentAt, time.Duration(v)).Until; until.IsZero() || u.Before(until) {
			until, s.estimated = u, false
		}
	}
	if !until.IsZero() {
		s.validUntil = max(until.Sub(s.cfg.Base), 1) // 0 would mean "none"
	}
	return nil
}

// renewed moves the holding's promise: validity_ms is what the renewal
// left, counted by the program from the renewal's send time to when it
// wrote the line, and counts from the line's arrival less the drift
// allowance (locks.TTLPromise). A line from a library's background thread
// may arrive while the program holds nothing: it is ignored. While the
// program is inside, the move reaches the checker as the Go watchdog
// locks' renewals do (a renew operation recorded with the visit).
func (s *session) renewed(m message) error {
	v, ok, err := m.duration("validity_ms", float64(time.Millisecond))
	if err != nil {
		return err
	}
	if !ok {
		return m.errorf("missing field validity_ms (the validity left, in ms, counted from the renewal's send time)")
	}
	if ph := s.phase(); ph != phHeld && ph != phInside {
		return nil
	}
	now := time.Now()
	u := max(locks.TTLPromise(now, time.Duration(v)).Until.Sub(s.cfg.Base), 1)
	if s.validUntil == 0 || u <= s.validUntil {
		return nil // no promise to move (none was made), or not later
	}
	s.validUntil = u
	if s.phase() != phInside {
		return nil // enter carries it
	}
	s.record(checker.Op{Op: checker.OpRenew, ValidUntil: int64(u), Estimated: s.estimated, Outcome: "ok"}, now)
	return nil
}

// record sends op, of this holding and timed at, to the resource's
// history when it keeps one.
func (s *session) record(op checker.Op, at time.Time) { s.recordSpan(op, at, at) }

// recordSpan is record for an op sent at invoke that returned at ret.
func (s *session) recordSpan(op checker.Op, invoke, ret time.Time) {
	r, ok := s.res.(checker.OpRecorder)
	if !ok {
		return
	}
	op.Client, op.Lock, op.Visit, op.Token = s.p.client, LockName(s.key), s.visit, s.token
	op.Invoke, op.Return = int64(invoke.Sub(s.cfg.Base)), int64(ret.Sub(s.cfg.Base))
	_ = r.Record(context.Background(), op)
}

func (s *session) acquireFailed(m message) error {
	reason, err := m.oneOf("reason", "timeout", "not_obtained", "error")
	if err != nil {
		return err
	}
	s.setPhase(phIdle)
	now := time.Now()
	if s.stop.Err() != nil {
		s.attempt(now, checker.AttemptWaiting)
		return nil // the run ended while it waited: not an error
	}
	switch reason {
	case "timeout":
		s.rec.Error(ErrAcquireTimeout, now)
		s.attempt(now, ErrAcquireTimeout)
		s.backoff = 0
	case "not_obtained":
		s.rec.Error(ErrNotObtained, now)
		s.attempt(now, ErrNotObtained)
		s.backoff = 0
	default:
		s.rec.Error(ErrAcquire, now)
		s.attempt(now, ErrAcquire)
		s.backoff = min(max(2*s.backoff, 5*time.Millisecond), 500*time.Millisecond)
	}
	return nil
}

// attempt records the program's acquire since go as one that granted
// nothing (recordAttempt).
func (s *session) attempt(end time.Time, outcome string) {
	recordAttempt(s.res, s.cfg, s.p.client, LockName(s.key), s.goAt, end, outcome, nil)
}

func (s *session) enter() {
	// The acquire call started at go (the history's invoke, as for the Go
	// locks' calls) and its grant came no later than its acquired line.
	// When the program said when the request that won was sent (sent_us),
	// that send is a try of the call, beside its start, as the Go locks
	// report theirs (locks.Tried).
	vis := checker.Visit{
		Lock: LockName(s.key), Client: s.p.client, Token: s.token, Waited: s.waited,
		Requested: s.goAt.Sub(s.cfg.Base), Acquired: s.acquiredAt.Sub(s.cfg.Base),
	}
	if s.sentAt.After(s.goAt) {
		vis.Tries = []int64{int64(s.goAt.Sub(s.cfg.Base)), int64(s.sentAt.Sub(s.cfg.Base))}
	}
	vis.ValidUntil, vis.Estimated, vis.Shared = s.validUntil, s.estimated, s.shared
	s.reads = 0
	v, err := s.res.Enter(context.Background(), vis)
	if err != nil {
		s.rec.Error(ErrResource, time.Now())
		s.send(map[string]any{"ok": false, "error": err.Error()})
		return
	}
	s.visit, s.entered = v, true
	s.setPhase(phInside)
	s.send(map[string]any{"ok": true})
}

// resource serves read, write and exit.
func (s *session) resource(m message) error {
	ctx := context.Background()
	switch m.op {
	case "read":
		v, err := s.res.Read(ctx, s.visit)
		if err != nil {
			s.rec.Error(ErrResource, time.Now())
			s.send(map[string]any{"ok": false, "error": err.Error()})
			return nil
		}
		if s.reads++; s.shared && s.reads >= 2 {
			s.completed = true // a reader's work: two reads, no write
		}
		s.send(map[string]any{"ok": true, "value": v})
	case "write":
		v, err := m.int("value")
		if err != nil {
			return err
		}
		switch err := s.res.Write(ctx, s.visit, v); {
		case err == nil:
			s.completed = true
			s.send(map[string]any{"ok": true})
		case errors.Is(err, checker.ErrStaleToken):
			s.rec.Error(ErrStaleRejected, time.Now())
			s.send(map[string]any{"ok": false, "stale": true, "error": err.Error()})
		default:
			s.rec.Error(ErrResource, time.Now())
			s.send(map[string]any{"ok": false, "error": err.Error()})
		}
	case "exit":
		if err := s.res.Exit(ctx, s.visit); err != nil {
			s.rec.Error(ErrResource, time.Now())
		}
		if s.completed {
			s.rec.Completed(time.Now())
		}
		s.setPhase(phHeld)
		s.send(map[string]any{"ok": true})
	}
	return nil
}

func (s *session) released(m message) error {
	outcome, err := m.oneOf("outcome", "ok", "not_held", "error")
	if err != nil {
		return err
	}
	us, ok, err := m.duration("us", float64(time.Microsecond))
	if err != nil {
		return err
	}
	now := time.Now()
	start := now // a program that does not time its release: an instant
	if ok {
		s.rec.Released(time.Duration(us))
		start = now.Add(-time.Duration(us))
	}
	recorded := "ok"
	switch outcome {
	case "not_held":
		s.rec.Error(ErrReleaseNotHeld, now)
		recorded = ErrReleaseNotHeld
	case "error":
		s.rec.Error(ErrRelease, now)
		recorded = ErrRelease
	}
	// The history's release line, as a built-in lock's (a semaphore's
	// permit is given back at its return, docs/history-format.md).
	if s.entered {
		s.recordSpan(checker.Op{Op: checker.OpRelease, Outcome: recorded}, start, now)
	}
	s.setPhase(phIdle)
	return nil
}
