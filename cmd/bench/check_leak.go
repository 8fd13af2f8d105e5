package main

import (
	"strconv"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/recheck"
	"github.com/locklab/locklab/report"
)

// leakFigure lines up a semaphore's permits_leaked_ms: a result written
// before the figure has none, which is "not measured", not a difference.
// The live summary is taken before the last lines of the run are written
// (a waiting client's attempt, a last release): 1 ms of tolerance, as for
// the overlap times.
func leakFigure(run report.Run, s checker.Summary, rc recheck.Figures) figure {
	fb, fc := float64(s.PermitsLeaked)/1e6, float64(rc.PermitsLeaked)/1e6
	f := figure{name: "permits_leaked_ms", numeric: true, tolerance: 1, nReplay: fb, nCheck: fc,
		replay: strconv.FormatFloat(fb, 'g', -1, 64), recheck: strconv.FormatFloat(fc, 'g', -1, 64)}
	if run.PermitsLeakedMs == nil {
		f.result, f.unmeasured = "not measured", true
		return f
	}
	f.nResult, f.result = *run.PermitsLeakedMs, strconv.FormatFloat(*run.PermitsLeakedMs, 'g', -1, 64)
	return f
}
