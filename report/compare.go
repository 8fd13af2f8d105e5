package report

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Comparison is several results side by side, like with like: results of
// the same scenario are compared with the first of them (the baseline of
// that scenario), and different scenarios only side by side, lock by lock
// (never one scenario as the baseline of another).
type Comparison struct {
	// Names label the results in tables and plots (unique).
	Names   []string
	Results []*Result
	// Rows pair the runs of the same lock configuration and client count.
	Rows []CompareRow
	// Groups are the indices of the results of each scenario, in the
	// order scenarios first appear; the first of a group is its baseline.
	Groups [][]int
}

// CompareRow is one lock configuration at one client count across results.
type CompareRow struct {
	Key     string // lock label plus sweep parameters other than clients
	Clients int
	// Runs holds, per result, the matching run; nil when that result has
	// none.
	Runs []*Run
}

// Compare pairs the runs of results by lock label, parameters and clients.
// names label the results; empty ones are replaced by the scenario name
// (and a number when two would be the same).
func Compare(results []*Result, names []string) *Comparison {
	c := &Comparison{Results: results, Names: uniqueNames(results, names)}
	group := map[string]int{}
	for ri, r := range results {
		g, ok := group[r.Scenario]
		if !ok {
			g = len(c.Groups)
			group[r.Scenario] = g
			c.Groups = append(c.Groups, nil)
		}
		c.Groups[g] = append(c.Groups[g], ri)
	}
	idx := map[string]int{}
	for ri, r := range results {
		for i := range r.Runs {
			run := &r.Runs[i]
			k := fmt.Sprintf("%s\x00%d", seriesKey(run), run.Clients)
			row, ok := idx[k]
			if !ok {
				row = len(c.Rows)
				idx[k] = row
				c.Rows = append(c.Rows, CompareRow{Key: seriesKey(run), Clients: run.Clients, Runs: make([]*Run, len(results))})
			}
			if c.Rows[row].Runs[ri] == nil { // a repeated lock: the first run counts
				c.Rows[row].Runs[ri] = run
			}
		}
	}
	return c
}

func uniqueNames(results []*Result, names []string) []string {
	out := make([]string, len(results))
	used := map[string]int{}
	for i, r := range results {
		n := ""
		if i < len(names) {
			n = names[i]
		}
		if n == "" {
			n = r.Scenario
		}
		used[n]++
		if used[n] > 1 {
			n = fmt.Sprintf("%s (%d)", n, used[n])
		}
		out[i] = n
	}
	return out
}

// pct is the relative change from a to b in percent, "" when undefined.
func pct(a, b float64) string {
	if a == 0 || math.IsNaN(a) || math.IsNaN(b) {
		return ""
	}
	return fmt.Sprintf("%+.1f%%", (b-a)/a*100)
}

// delta renders "a → b (±x%)", or the one side that exists.
func delta(a, b *Run, v func(*Run) (float64, bool), withPct bool) string {
	av, aok := 0.0, false
	bv, bok := 0.0, false
	if a != nil {
		av, aok = v(a)
	}
	if b != nil {
		bv, bok = v(b)
	}
	switch {
	case aok && bok:
		s := fmtNum(av) + " → " + fmtNum(bv)
		if p := pct(av, bv); withPct && p != "" {
			s += " (" + p + ")"
		}
		return s
	case aok:
		return fmtNum(av) + " → -"
	case bok:
		return "- → " + fmtNum(bv)
	}
	return "-"
}

var (
	vThroughput = func(r *Run) (float64, bool) { return r.Throughput, measured(r) }
	vAcqP50     = func(r *Run) (float64, bool) { return r.Acquire.P50Ms, r.Acquire.Count > 0 }
	vAcqP99     = func(r *Run) (float64, bool) { return r.Acquire.P99Ms, r.Acquire.Count > 0 }
	vViolations = func(r *Run) (float64, bool) { return float64(r.Violations), measured(r) }
)

