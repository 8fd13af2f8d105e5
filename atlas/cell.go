package atlas

import (
	"math"
	"slices"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/report"
)

// Cell verdicts (contract names: docs/atlas.md).
const (
	Safe                 = "safe"
	Unsafe               = "unsafe"
	UnsafeWithoutFencing = "unsafe-without-fencing"
	Inconclusive         = "inconclusive"
	// Held is a control cell that stayed safe: evidence that the lock rides
	// out a fault that cannot break it by design, not a safety claim.
	Held          = "held"
	NotApplicable = "not-applicable"
)

// RunSummary is what the atlas keeps of one run.
type RunSummary struct {
	Index   int    `json:"index"`
	Seed    int64  `json:"seed"`
	Dir     string `json:"dir"` // relative to the atlas folder
	Verdict string `json:"verdict"`
	Reason  string `json:"reason,omitempty"`
	Error   string `json:"error,omitempty"`
	Ops     int64  `json:"ops"`
	// SafetyFigures are the run's; non-zero duplicate_tokens,
	// token_regressions or zero_tokens mean the fencing source itself
	// broke.
	checker.SafetyFigures
	Rate       float64 `json:"rate"`                  // completed critical sections per second, whole run
	RateDuring float64 `json:"rate_during"`           // during the fault(s)
	RateAfter  float64 `json:"rate_after"`            // after the last heal (-1: nothing healed before the end)
	RecoveryS  float64 `json:"recovery_s"`            // last heal -> next completion (-1: none)
	FaultNotes string  `json:"fault_notes,omitempty"` // faults that did not apply or carried an error
	// VisitsAfter is the fewest visits begun after a fault's start, over
	// the faults after the first bucket (-1: no such fault).
	VisitsAfter int `json:"visits_after"`
	// Clients ran the workload; VisitsInWindow visits overlapped a fault
	// window, made by ContendersInWindow of them (0 in results that
	// predate the fields).
	Clients            int `json:"clients"`
	VisitsInWindow     int `json:"visits_in_window,omitempty"`
	ContendersInWindow int `json:"contenders_in_window,omitempty"`
	// Faults counts the run's faults, FaultsApplied those that neither
	// failed nor were seen not to bite.
	Faults        int `json:"faults"`
	FaultsApplied int `json:"faults_applied"`
	// AvailabilityDuringFault is the run's own completion rate during the
	// fault windows over its rate before the first fault (nil: not
	// measured).
	AvailabilityDuringFault *float64 `json:"availability_during_fault,omitempty"`
	// Exposure is "exposed" when every fault that applied opened its race,
	// "held" when each opened it or held a live holder and at least one
	// held, "" otherwise or in results that predate it; ExposureMs and
	// Requests are the least exposure and same-key requests over its faults.
	Exposure   string  `json:"exposure,omitempty"`
	ExposureMs float64 `json:"exposure_ms,omitempty"`
	Requests   int     `json:"contenders_in_exposure,omitempty"`
	// WithoutFault counts the run's incidents blamed on no fault
	// (report.BlameOf): the lock broke with no fault to blame.
	WithoutFault int `json:"incidents_without_fault,omitempty"`
	// ZombieMsP50 and ZombieMsMax are the run's median and longest time
	// from a lease lost on the server to its holder learning it (absent:
	// no lost lease, or a result that predates them).
	ZombieMsP50 *float64 `json:"zombie_ms_p50,omitempty"`
	ZombieMsMax *float64 `json:"zombie_ms_max,omitempty"`
	// PermitsLeakedMs is a semaphore run's permits_leaked_ms (nil: not
	// a semaphore, or not measured).
	PermitsLeakedMs *float64 `json:"permits_leaked_ms,omitempty"`
}

