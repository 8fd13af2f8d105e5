package explore

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
	"time"
)

// writeJSON writes dir/explore.json (atomically: a rename, so an
// interrupted write leaves the previous file).
func writeJSON(dir string, e *Explore) error {
	tally(e)
	data, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return fmt.Errorf("explore.json: %w", err)
	}
	tmp := filepath.Join(dir, "explore.json.tmp")
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("explore.json: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "explore.json")); err != nil {
		return fmt.Errorf("explore.json: %w", err)
	}
	return nil
}

// Write writes explore.json, explore.md and explore.html into dir.
func Write(dir string, e *Explore) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("explore folder: %w", err)
	}
	jerr := writeJSON(dir, e)
	merr := writeWith(filepath.Join(dir, "explore.md"), func(w io.Writer) { markdown(w, e) })
	herr := writeWith(filepath.Join(dir, "explore.html"), func(w io.Writer) { htmlPage(w, e) })
	return errors.Join(jerr, merr, herr)
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

// table is one table of the report, written as Markdown or HTML.
type table struct {
	head []string
	rows [][]string
	// links maps a cell (row, column) to its link target.
	links map[[2]int]string
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) link(col int, target string) {
	if t.links == nil {
		t.links = map[[2]int]string{}
	}
	t.links[[2]int{len(t.rows) - 1, col}] = target
}

// sections are the report's parts in order: a heading, paragraphs, and
// at most one table each.
type section struct {
	title string
	paras []string
	tab   *table
}

