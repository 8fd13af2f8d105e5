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
	b.Scenario = "synthetic-after"
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
	for _, s := range []string{"baseline: before", "(+50.0%)", "0 → 7", "→ -", "redis-watchdog ttl=5s"} {
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