// CellResult is one (lock, family) cell of the atlas.
type CellResult struct {
	Lock    string `json:"lock"`
	Family  string `json:"family"`
	Verdict string `json:"verdict"`
	// Role is "claim" (the fault can, by the lock's design, let a second
	// client in) or "control" (it cannot: ControlWhy says why); a control
	// that stayed safe reads Held.
	Role          string `json:"role"`
	ControlWhy    string `json:"control_why,omitempty"`
	NotApplicable string `json:"not_applicable,omitempty"`
	Fences        bool   `json:"fences"`
	Runs          int    `json:"runs"`
	// RunsWithIncidents are the runs with at least one incident; Rate is
	// their share with its Wilson 95% interval [RateLow, RateHigh].
	RunsWithIncidents int `json:"runs_with_incidents"`
	// Missing counts planned runs with no complete result (not run yet,
	// interrupted, timed out): such a cell is at best inconclusive.
	Missing  int     `json:"missing_runs"`
	Rate     float64 `json:"rate"`
	RateLow  float64 `json:"rate_low"`
	RateHigh float64 `json:"rate_high"`
	// SafetyFigures sum the runs': non-zero duplicate_tokens,
	// token_regressions or zero_tokens mean the fencing source itself
	// broke, which no resource-side check can repair (the cell is unsafe).
	checker.SafetyFigures
	// Basis is the sentence saying what the cell's claim rests on ("safe:
	// 5 of 5 runs with the fault applied, 212 visits in the window, 2-4
	// contenders").
	Basis string `json:"basis"`
	// AvailabilityDuringFault is the mean of the runs' own availability
	// during the fault (nil when no run measured it); AvailDuring is the
	// older measure against the baseline cell.
	AvailabilityDuringFault *float64 `json:"availability_during_fault,omitempty"`
	// AvailDuring and AvailAfter are the completion rate during and after
	// the fault relative to the lock's baseline cell (1 = as fast; -1 =
	// unknown: no baseline, or nothing healed).
	AvailDuring float64 `json:"availability_during"`
	AvailAfter  float64 `json:"availability_after"`
	// RecoveryS is the mean time from the fault's heal to the next
	// completed critical section, over runs where both happened (-1: none).
	RecoveryS float64 `json:"recovery_s"`
	// WithoutFault sums the runs' incidents blamed on no fault.
	WithoutFault int `json:"incidents_without_fault,omitempty"`
	// ZombieMsP50 is the median of the runs' zombie_ms_p50 over the runs
	// that lost a lease, ZombieMsMax the longest over every run (both
	// absent when no run lost one).
	ZombieMsP50 *float64 `json:"zombie_ms_p50,omitempty"`
	ZombieMsMax *float64 `json:"zombie_ms_max,omitempty"`
	// PermitsLeakedMs is the most permits_leaked_ms of the cell's runs
	// (nil when none measured it: not a semaphore).
	PermitsLeakedMs *float64 `json:"permits_leaked_ms,omitempty"`
	// Reproduce re-runs one violating run (unsafe cells).
	Reproduce string       `json:"reproduce,omitempty"`
	RunList   []RunSummary `json:"run_list"`
}

// Roles of CellResult.Role.
const (
	RoleClaim   = "claim"
	RoleControl = "control"
)

// Wilson returns the Wilson score 95% interval of k successes in n trials.
func Wilson(k, n int) (lo, hi float64) {
	if n == 0 {
		return 0, 1
	}
	const z = 1.959963984540054
	p, nf := float64(k)/float64(n), float64(n)
	den := 1 + z*z/nf
	mid := (p + z*z/(2*nf)) / den
	half := z * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf)) / den
	return math.Max(0, mid-half), math.Min(1, mid+half)
}

// summarize reads one run of a result folder.
func summarize(res *report.Result, index int, dir string) RunSummary {
	s := RunSummary{Index: index, Seed: res.Seed, Dir: dir, Verdict: res.Verdict, RateAfter: -1, RecoveryS: -1, VisitsAfter: -1}
	if len(res.Runs) == 0 {
		s.Error = "no run recorded"
		if res.Interrupted != "" {
			s.Error = res.Interrupted
		}
		return s
	}
	r := res.Runs[0]
	s.Verdict, s.Reason, s.Error = r.Verdict, r.VerdictReason, r.Error
	s.Ops, s.SafetyFigures = r.Ops, r.SafetyFigures
	s.Clients, s.VisitsInWindow, s.ContendersInWindow = r.Clients, r.VisitsInWindow, r.ContendersInWindow
	s.AvailabilityDuringFault = r.AvailabilityDuringFault
	s.ZombieMsP50, s.ZombieMsMax = r.ZombieMsP50, r.ZombieMsMax
	s.PermitsLeakedMs = r.PermitsLeakedMs
	s.Faults = len(r.Faults)
	for _, f := range r.Faults {
		switch {
		case f.Error != "":
			s.FaultNotes += f.Type + " " + f.Target + ": " + f.Error + "; "
		case f.Bit != nil && !*f.Bit:
			s.FaultNotes += f.Type + " " + f.Target + ": did not bite (" + f.Observed + "); "
		default:
			s.FaultsApplied++
		}
	}
	availability(&s, r)
	exposureOf(&s, r)
	s.WithoutFault = report.BlameOf(&r).Free()
	return s
}

// exposureOf sets s's exposure figures from r's faults.
func exposureOf(s *RunSummary, r report.Run) {
	exposed, held, first := 0, 0, true
	for _, f := range r.Faults {
		if f.Error != "" || f.Exposed == nil {
			continue
		}
		switch {
		case *f.Exposed:
			exposed++
		case f.Held:
			held++
		default:
			s.Exposure = ""
			return
		}
		if first || f.ExposureMs < s.ExposureMs {
			s.ExposureMs = f.ExposureMs
		}
		if first || f.ContendersInExposure < s.Requests {
			s.Requests = f.ContendersInExposure
		}
		first = false
	}
	switch {
	case held > 0:
		s.Exposure = "held"
	case exposed > 0:
		s.Exposure = "exposed"
	}
}

