package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/report"
	"github.com/locklab/locklab/scenarios"
)

// relevantFaults fits fs to the cluster of plan (faults.Narrow):
// the faults that act, each with a note naming what was dropped from it
// ("" when nothing), and the faults left with nothing to act on, recorded
// in the run as not applicable (dropped silently, the run would read safe
// as if they had happened).
func relevantFaults(fs []scenarios.Fault, plan cluster.Plan) (kept []scenarios.Fault, notes []string, na []report.FaultWindow) {
	for _, f := range fs {
		n := faults.Narrow(f, plan)
		if n.NotApplicable != "" {
			na = append(na, report.FaultWindow{Type: f.Type, Target: f.Target(),
				StartS: f.At.Seconds(), EndS: f.At.Seconds(), Error: "not applicable for this lock: " + n.NotApplicable})
			continue
		}
		note := ""
		if len(n.Dropped) > 0 {
			note = "dropped (not in this lock's cluster): " + strings.Join(n.Dropped, ", ")
		}
		kept, notes = append(kept, n.Fault), append(notes, note)
	}
	return kept, notes, na
}

// holderOf resolves "holder" in faults through res: the client picked is
// held at its write (checker.Shared.HoldInside) until the fault applied,
// and what became of its visit is the fault's evidence.
func holderOf(res *checker.Shared) func(context.Context) (faults.HeldClient, error) {
	return func(ctx context.Context) (faults.HeldClient, error) {
		h, err := res.HoldInside(ctx)
		if err != nil {
			return faults.HeldClient{}, err
		}
		return faults.HeldClient{Client: h.Client(), Release: h.Release, Seen: func() faults.HolderState {
			s := h.Seen()
			return faults.HolderState{Inside: s.Inside, Contenders: s.Contenders, Expired: s.Expired,
				Unbounded: s.Unbounded, ValidUntil: s.ValidUntil}
		}}, nil
	}
}

// checkFaults runs faults.Check for one point (its lock's cluster, the
// provider the run uses) and names each problem's file, line and field.
func checkFaults(sc *scenarios.Scenario, lock string, plan cluster.Plan, ppc bool, fs []scenarios.Fault) error {
	err := faults.Check(plan, ppc, fs)
	if err == nil {
		return nil
	}
	var lines []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var fe *faults.FieldError
		if errors.As(e, &fe) && fe.Fault < len(fs) {
			path := fmt.Sprintf("faults[%d]", fe.Fault)
			if fe.Field != "" {
				path += "." + fe.Field
			}
			e = fmt.Errorf("%s:%d: %s: %v (a %s fault, with lock %s)", sc.File, fs[fe.Fault].Line, path, fe.Err, fe.Type, lock)
		}
		lines = append(lines, e.Error())
	}
	return errors.New(strings.Join(lines, "\n"))
}
