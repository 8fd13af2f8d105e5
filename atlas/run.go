package atlas

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/locklab/locklab/report"
	"github.com/locklab/locklab/runner"
)

// RunOptions say how Execute runs a plan's jobs.
type RunOptions struct {
	// Dir is the atlas folder.
	Dir string
	// Parallel runs this many jobs at once, each on its own cluster (ports
	// come from the free-port finder). Default 1.
	Parallel int
	// Resume skips jobs whose result.json in Dir is complete.
	Resume bool
	// Logger receives diagnostics; nil discards.
	Logger *slog.Logger
	// Progress receives a line per finished job: done/left and the ETA.
	Progress io.Writer
	// Slim keeps of each run only what the atlas and bench check read
	// (Slim), so thousands of runs fit in a folder one can commit.
	Slim bool
}

// WriteScenarios writes every applicable cell's scenario into
// Dir/scenarios/, the files the reproduction commands name.
func WriteScenarios(p *Plan, dir string) error {
	sd := filepath.Join(dir, "scenarios")
	if err := os.MkdirAll(sd, 0o755); err != nil {
		return fmt.Errorf("atlas scenarios: %w", err)
	}
	for _, c := range p.Cells {
		if c.YAML == "" {
			continue
		}
		if err := os.WriteFile(filepath.Join(sd, ScenarioName(c.Family, c.Lock)+".yaml"), []byte(c.YAML), 0o644); err != nil {
			return fmt.Errorf("atlas scenarios: %w", err)
		}
	}
	return nil
}

// Finished reports whether a job's folder holds a complete result.
func Finished(dir string) bool {
	res, err := readResult(dir)
	return err == nil && res.Complete
}

func readResult(dir string) (*report.Result, error) {
	data, err := os.ReadFile(filepath.Join(dir, "result.json"))
	if err != nil {
		return nil, err
	}
	var res report.Result
	if err := json.Unmarshal(data, &res); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "result.json"), err)
	}
	return &res, nil
}

// Execute runs jobs, Parallel at a time, and returns how many ran. A job
// that cannot run is recorded in its result (Run.Error) like any failed
// run; Execute returns ctx's error when interrupted.
func Execute(ctx context.Context, jobs []Job, o RunOptions) (int, error) {
	if o.Parallel < 1 {
		o.Parallel = 1
	}
	var todo []Job
	for _, j := range jobs {
		if o.Resume && Finished(j.Dir(o.Dir)) {
			continue
		}
		todo = append(todo, j)
	}
	if o.Progress != nil && len(todo) < len(jobs) {
		fmt.Fprintf(o.Progress, "atlas: %d of %d runs already finished in %s, skipped\n", len(jobs)-len(todo), len(jobs), o.Dir)
	}
	spread(todo)
	start := time.Now()
	var mu sync.Mutex
	done := 0
	ch := make(chan Job)
	var wg sync.WaitGroup
	for w := 0; w < o.Parallel; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range ch {
				runJob(ctx, j, o)
				mu.Lock()
				done++
				if o.Progress != nil {
					el := time.Since(start)
					eta := time.Duration(float64(el) / float64(done) * float64(len(todo)-done)).Round(time.Second)
					fmt.Fprintf(o.Progress, "atlas: %d/%d runs done, %d left, elapsed %s, eta %s (last %s #%d)\n",
						done, len(todo), len(todo)-done, el.Round(time.Second), eta, j.Cell.Key(), j.Index)
				}
				mu.Unlock()
			}
		}()
	}
	for _, j := range todo {
		if ctx.Err() != nil {
			break
		}
		ch <- j
	}
	close(ch)
	wg.Wait()
	return done, ctx.Err()
}

// spread orders jobs by run index, keeping the plan's order (family, then
// lock) within an index: the runs at once are of different locks, mostly
// of different servers, instead of a cell's five runs together. Five
// three-member ZooKeeper ensembles and their clients at once on two cores
// left zk-lib without a single finished acquire in its baseline runs,
// where one run alone made 24 critical sections.
func spread(jobs []Job) {
	slices.SortStableFunc(jobs, func(a, b Job) int { return a.Index - b.Index })
}

// jobTimeout bounds one run: a cluster that never comes up (a server that
// lost its port to another process between the free-port probe and its
// bind) must not stall the atlas. Generous: three times the workload plus
// a minute for starting and stopping servers.
func jobTimeout(j Job) time.Duration {
	return 3*j.Cell.Scenario.Workload.Duration + time.Minute
}

// runJob runs j, once more when the first attempt ran out of time; a run
// that never completes stays incomplete on disk, which the atlas counts
// as missing (and --resume runs again).
func runJob(ctx context.Context, j Job, o RunOptions) {
	dir := j.Dir(o.Dir)
	for attempt := 1; attempt <= 2 && ctx.Err() == nil; attempt++ {
		jctx, cancel := context.WithTimeout(ctx, jobTimeout(j))
		runOnce(jctx, j, dir, o)
		timedOut := jctx.Err() != nil && ctx.Err() == nil
		cancel()
		if !timedOut {
			return
		}
		if o.Logger != nil {
			o.Logger.Warn("atlas run timed out", "cell", j.Cell.Key(), "run", j.Index, "attempt", attempt, "after", jobTimeout(j))
		}
	}
}

func runOnce(ctx context.Context, j Job, dir string, o RunOptions) {
	os.RemoveAll(dir) // a partial run from an interrupted atlas or attempt
	seed := j.Seed
	res, _, err := runner.Run(ctx, j.Cell.Scenario, runner.Options{OutDir: dir, Seed: &seed, Logger: o.Logger})
	if res != nil && ctx.Err() == nil {
		if rerr := report.Render(dir, res); rerr != nil && o.Logger != nil {
			o.Logger.Warn("atlas report", "dir", dir, "err", rerr)
		}
		if o.Slim {
			if serr := Slim(dir); serr != nil && o.Logger != nil {
				o.Logger.Warn("atlas slim", "dir", dir, "err", serr)
			}
		}
	}
	if err != nil && ctx.Err() == nil && o.Logger != nil {
		o.Logger.Warn("atlas run", "cell", j.Cell.Key(), "run", j.Index, "err", err)
	}
}