func sections(e *Explore) []section {
	var out []section
	p := e.Plan
	budget := "none"
	if p.Budget > 0 {
		budget = p.Budget.String()
	}
	intro := fmt.Sprintf("Seed %d, locks %s, fault types %s; budget %s (drawing and shrinking share it, shrinking first), runs %s.",
		p.Seed, strings.Join(p.Locks, ", "), orDash(strings.Join(p.Faults, ", ")), budget, runsText(p.Runs))
	state := fmt.Sprintf("%d runs drawn in %s of exploring (%.0f runs per hour, %d runs at once with shrinking), %s in all: %d unsafe, %d safe, %d inconclusive (%s of the runs: a fault that did not bite, too few visits in its window, or a run error; never findings, never safe).",
		len(e.Runs), dur(e.ExploreS), e.RunsPerHour, e.Parallel, dur(e.ElapsedS), e.Unsafe, e.Safe, e.Inconclusive, pct(e.Inconclusive, len(e.Runs)))
	paras := []string{intro, state}
	if n, runs, secs := shrinkCost(e.Findings); n > 0 {
		paras = append(paras, fmt.Sprintf("Shrinking: %d findings shrunk or joined a root cause by their steps, %d runs (%.1f each), %s each on average; %d subsumed without a run.",
			n, runs, float64(runs)/float64(n), dur(secs/float64(n)), subsumedFree(e.Findings)))
	}
	if e.Shard != "" {
		paras = append(paras, "This folder holds shard "+e.Shard+" of the exploration: `chaos explore merge` joins the shards.")
	}
	if len(e.Merged) > 0 {
		paras = append(paras, "Merged from "+strings.Join(e.Merged, ", ")+".")
	}
	if !e.Complete {
		paras = append(paras, "Partial: the exploration was interrupted; `chaos explore --resume DIR` continues it.")
	}
	out = append(out, section{title: "Exploration", paras: paras})

	rt := &table{head: []string{"root cause", "minimal scenario", "reproduced", "rate (95% interval)", "variants", "runs", "first found"}}
	for _, c := range e.RootCauses {
		reproduced, rate := "-", "-"
		if c.Tries > 0 {
			reproduced = fmt.Sprintf("%d/%d", c.Reproduced, c.Tries)
			rate = fmt.Sprintf("%.0f%% (%.0f-%.0f%%)", 100*c.Rate, 100*c.RateLow, 100*c.RateHigh)
		}
		min := orDash(c.Minimal)
		switch {
		case c.Stopped:
			min = "shrinking stopped by the budget: " + min
		case !c.Shrunk:
			min = "not shrunk"
		}
		rt.add(c.Name(), min, reproduced, rate, strings.Join(c.Variants, ", "), fmt.Sprint(c.Runs), fmt.Sprintf("%.1f min in", c.FirstAtS/60))
		if c.Minimal != "" {
			rt.link(1, c.Minimal)
		}
	}
	rparas := []string{"A root cause is what findings come down to once shrunk: the lock, what broke and the minimal set of fault types that still breaks it. Findings that differ only in which harmless extra fault happened to bite are its variants."}
	if e.Unshrunk > 0 {
		rparas = append(rparas, fmt.Sprintf("%d of %d findings were not shrunk (%d of them stopped mid-shrinking): the budget ran out (or the exploration was interrupted) first, so their root causes may name harmless fault types; `chaos explore --resume DIR` with more budget shrinks them.", e.Unshrunk, len(e.Findings), stopped(e.Findings)))
	}
	if len(e.RootCauses) > 0 {
		out = append(out, section{title: "Root causes", paras: rparas, tab: rt})
	}

	ft := &table{head: []string{"signature", "classification", "minimal scenario", "faults", "reproduced", "rate (95% interval)", "first found", "runs", "shrinking"}}
	for _, f := range e.Findings {
		rate := "-"
		if f.Tries > 0 {
			rate = fmt.Sprintf("%.0f%% (%.0f-%.0f%%)", 100*f.Rate, 100*f.RateLow, 100*f.RateHigh)
		}
		shrink := orDash(f.Shrink)
		if f.Shrink == "done" || len(f.Steps) > 0 {
			kept := 0
			for _, s := range f.Steps {
				if s.Kept {
					kept++
				}
			}
			shrink = fmt.Sprintf("%s: %d of %d steps kept, %d runs", orDash(f.Shrink), kept, len(f.Steps), f.ShrinkRuns)
		}
		faults, reproduced := "-", "-"
		if f.Minimal != "" {
			faults = fmt.Sprint(f.MinimalFaults)
		}
		if f.Tries > 0 {
			reproduced = fmt.Sprintf("%d/%d", f.Reproduced, f.Tries)
		}
		ft.add(f.Signature, f.Classification, orDash(f.Minimal), faults, reproduced, rate,
			fmt.Sprintf("run %d, %.1f min in", f.FirstRun, f.FirstAtS/60), fmt.Sprint(len(f.Runs)), shrink)
		if f.Minimal != "" {
			ft.link(2, f.Minimal)
		}
	}
	fparas := []string{"A finding is a signature: the lock, what broke (lock fault, duplicate token, token regression, client fault, lost update: the most severe) and the fault types that bit. Its minimal scenario's expect states the finding: `chaos run` on it exits 0 exactly when the failure reproduces."}
	if len(e.Findings) == 0 {
		fparas = append(fparas, "No finding: no run was unsafe.")
	}
	out = append(out, section{title: "Findings", paras: fparas, tab: ft})

	for _, f := range e.Findings {
		if len(f.Steps) == 0 && f.Shrink != "subsumed" {
			continue // not shrunk: the findings table says so
		}
		st := &table{head: []string{"step", "reproduced", "kept"}}
		for _, s := range f.Steps {
			switch {
			case s.Refused != "":
				st.add(s.What, "not run: "+s.Refused, "no")
			default:
				st.add(s.What, fmt.Sprintf("%d/%d", s.Reproduced, s.Tries), yesNo(s.Kept))
			}
		}
		paras := []string{fmt.Sprintf("%s. Found by run %d (%s); %d of the runs in all. Shrinking: %s. Reproduce: `%s`.",
			f.Classification, f.FirstRun, runScenario(e, f.FirstRun), len(f.Runs), f.Shrink, orDash(f.Repro))}
		out = append(out, section{title: "Shrinking " + f.Signature, paras: paras, tab: st})
	}

	tt := &table{head: []string{"lock", "fault type", "runs", "race opened", "unsafe", "inconclusive"}}
	for _, t := range e.Tried {
		tt.add(t.Lock, t.Fault, fmt.Sprint(t.Runs), fmt.Sprint(t.Opened), fmt.Sprint(t.Unsafe), fmt.Sprint(t.Inconclusive))
	}
	out = append(out, section{title: "What was tried", paras: []string{"Runs by lock and fault type (a run with several types counts under each); race opened: runs where a fault of the type opened the race it exists for (a holder inside while the lock's state no longer protected it), the pair exercised and not only drawn."}, tab: tt})
	return out
}

