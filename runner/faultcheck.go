package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

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

// insideOf fires the faults aimed with when: holder-inside through res:
// the first client inside its critical section for after.
func insideOf(res *checker.Shared) func(context.Context, time.Duration) (faults.Aim, error) {
	return func(ctx context.Context, after time.Duration) (faults.Aim, error) {
		c, d, err := res.WaitInsideFor(ctx, after)
		return faults.Aim{Client: c, InsideFor: d}, err
	}
}

// exposures judges whether each fault of ws (the started ones, first in
// out, same order) opened the race it exists for (checker.Exposure), fills
// out's exposure fields, and writes a fault line per fault into the
// history so a re-check can judge it again.
func exposures(out []report.FaultWindow, ws []faults.Window, elapsed, lease time.Duration, res *checker.Shared) {
	spans := make([]checker.FaultSpan, len(ws))
	for i, w := range ws {
		end := w.End
		if end == 0 || end > elapsed {
			end = elapsed
		}
		end = max(end, w.Start) // a fault that started as the run ended
		spans[i] = checker.FaultSpan{Start: w.Start, End: end, Client: -1, Lease: lease}
		if w.Aim != nil {
			spans[i].Client = w.Aim.Client
			out[i].Holder = faults.ClientName(w.Aim.Client)
			out[i].HolderInsideMs = msf(w.Aim.InsideFor)
		}
		if w.LostAt != nil {
			spans[i].Lost, spans[i].LostAt = true, *w.LostAt
			s := w.LostAt.Seconds()
			out[i].LostAtS = &s
		}
	}
	exp := res.Exposure(spans)
	for i, w := range ws {
		line := checker.FaultLine{Index: i, Type: w.Type, Target: w.Target, Bit: w.Bit, Error: w.Err, Lease: int64(lease)}
		if w.LostAt != nil {
			ns := int64(*w.LostAt)
			line.LostAt = &ns
		}
		_ = res.Record(context.Background(), checker.Op{Op: checker.OpFault, Client: spans[i].Client,
			Invoke: int64(spans[i].Start), Return: int64(spans[i].End), Outcome: "ok", Fault: &line})
		if i >= len(exp) || w.Err != "" || w.Waiters {
			continue // a cut of the waiters is judged on its window's visits
		}
		e := exp[i]
		exposed := e.Exposed
		out[i].Exposed, out[i].ExposureMs, out[i].Held = &exposed, msf(e.Duration), e.Held
		out[i].ContendersInExposure, out[i].ExposureNote = e.Attempts, e.Why
		if e.Exposed {
			out[i].ExposureEndS = e.Until.Seconds()
		}
		out[i].Setting = e.Setting
		if out[i].Holder == "" && e.Holder >= 0 {
			out[i].Holder = faults.ClientName(e.Holder)
		}
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
