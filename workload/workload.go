package workload

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/locks"
)

// Config is one workload run. Zero values get the defaults noted.
type Config struct {
	Clients         int           // default 1
	Duration        time.Duration // run length; ignored when Ops > 0
	Ops             int           // total critical sections to attempt across clients; < 0: none
	CriticalSection time.Duration // hold time between read and write
	Keys            int           // distinct lock names ("lock-0".."lock-<Keys-1>"); default 1
	// KeyPerClient makes client i always use key i%Keys instead of a random
	// key: no two clients contend when Keys >= Clients (calibration).
	KeyPerClient bool
	// AcquireTimeout bounds one Acquire call. Default 10s.
	AcquireTimeout time.Duration
	// ReleaseTimeout bounds one Release call. Default 5s.
	ReleaseTimeout time.Duration
	// Rate > 0 makes the run open-loop: operations are scheduled at Rate per
	// second across clients and latencies count from the scheduled start, so
	// a stalled backend shows up in them (coordinated omission).
	Rate float64
	// Seed derives every client's key choice.
	Seed int64
	// Base is the run's time origin, shared with the resource.
	Base time.Time
	// ClockUncertainty is how far Base may be off the harness's origin: 0
	// in the harness's own process; in a worker process, half the round
	// trip of the start handshake that told it the origin (see
	// Processes.Start). Every visit carries it, so the checker widens the
	// client's grants and shortens its promises by it.
	ClockUncertainty time.Duration
	// OnLost is the client model: OnLostIgnore (default) writes whatever
	// happened to the lease; OnLostAbort checks the lease just before the
	// write and skips it (and leaves) when the lease is lost or its
	// promise ran out.
	OnLost string
	// ReadShare is the share of operations (0..1, drawn from the seeded
	// random source) that take the shared (read) side of a read-write
	// lock: they acquire with locks.SharedLocker.AcquireShared, read the
	// counter at entry and again before leaving, and write nothing.
	// Default 0: every operation exclusive.
	ReadShare float64
}

// Client models (contract values of workload.on_lost).
const (
	OnLostIgnore = "ignore"
	OnLostAbort  = "abort"
)

func (c Config) withDefaults() Config {
	if c.Clients <= 0 {
		c.Clients = 1
	}
	if c.Keys <= 0 {
		c.Keys = 1
	}
	if c.AcquireTimeout <= 0 {
		c.AcquireTimeout = 10 * time.Second
	}
	if c.ReleaseTimeout <= 0 {
		c.ReleaseTimeout = 5 * time.Second
	}
	if c.Base.IsZero() {
		c.Base = time.Now()
	}
	if c.OnLost == "" {
		c.OnLost = OnLostIgnore
	}
	return c
}

// LockName is the lock name of key k.
func LockName(k int) string { return fmt.Sprintf("lock-%d", k) }

// Schedule hands out operations to clients: a remaining-ops budget (Ops)
// and, for open-loop runs, the intended start time of each operation. It is
// shared by every client of one process.
type Schedule struct {
	limited bool         // an ops budget applies
	budget  atomic.Int64 // operations left when limited
	rate    float64
	start   time.Time
	next    atomic.Int64
}

// NewSchedule returns the schedule of cfg, starting now.
func NewSchedule(cfg Config) *Schedule {
	s := &Schedule{rate: cfg.Rate, start: time.Now(), limited: cfg.Ops != 0}
	s.budget.Store(int64(max(cfg.Ops, 0)))
	return s
}

// take claims the next operation. It returns its intended start (the zero
// time in closed-loop runs) and false when the budget is spent or ctx ended.
func (s *Schedule) take(ctx context.Context) (time.Time, bool) {
	if s.limited && s.budget.Add(-1) < 0 {
		return time.Time{}, false
	}
	if s.rate <= 0 {
		return time.Time{}, ctx.Err() == nil
	}
	i := s.next.Add(1) - 1
	at := s.start.Add(time.Duration(float64(i) / s.rate * float64(time.Second)))
	if d := time.Until(at); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return time.Time{}, false
		}
	}
	return at, true
}