// shrinkCost sums the shrinkings that ended (done, rare, or joined a
// root cause by their steps): how many, their runs and seconds.
func shrinkCost(fs []*Finding) (n, runs int, secs float64) {
	for _, f := range fs {
		if Shrunk(f) && f.ShrinkRuns > 0 {
			n, runs, secs = n+1, runs+f.ShrinkRuns, secs+f.ShrinkS
		}
	}
	return n, runs, secs
}

// subsumedFree counts the findings subsumed without a run.
func subsumedFree(fs []*Finding) int {
	n := 0
	for _, f := range fs {
		if f.Shrink == "subsumed" && f.ShrinkRuns == 0 {
			n++
		}
	}
	return n
}

func runScenario(e *Explore, index int) string {
	for _, r := range e.Runs {
		if r.Index == index {
			return r.Scenario
		}
	}
	return "-"
}

func markdown(w io.Writer, e *Explore) {
	fmt.Fprintf(w, "# chaos explore\n\n")
	for _, s := range sections(e) {
		fmt.Fprintf(w, "## %s\n\n", s.title)
		for _, p := range s.paras {
			fmt.Fprintf(w, "%s\n\n", p)
		}
		if s.tab == nil || len(s.tab.rows) == 0 {
			continue
		}
		fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(s.tab.head, " | "), strings.Repeat("---|", len(s.tab.head)))
		for i, r := range s.tab.rows {
			cells := make([]string, len(r))
			for j, c := range r {
				c = strings.ReplaceAll(c, "|", "\\|")
				if l, ok := s.tab.links[[2]int{i, j}]; ok {
					c = "[" + c + "](" + l + ")"
				}
				cells[j] = c
			}
			fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
		}
		fmt.Fprintln(w)
	}
}

func htmlPage(w io.Writer, e *Explore) {
	fmt.Fprint(w, `<!doctype html><html><head><meta charset="utf-8"><title>chaos explore</title><style>
body{font-family:sans-serif;max-width:75em;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left;vertical-align:top}
th{background:#f4f4f4}code{background:#f4f4f4;padding:0 .2em}
</style></head><body><h1>chaos explore</h1>
`)
	for _, s := range sections(e) {
		fmt.Fprintf(w, "<h2>%s</h2>\n", html.EscapeString(s.title))
		for _, p := range s.paras {
			fmt.Fprintf(w, "<p>%s</p>\n", codeSpans(p))
		}
		if s.tab == nil || len(s.tab.rows) == 0 {
			continue
		}
		fmt.Fprint(w, "<table><tr>")
		for _, h := range s.tab.head {
			fmt.Fprintf(w, "<th>%s</th>", html.EscapeString(h))
		}
		fmt.Fprint(w, "</tr>\n")
		for i, r := range s.tab.rows {
			fmt.Fprint(w, "<tr>")
			for j, c := range r {
				c = html.EscapeString(c)
				if l, ok := s.tab.links[[2]int{i, j}]; ok {
					c = `<a href="` + html.EscapeString(l) + `">` + c + "</a>"
				}
				fmt.Fprintf(w, "<td>%s</td>", c)
			}
			fmt.Fprint(w, "</tr>\n")
		}
		fmt.Fprint(w, "</table>\n")
	}
	fmt.Fprint(w, "</body></html>\n")
}

// codeSpans escapes p and turns `x` into <code>x</code>.
func codeSpans(p string) string {
	parts := strings.Split(p, "`")
	for i := range parts {
		parts[i] = html.EscapeString(parts[i])
		if i%2 == 1 {
			parts[i] = "<code>" + parts[i] + "</code>"
		}
	}
	return strings.Join(parts, "")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func runsText(n int) string {
	if n <= 0 {
		return "until the budget is spent"
	}
	return fmt.Sprint(n)
}

func dur(s float64) string {
	return time.Duration(s * float64(time.Second)).Round(time.Second).String()
}

func pct(k, n int) string {
	if n == 0 {
		return "0%"
	}
	return fmt.Sprintf("%.0f%%", 100*float64(k)/float64(n))
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
