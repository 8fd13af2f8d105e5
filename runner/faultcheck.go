package runner

import (
	"errors"
	"fmt"
	"strings"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/scenarios"
)

// relevantFaults keeps the faults of fs that act on spec's cluster
// (faults.Applies on its plan).
func relevantFaults(fs []scenarios.Fault, spec cluster.Spec) []scenarios.Fault {
	plan := cluster.PlanOf(spec)
	var out []scenarios.Fault
	for _, f := range fs {
		if faults.Applies(f, plan) {
			out = append(out, f)
		}
	}
	return out
}

// checkFaults runs faults.Check for one point and turns its errors into
// file:line messages.
func checkFaults(sc *scenarios.Scenario, lock string, spec cluster.Spec, ppc bool, fs []scenarios.Fault) error {
	err := faults.Check(spec, ppc, fs)
	if err == nil {
		return nil
	}
	var lines []string
	for _, e := range unjoin(err) {
		var fe *faults.FaultError
		if errors.As(e, &fe) && fe.Index < len(fs) {
			lines = append(lines, fmt.Sprintf("%s:%d: faults: %s (with lock %s): %v", sc.File, fs[fe.Index].Line, fe.Type, lock, fe.Err))
			continue
		}
		lines = append(lines, fmt.Sprintf("%s: faults: %v", sc.File, e))
	}
	return errors.New(strings.Join(lines, "\n"))
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
