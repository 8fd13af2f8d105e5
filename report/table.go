package report

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
)

// Table writes the summary table of r: one row per run.
func Table(w io.Writer, r *Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "lock\tclients\tops\tops/s\tacq p50 ms\tacq p99 ms\thand-off p50 ms\terrors\tviolations\tlost upd\tstale (rej)\t")
	for _, run := range r.Runs {
		stale := fmt.Sprintf("%d (%d)", run.StaleTokens, run.StaleRejected)
		viol := fmt.Sprint(run.Violations)
		if run.ExpectMet != nil && !*run.ExpectMet {
			viol += " !"
		}
		lock := RunLabel(run)
		if run.Error != "" {
			lock += " (failed)"
		} else if !run.Complete {
			lock += " (partial)"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.0f\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t\n",
			lock, run.Clients, run.Ops, run.Throughput,
			ms(run.Acquire.P50Ms, run.Acquire.Count), ms(run.Acquire.P99Ms, run.Acquire.Count),
			ms(run.Handoff.P50Ms, run.Handoff.Count),
			ErrorsString(run.Errors), viol, run.LostUpdates, stale)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if kinds := kindLines(r); len(kinds) > 0 {
		fmt.Fprintf(w, "\nlock kinds:\n")
		for _, k := range kinds {
			fmt.Fprintf(w, "  %s\n", k)
		}
	}
	return CountersTable(w, r)
}

// kindLines are "label: reading" for every run whose lock is not a mutex.
func kindLines(r *Result) []string {
	var out []string
	for i := range r.Runs {
		if k := KindReading(&r.Runs[i]); k != "" {
			out = append(out, RunLabel(r.Runs[i])+": "+k)
		}
	}
	return out
}

// CountersTable writes, for runs whose lock clients count their server
// traffic, each counter per completed critical section (per acquisition):
// with one contended lock every acquisition is a hand-off, so this shows
// the herd effect (watch events growing with waiters) next to a recipe that
// wakes one waiter. It writes nothing when no run has counters.
func CountersTable(w io.Writer, r *Result) error {
	// Counters that stayed 0 in every run (session expiries in a run
	// without faults) only widen the table.
	var names []string
	total := map[string]int64{}
	for _, run := range r.Runs {
		for k, v := range run.Counters {
			if _, ok := total[k]; !ok {
				names = append(names, k)
			}
			total[k] += v
		}
	}
	names = slices.DeleteFunc(names, func(n string) bool { return total[n] == 0 })
	if len(names) == 0 {
		return nil
	}
	sort.Strings(names)
	fmt.Fprintln(w, "\nserver traffic per completed critical section (sum over clients / ops):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "lock\tclients\t")
	for _, n := range names {
		fmt.Fprintf(tw, "%s/op\t", n)
	}
	fmt.Fprintln(tw)
	for _, run := range r.Runs {
		if len(run.Counters) == 0 || run.Ops == 0 {
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t", RunLabel(run), run.Clients)
		for _, n := range names {
			if v, ok := run.Counters[n]; ok {
				fmt.Fprintf(tw, "%.2f\t", float64(v)/float64(run.Ops))
			} else {
				fmt.Fprint(tw, "-\t")
			}
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

func ms(v float64, n int64) string {
	if n == 0 {
		return "-"
	}
	switch {
	case v < 1:
		return fmt.Sprintf("%.3f", v)
	case v < 100:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

// ErrorsString renders error counts as "3 (acquire_timeout 2, release_not_held 1)".
func ErrorsString(errs map[string]int64) string {
	var total int64
	kinds := make([]string, 0, len(errs))
	for k, n := range errs {
		if n == 0 {
			continue
		}
		total += n
		kinds = append(kinds, k)
	}
	if total == 0 {
		return "0"
	}
	sort.Strings(kinds)
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s %d", k, errs[k])
	}
	return fmt.Sprintf("%d (%s)", total, strings.Join(parts, ", "))
}
