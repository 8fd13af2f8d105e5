package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/locklab/locklab/atlas"
	"github.com/locklab/locklab/cmd/internal/cli"
	"github.com/locklab/locklab/explore"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/external"
)

const exploreUsage = `Usage:
  chaos explore [flags]             draw random fault schedules, run them, group the
                                    unsafe runs into findings and shrink each one
  chaos explore merge [--out DIR] DIR...   join the shards of one exploration

Writes OUT/explore/explore.json, explore.md, explore.html, every drawn scenario
and its result under OUT/explore/runs/, and each finding's minimal scenario as
OUT/explore/findings/<signature>/minimal.yaml (chaos run on it exits 0 exactly
when the finding reproduces). Drawn fault types: %s.
`

func exploreCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "merge" {
		return exploreMerge(args[1:], stdout, stderr)
	}
	fs := cli.FlagSet("chaos explore", stderr, exploreUsage, strings.Join(explore.Drawable(), ", "))
	locksFlag := fs.String("locks", "", "only these locks (comma-separated; default every registered lock)")
	budget := fs.Duration("budget", 0, "time to spend, drawing and shrinking together: drawing only while what is left can shrink what was found (default 10m unless --runs)")
	runs := fs.Int("runs", 0, "draw this many schedules (over every shard) and shrink every finding")
	seed := fs.Int64("seed", 1, "every schedule derives from it: the same seed draws the same schedules")
	faultsFlag := fs.String("faults", "", "fault types to draw (comma-separated; none: no faults; default every drawable type)")
	parallel := fs.Int("parallel", cli.DefaultParallel(), "runs at once, each on its own cluster")
	shard := fs.String("shard", "", "run only shard i of n of the draws, e.g. 2/4 (chaos explore merge joins them)")
	resume := fs.String("resume", "", "continue the exploration in this folder (OUT or OUT/explore)")
	out := fs.String("out", "results", "write OUT/explore/")
	verbose := fs.Bool("v", false, "verbose diagnostics on stderr")
	quiet := fs.Bool("q", false, "no progress lines")
	if _, err := cli.ParseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return cli.Usagef("chaos explore: unexpected argument %q (merge is `chaos explore merge DIR...`)", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch {
	case set["budget"] && set["runs"]:
		return cli.Usagef("chaos explore: give --budget or --runs, not both")
	case *parallel < 1, set["runs"] && *runs < 1, set["budget"] && *budget <= 0:
		return cli.Usagef("chaos explore: --parallel, --runs and --budget must be positive")
	case !set["runs"] && !set["budget"] && *resume == "":
		*budget = 10 * time.Minute
	}
	o := explore.Options{Parallel: *parallel, ShardK: 1, ShardN: 1, Logger: cli.Logger(stderr, *verbose)}
	if !*quiet {
		o.Progress = stderr
	}
	if *shard != "" {
		k, n, err := atlas.ParseShard(*shard)
		if err != nil {
			return &cli.UsageError{Err: err}
		}
		o.ShardK, o.ShardN = k, n
	}
	var plan explore.Plan
	if *resume != "" {
		o.Dir = exploreDir(*resume)
		old, err := explore.Read(o.Dir)
		if err != nil {
			return &cli.UsageError{Err: fmt.Errorf("--resume %s: %w", *resume, err)}
		}
		plan = old.Plan
		if set["budget"] {
			plan.Budget, plan.Runs = *budget, 0
		}
		if set["runs"] {
			plan.Runs, plan.Budget = *runs, 0
		}
		if old.Shard != "" && *shard == "" {
			o.ShardK, o.ShardN, _ = atlas.ParseShard(old.Shard)
		}
	} else {
		ls, err := exploreLocks(cli.SplitList(*locksFlag))
		if err != nil {
			return &cli.UsageError{Err: err}
		}
		types, err := exploreFaults(*faultsFlag)
		if err != nil {
			return &cli.UsageError{Err: err}
		}
		plan = explore.Plan{Seed: *seed, Locks: ls, Faults: types, Runs: *runs, Budget: *budget}
		o.Dir = filepath.Join(*out, "explore")
	}
	what := fmt.Sprintf("%d runs", plan.Runs)
	if plan.Budget > 0 {
		what = "budget " + plan.Budget.String()
	}
	fmt.Fprintf(stderr, "explore: seed %d, %d locks, fault types %s, %s, --parallel %d -> %s\n",
		plan.Seed, len(plan.Locks), orNone(strings.Join(plan.Faults, ",")), what, o.Parallel, o.Dir)
	e, err := explore.Run(ctx, plan, o, *resume != "")
	if e != nil {
		printExplore(stdout, e, o.Dir)
	}
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("interrupted (chaos explore --resume %s continues): %w", o.Dir, context.Cause(ctx))
	}
	if err != nil && e == nil {
		return &cli.UsageError{Err: err}
	}
	return err
}

