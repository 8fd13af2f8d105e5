package atlas

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/report"
	"github.com/locklab/locklab/testenv"
)

// reference is the committed atlas whose real runs the page tests read.
const reference = "../results/reference/atlas"

// TestJudgeTokens: duplicate tokens or token regressions make a cell
// unsafe (the fencing source broke: no resource-side check repairs it),
// and every judged cell says what its verdict rests on.
func TestJudgeTokens(t *testing.T) {
	met := RunSummary{Verdict: "met", Faults: 1, FaultsApplied: 1, VisitsAfter: 40, Clients: 3}
	window := met
	window.VisitsInWindow, window.ContendersInWindow = 106, 2
	wide := window
	wide.ContendersInWindow = 4
	for _, tc := range []struct {
		name  string
		runs  []RunSummary
		want  string
		basis string
	}{
		{"tokens broke", []RunSummary{met, {Verdict: "met", Faults: 1, FaultsApplied: 1, SafetyFigures: checker.SafetyFigures{DuplicateTokens: 3}}}, Unsafe, FencingBroke},
		// A lock that reports fencing but grants token 0: its writes pass
		// any resource-side check, so fencing repairs nothing.
		{"grants without a token", []RunSummary{met, {Verdict: "met", Faults: 1, FaultsApplied: 1, SafetyFigures: checker.SafetyFigures{ZeroTokens: 5}}}, Unsafe,
			"0 duplicate tokens, 0 token regressions, 5 grants without a token: " + FencingBroke},
		{"safe with window", []RunSummary{window, wide}, Safe, "safe: 2 of 2 runs with the fault applied, 212 visits in the window, 2-4 contenders"},
		{"safe without window", []RunSummary{met, met}, Safe, "at least 40 visits begun after each fault's start"},
		{"no fault", []RunSummary{{Verdict: "met", VisitsAfter: -1}}, Safe, "1 of 1 runs without incident, no fault applied"},
		{"lock fault", []RunSummary{met, {Verdict: "failed", SafetyFigures: checker.SafetyFigures{Incidents: 1, LockFaults: 2}}}, Unsafe, "1 of 2 runs with an incident (2 lock faults, 0 client faults)"},
		{"inconclusive", []RunSummary{met, {Verdict: "inconclusive", Reason: "0 visits after fault 0"}}, Inconclusive, "1 run without evidence (0 visits after fault 0)"},
		{"incidents without any fault", []RunSummary{met, {Verdict: "failed", WithoutFault: 2, SafetyFigures: checker.SafetyFigures{Incidents: 3, LockFaults: 3}}}, Unsafe,
			"1 of 2 runs with an incident (3 lock faults, 0 client faults); 2 incidents without any fault (before the fault or a lease after it: broken without faults)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := CellResult{RunList: tc.runs}
			judge(&c, 10)
			if c.Verdict != tc.want {
				t.Errorf("verdict %s, want %s", c.Verdict, tc.want)
			}
			if !strings.Contains(c.Basis, tc.basis) || !strings.HasPrefix(c.Basis, c.Verdict+": ") {
				t.Errorf("basis %q, want it to start with the verdict and contain %q", c.Basis, tc.basis)
			}
		})
	}
}

// TestReadings: a lock's reading is derived from its cells.
func TestReadings(t *testing.T) {
	fams := []FamilyInfo{{Name: "baseline"}, {Name: "pause-holder-long"}, {Name: "kill-leader"}, {Name: "kill-2-of-3"}}
	cell := func(lock, fam, verdict string, fences bool) CellResult {
		c := CellResult{Lock: lock, Family: fam, Verdict: verdict, Fences: fences}
		switch verdict {
		case Unsafe:
			c.LockFaults = 3
		case NotApplicable:
			c.NotApplicable = "not a Redlock"
		}
		return c
	}
	for _, tc := range []struct {
		name  string
		cells []CellResult
		want  string
	}{
		{"safe", []CellResult{cell("l", "baseline", Safe, true), cell("l", "pause-holder-long", Safe, true), cell("l", "kill-leader", Safe, true), cell("l", "kill-2-of-3", NotApplicable, true)},
			"safe under every fault of the atlas it was tried with (3 of 3 families)"},
		{"fencing", []CellResult{cell("l", "baseline", Safe, true), cell("l", "pause-holder-long", UnsafeWithoutFencing, true), cell("l", "kill-leader", Safe, true)},
			"safe under every fault of the atlas only with fencing: pause-holder-long let a holder outlive its lease"},
		{"failover", []CellResult{cell("l", "baseline", Safe, true), cell("l", "pause-holder-long", UnsafeWithoutFencing, true), cell("l", "kill-leader", Unsafe, true)},
			"unsafe: kill-leader can grant it twice (lock faults), which fencing cannot repair; only with fencing under pause-holder-long"},
		{"no tokens", []CellResult{cell("l", "baseline", Safe, false), cell("l", "pause-holder-long", UnsafeWithoutFencing, false), cell("l", "kill-leader", Inconclusive, false)},
			"unsafe without fencing under pause-holder-long (a holder outlived its lease), and it gives no fencing tokens; no evidence yet under kill-leader"},
		// A lock that broke before the fault (or long after it) is not
		// read as broken by the fault.
		{"broken without faults", []CellResult{cell("l", "baseline", Safe, true),
			{Lock: "l", Family: "kill-leader", Verdict: Unsafe, WithoutFault: 2, SafetyFigures: checker.SafetyFigures{LockFaults: 3}}},
			"broken without faults: incidents with no fault to blame in kill-leader; unsafe: kill-leader can grant it twice (lock faults), which fencing cannot repair"},
		{"grants without a token", []CellResult{cell("l", "baseline", Safe, true), cell("l", "pause-holder-long", Safe, true),
			{Lock: "l", Family: "kill-leader", Verdict: Unsafe, Fences: true, SafetyFigures: checker.SafetyFigures{ZeroTokens: 4}}},
			"unsafe: its fencing tokens broke under kill-leader (duplicates, regressions or grants without a token: no resource-side check repairs this)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &Atlas{Locks: []string{"l"}, Families: fams, Cells: tc.cells}
			if got := Readings(a)[0].Reading; got != tc.want {
				t.Errorf("reading %q\nwant    %q", got, tc.want)
			}
		})
	}
}

