package main

import (
	"fmt"
	"strconv"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/recheck"
	"github.com/locklab/locklab/report"
	"github.com/locklab/locklab/scenarios"
)

// derived is one conclusion of a run as result.json states it and as the
// re-check derives it from the history alone.
type derived struct {
	name, result, recheck string
}

// rederive derives again what a run's verdict rests on, from the
// re-check's figures (rc), its exposures of the run's faults and its count
// of clients per key: each fault's exposure (exposed, exposure_ms, held,
// contenders_in_exposure), then each expectation's verdict and the run's,
// by the rule of docs/verdicts.md. Only what the history cannot tell is
// taken from result.json: whether a fault applied and bit, the
// performance gates' verdicts, resource-call errors and min_visits.
func rederive(run report.Run, rc recheck.Figures, exps []recheck.Exposure, keyClients int) []derived {
	var out []derived
	byIndex := map[int]recheck.Exposure{}
	for _, e := range exps {
		byIndex[e.Index] = e
	}
	minVisits := max(run.MinVisits, 1) // results older than min_visits judge no verdict below
	var why []string
	for i, f := range run.Faults {
		if f.Error != "" {
			why = append(why, "fault did not apply")
			continue
		}
		if f.Bit != nil && !*f.Bit {
			why = append(why, "fault did not bite")
		}
		if f.Exposed == nil {
			continue // a result written before exposure was measured
		}
		e, ok := byIndex[i]
		name := fmt.Sprintf("fault %d %s", i, f.Type)
		out = append(out,
			derived{name + " exposed", strconv.FormatBool(*f.Exposed), strconv.FormatBool(ok && e.Exposed)},
			derived{name + " held", strconv.FormatBool(f.Held), strconv.FormatBool(ok && e.Held)},
			derived{name + " exposure_ms", fmt.Sprintf("%.0f", f.ExposureMs), fmt.Sprintf("%.0f", float64(e.DurationNs)/1e6)},
			derived{name + " contenders_in_exposure", strconv.Itoa(f.ContendersInExposure), strconv.Itoa(e.Attempts)})
		out = append(out, derived{name + " setting", strconv.FormatBool(f.Setting), strconv.FormatBool(ok && e.Setting)})
		if e.Setting && !allSettingsOf(exps) {
			continue
		}
		if !(e.Exposed || e.Held) || e.Attempts < minVisits {
			why = append(why, name+": race not shown open or held with enough requests")
		}
	}
	if len(run.Expectations) == 0 || run.MinVisits == 0 {
		return out // no expectations, or judged before exposure was measured
	}
	if len(run.Faults) == 0 && (rc.Visits < minVisits || keyClients < 2) {
		why = append(why, "too few contended visits")
	}
	if run.Errors["resource_error"] > 0 {
		why = append(why, "resource-call errors")
	}
	got := recheckSafety(rc)
	verdicts := make([]string, 0, len(run.Expectations))
	for _, x := range run.Expectations {
		v := x.Verdict
		if n, safety := got.Get(x.Field); safety {
			cond, err := scenarios.ParseCondition(x.Want)
			switch {
			case err != nil:
				v = checker.VerdictFailed
			case n == 0 && x.Field != "stale_rejected" && len(why) > 0:
				v = checker.VerdictInconclusive
			case cond.Check(n):
				v = checker.VerdictMet
			default:
				v = checker.VerdictFailed
			}
			out = append(out, derived{"expect " + x.Field, x.Verdict, v})
		}
		verdicts = append(verdicts, v)
	}
	all := checker.VerdictMet
	for _, v := range verdicts {
		if v == checker.VerdictFailed {
			all = v
			break
		}
		if v == checker.VerdictInconclusive {
			all = v
		}
	}
	if run.Error != "" || !run.Complete {
		all = checker.VerdictFailed
	}
	return append(out, derived{"verdict", run.Verdict, all})
}

// allSettingsOf reports whether every judged fault is a setting.
func allSettingsOf(exps []recheck.Exposure) bool {
	for _, e := range exps {
		if !e.Setting {
			return false
		}
	}
	return true
}