// baselineOf is the index of the result ri is compared with: the first
// result of the same scenario; -1 when ri is that first one.
func (c *Comparison) baselineOf(ri int) int {
	for _, g := range c.Groups {
		if len(g) > 0 && g[0] != ri && c.Results[g[0]].Scenario == c.Results[ri].Scenario {
			return g[0]
		}
	}
	return -1
}

// repeated reports whether some scenario appears in several results.
func (c *Comparison) repeated() bool {
	for _, g := range c.Groups {
		if len(g) > 1 {
			return true
		}
	}
	return false
}

// deltaTable compares every result with the baseline of its scenario: one
// row per lock, clients and result; empty when no scenario repeats.
func (c *Comparison) deltaTable() *docTable {
	t := &docTable{head: []string{"scenario", "run", "vs", "lock", "clients", "ops/s", "acq p50 ms", "acq p99 ms", "violations"},
		num: []bool{false, false, false, false, true, true, true, true, true}}
	for _, g := range c.Groups {
		base := g[0]
		for _, ri := range g[1:] {
			for _, row := range c.Rows {
				a, b := row.Runs[base], row.Runs[ri]
				if a == nil && b == nil {
					continue
				}
				worse := b != nil && (a == nil || b.Violations > a.Violations)
				t.add(worse && b.Violations > 0, c.Results[ri].Scenario, c.Names[ri], c.Names[base], row.Key, fmt.Sprint(row.Clients),
					delta(a, b, vThroughput, true), delta(a, b, vAcqP50, true),
					delta(a, b, vAcqP99, true), delta(a, b, vViolations, false))
			}
		}
	}
	return t
}

// acrossTable puts the scenarios side by side, lock by lock: per lock
// (and clients) one row, per scenario one column (its first result) with
// the lock's safety, throughput and acquire p99 there; no deltas, since
// the scenarios differ. Empty with a single scenario.
func (c *Comparison) acrossTable() *docTable {
	if len(c.Groups) < 2 {
		return &docTable{}
	}
	t := &docTable{head: []string{"lock", "clients"}, num: []bool{false, true}}
	for _, g := range c.Groups {
		t.head = append(t.head, c.Names[g[0]])
		t.num = append(t.num, false)
	}
	for _, row := range c.Rows {
		cells := []string{row.Key, fmt.Sprint(row.Clients)}
		bad := false
		for _, g := range c.Groups {
			run := row.Runs[g[0]]
			if run == nil {
				cells = append(cells, "-")
				continue
			}
			word := orDash(SafetyClass(run))
			bad = bad || word == SafetyUnsafe || word == SafetyUnsafeWithoutFencing
			cells = append(cells, fmt.Sprintf("%s · %s ops/s · p99 %s ms", word, fmtNum(run.Throughput), latMs(run.Acquire, run.Acquire.P99Ms)))
		}
		t.add(bad, cells...)
	}
	return t
}

