package atlas

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/report"
)

// Write writes atlas.json, atlas.md, atlas.html and atlas.png into dir,
// after deriving a's per-lock Readings from its cells.
func Write(dir string, a *Atlas) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("atlas folder: %w", err)
	}
	a.Readings = Readings(a)
	data, err := json.MarshalIndent(a, "", "  ")
	if err != nil {
		return fmt.Errorf("atlas.json: %w", err)
	}
	jerr := os.WriteFile(filepath.Join(dir, "atlas.json"), append(data, '\n'), 0o644)
	merr := writeWith(filepath.Join(dir, "atlas.md"), func(w io.Writer) { markdown(w, a) })
	herr := writeWith(filepath.Join(dir, "atlas.html"), func(w io.Writer) { htmlPage(w, a, dir) })
	perr := report.WriteAtlasPNG(filepath.Join(dir, "atlas.png"), grid(a))
	return errors.Join(jerr, merr, herr, perr)
}

// Read loads dir/atlas.json.
func Read(dir string) (*Atlas, error) {
	data, err := os.ReadFile(filepath.Join(dir, "atlas.json"))
	if err != nil {
		return nil, err
	}
	var a Atlas
	if err := json.Unmarshal(data, &a); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "atlas.json"), err)
	}
	return &a, nil
}

func writeWith(path string, fn func(io.Writer)) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	fn(w)
	return errors.Join(w.Flush(), f.Close())
}

func grid(a *Atlas) report.AtlasGrid {
	g := report.AtlasGrid{Rows: a.Locks}
	for _, f := range a.Families {
		g.Cols = append(g.Cols, f.Name)
	}
	for _, l := range a.Locks {
		var row []report.AtlasCell
		for _, f := range a.Families {
			c := a.Cell(l, f.Name)
			row = append(row, report.AtlasCell{Verdict: c.Verdict, Label: short(c)})
		}
		g.Cells = append(g.Cells, row)
	}
	return g
}

// short is a cell's text in the PNG grid: runs with incidents over runs.
func short(c *CellResult) string {
	switch c.Verdict {
	case NotApplicable:
		return "n/a"
	}
	if c.Runs == 0 {
		return "no runs"
	}
	if c.Missing > 0 {
		return fmt.Sprintf("%d/%d (+%d missing)", c.RunsWithIncidents, c.Runs, c.Missing)
	}
	return fmt.Sprintf("%d/%d", c.RunsWithIncidents, c.Runs)
}

// rateText is a cell's verdict with its rate and Wilson 95% interval:
// "unsafe 5/5 [0.57–1.00]".
func rateText(c *CellResult) string {
	if c.Verdict == NotApplicable {
		return "n/a"
	}
	return fmt.Sprintf("%s %s [%.2f–%.2f]", c.Verdict, short(c), c.RateLow, c.RateHigh)
}

// faultText is "2 lock / 0 client faults".
func faultText(c *CellResult) string {
	return fmt.Sprintf("%d lock / %d client faults", c.LockFaults, c.ClientFaults)
}

// tokenFlag flags a cell whose fencing tokens broke, "" otherwise.
func tokenFlag(c *CellResult) string {
	if !tokensBroke(c.SafetyFigures) {
		return ""
	}
	return tokenCounts(c) + ": " + FencingBroke
}

// tokenCounts is "1 duplicate token, 0 token regressions", with the
// grants without a token when there were any.
func tokenCounts(c *CellResult) string {
	s := fmt.Sprintf("%s, %s", count(c.DuplicateTokens, "duplicate token"), count(c.TokenRegressions, "token regression"))
	if c.ZeroTokens > 0 {
		s += ", " + count(c.ZeroTokens, "grant") + " without a token"
	}
	return s
}

// zombieText is the cell's zombie time, "p50 / max" in ms; "-" when no
// run lost a lease.
func zombieText(c *CellResult) string { return zombiePair(c.ZombieMsP50, c.ZombieMsMax) }

