package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestScaleSection: a clients sweep whose runs recorded their peak RSS
// gets the scale plot and the Scale table; one without RSS gets neither.
func TestScaleSection(t *testing.T) {
	for _, withRSS := range []bool{true, false} {
		r := syntheticResult(2, []int{10, 100, 1000})
		for i := range r.Runs {
			if withRSS {
				r.Runs[i].PeakRSSMB = float64(r.Runs[i].Clients)/10 + 30
			}
		}
		if withRSS {
			r.Runs[0].RateRequested, r.Runs[0].RateAchieved = 5000, 4100
			r.Runs[0].RateWarning = "operations started at 4100/s of the 5000/s requested"
		}
		dir := outDir(t, "scale")
		if err := Render(dir, r); err != nil {
			t.Fatal(err)
		}
		md, err := os.ReadFile(filepath.Join(dir, "report.md"))
		if err != nil {
			t.Fatal(err)
		}
		_, statErr := os.Stat(filepath.Join(dir, "scale.png"))
		hasTable := strings.Contains(string(md), "## Scale")
		if !withRSS {
			if statErr == nil || hasTable {
				t.Errorf("no RSS recorded: scale.png written %v, Scale table %v; want neither", statErr == nil, hasTable)
			}
			continue
		}
		checkPNG(t, filepath.Join(dir, "scale.png"))
		if !hasTable || !strings.Contains(string(md), "peak RSS MB") || !strings.Contains(string(md), "4100 / 5000") ||
			!strings.Contains(string(md), "behind schedule") {
			t.Errorf("report.md Scale section missing or incomplete:\n%s", md)
		}
	}
}
