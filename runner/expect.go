package runner

import (
	"github.com/locklab/locklab/report"
	"github.com/locklab/locklab/scenarios"
)

// expectFor returns the expectations of one run: its label's entry, else its
// lock name's, with empty fields taken from "default". ok is false when the
// scenario expects nothing of it.
func expectFor(sc *scenarios.Scenario, run report.Run) (scenarios.Expect, bool) {
	def, hasDef := sc.Expect["default"]
	e, ok := sc.Expect[run.Lock]
	if !ok {
		e, ok = sc.Expect[run.LockName]
	}
	if !ok {
		return def, hasDef
	}
	pick := func(a, b string) string {
		if a != "" {
			return a
		}
		return b
	}
	e.Violations = pick(e.Violations, def.Violations)
	e.StaleTokens = pick(e.StaleTokens, def.StaleTokens)
	e.StaleRejected = pick(e.StaleRejected, def.StaleRejected)
	e.LostUpdates = pick(e.LostUpdates, def.LostUpdates)
	e.Errors = pick(e.Errors, def.Errors)
	return e, true
}

// evaluate checks every run against its expectations and sets ExpectMet on
// runs and result. A run that failed or was cut short never meets them.
func evaluate(sc *scenarios.Scenario, res *report.Result) {
	if len(sc.Expect) == 0 {
		return
	}
	all := true
	for i := range res.Runs {
		run := &res.Runs[i]
		e, ok := expectFor(sc, *run)
		if !ok {
			continue
		}
		var errs int
		for _, n := range run.Errors {
			errs += int(n)
		}
		met := run.Error == "" && run.Complete
		run.Expectations = nil
		for _, f := range []struct {
			name, cond string
			got        int
		}{
			{"violations", e.Violations, run.Violations},
			{"stale_tokens", e.StaleTokens, run.StaleTokens},
			{"stale_rejected", e.StaleRejected, run.StaleRejected},
			{"stale_accepted", e.StaleAccepted, run.StaleAccepted},
			{"lost_updates", e.LostUpdates, run.LostUpdates},
			{"errors", e.Errors, errs},
		} {
			if f.cond == "" {
				continue
			}
			c, err := scenarios.ParseCondition(f.cond)
			ok := err == nil && c.Check(f.got)
			want := f.cond
			if err == nil {
				want = c.String()
			}
			run.Expectations = append(run.Expectations, report.Expectation{Field: f.name, Want: want, Got: f.got, Met: ok})
			met = met && ok
		}
		run.ExpectMet = &met
		all = all && met
	}
	res.ExpectMet = &all
}
