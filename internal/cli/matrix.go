package cli

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/locklab/locklab/report"
)

// Matrix prints the pass/fail matrix of chaos results (lock x scenario,
// each cell "PASS v=0 s=0/0" over every run) and reports whether every
// expectation was met.
func Matrix(w io.Writer, results []*report.Result) bool {
	type cell struct {
		pass, total int
		lines       []string
	}
	cells := map[[2]string]*cell{}
	var scen, lks []string
	seen := map[string]bool{}
	ok := true
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
			met := run.ExpectMet == nil || *run.ExpectMet
			if run.Error != "" {
				met = false
			}
			if met {
				c.pass++
			} else {
				ok = false
			}
			c.lines = append(c.lines, fmt.Sprintf("v=%d st=%d rej=%d lost=%d", run.Violations, run.StaleTokens, run.StaleRejected, run.LostUpdates))
		}
	}
	sort.Strings(lks)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "\nlock\t%s\n", strings.Join(scen, "\t"))
	for _, l := range lks {
		row := []string{l}
		for _, s := range scen {
			c := cells[[2]string{l, s}]
			if c == nil {
				row = append(row, "")
				continue
			}
			status := "PASS"
			if c.pass < c.total {
				status = "FAIL"
			}
			row = append(row, fmt.Sprintf("%s %d/%d (%s)", status, c.pass, c.total, strings.Join(uniq(c.lines), "; ")))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	tw.Flush()
	if ok {
		fmt.Fprintln(w, "\nevery expectation met")
	} else {
		fmt.Fprintln(w, "\nFAILED: some expectations were not met (see the FAIL cells and each result's expectations)")
	}
	return ok
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