// zombiePair is zombie times as "p50 / max" in ms, or "-" when either
// is missing.
func zombiePair(p50, max *float64) string {
	if p50 == nil || max == nil {
		return "-"
	}
	return fmt.Sprintf("%.0f / %.0f", *p50, *max)
}

// availText is the cell's availability during the fault: the runs' own
// measure, else the rate against the lock's baseline cell (marked), else
// "-".
func availText(c *CellResult) string {
	switch {
	case c.AvailabilityDuringFault != nil:
		return pct(*c.AvailabilityDuringFault)
	case c.AvailDuring >= 0:
		return pct(c.AvailDuring) + " vs baseline"
	}
	return "-"
}

func pct(x float64) string {
	if x < 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*x)
}

func secs(x float64) string {
	if x < 0 {
		return "-"
	}
	return fmt.Sprintf("%.1fs", x)
}

func yesNo(b bool) string {
	if b {
		return "yes (tokens)"
	}
	return "no"
}

// The meaning of each verdict colour, for the legends of atlas.md and
// atlas.html.
var meanings = []struct{ verdict, meaning string }{
	{Safe, "no incident in any run, with the fault applied and visits in its window"},
	{Unsafe, "the lock granted a second holder within the first one's promise (a lock fault), or its fencing tokens broke: nothing on the client side or the resource repairs this"},
	{UnsafeWithoutFencing, "a holder outlived its lease (client faults, lost updates, stale writes accepted): a resource that rejects older fencing tokens repairs this"},
	{Inconclusive, "no incident, but a run lacked evidence (the fault did not apply, too few visits after it, an error) or is missing"},
	{NotApplicable, "the family cannot act on this lock (the reasons are in the footnotes)"},
}

// cellNote is the legend of a cell's text.
const cellNote = "A cell: verdict, runs with at least one incident / runs and the Wilson 95% interval of that rate; lock / client faults summed over its runs; availability during the fault (completions per second in the fault window over the rate before it, the runs' own measure; \"vs baseline\": over the lock's baseline cell, for runs that predate it); zombie, when a run lost a lease: ms from the lock state lost on the server to its holder learning it, the median of the runs' medians / the longest."

// naNotes numbers the distinct not-applicable reasons of a, in cell order.
func naNotes(a *Atlas) ([]string, map[string]int) {
	var notes []string
	idx := map[string]int{}
	for _, c := range a.Cells {
		if c.Verdict != NotApplicable {
			continue
		}
		if _, ok := idx[c.NotApplicable]; !ok {
			notes = append(notes, c.NotApplicable)
			idx[c.NotApplicable] = len(notes)
		}
	}
	return notes, idx
}

// naCells lists the cells of the note.
func naCells(a *Atlas, note string) string {
	byFamily := map[string][]string{}
	var fams []string
	for _, c := range a.Cells {
		if c.Verdict == NotApplicable && c.NotApplicable == note {
			if byFamily[c.Family] == nil {
				fams = append(fams, c.Family)
			}
			byFamily[c.Family] = append(byFamily[c.Family], c.Lock)
		}
	}
	var parts []string
	for _, f := range fams {
		parts = append(parts, f+": "+strings.Join(byFamily[f], ", "))
	}
	return strings.Join(parts, "; ")
}

func readingOf(a *Atlas, lock string) LockReading {
	for _, r := range a.Readings {
		if r.Lock == lock {
			return r
		}
	}
	return LockReading{Lock: lock}
}

