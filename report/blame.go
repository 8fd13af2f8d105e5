package report

import (
	"fmt"
	"strings"
)

// Blame is which incidents of a run a fault can have caused
// (docs/verdicts.md, "Which fault an incident is blamed on"): an incident
// is blamed on a fault when it started within the fault's blame window
// (BlameWindow); otherwise it happened without any fault.
type Blame struct {
	// Lock and Client count the incidents blamed on a fault, by class;
	// FreeLock and FreeClient those without any fault. Incidents of a
	// result that lists fewer incident_events than it counts (an older
	// result) are blamed on its faults, as they were before.
	Lock, Client         int
	FreeLock, FreeClient int
	// FirstFreeS is when the first incident without any fault started
	// (-1: none).
	FirstFreeS float64
	// Faults names the faults blamed for at least one incident
	// ("pause-client client-1"), in their order; LockBy those blamed for a
	// lock fault, ClientBy for a client fault.
	Faults, LockBy, ClientBy []string
}

// Free is the number of incidents without any fault.
func (b Blame) Free() int { return b.FreeLock + b.FreeClient }

// BlameWindow is the interval, in seconds of the run, in which an
// incident is blamed on fault f: from the fault's start to one lease (the
// run's ttl) after its heal, extended to the end of its exposure when the
// result locates it (from lost_at_s, exposure_ms long). A lock's harm
// from a fault shows within a lease of its heal or never (a paused holder
// writes at the heal, a lost key is granted again while the holder's
// promise still runs); it is the window the evidence of the fault is
// counted in too. ok is false for a fault that failed or was seen not to
// bite: it changed nothing, so nothing is blamed on it.
func BlameWindow(run *Run, f FaultWindow) (from, to float64, ok bool) {
	if f.Error != "" || f.Bit != nil && !*f.Bit {
		return 0, 0, false
	}
	from, to = f.StartS, max(f.EndS, f.StartS)+run.TTLMs/1000
	if f.ExposureEndS > 0 {
		to = max(to, f.ExposureEndS)
	}
	if f.LostAtS != nil && f.Exposed != nil && *f.Exposed {
		to = max(to, *f.LostAtS+f.ExposureMs/1000)
	}
	return from, to, true
}

// BlameOf attributes run's incidents to its faults.
func BlameOf(run *Run) Blame {
	b := Blame{FirstFreeS: -1}
	blamed := make([]bool, len(run.Faults))
	for _, in := range run.IncidentEvents {
		hit := false
		for i, f := range run.Faults {
			if from, to, ok := BlameWindow(run, f); ok && in.StartS >= from && in.StartS <= to {
				hit, blamed[i] = true, true
				name := strings.TrimSpace(f.Type + " " + f.Target)
				if in.Fault == "lock" {
					b.LockBy = appendUniq(b.LockBy, name)
				} else {
					b.ClientBy = appendUniq(b.ClientBy, name)
				}
			}
		}
		switch {
		case hit && in.Fault == "lock":
			b.Lock++
		case hit:
			b.Client++
		case in.Fault == "lock":
			b.FreeLock++
		default:
			b.FreeClient++
		}
		if !hit && (b.FirstFreeS < 0 || in.StartS < b.FirstFreeS) {
			b.FirstFreeS = in.StartS
		}
	}
	// Incidents counted but not listed (results before incident_events)
	// keep the old reading: under the run's faults, if it had any.
	lock, client := max(0, run.LockFaults-b.Lock-b.FreeLock), max(0, run.ClientFaults-b.Client-b.FreeClient)
	if anyApplied(run) {
		b.Lock, b.Client = b.Lock+lock, b.Client+client
	} else {
		b.FreeLock, b.FreeClient = b.FreeLock+lock, b.FreeClient+client
	}
	for i, f := range run.Faults {
		if blamed[i] {
			b.Faults = appendUniq(b.Faults, strings.TrimSpace(f.Type+" "+f.Target))
		}
	}
	if len(b.Faults) == 0 && b.Lock+b.Client > 0 {
		b.Faults = []string{faultTypes(run)}
	}
	if len(b.LockBy) == 0 && b.Lock > 0 {
		b.LockBy = b.Faults
	}
	if len(b.ClientBy) == 0 && b.Client > 0 {
		b.ClientBy = b.Faults
	}
	return b
}

// anyApplied reports whether a fault of run applied and was not seen to
// miss.
func anyApplied(run *Run) bool {
	for _, f := range run.Faults {
		if _, _, ok := BlameWindow(run, f); ok {
			return true
		}
	}
	return false
}

func appendUniq(ss []string, s string) []string {
	for _, x := range ss {
		if x == s {
			return ss
		}
	}
	return append(ss, s)
}

// The four answers a run's first line gives (Headline), and the one for a
// claim without evidence.
const (
	BrokenWithoutFaults  = "broken without faults"
	BrokenByFault        = "broken by a fault (lock fault)"
	UnsafeNoFencing      = "unsafe without fencing"
	AnswerSafe           = "safe"
	AnswerInconclusive   = "inconclusive"
	AnswerNotMeasured    = "not measured"
	withoutAnyFaultWords = "without any fault"
)

