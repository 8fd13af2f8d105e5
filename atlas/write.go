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

	"github.com/locklab/locklab/report"
)

// Write writes atlas.json, atlas.md, atlas.html and atlas.png into dir.
func Write(dir string, a *Atlas) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("atlas folder: %w", err)
	}
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

// short is a cell's text in the grid: runs with incidents over runs.
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

func markdown(w io.Writer, a *Atlas) {
	fmt.Fprintf(w, "# Safety atlas\n\n%d runs per cell, ttl %dms; %d runs missing. Cell: runs with >= 1 incident / runs, verdict.\n\n", a.Runs, a.TTLMs, a.Missing)
	fmt.Fprint(w, "| lock |")
	for _, f := range a.Families {
		fmt.Fprintf(w, " %s |", f.Name)
	}
	fmt.Fprint(w, "\n|---|")
	for range a.Families {
		fmt.Fprint(w, "---|")
	}
	fmt.Fprintln(w)
	for _, l := range a.Locks {
		fmt.Fprintf(w, "| %s |", l)
		for _, f := range a.Families {
			c := a.Cell(l, f.Name)
			fmt.Fprintf(w, " %s %s |", short(c), c.Verdict)
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
	fmt.Fprint(w, "\n## Cells\n\n")
	fmt.Fprintln(w, "| family | lock | verdict | incidents (rate, Wilson 95%) | lock / client faults | stale accepted / rejected | lost updates | availability during / after | recovery |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|")
	for _, c := range a.Cells {
		if c.Verdict == NotApplicable {
			fmt.Fprintf(w, "| %s | %s | not-applicable | %s | | | | | |\n", c.Family, c.Lock, c.NotApplicable)
			continue
		}
		fmt.Fprintf(w, "| %s | %s | %s | %d/%d (%.2f, %.2f-%.2f) | %d / %d | %d / %d | %d | %s / %s | %s |\n",
			c.Family, c.Lock, c.Verdict, c.RunsWithIncidents, c.Runs, c.Rate, c.RateLow, c.RateHigh,
			c.LockFaults, c.ClientFaults, c.StaleAccepted, c.StaleRejected, c.LostUpdates,
			pct(c.AvailDuring), pct(c.AvailAfter), secs(c.RecoveryS))
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
	Safe: "#b7e1b0", Unsafe: "#f08a80", UnsafeWithoutFencing: "#f6d47a",
	Inconclusive: "#c9c9e8", NotApplicable: "#e6e6e6",
}

func htmlPage(w io.Writer, a *Atlas, dir string) {
	e := html.EscapeString
	fmt.Fprint(w, `<!doctype html><html><head><meta charset="utf-8"><title>locklab safety atlas</title><style>
body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}td,th{border:1px solid #999;padding:4px 8px;font-size:13px}
td.c{text-align:center}details{margin:0}summary{cursor:pointer}code{font-size:12px}</style></head><body>`)
	fmt.Fprintf(w, "<h1>Safety atlas</h1><p>%d runs per cell, ttl %dms, %d runs missing. A cell: runs with at least one incident / runs; open it for its runs' reports.</p>", a.Runs, a.TTLMs, a.Missing)
	fmt.Fprint(w, "<p>")
	for _, v := range []string{Safe, Unsafe, UnsafeWithoutFencing, Inconclusive, NotApplicable} {
		fmt.Fprintf(w, `<span style="background:%s;padding:2px 8px;margin-right:6px">%s</span>`, colours[v], v)
	}
	fmt.Fprint(w, "</p><table><tr><th>lock</th>")
	for _, f := range a.Families {
		fmt.Fprintf(w, `<th title="%s">%s</th>`, e(f.Doc), e(f.Name))
	}
	fmt.Fprint(w, "</tr>")
	for _, l := range a.Locks {
		fmt.Fprintf(w, "<tr><th>%s</th>", e(l))
		for _, f := range a.Families {
			c := a.Cell(l, f.Name)
			fmt.Fprintf(w, `<td class="c" style="background:%s" title="%s"><details><summary>%s</summary>`, colours[c.Verdict], e(c.Verdict+" "+c.NotApplicable), e(short(c)))
			for _, r := range c.RunList {
				fmt.Fprintf(w, `<a href="%s/%s">run %d</a> (%d inc)<br>`, e(filepath.ToSlash(r.Dir)), runReport(dir, r.Dir), r.Index, r.Incidents)
			}
			if c.NotApplicable != "" {
				fmt.Fprintf(w, "<small>%s</small>", e(c.NotApplicable))
			}
			fmt.Fprint(w, "</details></td>")
		}
		fmt.Fprint(w, "</tr>")
	}
	fmt.Fprint(w, "</table><h2>Reproductions</h2><ul>")
	for _, c := range a.Cells {
		if c.Reproduce != "" {
			fmt.Fprintf(w, "<li>%s / %s (%s): <code>%s</code></li>", e(c.Family), e(c.Lock), e(c.Verdict), e(c.Reproduce))
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
