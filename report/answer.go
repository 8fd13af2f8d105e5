package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/locklab/locklab/checker"
)

// FencingSourceBroke is what duplicate tokens and token regressions mean:
// the lock handed out a token that does not order the holders, so a
// resource comparing tokens accepts the wrong holder.
const FencingSourceBroke = "the fencing source itself broke: no resource-side check can repair this"

// answerSection opens a report with its answer: per lock one row saying
// under which faults of this run it stayed safe, whether it fences, its
// throughput, acquire p99, availability during the fault and a one-line
// reading, before any detail.
func answerSection(d *doc, r *Result) {
	d.h(2, "Summary")
	t := &docTable{
		head: []string{"lock", "safety", "fencing", "ops/s", "acq p99 ms", "availability during fault", "verdict", "reading"},
		num:  []bool{false, false, false, true, true, true, false, false},
	}
	sweep := isSweep(groupSeries(r.Runs))
	for i := range r.Runs {
		run := &r.Runs[i]
		safety, cls := runSafety(run)
		t.addClass(cls, runLabel(run, sweep), safety, fencingOf(run, r.Fencing), fmtNum(run.Throughput),
			latMs(run.Acquire, run.Acquire.P99Ms), availabilityString(run.AvailabilityDuringFault),
			orDash(RunVerdict(run)), Reading(run))
	}
	d.tab(t)
	d.p("Safety: the faults this run applied and whether the lock kept mutual exclusion under them. Availability: completions per second during the fault windows over the rate before the first fault (- when not measured). Verdict: the scenario's expectations, met / failed / inconclusive.")
}

// Safety classes of a run, the atlas's words for its cells.
const (
	SafetySafe                 = "safe"
	SafetyUnsafe               = "unsafe"
	SafetyUnsafeWithoutFencing = "unsafe-without-fencing"
	SafetyInconclusive         = "inconclusive"
)

// SafetyClass is what a run showed: unsafe (a lock fault, or fencing
// tokens that do not order the holders: nothing repairs it), unsafe
// without fencing (client faults, lost updates or stale writes accepted:
// fencing repairs them), inconclusive (no damage but no evidence either),
// or safe; "" when the run failed.
func SafetyClass(run *Run) string {
	switch {
	case run.Error != "":
		return ""
	case run.LockFaults > 0 || tokensBroke(run),
		run.Incidents == 0 && run.Violations > 0:
		return SafetyUnsafe
	case run.Incidents > 0 || run.LostUpdates > 0 || run.StaleAccepted > 0:
		return SafetyUnsafeWithoutFencing
	case RunVerdict(run) == checker.VerdictInconclusive:
		return SafetyInconclusive
	}
	return SafetySafe
}

// runSafety is the safety column of the summary and the row's class.
func runSafety(run *Run) (string, string) {
	faults := FaultNames(run)
	under := "(no fault in this run)"
	switch {
	case Answer(run) == BrokenWithoutFaults && len(faults) > 0:
		under = withoutAnyFaultWords + " (faults: " + strings.Join(faults, ", ") + ")"
	case len(faults) > 0:
		under = "under " + strings.Join(faults, ", ")
	}
	switch c := SafetyClass(run); c {
	case "":
		return "not measured: the run failed", "bad"
	case SafetyUnsafe, SafetyUnsafeWithoutFencing:
		return c + " " + under, "bad"
	case SafetyInconclusive:
		return c + " " + under, "inconclusive"
	default:
		return c + " " + under, ""
	}
}