// WriteTable writes the comparison as aligned text: the deltas of each
// result against the baseline of its scenario ("ops/s 420 → 380
// (-9.5%)"), then the scenarios side by side, lock by lock.
func (c *Comparison) WriteTable(w io.Writer) error {
	for _, g := range c.Groups {
		fmt.Fprintf(w, "scenario %s: ", c.Results[g[0]].Scenario)
		if len(g) == 1 {
			fmt.Fprintf(w, "%s (one result: nothing to compare it with)\n", c.Names[g[0]])
			continue
		}
		names := make([]string, 0, len(g)-1)
		for _, ri := range g[1:] {
			names = append(names, c.Names[ri])
		}
		fmt.Fprintf(w, "baseline %s, compared: %s\n", c.Names[g[0]], strings.Join(names, ", "))
	}
	for _, t := range []*docTable{c.deltaTable(), c.acrossTable()} {
		if len(t.rows) == 0 {
			continue
		}
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, strings.Join(t.head, "\t")+"\t")
		for _, r := range t.rows {
			fmt.Fprintln(tw, strings.Join(r, "\t")+"\t")
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// RenderComparison writes comparison.md, comparison.html and the
// comparison plots into dir: throughput of every run side by side,
// acquire latency curves with one panel per result, and the safety matrix
// with one column per result.
func RenderComparison(dir string, c *Comparison) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("comparison: %w", err)
	}
	var figs []figure
	add := func(f figure, ok bool) {
		if ok {
			figs = append(figs, f)
		}
	}
	add(compareThroughputFigure(c))
	acq := func(r *Run) *Latency { return &r.Acquire }
	hand := func(r *Run) *Latency { return &r.Handoff }
	add(latencyPanels("compare-latency", "Acquire", "Acquire latency percentiles by run", c.panels(), c.lineKey(), acq))
	add(latencyPanels("compare-handoff", "Hand-off", "Hand-off latency percentiles by run", c.panels(), c.lineKey(), hand))
	add(safetyFigure(Safety(c.Results, c.Names), "safety", "Safety: lock x run"))
	plots, perr := saveAll(dir, figs)

	d := &doc{title: "locklab comparison"}
	d.p("Like with like: a result is compared with the first result of the same scenario (its baseline), lock by lock at the same client count; different scenarios are only put side by side, lock by lock, never one as the baseline of another.")
	runs := &docTable{head: []string{"run", "scenario", "started", "seed", "provider", "host", "status"}, num: []bool{false, false, false, true}}
	for i, r := range c.Results {
		status := "complete"
		if !r.Complete {
			status = "partial"
		}
		if v := resultVerdict(r); v != "" {
			status += ", expectations " + v
		}
		started := ""
		if !r.Started.IsZero() {
			started = r.Started.UTC().Format(time.DateTime)
		}
		runs.add(!r.Complete, c.Names[i], r.Scenario, started, fmt.Sprint(r.Seed), r.Provider,
			fmt.Sprintf("%d CPUs %s/%s %s", r.Host.CPUs, r.Host.OS, r.Host.Arch, r.Host.Hostname), status)
	}
	d.tab(runs)
	if t := c.acrossTable(); len(t.rows) > 0 {
		d.h(2, "Scenarios side by side")
		d.tab(t)
		d.p("Per lock and scenario: safe / unsafe / inconclusive under that scenario's faults, throughput and acquire p99. Scenarios differ in their faults and workloads, so their numbers are not deltas of one another.")
	}
	if c.repeated() {
		d.h(2, "Deltas within a scenario")
		d.tab(c.deltaTable())
		d.p("a → b: the scenario's baseline result → this result; percentages are the change from the baseline.")
	}
	d.h(2, "Plots")
	for _, p := range plots {
		d.img(p)
	}
	for i, r := range c.Results {
		d.h(2, c.Names[i])
		if r.Description != "" {
			d.p("%s", strings.TrimSpace(r.Description))
		}
		d.list("workload: "+workloadString(r), "fencing: "+r.Fencing)
		d.tab(summaryTable(r))
	}
	merr := writeFile(filepath.Join(dir, "comparison.md"), func(w *bufio.Writer) error { return d.markdown(w) })
	herr := writeFile(filepath.Join(dir, "comparison.html"), func(w *bufio.Writer) error { return d.html(w, dir) })
	if err := errors.Join(perr, merr, herr); err != nil {
		return fmt.Errorf("comparison %s: %w", dir, err)
	}
	return nil
}

// panels are the runs of each result, one latency panel each.
func (c *Comparison) panels() []latPanel {
	var ps []latPanel
	for i, r := range c.Results {
		pn := latPanel{title: c.Names[i]}
		for j := range r.Runs {
			pn.runs = append(pn.runs, &r.Runs[j])
		}
		ps = append(ps, pn)
	}
	return ps
}

