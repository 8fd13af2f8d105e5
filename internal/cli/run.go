package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/locklab/locklab/report"
	"github.com/locklab/locklab/runner"
)

// Mode selects what `run` does after each scenario.
type Mode int

// Modes of RunCommand.
const (
	RunBench Mode = iota // print the table; fail only on errors
	RunChaos             // also check expectations; fail when one is not met
)

// RunFlags are the flags of `bench run` and `chaos run`.
type RunFlags struct {
	Out      string
	Results  string
	Duration time.Duration
	Clients  int
	Locks    string
	Seed     int64
	seedSet  bool
	Provider string
	Runs     int
	Format   string
	Verbose  bool
	Quiet    bool
}

func (f *RunFlags) register(fs *flag.FlagSet, mode Mode) {
	fs.StringVar(&f.Out, "out", "", "write results into this folder (default results/<scenario>-<time>); with several scenarios or --runs, one subfolder each")
	fs.StringVar(&f.Results, "results", "results", "root folder for results")
	fs.DurationVar(&f.Duration, "duration", 0, "override the workload duration (e.g. 5s)")
	fs.IntVar(&f.Clients, "clients", 0, "override the number of clients")
	fs.StringVar(&f.Locks, "locks", "", "run only these locks (comma-separated names or labels)")
	fs.Func("seed", "override the scenario seed", func(s string) error {
		_, err := fmt.Sscan(s, &f.Seed)
		f.seedSet = err == nil
		return err
	})
	fs.StringVar(&f.Provider, "provider", "", "override cluster.provider: local, docker or external")
	fs.StringVar(&f.Format, "format", "table", "output: table, json, or benchstat (Go benchmark lines)")
	fs.BoolVar(&f.Verbose, "v", false, "verbose diagnostics on stderr")
	fs.BoolVar(&f.Quiet, "q", false, "no progress line")
	if mode == RunChaos {
		fs.IntVar(&f.Runs, "runs", 1, "run each scenario this many times")
	}
}

// RunCommand parses `run` flags, loads every scenario (all must be valid
// before anything starts), runs them and prints the outcome.
func RunCommand(ctx context.Context, cmd string, args []string, stdout, stderr io.Writer, mode Mode) error {
	fs := flag.NewFlagSet(cmd+" run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f RunFlags
	f.register(fs, mode)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: %s run [flags] SCENARIO...\n\nSCENARIO is a .yaml file or a built-in name (%s list).\n\nFlags:\n", cmd, cmd)
		fs.PrintDefaults()
	}
	if _, err := ParseFlags(fs, args); err != nil {
		return err
	}
	switch f.Format {
	case "table", "json", "benchstat":
	default:
		return Usagef("--format %q: allowed table, json, benchstat", f.Format)
	}
	if f.Runs < 1 {
		f.Runs = 1
	}
	if f.Provider != "" && f.Provider != "local" && f.Provider != "docker" && f.Provider != "external" {
		return Usagef("--provider %q: allowed local, docker, external", f.Provider)
	}
	scs, err := LoadScenarios(fs.Args())
	if err != nil {
		return err
	}
	opts := runner.Options{
		ResultsDir: f.Results, OutDir: f.Out, Duration: f.Duration, Clients: f.Clients,
		Locks: SplitList(f.Locks), Provider: f.Provider, Logger: Logger(stderr, f.Verbose),
	}
	if f.seedSet {
		opts.Seed = &f.Seed
	}
	if !f.Quiet {
		opts.Progress = stderr
	}
	for _, sc := range scs {
		if _, err := runner.Plan(sc, opts); err != nil {
			return &UsageError{Err: fmt.Errorf("%s: %w", sc.File, err)}
		}
	}
	var results []*report.Result
	failed := false
	for _, sc := range scs {
		for i := 0; i < f.Runs; i++ {
			o := opts
			if o.OutDir != "" {
				// One folder per scenario and run under --out, so several
				// scenarios or --runs never overwrite each other.
				if len(scs) > 1 {
					o.OutDir = filepath.Join(o.OutDir, sc.Name)
				}
				if f.Runs > 1 {
					o.OutDir = filepath.Join(o.OutDir, fmt.Sprintf("run-%d", i+1))
				}
			}
			fmt.Fprintf(stderr, "== %s", sc.Name)
			if f.Runs > 1 {
				fmt.Fprintf(stderr, " (run %d/%d)", i+1, f.Runs)
			}
			fmt.Fprintf(stderr, ": %s\n", firstSentence(sc.Description))
			res, dir, err := runner.Run(ctx, sc, o)
			if res != nil {
				results = append(results, res)
				// Plots, report.md and report.html, partial results included.
				if rerr := report.Render(dir, res); rerr != nil {
					fmt.Fprintf(stderr, "report: %v\n", rerr)
				} else {
					fmt.Fprintf(stderr, "report: %s\n", filepath.Join(dir, "report.html"))
				}
				printResult(stdout, f.Format, res, dir)
				for _, r := range res.Runs {
					if r.Error != "" {
						failed = true
					}
				}
			}
			if err != nil {
				if ctx.Err() != nil {
					if dir != "" {
						fmt.Fprintf(stderr, "interrupted: partial results in %s\n", dir)
					}
					return fmt.Errorf("interrupted: %w", context.Cause(ctx))
				}
				return err
			}
		}
	}
	if mode == RunChaos {
		switch Matrix(stdout, results) {
		case VerdictFailed:
			return ErrFailed
		case VerdictInconclusive:
			if !failed {
				return ErrInconclusive
			}
		}
	}
	if failed {
		fmt.Fprintln(stderr, "some runs failed: see the error column and the logs/ folder of the results")
		return ErrFailed
	}
	return nil
}

func printResult(w io.Writer, format string, res *report.Result, dir string) {
	switch format {
	case "json":
		report.WriteJSON(w, res)
	case "benchstat":
		report.Benchstat(w, res)
	default:
		fmt.Fprintln(w)
		report.Table(w, res)
		fmt.Fprintf(w, "\nresults: %s\n\n", dir)
	}
}
