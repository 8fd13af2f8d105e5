package runner

import (
	"github.com/locklab/locklab/report"
	"github.com/locklab/locklab/scenarios"
)

// evaluate checks every run against its expectations and sets ExpectMet on
// runs and result. A run that failed or was cut short never meets them.
func evaluate(sc *scenarios.Scenario, res *report.Result) {
	if len(sc.Expect) == 0 {
		return
	}
	all := true
	for i := range res.Runs {
		run := &res.Runs[i]
		e, ok := sc.ExpectFor(scenarios.Lock{Name: run.LockName, Label: run.Lock})
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