// exploreDir accepts OUT or OUT/explore.
func exploreDir(d string) string {
	if _, err := os.Stat(filepath.Join(d, "explore", "explore.json")); err == nil {
		return filepath.Join(d, "explore")
	}
	return d
}

// exploreLocks checks --locks; default every lock the atlas judges.
func exploreLocks(names []string) ([]string, error) {
	all := atlas.Locks()
	if len(names) == 0 {
		return all, nil
	}
	for _, l := range names {
		s, _ := locks.Lookup(l)
		switch {
		case s.InProcess:
			return nil, fmt.Errorf("--locks: %s is a calibration lock, real only among the clients of one process: nothing for a fault to act on", l)
		case l == external.Exec:
			return nil, fmt.Errorf("--locks: %s runs a program of yours: explore judges registered locks", l)
		case !slices.Contains(all, l):
			return nil, fmt.Errorf("--locks: %q is not a registered lock (%s)", l, strings.Join(all, ", "))
		}
	}
	return names, nil
}

// exploreFaults checks --faults: drawable types, "none", or default all.
func exploreFaults(s string) ([]string, error) {
	all := explore.Drawable()
	if s == "" {
		return all, nil
	}
	if s == "none" {
		return []string{}, nil
	}
	types := cli.SplitList(s)
	for _, t := range types {
		if !slices.Contains(all, t) {
			return nil, fmt.Errorf("--faults: %q is not a fault type explore draws (%s, or none)", t, strings.Join(all, ", "))
		}
	}
	slices.Sort(types)
	return slices.Compact(types), nil
}

func exploreMerge(args []string, stdout, stderr io.Writer) error {
	fs := cli.FlagSet("chaos explore merge", stderr, "Usage: chaos explore merge [--out DIR] DIR...\n\nJoins the explorations of shards (chaos explore --shard i/n) into one.\n")
	out := fs.String("out", "", "write the merged exploration here (default the first DIR)")
	if _, err := cli.ParseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return cli.Usagef("chaos explore merge: no folder given")
	}
	var dirs []string
	for _, d := range fs.Args() {
		dirs = append(dirs, exploreDir(d))
	}
	target := dirs[0]
	if *out != "" {
		target = exploreDir(*out)
	}
	e, err := explore.Merge(dirs, target)
	if err != nil && e == nil {
		return &cli.UsageError{Err: err}
	}
	printExplore(stdout, e, target)
	return err
}

func printExplore(w io.Writer, e *explore.Explore, dir string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FINDING\tfaults\treproduced\tfirst found\tminimal scenario")
	for _, f := range e.Findings {
		faults, rate, min := "-", "-", "not shrunk"
		if f.Minimal != "" {
			faults, min = fmt.Sprint(f.MinimalFaults), filepath.Join(dir, f.Minimal)
			if f.Shrink != "done" {
				min += " (" + orNone(f.Shrink) + ")"
			}
		}
		if f.Tries > 0 {
			rate = fmt.Sprintf("%d/%d", f.Reproduced, f.Tries)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\trun %d, %.1f min\t%s\n", f.Signature, faults, rate, f.FirstRun, f.FirstAtS/60, min)
	}
	tw.Flush()
	if len(e.RootCauses) > 0 {
		fmt.Fprintln(w, "\nROOT CAUSE (what the findings come down to once shrunk)")
		for _, c := range e.RootCauses {
			min := "not shrunk"
			if c.Shrunk {
				min = filepath.Join(dir, c.Minimal)
			}
			fmt.Fprintf(w, "  %s: %d variants, %d runs; %s\n", c.Name(), len(c.Variants), c.Runs, min)
		}
	}
	fmt.Fprintf(w, "\n%d runs (%d unsafe, %d safe, %d inconclusive), %d findings, %d root causes, %.0f runs/hour\nreport: %s\n",
		len(e.Runs), e.Unsafe, e.Safe, e.Inconclusive, len(e.Findings), len(e.RootCauses), e.RunsPerHour, filepath.Join(dir, "explore.html"))
	if e.Unshrunk > 0 {
		stopped := 0
		for _, f := range e.Findings {
			if f.Shrink != "" && !explore.Shrunk(f) {
				stopped++
			}
		}
		fmt.Fprintf(w, "%d of %d findings not shrunk (%d stopped mid-shrinking): the budget ran out first (--resume with more budget shrinks them)\n", e.Unshrunk, len(e.Findings), stopped)
	}
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
