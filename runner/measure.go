package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/report"
	"github.com/locklab/locklab/workload"
)

// Measure runs one lock's workload with its clients in this process, on
// servers the caller started, and returns what a result records for it:
// the same connect -> drive -> collect path as a scenario's run, without a
// cluster of its own, faults or progress line. lcfg gives client i its
// config (so the caller chooses direct or proxied addresses). Calibration
// uses it; the error is a connection failure or ctx's end.
func Measure(ctx context.Context, spec locks.Spec, wcfg workload.Config, lcfg func(int) locks.Config) (report.Run, error) {
	out := report.Run{
		Lock: spec.Name, LockName: spec.Name, Backend: string(spec.Backend), Fences: spec.Fencing,
		Clients: wcfg.Clients, Errors: map[string]int64{}, TimelineBucketMs: int(workload.BucketWidth / time.Millisecond),
		Timeline: []report.TimelineBucket{}, ViolationEvents: []report.ViolationEvent{}, Faults: []report.FaultWindow{},
	}
	resetPeakRSS()
	drv, err := connectInProcess(ctx, spec, wcfg, lcfg)
	if err != nil {
		return out, fmt.Errorf("%s: %w", spec.Name, err)
	}
	defer drv.close()
	resource := checker.New(checker.FencingOff, time.Now())
	base := time.Now()
	resource.SetBase(base)
	rec := workload.NewRecorder(base)
	resource.OnViolation(func(v checker.Violation) { rec.Violation(v.At) })
	wcfg.Base = base
	werr := drv.drive(ctx, wcfg, resource, rec)
	elapsed := time.Since(base)
	counters, serr := drv.finish(wcfg, rec)
	collect(&out, rec, resource, elapsed, counters)
	if werr == nil {
		werr = serr
	}
	if werr == nil {
		werr = ctx.Err()
	}
	out.Complete = werr == nil
	return out, werr
}

// collect fills out with what the recorder and the resource measured over
// elapsed: the one place a run's figures are assembled.
func collect(out *report.Run, rec *workload.Recorder, resource *checker.Shared, elapsed time.Duration, counters map[string]int64) {
	sum := rec.Summary()
	truth := resource.Summary()
	handoff := workload.NewHistogram()
	for _, d := range resource.TakeHandoffs() {
		workload.RecordDuration(handoff, d)
	}
	out.DurationS = elapsed.Seconds()
	out.Ops = sum.Ops
	if elapsed > 0 {
		out.Throughput = float64(sum.Ops) / elapsed.Seconds()
	}
	out.Errors = sum.Errors
	out.Violations = truth.Violations
	out.LostUpdates = truth.LostUpdates
	out.StaleTokens = truth.StaleTokens
	out.StaleRejected = truth.StaleRejected
	out.StaleAccepted = truth.StaleAccepted
	out.MaxOverlapMs = msf(truth.MaxOverlap)
	out.Visits = truth.Visits
	out.Acquire = report.LatencyOf(sum.Acquire)
	out.Release = report.LatencyOf(sum.Release)
	out.Handoff = report.LatencyOf(handoff)
	out.Counters = counters
	out.PeakRSSMB = peakRSSMB()
	for _, b := range sum.Timeline {
		out.Timeline = append(out.Timeline, report.TimelineBucket(b))
	}
	const maxEvents = 1000
	for i, ev := range truth.Events {
		if i == maxEvents {
			out.ViolationEventsDropped = len(truth.Events) - maxEvents
			break
		}
		out.ViolationEvents = append(out.ViolationEvents, report.ViolationEvent{
			Lock: ev.Lock, FirstClient: ev.First, SecondClient: ev.Second,
			FirstToken: ev.FirstToken, SecondToken: ev.SecondToken,
			AtS: ev.At.Seconds(), OverlapMs: msf(ev.Overlap),
		})
	}
}

// LockEndpoints converts one client's cluster endpoints for the lock
// packages, as a run hands them to its clients.
func LockEndpoints(e cluster.Endpoints) locks.Endpoints { return lockEndpoints(e) }