func markdown(w io.Writer, a *Atlas) {
	md := strings.NewReplacer("|", `\|`, "\n", " ").Replace
	fmt.Fprintf(w, "# Safety atlas\n\n%d locks against %d fault families, %d runs per cell, ttl %dms, provider %s; %d runs missing.\n\n",
		len(a.Locks), len(a.Families), a.Runs, a.TTLMs, providerOf(a), a.Missing)
	fmt.Fprint(w, "## Readings\n\nPer lock, derived from its cells below.\n\n| lock | fencing | reading |\n|---|---|---|\n")
	for _, l := range a.Locks {
		r := readingOf(a, l)
		fmt.Fprintf(w, "| %s | %s | %s |\n", kindLabel(l), yesNo(r.Fences), md(r.Reading))
	}
	fmt.Fprint(w, "\n## Legend\n\n")
	for _, m := range meanings {
		fmt.Fprintf(w, "- **%s**: %s\n", m.verdict, m.meaning)
	}
	fmt.Fprintf(w, "\n%s Duplicate tokens, token regressions and grants without a token (zero tokens from a lock that reports fencing) are flagged: %s.\n\n", cellNote, FencingBroke)
	notes, idx := naNotes(a)
	fmt.Fprint(w, "## Grid\n\n| lock | fencing |")
	for _, f := range a.Families {
		fmt.Fprintf(w, " %s |", f.Name)
	}
	fmt.Fprint(w, "\n|---|---|")
	for range a.Families {
		fmt.Fprint(w, "---|")
	}
	fmt.Fprintln(w)
	for _, l := range a.Locks {
		fmt.Fprintf(w, "| %s | %s |", kindLabel(l), yesNo(readingOf(a, l).Fences))
		for _, f := range a.Families {
			c := a.Cell(l, f.Name)
			if c.Verdict == NotApplicable {
				fmt.Fprintf(w, " n/a [%d] |", idx[c.NotApplicable])
				continue
			}
			flag := ""
			if tokenFlag(c) != "" {
				flag = ", tokens broke"
			}
			fmt.Fprintf(w, " %s; %s; avail. %s%s |", rateText(c), faultText(c), availText(c), flag)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprint(w, "\n## Families\n\n")
	for _, f := range a.Families {
		ctl := ""
		if f.Control {
			ctl = " (control: must be safe)"
		}
		fmt.Fprintf(w, "- **%s**%s: %s\n", f.Name, ctl, f.Doc)
	}
	if len(notes) > 0 {
		fmt.Fprint(w, "\n## Not applicable\n\n")
		for i, n := range notes {
			fmt.Fprintf(w, "%d. %s (%s)\n", i+1, md(n), naCells(a, n))
		}
	}
	fmt.Fprint(w, "\n## Cells\n\n")
	fmt.Fprintln(w, "| family | lock | verdict | incidents (rate, Wilson 95%) | lock / client faults | duplicate tokens / regressions / zero tokens | stale accepted / rejected | lost updates | zombie ms p50 / max | availability during fault | during / after vs baseline | recovery | basis |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, c := range a.Cells {
		if c.Verdict == NotApplicable {
			continue
		}
		avail := "-"
		if c.AvailabilityDuringFault != nil {
			avail = pct(*c.AvailabilityDuringFault)
		}
		basis := md(c.Basis)
		if tokenFlag(&c) != "" {
			basis = "**" + FencingBroke + "**; " + basis
		}
		fmt.Fprintf(w, "| %s | %s | %s | %d/%d (%.2f, %.2f-%.2f) | %d / %d | %d / %d / %d | %d / %d | %d | %s | %s | %s / %s | %s | %s |\n",
			c.Family, c.Lock, c.Verdict, c.RunsWithIncidents, c.Runs, c.Rate, c.RateLow, c.RateHigh,
			c.LockFaults, c.ClientFaults, c.DuplicateTokens, c.TokenRegressions, c.ZeroTokens, c.StaleAccepted, c.StaleRejected, c.LostUpdates,
			zombieText(&c), avail, pct(c.AvailDuring), pct(c.AvailAfter), secs(c.RecoveryS), basis)
	}
	quorumSection(w, a)
	fmt.Fprint(w, "\n## Reproductions\n\n")
	for _, c := range a.Cells {
		if c.Reproduce != "" {
			fmt.Fprintf(w, "- %s / %s (%s): `%s`\n", c.Family, c.Lock, c.Verdict, c.Reproduce)
		}
	}
}

var colours = map[string]string{
	Safe: "#b7e1b0", Held: "#d8eed3", Unsafe: "#f08a80", UnsafeWithoutFencing: "#f6d47a",
	Inconclusive: "#c9c9e8", NotApplicable: "#eeeeee",
}

const atlasStyle = `
body{font:14px/1.45 -apple-system,"Segoe UI",Helvetica,Arial,sans-serif;color:#1b1b1b;margin:24px;max-width:1900px}
h1{font-size:24px;margin:0 0 8px}h2{font-size:19px;margin:26px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
table{border-collapse:collapse}td,th{border:1px solid #bbb;padding:4px 6px;font-size:12px;vertical-align:top}
th{background:#f3f3f3;text-align:left}
table.grid td.c{min-width:92px}table.grid td.na{color:#666;text-align:center;vertical-align:middle}
.v{font-weight:600;white-space:nowrap}.k{color:#333;white-space:nowrap}.flag{color:#8b0000;font-weight:700}
.chip{display:inline-block;width:18px;height:14px;border:1px solid #888;vertical-align:middle;margin-right:6px}
details{margin-top:2px}summary{cursor:pointer;color:#333}code{font-size:12px}
dl dt{font-weight:600;margin-top:6px}dl dd{margin:0 0 0 18px}
`

func htmlPage(w io.Writer, a *Atlas, dir string) {
	e := html.EscapeString
	fmt.Fprintf(w, "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>locklab safety atlas</title><style>%s</style></head><body>\n", atlasStyle)
	fmt.Fprintf(w, "<h1>Safety atlas</h1><p>%d locks against %d fault families, %d runs per cell, ttl %dms, %d runs missing.</p>\n",
		len(a.Locks), len(a.Families), a.Runs, a.TTLMs, a.Missing)

	fmt.Fprint(w, "<h2>Readings</h2><p>Per lock, derived from its cells below.</p><table id=\"readings\"><tr><th>lock</th><th>fencing</th><th>reading</th></tr>\n")
	for _, l := range a.Locks {
		r := readingOf(a, l)
		fmt.Fprintf(w, "<tr><th>%s</th><td>%s</td><td class=\"reading\">%s</td></tr>\n", e(l), yesNo(r.Fences), e(r.Reading))
	}
	fmt.Fprint(w, "</table>\n<h2>Legend</h2><table id=\"legend\">\n")
	for _, m := range meanings {
		fmt.Fprintf(w, "<tr><td><span class=\"chip\" style=\"background:%s\"></span><b>%s</b></td><td>%s</td></tr>\n", colours[m.verdict], e(m.verdict), e(m.meaning))
	}
	fmt.Fprintf(w, "<tr><td><span class=\"flag\">tokens broke</span></td><td>duplicate fencing tokens, token regressions or grants without a token: %s</td></tr>\n", e(FencingBroke))
	fmt.Fprintf(w, "</table><p>%s</p>\n", e(cellNote))

	notes, idx := naNotes(a)
	fmt.Fprint(w, "<h2>Grid</h2><div style=\"overflow-x:auto\"><table class=\"grid\"><tr><th>lock</th><th>fencing</th>")
	for _, f := range a.Families {
		fmt.Fprintf(w, "<th>%s</th>", e(f.Name))
	}
	fmt.Fprint(w, "</tr>\n")
	for _, l := range a.Locks {
		fmt.Fprintf(w, "<tr><th>%s</th><td>%s</td>", e(l), yesNo(readingOf(a, l).Fences))
		for _, f := range a.Families {
			c := a.Cell(l, f.Name)
			if c.Verdict == NotApplicable {
				n := idx[c.NotApplicable]
				fmt.Fprintf(w, `<td class="na" style="background:%s" title="%s">n/a <a href="#na-%d"><sup>%d</sup></a></td>`, colours[NotApplicable], e(c.NotApplicable), n, n)
				continue
			}
			fmt.Fprintf(w, `<td class="c" style="background:%s" title="%s"><div class="v">%s</div><div class="k">%s</div><div class="k">avail. %s</div>`,
				colours[c.Verdict], e(c.Basis), e(rateText(c)), e(faultText(c)), e(availText(c)))
			if z := zombieText(c); z != "-" {
				fmt.Fprintf(w, `<div class="k" title="ms from the lock state lost on the server to its holder learning it: median of the runs' medians / longest">zombie %s ms</div>`, z)
			}
			if tokenFlag(c) != "" {
				fmt.Fprintf(w, `<div class="flag" title="%s">tokens broke: %d dup / %d regr. / %d zero</div>`, e(tokenFlag(c)), c.DuplicateTokens, c.TokenRegressions, c.ZeroTokens)
			}
			fmt.Fprintf(w, "<details><summary>basis, runs</summary><small>%s</small><br>", e(c.Basis))
			for _, r := range c.RunList {
				fmt.Fprintf(w, `<a href="%s/%s">run %d</a> (%d inc)<br>`, e(filepath.ToSlash(r.Dir)), runReport(dir, r.Dir), r.Index, r.Incidents)
			}
			fmt.Fprint(w, "</details></td>")
		}
		fmt.Fprint(w, "</tr>\n")
	}
	fmt.Fprint(w, "</table></div>\n<h2>Families</h2><dl id=\"families\">\n")
	for _, f := range a.Families {
		ctl := ""
		if f.Control {
			ctl = " (control: must be safe)"
		}
		fmt.Fprintf(w, "<dt>%s%s</dt><dd>%s</dd>\n", e(f.Name), ctl, e(f.Doc))
	}
	fmt.Fprint(w, "</dl>\n")
	if len(notes) > 0 {
		fmt.Fprint(w, "<h2>Not applicable</h2><ol id=\"not-applicable\">\n")
		for i, n := range notes {
			fmt.Fprintf(w, "<li id=\"na-%d\">%s <small>(%s)</small></li>\n", i+1, e(n), e(naCells(a, n)))
		}
		fmt.Fprint(w, "</ol>\n")
	}
	if qs := a.Quorums; len(qs) > 0 {
		fmt.Fprint(w, "<h2>The 2N+1 claim</h2><p>&ldquo;To survive N failed nodes Redlock needs 2N+1 masters&rdquo;: k of n primaries killed, available iff k &le; N.</p><table><tr><th>lock</th><th>killed</th><th>N</th><th>availability after the kill</th><th>available</th><th>expected</th><th>claim</th></tr>\n")
		for _, q := range qs {
			fmt.Fprintf(w, "<tr><td>%s</td><td>%d of %d</td><td>%d</td><td>%s</td><td>%v</td><td>%v</td><td>%s</td></tr>\n", e(q.Lock), q.K, q.N, (q.N-1)/2, pct(q.Availability), q.Available, q.Expected, q.Claim())
		}
		fmt.Fprint(w, "</table>\n")
	}
	fmt.Fprint(w, "<h2>Reproductions</h2><ul>\n")
	for _, c := range a.Cells {
		if c.Reproduce != "" {
			fmt.Fprintf(w, "<li>%s / %s (%s): <code>%s</code></li>\n", e(c.Family), e(c.Lock), e(c.Verdict), e(c.Reproduce))
		}
	}
	fmt.Fprint(w, "</ul></body></html>\n")
}

// runReport is the page a cell's link opens for one run: report.html, or
// report.md where the run was slimmed (Slim).
func runReport(dir, run string) string {
	if _, err := os.Stat(filepath.Join(dir, run, "report.html")); err != nil {
		return "report.md"
	}
	return "report.html"
}

// kindLabel is lock l's name with its kind when it is not a mutex
// ("redis-rw (rw)"): its cells are judged by that kind's promise.
func kindLabel(l string) string {
	if s, ok := locks.Lookup(l); ok && s.KindOf() != locks.KindMutex {
		return fmt.Sprintf("%s (%s)", l, s.KindOf())
	}
	return l
}
