package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/locklab/locklab/atlas"
	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/providers/netns"
)

const atlasUsage = `Usage:
  chaos atlas [flags]               every lock against every fault family, --runs seeded runs per cell
  chaos atlas merge [--out DIR] DIR...   join shard folders of one plan into one atlas
                                    (merge DIR alone rewrites DIR's pages from its runs)
  chaos atlas compare [--out DIR] [--families F,...] DIR_A DIR_B   two atlases side by side (say --provider local
                                    and --provider netns): verdicts, availability during the
                                    fault, time until the library noticed, per cell in both

Writes DIR/atlas.json, atlas.md, atlas.html, atlas.png, the scenario of every
cell under DIR/scenarios/ and every run's result under DIR/runs/. Families: %s.
`

// AtlasFlags are the flags of `chaos atlas`.
type AtlasFlags struct {
	Runs     int
	Parallel int
	Shard    string
	Resume   string
	Locks    string
	Families string
	Out      string
	TTL      time.Duration
	Verbose  bool
	Quiet    bool
	Slim     bool
	// ExecFlags are --exec NAME=CMD values, for programs on --backend.
	ExecFlags
	// Provider is the cluster provider of every run: local or netns.
	Provider string
}

// DefaultParallel is --parallel's default: two runs per core, at most 16.
// A run mostly waits (on its fault's timers, leases, the critical
// section). Measured on a 2-core machine: 2 at once took 0.50 of the wall
// time of 1 at once with the same verdict in every cell (11 cells x 2
// runs, identical incident and fault counts, baseline rates within 2%);
// 4 at once took 0.57 of the wall time of 2 at once, again with the same
// verdict in every cell (the controls and baseline of the Java and Python
// clients and zk-recipe: 18 cells x 2 runs, all safe), using 1.4 of the 2
// cores.
func DefaultParallel() int { return min(16, max(1, 2*runtime.NumCPU())) }

