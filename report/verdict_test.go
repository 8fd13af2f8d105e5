package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locklab/locklab/checker"
)

// TestRenderVerdicts: the report leads with the Safety section (incidents,
// the lock/client classification and one sentence per class), shows an
// inconclusive run in its own colour with its reason, and draws the holds
// plot from history.jsonl.
func TestRenderVerdicts(t *testing.T) {
	r := syntheticResult(2, []int{3})
	r.Verdict = checker.VerdictInconclusive
	r.Runs[0].Incidents, r.Runs[0].LockFaults, r.Runs[0].Violations = 1, 1, 3
	r.Runs[0].Verdict = checker.VerdictMet
	r.Runs[0].IncidentEvents = []IncidentEvent{{Lock: "lock-0", StartS: 1, EndS: 1.5, Clients: []int{0, 1}, Pairs: 3, Fault: "lock"}}
	r.Runs[1].Verdict, r.Runs[1].VerdictReason = checker.VerdictInconclusive, "1 visits after fault 0 (kill redis-0) at 2.0s, min_visits 3"
	dir := outDir(t, "verdicts")
	history := `{"run":0,"seq":1,"client":0,"lock":"lock-0","op":"acquire","visit":1,"invoke_ns":0,"return_ns":100000000,"valid_until_ns":2000000000,"outcome":"ok"}
{"run":0,"seq":2,"client":0,"lock":"lock-0","op":"enter","visit":1,"invoke_ns":100000000,"return_ns":100000000,"outcome":"ok"}
{"run":0,"seq":3,"client":1,"lock":"lock-0","op":"acquire","visit":2,"invoke_ns":0,"return_ns":1000000000,"valid_until_ns":3000000000,"outcome":"ok"}
{"run":0,"seq":4,"client":1,"lock":"lock-0","op":"enter","visit":2,"invoke_ns":1000000000,"return_ns":1000000000,"outcome":"ok"}
{"run":0,"seq":5,"client":0,"lock":"lock-0","op":"exit","visit":1,"invoke_ns":1500000000,"return_ns":1500000000,"outcome":"ok"}
{"run":0,"seq":6,"client":1,"lock":"lock-0","op":"exit","visit":2,"invoke_ns":1600000000,"return_ns":1600000000,"outcome":"ok"}
`
	if err := os.WriteFile(filepath.Join(dir, "history.jsonl"), []byte(history), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Render(dir, r); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(md)
	safety, setup := strings.Index(s, "## Safety"), strings.Index(s, "## Setup")
	if safety < 0 || safety > setup {
		t.Errorf("report does not lead with the Safety section")
	}
	for _, want := range []string{"Expectations inconclusive", "nothing on the client side repairs this", "fencing repairs this",
		"(inconclusive)", "min\\_visits 3"} {
		if !strings.Contains(s, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	html, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(html), `<tr class="inconclusive">`) {
		t.Error("report.html has no inconclusive row")
	}
	names := timelineNames(r.Runs)
	checkPNG(t, filepath.Join(dir, strings.Replace(names[0], "timeline-", "holds-", 1)+".png"))
	if _, err := os.Stat(filepath.Join(dir, strings.Replace(names[1], "timeline-", "holds-", 1)+".png")); err == nil {
		t.Error("holds plot of a run without history lines")
	}
}
