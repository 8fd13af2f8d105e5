package report

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// WritePlots renders every plot of r into dir as PNG and SVG:
//
//   - throughput: ops/s per lock (bars), or against clients when the result
//     sweeps clients (one line per lock);
//   - latency and handoff: acquire and hand-off percentile curves on a
//     "nines" axis, one line per lock (one panel per client count in a sweep);
//   - safety: the lock x scenario matrix of violations and stale writes;
//   - timeline-<lock>[-clients-N]: one per run, completions and errors over
//     time with fault windows shaded and violations marked.
//
// It returns the plots written; a plot that fails is left out and its error
// joined into the returned error, the others are still written.
func WritePlots(dir string, r *Result) ([]Plot, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("plots: %w", err)
	}
	var figs []figure
	add := func(f figure, ok bool) {
		if ok {
			figs = append(figs, f)
		}
	}
	add(throughputFigure(r))
	add(scaleFigure(r))
	add(latencyFigure(r, "latency", "Acquire", func(run *Run) *Latency { return &run.Acquire }))
	add(latencyFigure(r, "handoff", "Hand-off", func(run *Run) *Latency { return &run.Handoff }))
	add(safetyFigure(Safety([]*Result{r}, []string{r.Scenario}), "safety", "Safety: "+r.Scenario))
	sweep := isSweep(groupSeries(r.Runs))
	holds := readHolds(dir)
	for i, name := range timelineNames(r.Runs) {
		add(timelineFigure(r, i, name, sweep))
		add(holdsFigure(r, i, name, holds[i]))
	}
	return saveAll(dir, figs)
}

// Render writes the report of r into dir: the plots (WritePlots),
// report.md (images by file name) and report.html (one self-contained file,
// images inline). It renders partial results too: an interrupted run gets a
// report of what finished, marked as partial. Errors of single plots do not
// stop the rest; every error is returned joined.
func Render(dir string, r *Result) error {
	plots, perr := WritePlots(dir, r)
	doc := resultDoc(r, plots, timelineNames(r.Runs))
	merr := writeFile(filepath.Join(dir, "report.md"), func(w *bufio.Writer) error { return doc.markdown(w) })
	herr := writeFile(filepath.Join(dir, "report.html"), func(w *bufio.Writer) error { return doc.html(w, dir) })
	if err := errors.Join(perr, merr, herr); err != nil {
		return fmt.Errorf("render %s: %w", dir, err)
	}
	return nil
}