// Atlas is `chaos atlas`: it plans, runs (or resumes, or runs one shard)
// and writes the atlas; `chaos atlas merge` joins shards.
func Atlas(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "merge" {
		return atlasMerge(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "compare" {
		return atlasCompare(args[1:], stdout, stderr)
	}
	fs := FlagSet("chaos atlas", stderr, atlasUsage, strings.Join(atlas.FamilyNames(), ", "))
	var f AtlasFlags
	fs.IntVar(&f.Runs, "runs", 5, "seeded runs per cell")
	fs.IntVar(&f.Parallel, "parallel", DefaultParallel(), "runs at once, each on its own cluster; the default is two per core, at most 16")
	fs.BoolVar(&f.Slim, "slim", false, "keep of each run only result.json, history.jsonl.gz and report.md (about 30 kB instead of 0.6 MB: plots, report.html and logs go)")
	fs.StringVar(&f.Shard, "shard", "", "run only shard i of n of the (lock, family, run) list, e.g. 2/4")
	fs.StringVar(&f.Resume, "resume", "", "continue the atlas in this folder: skip finished runs (its plan.json gives the plan)")
	fs.StringVar(&f.Locks, "locks", "", "only these locks (comma-separated; default every registered lock and every --exec)")
	f.ExecFlags.register(fs, "judge your program (client protocol) as lock NAME beside the others (--locks NAME: it alone)")
	fs.StringVar(&f.Families, "families", "", "only these families (comma-separated; default every family)")
	fs.StringVar(&f.Out, "out", "results/atlas", "atlas folder")
	fs.StringVar(&f.Provider, "provider", "local", "cluster provider of every run: local (faults in proxies) or netns (faults as dropped packets; root); a family the provider cannot inflict is not applicable")
	fs.DurationVar(&f.TTL, "ttl", time.Second, "lease every family scales its timings from")
	fs.BoolVar(&f.Verbose, "v", false, "verbose diagnostics on stderr")
	fs.BoolVar(&f.Quiet, "q", false, "no progress lines")
	if _, err := ParseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return Usagef("chaos atlas: unexpected argument %q (merge is `chaos atlas merge DIR...`)", fs.Arg(0))
	}
	if f.Runs < 1 || f.Parallel < 1 {
		return Usagef("--runs and --parallel must be at least 1")
	}
	k, n := 1, 1
	if f.Shard != "" {
		var err error
		if k, n, err = atlas.ParseShard(f.Shard); err != nil {
			return &UsageError{Err: err}
		}
	}
	var plan *atlas.Plan
	var err error
	dir := f.Out
	if f.Resume != "" {
		dir = f.Resume
		plan, err = atlas.LoadPlan(dir)
	} else {
		var execs []atlas.ExecLock
		execs, err = f.ExecFlags.locks()
		if err == nil {
			err = checkExecs(execs)
		}
		if err == nil {
			plan, err = atlas.NewPlan(atlas.Config{Runs: f.Runs, TTL: f.TTL, Locks: SplitList(f.Locks), Families: SplitList(f.Families), Exec: execs, Provider: f.Provider, Slim: f.Slim})
		}
		if err == nil {
			if old, lerr := atlas.LoadPlan(dir); lerr == nil && !atlas.SamePlan(old, plan) {
				err = fmt.Errorf("%s holds an atlas of another plan: choose another --out, or --resume %s", dir, dir)
			}
		}
	}
	if err != nil {
		return &UsageError{Err: err}
	}
	if plan.Config.Provider == cluster.ProviderNetns && !netns.InHarness() {
		return runInNetns(ctx)
	}
	// A resumed atlas keeps its plan's --slim; --resume --slim turns it on
	// from now on.
	plan.Config.Slim = plan.Config.Slim || f.Slim
	if err := atlas.SavePlan(plan, dir); err != nil {
		return err
	}
	if err := atlas.WriteScenarios(plan, dir); err != nil {
		return err
	}
	jobs := plan.Shard(k, n)
	na := 0
	for _, c := range plan.Cells {
		if c.NotApplicable != "" {
			na++
		}
	}
	fmt.Fprintf(stderr, "atlas: %d locks x %d families = %d cells (%d not applicable), %d runs per cell; this process: %d runs",
		len(plan.Locks), len(plan.Families), len(plan.Cells), na, plan.Config.Runs, len(jobs))
	if n > 1 {
		fmt.Fprintf(stderr, " (shard %d/%d)", k, n)
	}
	fmt.Fprintf(stderr, ", --parallel %d (default two per core, at most 16: %d on %d cores) -> %s\n", f.Parallel, DefaultParallel(), runtime.NumCPU(), dir)
	opts := atlas.RunOptions{Dir: dir, Parallel: f.Parallel, Resume: true, Logger: Logger(stderr, f.Verbose), Slim: plan.Config.Slim}
	if !f.Quiet {
		opts.Progress = stderr
	}
	start := time.Now()
	_, rerr := atlas.Execute(ctx, jobs, opts)
	a := atlas.Build(plan, []string{dir}, dir)
	a.Parallel, a.WallS = f.Parallel, time.Since(start).Seconds()
	if old, err := atlas.Read(dir); err == nil && f.Resume != "" {
		a.WallS += old.WallS // the time spent on this atlas, over every process
	}
	if n > 1 {
		a.Shard = f.Shard
	}
	if err := atlas.Write(dir, a); err != nil {
		return err
	}
	printAtlas(stdout, a, dir)
	if rerr != nil {
		return fmt.Errorf("interrupted (chaos atlas --resume %s continues): %w", dir, context.Cause(ctx))
	}
	return nil
}

func atlasMerge(args []string, stdout, stderr io.Writer) error {
	fs := FlagSet("chaos atlas merge", stderr, "Usage: chaos atlas merge [--out DIR] DIR...\n\nJoins atlas shards (chaos atlas --shard i/n) into one atlas.\n")
	out := fs.String("out", "", "write the merged atlas here (default the first DIR)")
	if _, err := ParseFlags(fs, args); err != nil {
		return err
	}
	dirs := fs.Args()
	if len(dirs) == 0 {
		return Usagef("chaos atlas merge: no folder given")
	}
	if *out == "" {
		*out = dirs[0]
	}
	plan, err := atlas.LoadPlan(dirs[0])
	if err != nil {
		return &UsageError{Err: err}
	}
	for _, d := range dirs[1:] {
		p, err := atlas.LoadPlan(d)
		if err != nil {
			return &UsageError{Err: err}
		}
		if !atlas.SamePlan(plan, p) {
			return Usagef("%s and %s hold atlases of different plans (locks, families, runs, ttl or provider differ)", dirs[0], d)
		}
	}
	if err := atlas.SavePlan(plan, *out); err != nil {
		return err
	}
	if err := atlas.WriteScenarios(plan, *out); err != nil {
		return err
	}
	a := atlas.Build(plan, dirs, *out)
	if old, err := atlas.Read(*out); err == nil && len(dirs) == 1 && dirs[0] == *out {
		// Rewriting one atlas in place (after slimming its runs, say)
		// keeps how its runs were made.
		a.Parallel, a.WallS, a.Shard = old.Parallel, old.WallS, old.Shard
	}
	if err := atlas.Write(*out, a); err != nil {
		return err
	}
	printAtlas(stdout, a, *out)
	if a.Missing > 0 {
		fmt.Fprintf(stderr, "atlas merge: %d runs missing (a shard not run or not finished)\n", a.Missing)
	}
	return nil
}

// atlasCompare is `chaos atlas compare DIR_A DIR_B`: compare.md and
// compare.json of the cells applicable in both atlases.
func atlasCompare(args []string, stdout, stderr io.Writer) error {
	fs := FlagSet("chaos atlas compare", stderr, "Usage: chaos atlas compare [--out DIR] [--families F,...] DIR_A DIR_B\n\nCompares two atlases cell by cell (compare.md, compare.json).\n")
	out := fs.String("out", "", "write compare.md and compare.json here (default DIR_B/compare)")
	families := fs.String("families", "", "compare these families (comma-separated; default every family both atlases have): a family one atlas lacks shows the other's cells alone")
	if _, err := ParseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return Usagef("chaos atlas compare: want two atlas folders, DIR_A DIR_B (got %d)", fs.NArg())
	}
	a, b := fs.Arg(0), fs.Arg(1)
	if *out == "" {
		*out = filepath.Join(b, "compare")
	}
	c, err := atlas.Compare(a, b, SplitList(*families))
	if err != nil {
		return &UsageError{Err: err}
	}
	if err := atlas.WriteComparison(*out, c); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "compare: %d cells in both atlases, %d with different verdicts; %d cells of one atlas only; %d skipped\n",
		len(c.Rows), c.Differ, len(c.OneSided), len(c.Skipped))
	fmt.Fprintf(stdout, "compare: %s\n", filepath.Join(*out, "compare.md"))
	return nil
}

func printAtlas(w io.Writer, a *atlas.Atlas, dir string) {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	fmt.Fprint(tw, "LOCK\t")
	for _, f := range a.Families {
		fmt.Fprintf(tw, "%s\t", f.Name)
	}
	fmt.Fprintln(tw)
	for _, l := range a.Locks {
		fmt.Fprintf(tw, "%s\t", l)
		for _, f := range a.Families {
			c := a.Cell(l, f.Name)
			if c.Verdict == atlas.NotApplicable {
				fmt.Fprint(tw, "n/a\t")
				continue
			}
			fmt.Fprintf(tw, "%d/%d %s\t", c.RunsWithIncidents, c.Runs, c.Verdict)
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	fmt.Fprintf(w, "\natlas: %s (%d runs missing)\n", filepath.Join(dir, "atlas.html"), a.Missing)
	if _, err := os.Stat(filepath.Join(dir, "atlas.png")); err == nil {
		fmt.Fprintf(w, "plot:  %s\n", filepath.Join(dir, "atlas.png"))
	}
}
