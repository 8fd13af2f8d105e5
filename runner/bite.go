package runner

import (
	"fmt"

	"github.com/locklab/locklab/report"
)

// didNotBite lists the faults of run whose effect was looked for and not
// seen (Bit false): each makes the run's safety claims inconclusive, since
// a run whose fault did not bite tested nothing. A fault not looked at
// (Bit nil) or that did not apply (Error, said by noEvidence) adds nothing
// here.
func didNotBite(run *report.Run) []string {
	var why []string
	for i, f := range run.Faults {
		if f.Bit != nil && !*f.Bit && f.Error == "" {
			why = append(why, fmt.Sprintf("fault %d (%s %s) did not bite: %s", i, f.Type, f.Target, f.Observed))
		}
	}
	return why
}
