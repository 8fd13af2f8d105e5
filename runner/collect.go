package runner

import (
	"context"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/locklab/locklab/checker"
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
	drv, err := workload.StartClients(ctx, wcfg, workload.Setup{Spec: spec, LockConfig: lcfg}, nil)
	if err != nil {
		return out, fmt.Errorf("%s: %w", spec.Name, err)
	}
	defer drv.Close()
	resource := checker.New(checker.FencingOff, time.Now())
	base := time.Now()
	resource.SetBase(base)
	rec := workload.NewRecorder(base)
	resource.OnViolation(func(v checker.Violation) { rec.Violation(v.At) })
	wcfg.Base = base
	werr := drv.Drive(ctx, wcfg, resource, rec)
	elapsed := time.Since(base)
	counters, serr := drv.Finish(wcfg, rec)
	collect(&out, rec, resource, elapsed, counters, wcfg.Rate)
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
// elapsed, rate being the open-loop rate requested (0: closed loop): the
// one place a run's figures are assembled. out.Faults must be filled
// already: collect returns the visits in each fault's window (index as
// out.Faults), the evidence evaluate judges safety claims by.
func collect(out *report.Run, rec *workload.Recorder, resource *checker.Shared, elapsed time.Duration, counters map[string]int64, rate float64) []checker.WindowEvidence {
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
	out.MaxOverlapMs = msf(truth.MaxOverlap)
	out.Visits = truth.Visits
	out.KeyClients = truth.KeyClients
	out.PeakHolders = truth.PeakHolders
	out.OutOfOrder, out.MaxOvertakenWaitMs = truth.Fair.OutOfOrder, msf(truth.Fair.MaxOvertakenWait)
	if truth.Kind == checker.KindSemaphore {
		leaked := msf(truth.PermitsLeaked)
		out.PermitsLeakedMs = &leaked
	}
	verdictFields(out, truth)
	zombieFields(out, truth.Zombies)
	out.Acquire = report.LatencyOf(sum.Acquire)
	out.Release = report.LatencyOf(sum.Release)
	out.Handoff = report.LatencyOf(handoff)
	out.Counters = counters
	out.PeakRSSMB = peakRSSMB()
	if rate > 0 && elapsed > 0 {
		openLoop(out, rate, sum.Started, sum.Lag, elapsed)
	}
	for _, b := range sum.Timeline {
		out.Timeline = append(out.Timeline, report.TimelineBucket(b))
	}
	out.AvailabilityDuringFault = availabilityDuringFault(out)
	each := windowEvidence(out, resource)
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
			FirstShared: ev.FirstShared, SecondShared: ev.SecondShared,
		})
	}
	return each
}

// zombieFields records the run's lost leases and, when it had one, the
// median and longest zombie time over them (docs/verdicts.md, "Zombie
// time").
func zombieFields(out *report.Run, z checker.Zombies) {
	n := z.LostLeases
	out.LostLeases = &n
	if n > 0 {
		p50, longest := msf(z.P50), msf(z.Max)
		out.ZombieMsP50, out.ZombieMsMax = &p50, &longest
	}
}

// applied are the windows of the faults of out that applied (no error),
// as [start, end] in seconds.
func applied(out *report.Run) [][2]float64 {
	var ws [][2]float64
	for _, f := range out.Faults {
		if f.Error == "" {
			ws = append(ws, [2]float64{f.StartS, max(f.EndS, f.StartS)})
		}
	}
	return ws
}

// windowEvidence counts the visits overlapping each fault's evidence
// window and the clients contending in it (a fault that did not apply
// gets zero) and sets out's VisitsInWindow, ContendersInWindow and
// WaitingInWindow over the windows of the faults that applied.
func windowEvidence(out *report.Run, resource *checker.Shared) []checker.WindowEvidence {
	if len(out.Faults) == 0 {
		return nil
	}
	var ws []checker.Window
	var idx []int // fault index of each window
	for i, f := range out.Faults {
		if f.Error == "" {
			ws = append(ws, evidenceWindow(out, f))
			idx = append(idx, i)
		}
	}
	each, union := resource.InWindows(ws)
	out.VisitsInWindow, out.ContendersInWindow, out.WaitingInWindow = union.Visits, union.Contenders, union.Waiting
	perFault := make([]checker.WindowEvidence, len(out.Faults))
	for j, i := range idx {
		perFault[i] = each[j]
	}
	return perFault
}

