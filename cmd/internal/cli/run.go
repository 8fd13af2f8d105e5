package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/locklab/locklab/atlas"
	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/providers/netns"
	"github.com/locklab/locklab/report"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/scenarios"
)

// Mode selects what `run` does after each scenario.
type Mode int

// Modes of RunCommand.
const (
	RunBench Mode = iota // print the table; fail only on errors
	RunChaos             // also check expectations; fail when one is not met
)

// PlanFlags are the overrides that change what a run plans: `run` and
// `validate` share them, so validate checks exactly what run would start.
type PlanFlags struct {
	Duration time.Duration
	Clients  int
	Locks    string
	Provider string
	ExecFlags
	execs []atlas.ExecLock
}

func (f *PlanFlags) register(fs *flag.FlagSet) {
	fs.DurationVar(&f.Duration, "duration", 0, "override the workload duration (e.g. 5s)")
	fs.IntVar(&f.Clients, "clients", 0, "override the number of clients")
	fs.StringVar(&f.Locks, "locks", "", "run only these locks (comma-separated names or labels)")
	fs.StringVar(&f.Provider, "provider", "", "override cluster.provider: local, docker, external or netns (docker: a missing image is\n"+
		"pulled, or without a registry built once from Debian packages, as make images; netns: every server\n"+
		"in its own network namespace, needs root)")
	f.ExecFlags.register(fs, "run your program (client protocol) as lock NAME in place of the scenario's locks,\n"+
		"under its cluster, workload, faults and default expectations")
}

// options checks the flags and returns them as runner options.
func (f *PlanFlags) options() (runner.Options, error) {
	switch f.Provider {
	case "", "local", "docker", "external", "netns":
	default:
		return runner.Options{}, Usagef("--provider %q: allowed local, docker, external, netns", f.Provider)
	}
	if f.Clients < 0 || f.Duration < 0 {
		return runner.Options{}, Usagef("--clients and --duration must not be negative")
	}
	execs, err := f.ExecFlags.locks()
	if err != nil {
		return runner.Options{}, &UsageError{Err: err}
	}
	if len(execs) > 0 && f.Locks != "" {
		return runner.Options{}, Usagef("--locks and --exec: --exec replaces the scenario's locks, give one of them")
	}
	f.execs = execs
	return runner.Options{Duration: f.Duration, Clients: f.Clients, Locks: SplitList(f.Locks), Provider: f.Provider}, nil
}

// RunFlags are the flags of `bench run` and `chaos run`.
type RunFlags struct {
	PlanFlags
	Out     string
	Results string
	Seed    int64
	seedSet bool
	Runs    int
	Format  string
	Verbose bool
	Quiet   bool
}

func (f *RunFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.Out, "out", "", "write results into this folder (default results/<scenario>-<time>); with several scenarios or --runs, one subfolder each")
	fs.StringVar(&f.Results, "results", "results", "root folder for results")
	f.PlanFlags.register(fs)
	fs.Func("seed", "override the scenario seed", func(s string) error {
		_, err := fmt.Sscan(s, &f.Seed)
		f.seedSet = err == nil
		return err
	})
	fs.StringVar(&f.Format, "format", "table", "stdout: table; json (only JSON: one result.json document per run, progress and\n"+
		"the verdict matrix on stderr); benchstat (Go benchmark lines of every run)")
	fs.BoolVar(&f.Verbose, "v", false, "verbose diagnostics on stderr")
	fs.BoolVar(&f.Quiet, "q", false, "no progress line")
	fs.IntVar(&f.Runs, "runs", 1, "run each scenario this many times; with more than one, runs.md and runs.json\n"+
		"(per lock: median and min-max of throughput and acquire latency, safety figures summed)\n"+
		"go into the folder holding run-1, run-2, ...")
}