// FaultNames are the distinct faults a run applied ("failover redis-0"),
// marked when they failed or were seen not to bite.
func FaultNames(run *Run) []string {
	var out []string
	for _, f := range run.Faults {
		s := strings.TrimSpace(f.Type + " " + f.Target)
		switch {
		case f.Error != "":
			s += " (failed)"
		case f.Bit != nil && !*f.Bit:
			s += " (did not bite)"
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// faultTypes are the distinct fault types a run applied successfully.
func faultTypes(run *Run) string {
	var out []string
	for _, f := range run.Faults {
		if f.Error == "" && !slices.Contains(out, f.Type) {
			out = append(out, f.Type)
		}
	}
	if len(out) == 0 {
		return "no fault"
	}
	return strings.Join(out, " + ")
}

func fencingOf(run *Run, mode string) string {
	if !run.Fences {
		return "no tokens"
	}
	if mode == "" || mode == "off" {
		return "tokens (resource does not check)"
	}
	return "tokens (resource: " + mode + ")"
}

func availabilityString(a *float64) string {
	if a == nil {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100**a)
}

// Reading is one line a design reviewer reads of a run: what broke, under
// which fault, and whether fencing repairs it.
func Reading(run *Run) string {
	under := "under " + faultTypes(run)
	b := BlameOf(run)
	if len(b.Faults) > 0 {
		under = "under " + strings.Join(b.Faults, ", ")
	}
	broke := ""
	if tokensBroke(run) {
		counts := plural(run.DuplicateTokens, "duplicate token") + ", " + plural(run.TokenRegressions, "token regression")
		if run.ZeroTokens > 0 {
			counts += ", " + plural(run.ZeroTokens, "grant") + " without a token"
		}
		broke = fmt.Sprintf("the fencing source itself broke (%s): no resource-side check can repair this", counts)
	}
	var s string
	switch {
	case run.Error != "":
		return "no reading: the run failed (" + run.Error + ")"
	case b.Free() > 0:
		s = BrokenWithoutFaults + ": " + freeText(run, b) + " — it fails with no fault to blame"
		if b.FreeLock > 0 || b.Lock > 0 {
			s += "; fencing cannot repair a lock fault"
		}
	case run.LockFaults > 0:
		s = fmt.Sprintf("unsafe: %s %s — the lock granted twice; fencing cannot repair this", plural(run.LockFaults, "lock fault"), under)
	case run.ClientFaults > 0 && broke != "":
		s = fmt.Sprintf("unsafe: %s %s — a holder outlived its promise; fencing would repair this, but %s", plural(run.ClientFaults, "client fault"), under, broke)
		return s
	case run.ClientFaults > 0 && run.ChangedReads > 0:
		s = fmt.Sprintf("unsafe: %s %s — %s saw the value change while reading; fencing cannot repair this (a reader writes nothing to reject)",
			plural(run.ClientFaults, "client fault"), under, plural(run.ChangedReads, "reader"))
	case run.ClientFaults > 0 && run.Fences && run.StaleAccepted == 0 && run.LostUpdates == 0:
		s = fmt.Sprintf("safe only with fencing: %s %s — a holder outlived its promise; its stale writes carry an older token the resource can reject", plural(run.ClientFaults, "client fault"), under)
	case run.ClientFaults > 0:
		s = fmt.Sprintf("unsafe without fencing: %s %s — a holder outlived its promise; fencing repairs this", plural(run.ClientFaults, "client fault"), under)
	case run.Incidents == 0 && run.Violations > 0:
		s = fmt.Sprintf("unsafe: %s %s", plural(run.Violations, "violation"), under)
	case run.LostUpdates > 0 || run.StaleAccepted > 0:
		s = fmt.Sprintf("unsafe: %s, %s accepted %s", plural(run.LostUpdates, "lost update"), plural(run.StaleAccepted, "stale write"), under)
	case RunVerdict(run) == checker.VerdictInconclusive:
		s = "inconclusive: no incident, but too little evidence"
		if run.VerdictReason != "" {
			s += " (" + run.VerdictReason + ")"
		}
	case len(run.Faults) == 0:
		s = "safe: no incident (no fault in this run)"
	default:
		s = "safe: no incident " + under
		if run.VisitsInWindow > 0 {
			s += ", " + EvidenceString(run.VisitsInWindow, run.ContendersInWindow, run.WaitingInWindow) + " in the fault window"
		}
	}
	if broke != "" {
		s += "; " + broke
	}
	return s
}

// tokensBroke reports whether the run's fencing tokens do not order its
// holders: duplicates, regressions, or grants of a lock that reports
// fencing without a token (which pass any resource-side check unchecked).
func tokensBroke(run *Run) bool {
	return run.DuplicateTokens > 0 || run.TokenRegressions > 0 || run.ZeroTokens > 0
}

// plural is "1 visit", "2 visits".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