// evidenceWindow is where fault f's evidence is counted: from its start to
// one lease (the run's ttl) after its heal, within the run. A fault's
// harm shows within a lease of its heal or never: a holder paused for
// less than its lease writes at the heal and leaves, a key a restart or a
// clock jump took is granted again while its holder's lease still runs.
// A window of the fault alone would hold a single visit for every correct
// lock under those faults (the holder's: nobody else may enter), so a
// claim of safety could never be made; visits a lease or more after the
// heal are still not evidence.
func evidenceWindow(out *report.Run, f report.FaultWindow) checker.Window {
	end := secs(max(f.EndS, f.StartS)) + time.Duration(out.TTLMs*float64(time.Millisecond))
	if out.DurationS > 0 {
		end = min(end, secs(out.DurationS))
	}
	return checker.Window{Start: secs(f.StartS), End: end}
}

func secs(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// AvailabilityDuringFault is availabilityDuringFault of a run read back
// from its result.json: results that predate the field measure it again.
func AvailabilityDuringFault(r *report.Run) *float64 { return availabilityDuringFault(r) }

// availabilityDuringFault is the completion rate inside the union of the
// windows of the faults that applied over the rate before the first of
// them, from the timeline: each bucket's completions are spread evenly
// over its width, so a window edge inside a bucket takes its share. nil
// when no fault applied, the windows have no length, or fewer than
// minBeforeCompletions completed before the first fault (one at 0s
// included): a rate from one or two hand-offs (a holder inside for most
// of the time before a fault) makes any rate during it look like 300x.
func availabilityDuringFault(out *report.Run) *float64 {
	ws := applied(out)
	w := float64(out.TimelineBucketMs) / 1000
	if len(ws) == 0 || w <= 0 {
		return nil
	}
	sort.Slice(ws, func(i, j int) bool { return ws[i][0] < ws[j][0] })
	completions := func(from, to float64) float64 {
		var n float64
		for i, b := range out.Timeline {
			lo, hi := max(from, w*float64(i)), min(to, w*float64(i+1))
			if hi > lo {
				n += float64(b.Completions) * (hi - lo) / w
			}
		}
		return n
	}
	first := ws[0][0]
	before := completions(0, first)
	if first <= 0 || before < minBeforeCompletions {
		return nil
	}
	var during, length float64
	cur := ws[0]
	for _, x := range append(ws[1:], [2]float64{math.Inf(1), math.Inf(1)}) {
		if x[0] <= cur[1] {
			cur[1] = max(cur[1], x[1])
			continue
		}
		during += completions(cur[0], cur[1])
		length += cur[1] - cur[0]
		cur = x
	}
	if length <= 0 {
		return nil
	}
	a := (during / length) / (before / first)
	return &a
}

// minBeforeCompletions is how many critical sections must complete
// before the first fault for the rate before it to be a baseline.
const minBeforeCompletions = 3

// RateShortfall is how far below the requested rate an open-loop run may
// start its operations before the result warns.
const RateShortfall = 0.95

// openLoop records an open-loop run's requested and achieved rates and
// warns when operations started late: every client was busy (the backend
// is slower than clients/rate allows) or the harness itself fell behind.
func openLoop(out *report.Run, rate float64, started int64, lag *hdrhistogram.Histogram, elapsed time.Duration) {
	out.RateRequested = rate
	out.RateAchieved = float64(started) / elapsed.Seconds()
	p99 := float64(lag.ValueAtQuantile(99)) / 1000
	out.StartLagMs = p99
	if out.RateAchieved < RateShortfall*rate {
		out.RateWarning = fmt.Sprintf("operations started at %.0f/s of the %.0f/s requested (p99 %.1f ms late): "+
			"every client was busy or the harness could not keep up; latencies still count from the scheduled start",
			out.RateAchieved, rate, p99)
	}
}
