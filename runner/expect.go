package runner

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/report"
	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/workload"
)

// evaluate checks every run against its expectations (scenarios'
// Expect.Evaluate, the one evaluator) and sets each run's verdict and the
// result's. evidence holds each run's visits in each fault's window, by
// run index (collect's answer); a run without it has none. A run that
// failed or was cut short never meets them.
func evaluate(sc *scenarios.Scenario, res *report.Result, evidence map[int][]checker.WindowEvidence) {
	if len(sc.Expect) == 0 {
		return
	}
	var verdicts []scenarios.Check
	for i := range res.Runs {
		run := &res.Runs[i]
		e, ok := sc.ExpectFor(scenarios.Lock{Name: run.LockName, Label: run.Lock})
		if !ok {
			continue
		}
		run.MinVisits = cmp.Or(e.MinVisits, scenarios.DefaultMinVisits)
		checks := e.Evaluate(countsOf(run), noEvidence(run, evidence[i], e.MinVisits))
		run.Expectations = nil
		for _, c := range checks {
			run.Expectations = append(run.Expectations, report.Expectation{
				Field: c.Field, Want: c.Want, Got: c.Got, Met: c.Verdict == checker.VerdictMet,
				Verdict: c.Verdict, Reason: c.Reason,
			})
		}
		run.Verdict, run.VerdictReason = scenarios.Verdict(checks), reasons(checks)
		if run.Error != "" || !run.Complete {
			run.Verdict = checker.VerdictFailed
			run.VerdictReason = strings.TrimPrefix(strings.Join([]string{run.VerdictReason, "run did not complete: " + run.Error}, "; "), "; ")
		}
		met := run.Verdict == checker.VerdictMet
		run.ExpectMet = &met
		verdicts = append(verdicts, scenarios.Check{Verdict: run.Verdict})
	}
	all := scenarios.Verdict(verdicts)
	met := all == checker.VerdictMet
	res.ExpectMet, res.Verdict = &met, all
}

func countsOf(run *report.Run) scenarios.Counts {
	var errs int
	for _, n := range run.Errors {
		errs += int(n)
	}
	latency := func(l report.Latency, v float64) *float64 {
		if l.Count == 0 {
			return nil
		}
		return &v
	}
	throughput := run.Throughput
	return scenarios.Counts{
		SafetyFigures: run.SafetyFigures, Errors: errs, PeakHolders: run.PeakHolders,
		Throughput:   &throughput,
		AcquireP50Ms: latency(run.Acquire, run.Acquire.P50Ms), AcquireP99Ms: latency(run.Acquire, run.Acquire.P99Ms),
		HandoffP50Ms:            latency(run.Handoff, run.Handoff.P50Ms),
		AvailabilityDuringFault: run.AvailabilityDuringFault,
		PermitsLeakedMs:         run.PermitsLeakedMs,
	}
}

// MinContenders is how many distinct clients must contend for the lock in
// a fault's window for a safety claim over it to count as tested: a client
// contends when it visited in the window, or waited in it while another
// client was inside (an acquire the lock refused, that timed out or that
// was still waiting at the run's end: checker.WindowEvidence). With one,
// nobody but the holder wanted the lock while the fault acted. A lock that
// correctly refuses every other client while one holds shows its
// contention by those waiters. A scenario that sets min_visits: 1 asks for
// one visit and so for one contender.
const MinContenders = 2

