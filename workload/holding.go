package workload

import (
	"context"
	"errors"
	"time"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/locks"
)

// ErrAbortedLost counts writes a careful client (on_lost: abort) skipped
// because its lease was lost or its promise had run out.
const ErrAbortedLost = "aborted_lost"

// holding is one lease from its grant to its release, as the client reports
// it to the resource: its promise on the harness clock, renewals that moved
// it, and (when the resource keeps a history) release and loss.
type holding struct {
	cfg     Config
	id      int
	lock    string
	lease   locks.Lease
	res     checker.Resource
	visitID uint64
	until   time.Duration // promise last reported (harness clock)
}

// at converts a local time to the harness clock.
func (h *holding) at(t time.Time) time.Duration { return t.Sub(h.cfg.Base) }

// visit is the Enter request of the holding: grant and promise.
func (h *holding) visit(requested, acquired time.Time) checker.Visit {
	p := locks.PromiseOf(h.lease)
	v := checker.Visit{
		Lock: h.lock, Client: h.id, Token: h.lease.Token(),
		Requested: h.at(requested), Acquired: h.at(acquired),
		Unbounded: p.Unbounded, Estimated: p.Estimated, Uncertainty: h.cfg.ClockUncertainty,
	}
	if !p.Unbounded {
		v.ValidUntil = h.at(p.Until)
		h.until = v.ValidUntil
	}
	return v
}

// renewed reports the promise when a renewal moved it since last reported.
func (h *holding) renewed(ctx context.Context) {
	p := locks.PromiseOf(h.lease)
	if p.Unbounded {
		return
	}
	if u := h.at(p.Until); u > h.until {
		h.until = u
		now := time.Now()
		h.record(ctx, checker.Op{Op: checker.OpRenew, ValidUntil: int64(u), Estimated: p.Estimated, Outcome: "ok"}, now, now)
	}
}

// held reports whether the holder may still act as the only one: Lost is
// open and the promise still runs.
func (h *holding) held() bool {
	select {
	case <-h.lease.Lost():
		return false
	default:
	}
	p := locks.PromiseOf(h.lease)
	return p.Unbounded || time.Now().Before(p.Until)
}

// record sends op to the resource's history when it keeps one.
func (h *holding) record(ctx context.Context, op checker.Op, invoke, ret time.Time) {
	r, ok := h.res.(checker.OpRecorder)
	if !ok {
		return
	}
	op.Client, op.Lock, op.Visit, op.Token = h.id, h.lock, h.visitID, h.lease.Token()
	op.Invoke, op.Return = int64(h.at(invoke)), int64(h.at(ret))
	_ = r.Record(ctx, op)
}

// release gives the lease up and records it.
func (h *holding) release(ctx context.Context, rec *Recorder) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.cfg.ReleaseTimeout)
	defer cancel()
	start := time.Now()
	err := h.lease.Release(rctx)
	end := time.Now()
	rec.Released(end.Sub(start))
	outcome := "ok"
	switch {
	case err == nil:
	case errors.Is(err, locks.ErrNotHeld):
		outcome = ErrReleaseNotHeld
	default:
		outcome = ErrRelease
	}
	if err != nil {
		rec.Error(outcome, end)
	}
	h.record(context.WithoutCancel(ctx), checker.Op{Op: checker.OpRelease, Outcome: outcome}, start, end)
}