// availability measures completion rates from the run's timeline: over
// the run, within the fault windows (first start to last end), after the
// last heal, and the time from that heal to the next completion.
func availability(s *RunSummary, r report.Run) {
	w := float64(r.TimelineBucketMs) / 1000
	if w <= 0 || len(r.Timeline) == 0 {
		return
	}
	// The timeline stops at the last bucket with an event: the run's
	// duration is its end.
	end := math.Max(r.DurationS, w*float64(len(r.Timeline)))
	rate := func(from, to float64) float64 {
		var n int64
		for i, b := range r.Timeline {
			t := w * float64(i)
			if t >= from && t < to {
				n += b.Completions
			}
		}
		if to <= from {
			return 0
		}
		return float64(n) / (to - from)
	}
	s.Rate = rate(0, end)
	var faults []report.FaultWindow
	for _, f := range r.Faults {
		// A fault from the start (a delayed replication link) is part of
		// the topology, not the event measured.
		if f.StartS > w {
			faults = append(faults, f)
			if s.VisitsAfter < 0 || f.VisitsAfter < s.VisitsAfter {
				s.VisitsAfter = f.VisitsAfter
			}
		}
	}
	if len(faults) == 0 {
		s.RateDuring, s.RateAfter = s.Rate, s.Rate
		return
	}
	from, to := faults[0].StartS, faults[0].EndS
	for _, f := range faults {
		from, to = math.Min(from, f.StartS), math.Max(to, f.EndS)
	}
	healed := to < end-w
	if !healed {
		to = end
	}
	s.RateDuring = rate(from, to)
	if !healed {
		return
	}
	s.RateAfter = rate(to, end)
	for i, b := range r.Timeline {
		if t := w * float64(i); t+w > to && b.Completions > 0 {
			s.RecoveryS = math.Max(0, t-to)
			break
		}
	}
}

// judge sets a cell's counts and verdict from its runs.
func judge(c *CellResult, base float64) {
	c.Runs = len(c.RunList)
	var during, after, rec, avail, zombies []float64
	inconclusive := false
	for _, r := range c.RunList {
		if r.Incidents > 0 {
			c.RunsWithIncidents++
		}
		c.SafetyFigures.Add(r.SafetyFigures)
		c.WithoutFault += r.WithoutFault
		if r.AvailabilityDuringFault != nil {
			avail = append(avail, *r.AvailabilityDuringFault)
		}
		if r.ZombieMsP50 != nil {
			zombies = append(zombies, *r.ZombieMsP50)
		}
		if r.Verdict == checker.VerdictInconclusive || r.Error != "" || r.Verdict == "" {
			inconclusive = true
		}
		during = append(during, r.RateDuring)
		if r.RateAfter >= 0 {
			after = append(after, r.RateAfter)
		}
		if r.RecoveryS >= 0 {
			rec = append(rec, r.RecoveryS)
		}
	}
	if c.Runs > 0 {
		c.Rate = float64(c.RunsWithIncidents) / float64(c.Runs)
	}
	c.RateLow, c.RateHigh = Wilson(c.RunsWithIncidents, c.Runs)
	c.AvailDuring, c.AvailAfter, c.RecoveryS = relative(during, base), relative(after, base), mean(rec)
	if len(avail) > 0 {
		m := mean(avail)
		c.AvailabilityDuringFault = &m
	}
	if len(zombies) > 0 {
		m := median(zombies)
		c.ZombieMsP50 = &m
	}
	c.ZombieMsMax = largest(c.RunList, func(r RunSummary) *float64 { return r.ZombieMsMax })
	c.PermitsLeakedMs = largest(c.RunList, func(r RunSummary) *float64 { return r.PermitsLeakedMs })
	switch {
	case c.NotApplicable != "":
		c.Verdict = NotApplicable
	case c.LockFaults > 0 || tokensBroke(c.SafetyFigures):
		c.Verdict = Unsafe
	case c.RunsWithIncidents > 0 || c.LostUpdates > 0 || c.StaleAccepted > 0:
		c.Verdict = UnsafeWithoutFencing
	case inconclusive || c.Runs == 0 || c.Missing > 0:
		c.Verdict = Inconclusive
	case c.Role == RoleControl:
		c.Verdict = Held
	default:
		c.Verdict = Safe
	}
	c.Basis = basis(c)
}

// tokensBroke reports whether figures show a broken fencing source:
// duplicate tokens, token regressions, or grants without a token from a
// lock that reports fencing (zero_tokens).
func tokensBroke(f checker.SafetyFigures) bool {
	return f.DuplicateTokens > 0 || f.TokenRegressions > 0 || f.ZeroTokens > 0
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return -1
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// largest is the largest value of field among runs, nil when no run has
// one (a figure the run did not measure, or results that predate it).
func largest(runs []RunSummary, field func(RunSummary) *float64) *float64 {
	var most *float64
	for _, r := range runs {
		if v := field(r); v != nil && (most == nil || *v > *most) {
			x := *v
			most = &x
		}
	}
	return most
}

// median of xs (the mean of the middle two for an even count), xs not
// empty.
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

func relative(xs []float64, base float64) float64 {
	m := mean(xs)
	if m < 0 || base <= 0 {
		return -1
	}
	return m / base
}