// TestAtlasPageInChromium builds a small atlas from real runs of the
// committed reference atlas, writes it, and renders atlas.html in headless
// Chromium: a non-blank screenshot of the window's size, and a DOM with
// the legend (every verdict's meaning), a reading per lock, the families'
// descriptions, a fencing column and the not-applicable footnotes. The
// cells of atlas.json carry duplicate_tokens, token_regressions and basis.
func TestAtlasPageInChromium(t *testing.T) {
	testenv.RequireFiles(t, filepath.Join(reference, "plan.json"))
	p, err := NewPlan(Config{Runs: 5, TTL: time.Second,
		Locks:    []string{"redis-cad", "redis-reentrant", "zk-recipe", "redlock"},
		Families: []string{"baseline", "pause-holder-long", "kill-leader", "restart-empty", "kill-2-of-3"}})
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if d := os.Getenv("LOCKLAB_REPORT_DIR"); d != "" {
		out = filepath.Join(d, "atlas")
	}
	a := Build(p, []string{reference}, out)
	if a.Missing > 0 {
		t.Fatalf("%d runs of the plan are not in %s", a.Missing, reference)
	}
	if err := Write(out, a); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(out, "atlas.json"))
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Cells []map[string]any `json:"cells"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	for _, c := range raw.Cells {
		for _, k := range []string{"duplicate_tokens", "token_regressions", "basis"} {
			if _, ok := c[k]; !ok {
				t.Errorf("atlas.json cell %v/%v lacks %s", c["family"], c["lock"], k)
			}
		}
	}
	broke := 0
	for _, c := range a.Cells {
		if c.DuplicateTokens > 0 || c.TokenRegressions > 0 {
			broke++
			if c.Verdict != Unsafe || !strings.Contains(c.Basis, FencingBroke) {
				t.Errorf("%s/%s: %d duplicate tokens, %d regressions but %s: %q", c.Family, c.Lock, c.DuplicateTokens, c.TokenRegressions, c.Verdict, c.Basis)
			}
		}
	}
	t.Logf("%d cells with broken tokens among %d", broke, len(a.Cells))

	page := filepath.Join(out, "atlas.html")
	testenv.ChromiumScreenshot(t, page, 1400, 1800)
	dom := string(testenv.Chromium(t, page, "--dump-dom"))
	text := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace
	for _, id := range []string{`id="legend"`, `id="readings"`, `id="families"`, `<th>fencing</th>`} {
		if !strings.Contains(dom, id) {
			t.Errorf("the rendered atlas lacks %s", id)
		}
	}
	for _, m := range meanings {
		if !strings.Contains(dom, text(m.meaning)) {
			t.Errorf("the legend lacks the meaning of %s", m.verdict)
		}
	}
	for _, r := range a.Readings {
		if r.Reading == "" || !strings.Contains(dom, text(r.Reading)) {
			t.Errorf("the rendered atlas lacks the reading of %s (%q)", r.Lock, r.Reading)
		}
	}
	for _, f := range a.Families {
		if !strings.Contains(dom, text(f.Doc)) {
			t.Errorf("the rendered atlas lacks the description of %s", f.Name)
		}
	}
	notes, _ := naNotes(a)
	if len(notes) == 0 {
		t.Fatal("no not-applicable cell in the plan: the footnotes go untested")
	}
	for i, n := range notes {
		if !strings.Contains(dom, `id="na-`+strconv.Itoa(i+1)+`"`) || !strings.Contains(dom, text(n)) {
			t.Errorf("footnote %d (%q) missing", i+1, n)
		}
	}
}

// TestZeroTokensShown: a cell whose lock granted without a token is
// flagged in atlas.md and atlas.html like duplicate tokens are.
func TestZeroTokensShown(t *testing.T) {
	runs := []RunSummary{{Verdict: "met", Faults: 1, FaultsApplied: 1, VisitsAfter: 40, Clients: 3,
		SafetyFigures: checker.SafetyFigures{ZeroTokens: 6}}}
	c := CellResult{Lock: "mine", Family: "pause-holder-long", Fences: true, RunList: runs}
	judge(&c, 10)
	a := &Atlas{Locks: []string{"mine"}, Families: []FamilyInfo{{Name: "pause-holder-long"}}, Cells: []CellResult{c}, Runs: 1}
	var md, page strings.Builder
	markdown(&md, a)
	htmlPage(&page, a, t.TempDir())
	for _, want := range []string{"| 0 / 0 / 6 |", "**" + FencingBroke + "**; unsafe", "6 grants without a token"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("atlas.md lacks %q:\n%s", want, md.String())
		}
	}
	if !strings.Contains(page.String(), "tokens broke: 0 dup / 0 regr. / 6 zero") {
		t.Errorf("atlas.html does not flag the cell")
	}
}

// TestWithoutFaultFromRealRun: a real run of redis-set-del (released by
// plain DEL) under restart-empty, kept from an earlier reference atlas:
// one lock fault during the restart, and a DEL cascade that goes on at
// 4.6 s, a lease and more after the restart at 1.5 s, with no fault to
// blame.
func TestWithoutFaultFromRealRun(t *testing.T) {
	dir := filepath.Join("testdata", "without-fault-run")
	res, err := report.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	s := summarize(res, 1, dir)
	if s.WithoutFault != 1 || s.LockFaults != 2 {
		t.Errorf("incidents without any fault %d, lock faults %d: want 1 of 2", s.WithoutFault, s.LockFaults)
	}
	if got := report.Headline(&res.Runs[0]); !strings.HasPrefix(got, "broken without faults: 1 lock fault without any fault, the first at 4.644 s (first fault at 1.5 s); 1 more incident during restart redis-0") {
		t.Errorf("headline %q", got)
	}
}

// TestZombieCell: a cell's zombie time is the median of its runs' medians
// over the runs that lost a lease and the longest over all of them, in
// atlas.json, the Cells table of atlas.md and the grid of atlas.html; a
// cell whose runs lost none (or predate the figures) has neither.
func TestZombieCell(t *testing.T) {
	ms := func(x float64) *float64 { return &x }
	met := RunSummary{Verdict: "met", Faults: 1, FaultsApplied: 1, VisitsAfter: 40, Clients: 3}
	lost := func(p50, longest float64) RunSummary {
		r := met
		r.ZombieMsP50, r.ZombieMsMax = ms(p50), ms(longest)
		return r
	}
	c := CellResult{Lock: "mine", Family: "pause-holder-long", RunList: []RunSummary{lost(100, 150), met, lost(300, 500), lost(200, 250)}}
	judge(&c, 10)
	if c.ZombieMsP50 == nil || *c.ZombieMsP50 != 200 || c.ZombieMsMax == nil || *c.ZombieMsMax != 500 {
		t.Fatalf("zombie p50 %v, max %v: want 200 (median of 100, 300, 200) and 500", c.ZombieMsP50, c.ZombieMsMax)
	}
	none := CellResult{Lock: "mine", Family: "baseline", RunList: []RunSummary{met, met}}
	judge(&none, 10)
	data, err := json.Marshal([]CellResult{c, none})
	if err != nil {
		t.Fatal(err)
	}
	var raw []map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	if raw[0]["zombie_ms_p50"] != 200.0 || raw[0]["zombie_ms_max"] != 500.0 {
		t.Errorf("atlas.json cell: zombie_ms_p50 %v, zombie_ms_max %v", raw[0]["zombie_ms_p50"], raw[0]["zombie_ms_max"])
	}
	if _, ok := raw[1]["zombie_ms_p50"]; ok {
		t.Errorf("a cell without a lost lease has zombie_ms_p50 %v", raw[1]["zombie_ms_p50"])
	}
	a := &Atlas{Locks: []string{"mine"}, Families: []FamilyInfo{{Name: "baseline"}, {Name: "pause-holder-long"}}, Cells: []CellResult{none, c}, Runs: 4}
	var md, page strings.Builder
	markdown(&md, a)
	htmlPage(&page, a, t.TempDir())
	for _, want := range []string{"| zombie ms p50 / max |", "| 0 | 200 / 500 |", "| 0 | - |"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("atlas.md lacks %q:\n%s", want, md.String())
		}
	}
	if n := strings.Count(page.String(), ">zombie "); n != 1 || !strings.Contains(page.String(), ">zombie 200 / 500 ms<") {
		t.Errorf("atlas.html shows %d zombie lines, want one, 200 / 500 ms", n)
	}
}