// Answer is a run's answer in one of the words above: broken without
// faults (an incident outside every fault's blame window, or in a run
// without faults; a fencing source that broke in a run without faults),
// broken by a fault (a lock fault blamed on a fault, or a fencing source
// that broke under one), unsafe without fencing (only client faults, lost
// updates or stale writes accepted, under a fault), inconclusive (no
// damage, no evidence), safe; not measured when the run failed.
func Answer(run *Run) string {
	b := BlameOf(run)
	switch {
	case run.Error != "":
		return AnswerNotMeasured
	case b.Free() > 0, !anyApplied(run) && (tokensBroke(run) || run.Violations > 0 || run.LostUpdates > 0 || run.StaleAccepted > 0):
		return BrokenWithoutFaults
	case b.Lock > 0 || tokensBroke(run), run.Incidents == 0 && run.Violations > 0:
		return BrokenByFault
	case b.Client > 0 || run.LostUpdates > 0 || run.StaleAccepted > 0:
		return UnsafeNoFencing
	case SafetyClass(run) == SafetyInconclusive:
		return AnswerInconclusive
	}
	return AnswerSafe
}

// Headline is a run's first line: its Answer and what it rests on,
// "broken without faults: 7 lock faults without any fault, the first at
// 0.008 s (before the first fault, at 2 s)".
func Headline(run *Run) string {
	a := Answer(run)
	b := BlameOf(run)
	switch a {
	case AnswerNotMeasured:
		return a + ": the run failed"
	case BrokenWithoutFaults:
		return a + ": " + freeText(run, b)
	case BrokenByFault:
		if b.Lock == 0 {
			return a + ": " + tokenText(run) + " under " + faultTypes(run)
		}
		return fmt.Sprintf("%s: %s under %s", a, plural(b.Lock, "lock fault"), strings.Join(b.LockBy, ", "))
	case UnsafeNoFencing:
		if b.Client == 0 {
			return fmt.Sprintf("%s: %s, %s accepted under %s", a, plural(run.LostUpdates, "lost update"), plural(run.StaleAccepted, "stale write"), faultTypes(run))
		}
		return fmt.Sprintf("%s: %s under %s (a holder outlived its promise; fencing repairs this)", a, plural(b.Client, "client fault"), strings.Join(b.ClientBy, ", "))
	case AnswerInconclusive:
		return a + ": no incident, but too little evidence"
	}
	if len(run.Faults) == 0 {
		return a + ": no incident (no fault in this run)"
	}
	return a + ": no incident under " + faultTypes(run)
}

// freeText says what broke without any fault: the incidents outside every
// fault's window, when the first started, and where the first fault
// started.
func freeText(run *Run, b Blame) string {
	var parts []string
	if b.FreeLock > 0 {
		parts = append(parts, plural(b.FreeLock, "lock fault"))
	}
	if b.FreeClient > 0 {
		parts = append(parts, plural(b.FreeClient, "client fault"))
	}
	if len(parts) == 0 {
		switch {
		case tokensBroke(run):
			return tokenText(run) + " in a run without faults"
		case run.Violations > 0:
			return plural(run.Violations, "violation") + " in a run without faults"
		}
		return fmt.Sprintf("%s, %s accepted in a run without faults", plural(run.LostUpdates, "lost update"), plural(run.StaleAccepted, "stale write"))
	}
	s := strings.Join(parts, " and ") + " " + withoutAnyFaultWords
	if b.FirstFreeS >= 0 {
		s += fmt.Sprintf(", the first at %.3f s", b.FirstFreeS)
	}
	if first, ok := firstFaultS(run); ok {
		s += fmt.Sprintf(" (first fault at %.3g s)", first)
	} else {
		s += " (no fault in this run)"
	}
	if b.Lock+b.Client > 0 {
		s += fmt.Sprintf("; %s during %s", plural(b.Lock+b.Client, "more incident"), strings.Join(b.Faults, ", "))
	}
	return s
}

// tokenText counts what broke in the fencing source.
func tokenText(run *Run) string {
	parts := []string{}
	if run.DuplicateTokens > 0 {
		parts = append(parts, plural(run.DuplicateTokens, "duplicate token"))
	}
	if run.TokenRegressions > 0 {
		parts = append(parts, plural(run.TokenRegressions, "token regression"))
	}
	if run.ZeroTokens > 0 {
		parts = append(parts, plural(run.ZeroTokens, "grant")+" without a token")
	}
	if len(parts) == 0 {
		return plural(run.Violations, "violation")
	}
	return "the fencing source broke (" + strings.Join(parts, ", ") + ")"
}

// firstFaultS is the start of the run's first fault that applied.
func firstFaultS(run *Run) (float64, bool) {
	first, ok := 0.0, false
	for _, f := range run.Faults {
		if _, _, applied := BlameWindow(run, f); applied && (!ok || f.StartS < first) {
			first, ok = f.StartS, true
		}
	}
	return first, ok
}

// ResultHeadline is the first line of a result over its runs: the worst
// answer, in the order broken without faults, broken by a fault, unsafe
// without fencing, inconclusive, safe, and the runs it holds for
// ("broken without faults (1 of 2 runs): redis-checkset: 7 lock faults
// without any fault, ...").
func ResultHeadline(r *Result) string {
	order := []string{BrokenWithoutFaults, BrokenByFault, UnsafeNoFencing, AnswerNotMeasured, AnswerInconclusive, AnswerSafe}
	for _, a := range order {
		var hits []int
		for i := range r.Runs {
			if Answer(&r.Runs[i]) == a {
				hits = append(hits, i)
			}
		}
		if len(hits) == 0 {
			continue
		}
		run := &r.Runs[hits[0]]
		if len(r.Runs) == 1 {
			return Headline(run)
		}
		return fmt.Sprintf("%s (%d of %d runs): %s: %s", a, len(hits), len(r.Runs), RunLabel(*run),
			strings.TrimPrefix(Headline(run), a+": "))
	}
	return "no run"
}
