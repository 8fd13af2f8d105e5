package cli

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/report"
)

// Matrix prints the verdict matrix of chaos results (lock x scenario, each
// cell "met", "failed" or "inconclusive" over every run, with incidents as
// lock/client faults and the reason of a cell that is not met) and returns
// the overall verdict: failed when any run failed, else inconclusive when
// any run was, else met. A run no expectation applies to is "not judged"
// (never met); "" when no run was judged at all.
func Matrix(w io.Writer, results []*report.Result) string {
	type cell struct {
		pass, fail, inconclusive, unjudged, total int
		lines, reasons                            []string
	}
	cells := map[[2]string]*cell{}
	var scen, lks []string
	seen := map[string]bool{}
	verdict, judged := checker.VerdictMet, false
	for _, r := range results {
		if !seen["s:"+r.Scenario] {
			seen["s:"+r.Scenario] = true
			scen = append(scen, r.Scenario)
		}
		for _, run := range r.Runs {
			if !seen["l:"+run.Lock] {
				seen["l:"+run.Lock] = true
				lks = append(lks, run.Lock)
			}
			k := [2]string{run.Lock, r.Scenario}
			c := cells[k]
			if c == nil {
				c = &cell{}
				cells[k] = c
			}
			c.total++
			v := report.RunVerdict(&run)
			if v != "" {
				judged = true
			}
			switch v {
			case "":
				c.unjudged++
			case checker.VerdictFailed:
				c.fail++
				verdict = checker.VerdictFailed
			case checker.VerdictInconclusive:
				c.inconclusive++
				if verdict == checker.VerdictMet {
					verdict = checker.VerdictInconclusive
				}
			default:
				c.pass++
			}
			if run.VerdictReason != "" {
				c.reasons = append(c.reasons, run.VerdictReason)
			}
			c.lines = append(c.lines, fmt.Sprintf("inc=%d lock=%d client=%d v=%d st=%d lost=%d",
				run.Incidents, run.LockFaults, run.ClientFaults, run.Violations, run.StaleTokens, run.LostUpdates))
		}
	}
	sort.Strings(lks)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "\nlock\t%s\n", strings.Join(scen, "\t"))
	var notes []string
	for _, l := range lks {
		row := []string{l}
		for _, s := range scen {
			c := cells[[2]string{l, s}]
			if c == nil {
				row = append(row, "")
				continue
			}
			status := checker.VerdictMet
			switch {
			case c.unjudged == c.total:
				status = "not judged"
			case c.fail > 0:
				status = checker.VerdictFailed
			case c.inconclusive > 0:
				status = checker.VerdictInconclusive
			}
			row = append(row, fmt.Sprintf("%s %d/%d (%s)", status, c.pass, c.total, strings.Join(uniq(c.lines), "; ")))
			for _, r := range uniq(c.reasons) {
				notes = append(notes, fmt.Sprintf("%s / %s: %s", l, s, r))
			}
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	tw.Flush()
	for _, n := range notes {
		fmt.Fprintln(w, "  "+n)
	}
	fmt.Fprintln(w, "\nlock fault: the lock granted twice within its own promise; nothing on the client side repairs this.")
	fmt.Fprintln(w, "client fault: a holder stayed inside after its promise ran out; fencing repairs this.")
	answers(w, results)
	if !judged {
		fmt.Fprintln(w, "verdict: none (no expectation applies to any lock: an expect section with a default entry judges every lock)")
		return ""
	}
	switch verdict {
	case checker.VerdictMet:
		fmt.Fprintln(w, "verdict: met (every expectation met)")
	case checker.VerdictInconclusive:
		fmt.Fprintln(w, "verdict: inconclusive (no expectation failed, but some safety claims have no evidence: see the reasons above)")
	default:
		fmt.Fprintln(w, "verdict: failed (some expectations failed: see the failed cells and each result's expectations)")
	}
	return verdict
}

// answers prints what each result showed, its first line before the
// verdict: broken without faults, broken by a fault, unsafe without
// fencing or safe (report.ResultHeadline). The verdict says whether the
// expectations held; a broken and a correct program can both fail theirs.
func answers(w io.Writer, results []*report.Result) {
	fmt.Fprintln(w)
	for _, r := range results {
		prefix := "answer: "
		if len(results) > 1 {
			prefix = "answer (" + r.Scenario + "): "
		}
		fmt.Fprintln(w, prefix+report.ResultHeadline(r))
	}
}

func uniq(ss []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
