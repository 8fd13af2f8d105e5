package scenarios

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/locklab/locklab/checker"
)

// Condition is one expectation on a count or a measured figure, parsed
// from "N", ">N", ">=N", "<N", "<=N" or "==N" (a bare N means ==N). N is a
// whole number for counts (ParseCondition) and a real number for the
// performance gates (ParseRealCondition); both go through one parser.
type Condition struct {
	Op string // "==", ">", ">=", "<", "<="
	N  float64
}

const (
	conditionHint     = `use 0, N, ">0", ">=N", "<N", "<=N" or "==N"`
	realConditionHint = `use N, ">N", ">=N", "<N", "<=N" or "==N"`
)

// wholeRE and realRE are how N is written: digits, and for real
// conditions an optional fraction (no sign, exponent, inf or nan).
var (
	wholeRE = regexp.MustCompile(`^[0-9]+$`)
	realRE  = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`)
)

// ParseCondition parses a condition on a count as written in expect:.
// Spaces around the operator are allowed; N must be a non-negative
// integer, and a condition no count can meet ("<0") is an error.
func ParseCondition(s string) (Condition, error) { return parseCondition(s, false) }

// ParseRealCondition parses a condition on a measured figure (a
// performance gate: ">=5000", "<=20", ">0.5"): as ParseCondition, with N
// any non-negative decimal number.
func ParseRealCondition(s string) (Condition, error) { return parseCondition(s, true) }

func parseCondition(s string, real bool) (Condition, error) {
	hint, re := conditionHint, wholeRE
	if real {
		hint, re = realConditionHint, realRE
	}
	t := strings.TrimSpace(s)
	c := Condition{Op: "=="}
	for _, op := range []string{">=", "<=", "==", ">", "<"} {
		if rest, ok := strings.CutPrefix(t, op); ok {
			c.Op, t = op, strings.TrimSpace(rest)
			break
		}
	}
	n, err := strconv.ParseFloat(t, 64)
	if !re.MatchString(t) || err != nil {
		return Condition{}, fmt.Errorf("%q is not a condition (%s)", s, hint)
	}
	c.N = n
	if c.Op == "<" && n == 0 {
		what := "counts"
		if real {
			what = "measured figures"
		}
		return Condition{}, fmt.Errorf("%q can never hold: %s are >= 0", s, what)
	}
	return c, nil
}

// Check reports whether the count v meets the condition.
func (c Condition) Check(v int) bool { return c.CheckReal(float64(v)) }

// CheckReal reports whether the figure v meets the condition.
func (c Condition) CheckReal(v float64) bool {
	switch c.Op {
	case ">":
		return v > c.N
	case ">=":
		return v >= c.N
	case "<":
		return v < c.N
	case "<=":
		return v <= c.N
	default:
		return v == c.N
	}
}

// String returns the canonical spelling: "N" for ==N, else op and N (">0",
// ">=0.5").
func (c Condition) String() string {
	n := strconv.FormatFloat(c.N, 'f', -1, 64)
	if c.Op == "==" || c.Op == "" {
		return n
	}
	return c.Op + n
}

// Counts are the safety and error counts of one run that expectations are
// checked against (result fields of docs/results.md).
type Counts struct {
	checker.SafetyFigures
	Errors int // all kinds together
	// PeakHolders is the most visits inside one lock at once.
	PeakHolders int

	// Performance figures of the run, for the gates; nil when the run did
	// not measure one (no acquisition, no hand-off, no fault window, or
	// nothing completed before the first fault).
	Throughput              *float64 // completed operations per second
	AcquireP50Ms            *float64
	AcquireP99Ms            *float64
	HandoffP50Ms            *float64
	AvailabilityDuringFault *float64 // see Expect.AvailabilityDuringFault
	PermitsLeakedMs         *float64 // see Expect.PermitsLeakedMs
}

// DefaultMinVisits is the default of expect's min_visits.
const DefaultMinVisits = 3

// Check is one evaluated condition.
type Check struct {
	Field string
	Want  string // the condition, canonical
	// Got is the count, or a gate's figure rounded to a whole number;
	// Value is the figure itself (the count for a count).
	Got     int
	Value   float64
	Verdict string // checker.VerdictMet, VerdictFailed or VerdictInconclusive
	// Reason says why, when not met: "got 3, want 0" for a count, the
	// figure with its unit for a gate ("throughput 3120.5 ops/s, want
	// >=5000"), or why the claim has no evidence.
	Reason string
}

// field returns the condition field of e named as in expect:, nil for an
// unknown name (min_visits is not a condition).
func (e *Expect) field(name string) *string {
	switch name {
	case "violations":
		return &e.Violations
	case "stale_tokens":
		return &e.StaleTokens
	case "stale_rejected":
		return &e.StaleRejected
	case "stale_accepted":
		return &e.StaleAccepted
	case "lost_updates":
		return &e.LostUpdates
	case "errors":
		return &e.Errors
	case "incidents":
		return &e.Incidents
	case "lock_faults":
		return &e.LockFaults
	case "client_faults":
		return &e.ClientFaults
	case "duplicate_tokens":
		return &e.DuplicateTokens
	case "token_regressions":
		return &e.TokenRegressions
	case "zero_tokens":
		return &e.ZeroTokens
	case "changed_reads":
		return &e.ChangedReads
	case "peak_holders":
		return &e.PeakHolders
	case "throughput":
		return &e.Throughput
	case "acquire_p50_ms":
		return &e.AcquireP50Ms
	case "acquire_p99_ms":
		return &e.AcquireP99Ms
	case "handoff_p50_ms":
		return &e.HandoffP50Ms
	case "availability_during_fault":
		return &e.AvailabilityDuringFault
	case "permits_leaked_ms":
		return &e.PermitsLeakedMs
	}
	return nil
}

// gate describes one performance gate of expect: its unit as printed
// after the figure, and why the figure can be missing.
type gate struct {
	unit, missing string
}

// gates are the performance fields of expect: conditions on real numbers,
// judged met or failed, never inconclusive (they need no fault).
var gates = map[string]gate{
	"throughput":                {" ops/s", "no run time"},
	"acquire_p50_ms":            {" ms", "no acquisition completed"},
	"acquire_p99_ms":            {" ms", "no acquisition completed"},
	"handoff_p50_ms":            {" ms", "no hand-off: no client was waiting when a holder left"},
	"availability_during_fault": {"", "no fault window, or nothing completed before the first fault"},
	"permits_leaked_ms":         {" ms", "not a semaphore"},
}

// IsGate reports whether the expect field name is a performance gate (a
// condition on a real number) rather than a count.
func IsGate(name string) bool { _, ok := gates[name]; return ok }

func (c Counts) figure(name string) *float64 {
	switch name {
	case "throughput":
		return c.Throughput
	case "acquire_p50_ms":
		return c.AcquireP50Ms
	case "acquire_p99_ms":
		return c.AcquireP99Ms
	case "handoff_p50_ms":
		return c.HandoffP50Ms
	case "availability_during_fault":
		return c.AvailabilityDuringFault
	case "permits_leaked_ms":
		return c.PermitsLeakedMs
	}
	return nil
}

// evalGate judges one performance gate: met or failed, with the figure in
// the reason; a figure the run did not measure fails the gate.
func evalGate(name, want string, c Counts) Check {
	ch := Check{Field: name, Want: want}
	cond, err := ParseRealCondition(want)
	if err != nil {
		ch.Verdict, ch.Reason = checker.VerdictFailed, err.Error()
		return ch
	}
	ch.Want = cond.String()
	v := c.figure(name)
	if v == nil {
		ch.Verdict, ch.Reason = checker.VerdictFailed, fmt.Sprintf("%s not measured (%s), want %s", name, gates[name].missing, cond)
		return ch
	}
	ch.Value, ch.Got = *v, int(math.Round(*v))
	if cond.CheckReal(*v) {
		ch.Verdict = checker.VerdictMet
		return ch
	}
	ch.Verdict = checker.VerdictFailed
	ch.Reason = fmt.Sprintf("%s %s%s, want %s", name, strconv.FormatFloat(round3(*v), 'f', -1, 64), gates[name].unit, cond)
	return ch
}

// round3 rounds v to three decimals, for messages.
func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// isSafety reports whether name is a count of unsafety, a safety figure
// whose zero is a claim that needs evidence (faults applied, visits after
// them, no resource error): every one but stale_rejected (a rejection is
// fencing at work).
func isSafety(name string) bool {
	_, ok := checker.SafetyFigures{}.Get(name)
	return ok && name != "stale_rejected"
}

func (c Counts) get(name string) int {
	if v, ok := c.SafetyFigures.Get(name); ok {
		return v
	}
	switch name {
	case "errors":
		return c.Errors
	case "peak_holders":
		return c.PeakHolders
	}
	return 0
}

// Evaluate checks the counts against e, one Check per condition set, in
// the order of expect's fields. noEvidence, when not "", says why the run
// cannot support a safety claim (a fault that did not apply, too few
// contended visits in a fault's window, a resource-call error): then a
// safety count that came out 0 proves nothing, and its condition is
// inconclusive with that reason instead of met or failed. A non-zero
// safety count is evidence by itself and is judged as usual. Performance
// gates are met or failed whatever noEvidence says. This is the one
// evaluator of expectations.
func (e Expect) Evaluate(c Counts, noEvidence string) []Check {
	var out []Check
	for _, name := range expectFields {
		f := e.field(name)
		if f == nil || *f == "" {
			continue
		}
		if IsGate(name) {
			out = append(out, evalGate(name, *f, c))
			continue
		}
		ch := Check{Field: name, Want: *f, Got: c.get(name)}
		ch.Value = float64(ch.Got)
		cond, err := ParseCondition(*f)
		switch {
		case err != nil:
			ch.Verdict, ch.Reason = checker.VerdictFailed, err.Error()
		case isSafety(name) && ch.Got == 0 && noEvidence != "":
			ch.Want = cond.String()
			ch.Verdict, ch.Reason = checker.VerdictInconclusive, noEvidence
		case cond.Check(ch.Got):
			ch.Want, ch.Verdict = cond.String(), checker.VerdictMet
		default:
			ch.Want, ch.Verdict = cond.String(), checker.VerdictFailed
			ch.Reason = fmt.Sprintf("got %d, want %s", ch.Got, cond)
		}
		out = append(out, ch)
	}
	return out
}

// Verdict combines checks: checker.VerdictFailed when any failed, else checker.VerdictInconclusive when
// any is, else checker.VerdictMet (also for no checks).
func Verdict(checks []Check) string {
	v := checker.VerdictMet
	for _, c := range checks {
		switch c.Verdict {
		case checker.VerdictFailed:
			return checker.VerdictFailed
		case checker.VerdictInconclusive:
			v = checker.VerdictInconclusive
		}
	}
	return v
}

// Unmet checks the counts against e and returns one line per condition not
// met ("violations: got 3, want 0"); nil when every condition holds. Empty
// fields are not checked.
func (e Expect) Unmet(c Counts) []string {
	var out []string
	for _, ch := range e.Evaluate(c, "") {
		if ch.Verdict != checker.VerdictMet {
			out = append(out, ch.Line())
		}
	}
	return out
}

// Line is the check as one line of a verdict: the field and the reason
// ("violations: got 3, want 0"), or the reason alone when it names the
// field already ("throughput 3120.5 ops/s, want >=5000").
func (c Check) Line() string {
	if strings.HasPrefix(c.Reason, c.Field+" ") {
		return c.Reason
	}
	return c.Field + ": " + c.Reason
}

// merge returns e with its empty fields taken from base.
func (e Expect) merge(base Expect) Expect {
	out := e
	for _, name := range expectFields {
		if f := out.field(name); f != nil && *f == "" {
			*f = *base.field(name)
		}
	}
	if out.MinVisits == 0 {
		out.MinVisits = base.MinVisits
	}
	return out
}

// ExpectFor returns the expectations that apply to one entry of Locks: the
// entry under its label, then under its lock name, then under "default",
// field by field (a lock's own entry overrides only the fields it sets).
// ok is false when none of the three exists.
func (s *Scenario) ExpectFor(l Lock) (e Expect, ok bool) {
	keys := []string{l.Label, l.Name, "default"}
	if l.Label == "" || l.Label == l.Name {
		keys = keys[1:]
	}
	for _, k := range keys {
		if x, found := s.Expect[k]; found {
			if !ok {
				e, ok = x, true
			} else {
				e = e.merge(x)
			}
		}
	}
	return e, ok
}