// RunClient is one client's loop until ctx ends or the schedule is spent.
// It records into rec and touches res inside each critical section. The
// client never returns an error for one failed operation: it counts it and
// goes on, backing off briefly after backend errors. A resource-call error
// ends the client: it must never go on locking while the checker cannot
// see what it does.
func RunClient(ctx context.Context, cfg Config, id int, lc locks.Client, res checker.Resource, sched *Schedule, rec *Recorder) {
	cfg = cfg.withDefaults()
	rng := rand.New(rand.NewPCG(uint64(cfg.Seed), uint64(id)+1))
	// The Locker of the last key used is kept (a reentrant lock's Locker is
	// its owner, so one key keeps one owner); another key gets a new one.
	// Keeping one per key would cost clients x keys Lockers.
	var (
		locker locks.Locker
		lastK  = -1
	)
	backoff := time.Duration(0)
	for !ended(ctx) {
		intended, ok := sched.take(ctx)
		if !ok {
			return
		}
		if !intended.IsZero() {
			rec.Started(time.Since(intended))
		}
		k := rng.IntN(cfg.Keys)
		if cfg.KeyPerClient {
			k = id % cfg.Keys
		}
		if k != lastK {
			locker, lastK = lc.Locker(LockName(k)), k
		}
		shared := cfg.ReadShare > 0 && rng.Float64() < cfg.ReadShare
		err := oneOp(ctx, cfg, id, k, locker, shared, res, rec, intended)
		if errors.Is(err, errResource) {
			return
		}
		if err != nil {
			// Back off after backend failures so a dead server does not
			// turn the client into a busy loop; reset on success.
			backoff = min(max(2*backoff, 5*time.Millisecond), 500*time.Millisecond)
			jitter := time.Duration(rng.Int64N(int64(backoff)/2 + 1))
			locks.Sleep(ctx, backoff/2+jitter)
		} else {
			backoff = 0
		}
	}
}

// errBackend marks an operation that failed in a way worth backing off;
// errResource one whose resource call failed (the client stops).
var (
	errBackend  = errors.New("backend error")
	errResource = errors.New("resource error")
)

// acquire takes l's shared side when shared (a read-write lock), else its
// exclusive side.
func acquire(ctx context.Context, l locks.Locker, shared bool) (locks.Lease, error) {
	if !shared {
		return l.Acquire(ctx)
	}
	sl, ok := l.(locks.SharedLocker)
	if !ok {
		return nil, fmt.Errorf("%w: the lock has no shared side (workload.read_share needs a read-write lock)", errNoShared)
	}
	return sl.AcquireShared(ctx)
}

// errNoShared: read_share on a lock without a shared side (validation
// keeps it from happening).
var errNoShared = errors.New("workload: no shared side")

func oneOp(ctx context.Context, cfg Config, id, k int, l locks.Locker, shared bool, res checker.Resource, rec *Recorder, intended time.Time) error {
	requested := time.Now()
	start := requested
	if !intended.IsZero() {
		start = intended
	}
	actx, cancel := context.WithTimeout(ctx, cfg.AcquireTimeout)
	defer cancel()
	var tries tryLog
	lease, err := acquire(locks.WithTries(actx, tries.add), l, shared)
	if err != nil {
		now := time.Now()
		outcome := ErrAcquire
		switch {
		case ended(ctx):
			outcome = checker.AttemptWaiting // the run ended while we waited: not an error
		case errors.Is(err, context.DeadlineExceeded) || actx.Err() != nil:
			outcome = ErrAcquireTimeout
		case errors.Is(err, locks.ErrNotObtained):
			outcome = ErrNotObtained
		}
		if outcome == checker.AttemptWaiting {
			if dl, ok := ctx.Deadline(); !ok || requested.Before(dl) {
				recordAttempt(res, cfg, id, LockName(k), requested, now, outcome, tries.since(cfg.Base))
			}
			return nil
		}
		recordAttempt(res, cfg, id, LockName(k), requested, now, outcome, tries.since(cfg.Base))
		rec.Error(outcome, now)
		if outcome == ErrAcquire {
			return errBackend
		}
		return nil
	}
	acquired := time.Now()
	rec.Acquired(acquired.Sub(start))

	name := LockName(k)
	// The resource calls use a context that survives the run's end: once
	// inside, a client always exits, so the checker never sees a phantom
	// holder.
	rctx := context.WithoutCancel(ctx)
	h := holding{cfg: cfg, id: id, lock: name, lease: lease, res: res}
	v := h.visit(requested, acquired)
	v.Shared = shared
	v.Waited = acquired.Sub(start)
	v.Tries = tries.since(cfg.Base)
	visit, err := res.Enter(rctx, v)
	if err != nil {
		rec.Error(ErrResource, time.Now())
		h.release(ctx, rec)
		return errResource
	}
	h.visitID = visit
	value, err := res.Read(rctx, visit)
	completed, slept := false, false
	var noticed time.Time // when Lost closed inside the critical section
	if err == nil {
		slept, noticed = sleepNoticing(ctx, cfg.CriticalSection, lease.Lost())
	}
	if slept {
		h.renewed(rctx)
		switch {
		case shared:
			// A reader reads again before it leaves: the resource
			// checks that nobody wrote while it read.
			if _, rerr := res.Read(rctx, visit); rerr != nil {
				err = rerr
			} else {
				completed = true
			}
		case cfg.OnLost == OnLostAbort && !h.held():
			rec.Error(ErrAbortedLost, time.Now())
		default:
			werr := res.Write(rctx, visit, value+1)
			switch {
			case werr == nil:
				completed = true
			case errors.Is(werr, checker.ErrStaleToken):
				rec.Error(ErrStaleRejected, time.Now())
			default:
				err = werr
			}
		}
	}
	h.renewed(rctx)
	if xerr := res.Exit(rctx, visit); xerr != nil && err == nil {
		err = xerr
	}
	if completed {
		rec.Completed(time.Now())
	}
	select {
	case <-lease.Lost():
		// The lost line carries when the library told the holder: inside
		// the critical section when Lost closed there, else now.
		at := time.Now()
		if !noticed.IsZero() {
			at = noticed
		}
		rec.Error(ErrLostWhileHeld, at)
		h.record(rctx, checker.Op{Op: checker.OpLost, Outcome: ErrLostWhileHeld}, at, at)
	default:
	}
	h.release(ctx, rec)
	if err != nil {
		rec.Error(ErrResource, time.Now())
		return errResource
	}
	return nil
}

