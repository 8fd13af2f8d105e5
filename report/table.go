package report

import (
	"fmt"
	"io"
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
		lock := run.Lock
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
