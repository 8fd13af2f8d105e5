package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"text/tabwriter"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/internal/cli"
	"github.com/locklab/locklab/report"
)

// checkCmd is `bench check DIR...`: recompute every safety figure of each
// run from history.jsonl alone and compare it with result.json.
func checkCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: bench check DIR...\n\nRecomputes every safety figure of each run from DIR/history.jsonl alone\n"+
			"and compares it with DIR/result.json; exit 1 when they disagree.")
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return cli.Usagef("bench check: no results folder given")
	}
	agree := true
	for _, dir := range fs.Args() {
		ok, err := checkDir(dir, stdout)
		if err != nil {
			return err
		}
		agree = agree && ok
	}
	if !agree {
		fmt.Fprintln(stdout, "\nDISAGREE: the history does not reproduce result.json (see the marked lines)")
		return cli.ErrFailed
	}
	fmt.Fprintln(stdout, "\nthe history reproduces every safety figure of result.json")
	return nil
}

// figure is one safety figure as the result states it and as the history
// gives it.
type figure struct {
	name            string
	result, history float64
	tolerance       float64
}

func checkDir(dir string, w io.Writer) (bool, error) {
	res, err := report.Read(dir)
	if err != nil {
		return false, err
	}
	f, err := report.OpenHistory(dir)
	if err != nil {
		return false, fmt.Errorf("bench check %s: %w", dir, err)
	}
	defer f.Close()
	fencing, err := checker.ParseFencing(res.Fencing)
	if err != nil {
		return false, fmt.Errorf("bench check %s: result.json: %w", dir, err)
	}
	sums, err := checker.Replay(f, fencing)
	if err != nil {
		return false, fmt.Errorf("bench check %s: %w", dir, err)
	}
	fmt.Fprintf(w, "%s (%s)\n", dir, res.Scenario)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "run\tlock\tfigure\tresult.json\thistory\t")
	ok := true
	for i, run := range res.Runs {
		s, found := sums[i]
		if !found && run.Visits > 0 {
			fmt.Fprintf(tw, "%d\t%s\t(no history lines)\t\t\tDISAGREE\n", i, run.Lock)
			ok = false
			continue
		}
		for _, fg := range figuresOf(run, s) {
			mark := ""
			if math.Abs(fg.result-fg.history) > fg.tolerance {
				mark, ok = "DISAGREE", false
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%g\t%g\t%s\n", i, run.Lock, fg.name, fg.result, fg.history, mark)
		}
	}
	tw.Flush()
	return ok, nil
}

// figuresOf pairs the result's safety figures with the replayed ones. The
// overlap time may differ by the instants between the live summary and the
// last exits written after it (client processes stopped at the end): 1ms.
func figuresOf(run report.Run, s checker.Summary) []figure {
	n := func(name string, r, h int) figure { return figure{name: name, result: float64(r), history: float64(h)} }
	return []figure{
		n("visits", run.Visits, s.Visits),
		n("violations", run.Violations, s.Violations),
		n("incidents", run.Incidents, s.Incidents),
		n("lock_faults", run.LockFaults, s.LockFaults),
		n("client_faults", run.ClientFaults, s.ClientFaults),
		n("lost_updates", run.LostUpdates, s.LostUpdates),
		n("stale_tokens", run.StaleTokens, s.StaleTokens),
		n("stale_rejected", run.StaleRejected, s.StaleRejected),
		n("stale_accepted", run.StaleAccepted, s.StaleAccepted),
		n("duplicate_tokens", run.DuplicateTokens, s.DuplicateTokens),
		n("token_regressions", run.TokenRegressions, s.TokenRegressions),
		{name: "overlap_ms_total", result: run.OverlapMsTotal, history: float64(s.OverlapTotal) / 1e6, tolerance: 1},
	}
}