// RunCommand parses `run` flags, loads every scenario (all must be valid
// before anything starts), runs them and prints the outcome. chaos judges
// every result by its expectations; bench judges those of scenarios that
// have an expect section, with the same verdicts and exit codes.
func RunCommand(ctx context.Context, cmd string, args []string, stdout, stderr io.Writer, mode Mode) error {
	fs := FlagSet(cmd+" run", stderr, "Usage: %s run [flags] SCENARIO... (flags may also follow the scenarios)\n\n"+
		"SCENARIO is a .yaml file or a built-in name (%s list). Every scenario is checked\n"+
		"before anything starts (%s validate does only that).\n\n"+
		"Exit codes: 0 done (and every expectation met), 1 a run failed or an expectation\n"+
		"failed, 2 bad input (nothing was started), 3 none failed but some safety claim\n"+
		"was inconclusive.\n\n%s\n", cmd, cmd, cmd, runExpectNote[mode])
	var f RunFlags
	f.register(fs)
	known := false
	if mode == RunChaos {
		fs.BoolVar(&known, "known", false, fmt.Sprintf("run the catalogue of known failures: every built-in %s<slug> scenario (or those named),\n"+
			"%d runs each unless --runs says otherwise; known.md and known.html (failure, source, lock,\n"+
			"reproduced k/n with its Wilson interval, the command) go into the results folder", KnownPrefix, KnownRuns))
	}
	if _, err := ParseFlags(fs, args); err != nil {
		return err
	}
	names := fs.Args()
	if known {
		var err error
		if names, err = knownNames(names); err != nil {
			return err
		}
		runsSet := false
		fs.Visit(func(fl *flag.Flag) { runsSet = runsSet || fl.Name == "runs" })
		if !runsSet {
			f.Runs = KnownRuns
		}
		if f.Out == "" {
			f.Out = filepath.Join(f.Results, "known-"+time.Now().Format("20060102-150405"))
		}
	}
	switch f.Format {
	case "table", "json", "benchstat":
	default:
		return Usagef("--format %q: allowed table, json, benchstat", f.Format)
	}
	if f.Runs < 1 {
		return Usagef("--runs %d: must be at least 1", f.Runs)
	}
	opts, err := f.options()
	if err != nil {
		return err
	}
	scs, err := LoadScenarios(names)
	if err != nil {
		return err
	}
	if err := checkExecs(f.execs); err != nil {
		return err
	}
	for _, sc := range scs {
		replaceLocks(sc, f.execs)
		if err := checkPrograms(sc); err != nil {
			return err
		}
	}
	opts.ResultsDir, opts.OutDir, opts.Logger = f.Results, f.Out, Logger(stderr, f.Verbose)
	if f.seedSet {
		opts.Seed = &f.Seed
	}
	if !f.Quiet {
		opts.Progress = stderr
	}
	for _, sc := range scs {
		if _, err := runner.Plan(sc, opts); err != nil {
			return &UsageError{Err: planError(sc, err)}
		}
	}
	if needsNetns(scs, opts) && !netns.InHarness() {
		return runInNetns(ctx)
	}
	// Only the chosen format goes to stdout: with json or benchstat, the
	// verdict matrix and the runs summary go to stderr.
	text := stderr
	if f.Format == "table" {
		text = stdout
	}
	var judged []*report.Result
	failed := false
	for _, sc := range scs {
		var runs []*report.Result
		parent := runsFolder(sc, f, len(scs))
		for i := 0; i < f.Runs; i++ {
			o := opts
			if parent != "" {
				o.OutDir = parent
			}
			if f.Runs > 1 {
				// One folder per run, so runs never overwrite each other.
				o.OutDir = filepath.Join(parent, fmt.Sprintf("run-%d", i+1))
			}
			fmt.Fprintf(stderr, "== %s", sc.Name)
			if f.Runs > 1 {
				fmt.Fprintf(stderr, " (run %d/%d)", i+1, f.Runs)
			}
			fmt.Fprintf(stderr, ": %s\n", firstSentence(sc.Description))
			res, dir, err := runner.Run(ctx, sc, o)
			if res != nil {
				runs = append(runs, res)
				if mode == RunChaos || len(sc.Expect) > 0 {
					judged = append(judged, res)
				}
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
		if f.Runs > 1 {
			if err := writeRuns(text, parent, runs); err != nil {
				return err
			}
		}
	}
	if known {
		if err := writeKnown(text, f.Out, knownEntries(scs, judged, f.Runs)); err != nil {
			return err
		}
	}
	if len(judged) > 0 {
		switch Matrix(text, judged) {
		case checker.VerdictFailed:
			return ErrFailed
		case checker.VerdictInconclusive:
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

var runExpectNote = map[Mode]string{
	RunBench: "A scenario with an expect section is judged as chaos run judges it (the verdict\n" +
		"matrix follows the tables); one without fails only when a run fails.",
	RunChaos: "Every scenario is judged by its expect section (the verdict matrix follows the\n" +
		"tables).",
}

// runsFolder is where the runs of sc go: --out (its sc.Name subfolder with
// several scenarios), or with --runs > 1 and no --out a fresh
// <results>/<scenario>-<time>/ holding run-1, run-2, ... and the runs
// summary; "" lets runner choose the folder of a single run.
func runsFolder(sc *scenarios.Scenario, f RunFlags, nScenarios int) string {
	switch {
	case f.Out != "" && nScenarios > 1:
		return filepath.Join(f.Out, sc.Name)
	case f.Out != "":
		return f.Out
	case f.Runs > 1:
		return filepath.Join(f.Results, sc.Name+"-"+time.Now().Format("20060102-150405"))
	}
	return ""
}

// planError names the scenario's file in a runner.Plan error, unless the
// error already starts with it.
func planError(sc *scenarios.Scenario, err error) error {
	if strings.HasPrefix(err.Error(), sc.File+":") {
		return err
	}
	return fmt.Errorf("%s: %w", sc.File, err)
}

// writeRuns writes runs.md and runs.json of one scenario's runs into dir
// and prints the summary to w.
func writeRuns(w io.Writer, dir string, runs []*report.Result) error {
	if len(runs) == 0 {
		return nil
	}
	s := report.SummarizeRuns(runs)
	if err := report.WriteRuns(dir, s); err != nil {
		return fmt.Errorf("runs summary: %w", err)
	}
	fmt.Fprintln(w)
	if err := s.WriteText(w); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nruns: %s\n\n", filepath.Join(dir, "runs.md"))
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

// needsNetns reports whether a scenario runs with provider netns.
func needsNetns(scs []*scenarios.Scenario, opts runner.Options) bool {
	for _, sc := range scs {
		p := sc.Cluster.Provider
		if opts.Provider != "" {
			p = opts.Provider
		}
		if p == cluster.ProviderNetns {
			return true
		}
	}
	return false
}

// runInNetns runs this command again inside a network namespace of the
// run (provider netns: the harness must live where the servers'
// addresses are, and nothing may be added to the machine's namespace) and
// ends with its exit code.
func runInNetns(ctx context.Context) error {
	if err := netns.Available(); err != nil {
		return err
	}
	code, err := netns.Run(ctx, os.Args, nil)
	if err != nil {
		return err
	}
	return &ExitCodeError{Code: code}
}