// ended reports whether the run is over: locks.ContextDone, because a
// lock whose socket deadline is the run's deadline can fail a hair before
// ctx's own timer fires, and that is the run's end, not an acquire timeout.
func ended(ctx context.Context) bool { return locks.ContextDone(ctx) != nil }

// sleepNoticing is locks.Sleep that also watches lost: it returns, besides
// whether d elapsed, when lost closed during the wait (zero when it did
// not). The wait goes on after lost closes: what the holder does then is
// the client model's choice (on_lost), made after the critical section.
func sleepNoticing(ctx context.Context, d time.Duration, lost <-chan struct{}) (elapsed bool, noticed time.Time) {
	if d <= 0 {
		return ctx.Err() == nil, noticed
	}
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			return true, noticed
		case <-ctx.Done():
			return false, noticed
		case <-lost:
			noticed, lost = time.Now(), nil // a nil channel blocks: wait on
		}
	}
}

// ClientFactory connects client i (its own connections).
type ClientFactory func(ctx context.Context, i int) (locks.Client, error)

// Connect connects n clients (each its own connections). On error the
// clients already connected are closed.
func Connect(ctx context.Context, n int, connect ClientFactory) ([]locks.Client, error) {
	clients := make([]locks.Client, 0, n)
	for i := 0; i < n; i++ {
		c, err := connect(ctx, i)
		if err != nil {
			for _, c := range clients {
				c.Close()
			}
			return nil, fmt.Errorf("connect client-%d: %w", i, err)
		}
		clients = append(clients, c)
	}
	return clients, nil
}

// Drive runs the connected clients in this process for cfg.Duration (or
// until cfg.Ops are done, or ctx ends). Per-operation failures are counted
// in rec. It does not close the clients.
func Drive(ctx context.Context, cfg Config, clients []locks.Client, res checker.Resource, rec *Recorder) {
	cfg = cfg.withDefaults()
	if cfg.Ops <= 0 && cfg.Duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.Duration)
		defer cancel()
	}
	sched := NewSchedule(cfg)
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			RunClient(ctx, cfg, i, c, res, sched, rec)
		}()
	}
	wg.Wait()
}

// Run connects cfg.Clients clients, drives them, and closes them. It
// returns an error only when a client cannot connect.
func Run(ctx context.Context, cfg Config, connect ClientFactory, res checker.Resource, rec *Recorder) error {
	cfg = cfg.withDefaults()
	clients, err := Connect(ctx, cfg.Clients, connect)
	if err != nil {
		return err
	}
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	Drive(ctx, cfg, clients, res, rec)
	return nil
}
