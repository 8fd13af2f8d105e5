package runner

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/report"
	"github.com/locklab/locklab/workload"
)

func TestOpenLoopWarning(t *testing.T) {
	lag := workload.NewHistogram()
	workload.RecordDuration(lag, 3*time.Millisecond)
	for _, tc := range []struct {
		started int64
		warn    bool
	}{{5000, false}, {4800, false}, {4000, true}} {
		var out report.Run
		openLoop(&out, 1000, tc.started, lag, 5*time.Second)
		if out.RateRequested != 1000 || out.RateAchieved != float64(tc.started)/5 || math.Abs(out.StartLagMs-3) > 0.01 {
			t.Errorf("started %d: %+v", tc.started, out)
		}
		if got := out.RateWarning != ""; got != tc.warn {
			t.Errorf("started %d: warning %q, want one: %v", tc.started, out.RateWarning, tc.warn)
		}
		if tc.warn && !strings.Contains(out.RateWarning, "800/s of the 1000/s") {
			t.Errorf("warning %q does not give the rates", out.RateWarning)
		}
	}
}
