package scenarios

import (
	"fmt"
	"strconv"
	"strings"
)

// Condition is one expectation on a count, parsed from "0", "N", ">0",
// ">=N", "<N", "<=N" or "==N" (a bare N means ==N).
type Condition struct {
	Op string // "==", ">", ">=", "<", "<="
	N  int
}

const conditionHint = `use 0, N, ">0", ">=N", "<N", "<=N" or "==N"`

// ParseCondition parses a condition as written in expect:. Spaces around
// the operator are allowed; N must be a non-negative integer, and a
// condition no count can meet ("<0") is an error.
func ParseCondition(s string) (Condition, error) {
	t := strings.TrimSpace(s)
	c := Condition{Op: "=="}
	for _, op := range []string{">=", "<=", "==", ">", "<"} {
		if rest, ok := strings.CutPrefix(t, op); ok {
			c.Op, t = op, strings.TrimSpace(rest)
			break
		}
	}
	n, err := strconv.Atoi(t)
	if err != nil || n < 0 || strings.HasPrefix(t, "+") {
		return Condition{}, fmt.Errorf("%q is not a condition (%s)", s, conditionHint)
	}
	c.N = n
	if c.Op == "<" && n == 0 {
		return Condition{}, fmt.Errorf("%q can never hold: counts are >= 0", s)
	}
	return c, nil
}

// Check reports whether the count v meets the condition.
func (c Condition) Check(v int) bool {
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

// String returns the canonical spelling: "N" for ==N, else op and N (">0").
func (c Condition) String() string {
	if c.Op == "==" || c.Op == "" {
		return strconv.Itoa(c.N)
	}
	return c.Op + strconv.Itoa(c.N)
}

// Counts are the safety and error counts of one run that expectations are
// checked against (result fields of DESIGN.md §6 and §7).
type Counts struct {
	Violations       int
	StaleTokens      int
	StaleRejected    int
	StaleAccepted    int
	LostUpdates      int
	Errors           int // all kinds together
	Incidents        int
	LockFaults       int
	ClientFaults     int
	DuplicateTokens  int
	TokenRegressions int
}

// DefaultMinVisits is the default of expect's min_visits.
const DefaultMinVisits = 3

// Verdicts of one expectation (contract values).
const (
	Met          = "met"
	Failed       = "failed"
	Inconclusive = "inconclusive"
)

// Check is one evaluated condition.
type Check struct {
	Field   string
	Want    string // the condition, canonical
	Got     int
	Verdict string // Met, Failed or Inconclusive
	Reason  string // why, when not met
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
	}
	return nil
}

// safetyFields are the counts of unsafety: a zero there is a claim that
// needs evidence (faults applied, visits after them, no resource error).
var safetyFields = map[string]bool{
	"violations": true, "incidents": true, "lock_faults": true, "client_faults": true,
	"lost_updates": true, "stale_tokens": true, "stale_accepted": true,
	"duplicate_tokens": true, "token_regressions": true,
}

func (c Counts) get(name string) int {
	return map[string]int{
		"violations": c.Violations, "stale_tokens": c.StaleTokens, "stale_rejected": c.StaleRejected,
		"stale_accepted": c.StaleAccepted, "lost_updates": c.LostUpdates, "errors": c.Errors,
		"incidents": c.Incidents, "lock_faults": c.LockFaults, "client_faults": c.ClientFaults,
		"duplicate_tokens": c.DuplicateTokens, "token_regressions": c.TokenRegressions,
	}[name]
}

// Evaluate checks the counts against e, one Check per condition set, in
// the order of expect's fields. noEvidence, when not "", says why the run
// cannot support a safety claim (a fault that did not apply, too few
// visits after a fault, a resource-call error): then a safety count that
// came out 0 proves nothing, and its condition is Inconclusive with that
// reason instead of met or failed. A non-zero safety count is evidence by
// itself and is judged as usual. This is the one evaluator of expectations.
func (e Expect) Evaluate(c Counts, noEvidence string) []Check {
	var out []Check
	for _, name := range expectFields {
		f := e.field(name)
		if f == nil || *f == "" {
			continue
		}
		ch := Check{Field: name, Want: *f, Got: c.get(name)}
		cond, err := ParseCondition(*f)
		switch {
		case err != nil:
			ch.Verdict, ch.Reason = Failed, err.Error()
		case safetyFields[name] && ch.Got == 0 && noEvidence != "":
			ch.Want = cond.String()
			ch.Verdict, ch.Reason = Inconclusive, noEvidence
		case cond.Check(ch.Got):
			ch.Want, ch.Verdict = cond.String(), Met
		default:
			ch.Want, ch.Verdict = cond.String(), Failed
			ch.Reason = fmt.Sprintf("got %d, want %s", ch.Got, cond)
		}
		out = append(out, ch)
	}
	return out
}

// Verdict combines checks: Failed when any failed, else Inconclusive when
// any is, else Met (also for no checks).
func Verdict(checks []Check) string {
	v := Met
	for _, c := range checks {
		switch c.Verdict {
		case Failed:
			return Failed
		case Inconclusive:
			v = Inconclusive
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
		if ch.Verdict != Met {
			out = append(out, ch.Field+": "+ch.Reason)
		}
	}
	return out
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
