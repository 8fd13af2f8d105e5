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
// checked against (result fields of DESIGN.md §6).
type Counts struct {
	Violations    int
	StaleTokens   int
	StaleRejected int
	StaleAccepted int
	LostUpdates   int
	Errors        int // all kinds together
}

// Unmet checks the counts against e and returns one line per condition not
// met ("violations: got 3, want 0"); nil when every condition holds. Empty
// fields are not checked.
func (e Expect) Unmet(c Counts) []string {
	var out []string
	for _, f := range []struct {
		name string
		cond string
		got  int
	}{
		{"violations", e.Violations, c.Violations},
		{"stale_tokens", e.StaleTokens, c.StaleTokens},
		{"stale_rejected", e.StaleRejected, c.StaleRejected},
		{"stale_accepted", e.StaleAccepted, c.StaleAccepted},
		{"lost_updates", e.LostUpdates, c.LostUpdates},
		{"errors", e.Errors, c.Errors},
	} {
		if f.cond == "" {
			continue
		}
		cond, err := ParseCondition(f.cond)
		if err != nil {
			out = append(out, fmt.Sprintf("%s: %v", f.name, err))
			continue
		}
		if !cond.Check(f.got) {
			out = append(out, fmt.Sprintf("%s: got %d, want %s", f.name, f.got, cond))
		}
	}
	return out
}

// merge returns e with its empty fields taken from base.
func (e Expect) merge(base Expect) Expect {
	pick := func(a, b string) string {
		if a != "" {
			return a
		}
		return b
	}
	return Expect{
		Violations:    pick(e.Violations, base.Violations),
		StaleTokens:   pick(e.StaleTokens, base.StaleTokens),
		StaleRejected: pick(e.StaleRejected, base.StaleRejected),
		StaleAccepted: pick(e.StaleAccepted, base.StaleAccepted),
		LostUpdates:   pick(e.LostUpdates, base.LostUpdates),
		Errors:        pick(e.Errors, base.Errors),
		Line:          e.Line,
	}
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