// noEvidence says why run cannot support a safety claim, "" when it can:
// every planned fault applied without error, for each fault at least
// minVisits visits overlapped its window (inWindow, index as run.Faults)
// and at least MinContenders distinct clients contended in it, a run
// without faults made at least minVisits visits, and no resource call
// failed.
func noEvidence(run *report.Run, inWindow []checker.WindowEvidence, minVisits int) string {
	if minVisits <= 0 {
		minVisits = scenarios.DefaultMinVisits
	}
	contenders := min(MinContenders, minVisits)
	var why []string
	for i, f := range run.Faults {
		var ev checker.WindowEvidence
		if i < len(inWindow) {
			ev = inWindow[i]
		}
		switch {
		case f.Error != "":
			why = append(why, fmt.Sprintf("fault %d (%s %s) did not apply: %s", i, f.Type, f.Target, f.Error))
		case f.Exposed != nil && f.Setting && !allSettings(run.Faults):
			// in place before anyone entered: the other faults carry the claim
		case f.Exposed != nil:
			if w := exposureShort(i, f, minVisits); w != "" {
				why = append(why, w)
			}
		case ev.Visits < minVisits || ev.Contenders < contenders:
			w := evidenceWindow(run, f)
			why = append(why, fmt.Sprintf("%s in the window of fault %d (%s %s %.1fs-%.1fs, to a lease after its heal), min_visits %d, >= %d contenders",
				report.EvidenceString(ev.Visits, ev.Contenders, ev.Waiting), i, f.Type, f.Target, w.Start.Seconds(), w.End.Seconds(), minVisits, contenders))
		}
	}
	why = append(why, didNotBite(run)...)
	if len(run.Faults) == 0 && run.Visits < minVisits {
		why = append(why, fmt.Sprintf("%d visits, min_visits %d", run.Visits, minVisits))
	}
	if len(run.Faults) == 0 && run.Visits >= minVisits && run.KeyClients < contenders {
		why = append(why, fmt.Sprintf("no two clients visited the same lock key: nobody contended (>= %d contending clients needed)", contenders))
	}
	if n := run.Errors[workload.ErrResource]; n > 0 {
		why = append(why, fmt.Sprintf("%d resource-call errors: visits went unchecked", n))
	}
	return strings.Join(why, "; ")
}

// allSettings reports whether every fault of fs that applied is a setting
// (checker.Exposure.Setting): then none opened a race and the claim has
// nothing to rest on.
func allSettings(fs []report.FaultWindow) bool {
	for _, f := range fs {
		if f.Error == "" && !f.Setting {
			return false
		}
	}
	return true
}

// exposureShort says why fault i's exposure (checker.Exposure, in f) does
// not support a safety claim, "" when it does: the race opened and at
// least minVisits requests for the holder's key were sent while it was
// open, or the lock held its holder through the fault while at least
// minVisits were refused (docs/verdicts.md).
func exposureShort(i int, f report.FaultWindow, minVisits int) string {
	what := fmt.Sprintf("fault %d (%s %s)", i, f.Type, f.Target)
	switch {
	case *f.Exposed && f.ContendersInExposure >= minVisits, f.Held && f.ContendersInExposure >= minVisits:
		return ""
	case *f.Exposed:
		return fmt.Sprintf("%s: nobody tried while it mattered: %d same-key requests in the %.0f ms the race was open, min_visits %d",
			what, f.ContendersInExposure, f.ExposureMs, minVisits)
	case f.Held:
		return fmt.Sprintf("%s: the lock held %s through the fault, but only %d same-key requests were refused meanwhile, min_visits %d",
			what, f.Holder, f.ContendersInExposure, minVisits)
	}
	return fmt.Sprintf("%s: %s", what, f.ExposureNote)
}

func reasons(checks []scenarios.Check) string {
	var out []string
	seen := map[string]bool{}
	for _, c := range checks {
		if c.Verdict == checker.VerdictMet || seen[c.Reason] {
			continue
		}
		seen[c.Reason] = true
		if c.Verdict == checker.VerdictFailed {
			out = append(out, c.Line())
		} else {
			out = append(out, c.Reason)
		}
	}
	return strings.Join(out, "; ")
}

// verdictFields copies the checker's safety figures, overlap and
// incidents into out.
func verdictFields(out *report.Run, truth checker.Summary) {
	out.SafetyFigures = truth.SafetyFigures
	out.OverlapMsTotal = msf(truth.OverlapTotal)
	out.Promise = truth.Promise
	for _, in := range truth.IncidentList {
		out.IncidentEvents = append(out.IncidentEvents, report.IncidentEvent{
			Lock: in.Lock, StartS: in.Start.Seconds(), EndS: in.End.Seconds(),
			Clients: in.Clients, Pairs: in.Pairs, Fault: in.Fault,
		})
	}
}

// neverStarted are the fault windows of the faults of fs beyond the first
// started (the run ended before their time): each with an error, so no
// safety claim of the run reads as tested.
func neverStarted(fs []scenarios.Fault, started int) []report.FaultWindow {
	var out []report.FaultWindow
	for _, f := range fs[min(started, len(fs)):] {
		out = append(out, report.FaultWindow{Type: f.Type, Target: f.Node + f.Link + f.Isolate + f.Client,
			StartS: f.At.Seconds(), EndS: f.At.Seconds(), Error: "never started (the run ended first)"})
	}
	return out
}