// lineKey names a latency line: the lock configuration, plus clients when
// some lock ran at several client counts.
func (c *Comparison) lineKey() func(*Run) string {
	counts := map[string]map[int]bool{}
	for _, row := range c.Rows {
		if counts[row.Key] == nil {
			counts[row.Key] = map[int]bool{}
		}
		counts[row.Key][row.Clients] = true
	}
	return func(r *Run) string {
		k := seriesKey(r)
		if len(counts[k]) > 1 {
			return fmt.Sprintf("%s, %d clients", k, r.Clients)
		}
		return k
	}
}

// compareThroughputFigure is grouped horizontal bars: one group per lock
// and client count, one bar per result (coloured by result).
func compareThroughputFigure(c *Comparison) (figure, bool) {
	if len(c.Rows) == 0 {
		return figure{}, false
	}
	key := c.lineKey()
	n, k := len(c.Rows), len(c.Results)
	barW := 12.0
	groupH := barW*float64(k) + 10
	maxV := 0.0
	for _, row := range c.Rows {
		for _, run := range row.Runs {
			if run != nil {
				maxV = math.Max(maxV, run.Throughput)
			}
		}
	}
	l := newLegend()
	for i, name := range c.Names {
		l.add(name, &plotter.BarChart{Color: palette[i%len(palette)]})
	}
	_, lh := l.size()
	h := math.Max(100+groupH*float64(n)*1.15, lh.Points()+60)
	return figure{
		name: "compare-throughput", title: "Throughput by run (ops/s)", run: -1,
		w: vg.Points(864), h: vg.Points(h),
		draw: func(cv draw.Canvas) {
			withLegend(cv, l, "run", func(cv draw.Canvas) {
				p := newPlot("Throughput by run", "throughput (ops/s)", "")
				names := make([]string, n)
				for gi, row := range c.Rows {
					names[n-1-gi] = key(row.Runs[firstNonNil(row.Runs)])
				}
				for ri := range c.Results {
					// Result 0 on top within each group.
					off := vg.Points(barW * (float64(k-1)/2 - float64(ri)))
					var lx plotter.XYs
					var ltext []string
					for gi, row := range c.Rows {
						y := float64(n - 1 - gi)
						run := row.Runs[ri]
						v := 0.0
						if run != nil {
							v = run.Throughput
						}
						bc, err := plotter.NewBarChart(plotter.Values{v}, vg.Points(barW))
						if err != nil {
							continue
						}
						bc.Horizontal = true
						bc.XMin = y
						bc.Offset = off
						bc.Color = palette[ri%len(palette)]
						bc.LineStyle.Width = 0
						p.Add(bc)
						txt := "-"
						if run != nil {
							txt = fmtNum(v)
							if base := c.baselineOf(ri); base >= 0 {
								if d := pct(vOf(row.Runs[base], vThroughput), v); d != "" {
									txt += " (" + d + ")"
								}
							}
						}
						lx = append(lx, plotter.XY{X: v, Y: y})
						ltext = append(ltext, txt)
					}
					if labels, err := plotter.NewLabels(plotter.XYLabels{XYs: lx, Labels: ltext}); err == nil {
						for i := range labels.TextStyle {
							labels.TextStyle[i].Font = sans(8.5)
							labels.TextStyle[i].YAlign = draw.YCenter
						}
						labels.Offset = vg.Point{X: vg.Points(3), Y: off}
						p.Add(labels)
					}
				}
				p.NominalY(names...)
				p.Y.Min, p.Y.Max = -0.5, float64(n)-0.5 // room for every bar of the outer groups
				p.Y.Tick.Label.Font = sans(10)
				p.X.Min, p.X.Max = 0, niceMax(maxV*1.3)
				p.X.Tick.Marker = linearTicks{}
				p.Draw(cv)
			})
		},
	}, true
}

func firstNonNil(runs []*Run) int {
	for i, r := range runs {
		if r != nil {
			return i
		}
	}
	return 0
}

// vOf is v(r), NaN when r is nil or has no such value.
func vOf(r *Run, v func(*Run) (float64, bool)) float64 {
	if r == nil {
		return math.NaN()
	}
	x, ok := v(r)
	if !ok {
		return math.NaN()
	}
	return x
}
