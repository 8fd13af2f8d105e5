package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCompare(t *testing.T) {
	a := syntheticResult(10, []int{8})
	b := syntheticResult(10, []int{8})
	// The same scenario before and after a change: compared with deltas.
	b.Runs[0].Throughput = a.Runs[0].Throughput * 1.5
	b.Runs[3].Violations = 7
	b.Runs = b.Runs[:9] // the last lock did not run in b
	c := Compare([]*Result{a, b}, []string{"before", "after"})
	if len(c.Rows) != 10 {
		t.Fatalf("%d rows, want 10", len(c.Rows))
	}
	if c.Rows[9].Runs[1] != nil {
		t.Error("a lock missing from b paired with a run")
	}
	var sb strings.Builder
	if err := c.WriteTable(&sb); err != nil {
		t.Fatal(err)
	}
	out := sb.String()
	for _, s := range []string{"baseline before, compared: after", "(+50.0%)", "0 → 7", "→ -", "redis-watchdog ttl=5s"} {
		if !strings.Contains(out, s) {
			t.Errorf("table lacks %q:\n%s", s, out)
		}
	}

	dir := outDir(t, "compare")
	if err := RenderComparison(dir, c); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"compare-throughput", "compare-latency", "compare-handoff", "safety"} {
		checkPNG(t, filepath.Join(dir, f+".png"))
	}
	for _, f := range []string{"comparison.md", "comparison.html"} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), "+50.0%") {
			t.Errorf("%s lacks the throughput delta", f)
		}
	}
}

// TestCompareLikeWithLike: results of different scenarios are put side
// by side lock by lock, never compared with one another as a baseline;
// two results of one scenario among them are.
func TestCompareLikeWithLike(t *testing.T) {
	pause := syntheticResult(3, []int{3})
	pause.Scenario = "pause-holder"
	failover := syntheticResult(3, []int{3})
	failover.Scenario = "redis-failover"
	failover.Runs[0].LockFaults, failover.Runs[0].Incidents = 1, 1
	again := syntheticResult(3, []int{3})
	again.Scenario = "redis-failover"
	again.Runs[1].Throughput *= 2
	tests := []struct {
		name           string
		results        []*Result
		deltas, across bool
	}{
		{"different scenarios", []*Result{pause, failover}, false, true},
		{"one scenario repeated", []*Result{pause, failover, again}, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Compare(tt.results, nil)
			var sb strings.Builder
			if err := c.WriteTable(&sb); err != nil {
				t.Fatal(err)
			}
			out := sb.String()
			if strings.Contains(out, "baseline pause-holder") || strings.Contains(out, "pause-holder → ") {
				t.Errorf("pause-holder is the baseline of another scenario:\n%s", out)
			}
			if got := strings.Contains(out, "→"); got != tt.deltas {
				t.Errorf("deltas shown %v, want %v:\n%s", got, tt.deltas, out)
			}
			if tt.deltas && !strings.Contains(out, "baseline redis-failover, compared: redis-failover (2)") {
				t.Errorf("the repeated scenario is not compared with its own first result:\n%s", out)
			}
			if !strings.Contains(out, "unsafe · ") || !strings.Contains(out, "safe · ") {
				t.Errorf("no lock-by-lock table of the scenarios side by side:\n%s", out)
			}
			dir := outDir(t, "compare-"+strings.ReplaceAll(tt.name, " ", "-"))
			if err := RenderComparison(dir, c); err != nil {
				t.Fatal(err)
			}
			md, err := os.ReadFile(filepath.Join(dir, "comparison.md"))
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(string(md), "## Deltas within a scenario"); got != tt.deltas {
				t.Errorf("comparison.md has deltas %v, want %v", got, tt.deltas)
			}
			if !strings.Contains(string(md), "## Scenarios side by side") {
				t.Error("comparison.md lacks the scenarios side by side")
			}
		})
	}
}

func TestCompareNames(t *testing.T) {
	r := &Result{Scenario: "s"}
	got := uniqueNames([]*Result{r, r, r}, []string{"", "", "x"})
	want := []string{"s", "s (2)", "x"}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("name %d: %q, want %q", i, got[i], want[i])
		}
	}
}
