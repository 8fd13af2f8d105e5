package explore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/locklab/locklab/atlas"
	"github.com/locklab/locklab/report"
	"github.com/locklab/locklab/runner"
)

// Schema is the version of explore.json.
const Schema = "locklab/explore/v1"

// Plan is what makes two explorations the same one: shards and resumed
// sessions of a plan draw the same schedules.
type Plan struct {
	Seed  int64    `json:"seed"`
	Locks []string `json:"locks"`
	// Faults are the fault types drawn; empty: none.
	Faults []string `json:"faults"`
	// Runs bounds the draws (0: the budget alone); Budget bounds the time,
	// drawing and shrinking together (see Pace).
	Runs   int           `json:"runs,omitempty"`
	Budget time.Duration `json:"budget_ns,omitempty"`
}

// Same reports whether p and q draw the same schedules.
func (p Plan) Same(q Plan) bool {
	return p.Seed == q.Seed && slices.Equal(p.Locks, q.Locks) && slices.Equal(p.Faults, q.Faults)
}

// Generator is the plan's schedule generator.
func (p Plan) Generator() Generator {
	return Generator{Seed: p.Seed, Locks: p.Locks, Types: p.Faults}
}

// Explore is explore.json: the plan, every run, every finding.
type Explore struct {
	Schema string `json:"schema"`
	Plan   Plan   `json:"plan"`
	// Shard is "i/n" when this folder holds one shard; Merged lists the
	// folders a merge read.
	Shard    string    `json:"shard,omitempty"`
	Merged   []string  `json:"merged,omitempty"`
	Parallel int       `json:"parallel"`
	Started  time.Time `json:"started"`
	// ElapsedS is the time spent, over every session (resumed ones add
	// theirs); ExploreS the part until the last schedule was drawn and
	// run (shrinking runs beside it).
	ElapsedS float64 `json:"elapsed_s"`
	ExploreS float64 `json:"explore_s"`
	// Complete is false when the exploration was interrupted.
	Complete bool        `json:"complete"`
	Runs     []RunRecord `json:"runs"`
	Findings []*Finding  `json:"findings"`
	// RootCauses group the findings by what broke after shrinking (see
	// RootCauses); Unshrunk counts the findings not shrunk (Shrunk false:
	// never started, or stopped by the budget).
	RootCauses []RootCause `json:"root_causes"`
	Unshrunk   int         `json:"unshrunk"`
	// Counts over Runs.
	Safe         int `json:"safe"`
	Unsafe       int `json:"unsafe"`
	Inconclusive int `json:"inconclusive"`
	// RunsPerHour is explored runs per hour of exploring.
	RunsPerHour float64 `json:"runs_per_hour"`
	// Tried counts runs by lock and fault type.
	Tried []Tried `json:"tried"`
}

// RunRecord is one explored run.
type RunRecord struct {
	Index int    `json:"index"`
	Lock  string `json:"lock"`
	// Faults are the drawn faults' types and targets ("restart redis-0").
	Faults []string `json:"faults"`
	// Scenario and Dir are the scenario file and result folder, relative
	// to the explore folder.
	Scenario string `json:"scenario"`
	Dir      string `json:"dir"`
	Outcome
	Signature string `json:"signature,omitempty"`
	// AtS is when the run finished, in seconds into the exploration.
	AtS float64 `json:"at_s"`
}

// Finding is one signature: its runs, and its shrinking.
type Finding struct {
	Signature      string   `json:"signature"`
	Lock           string   `json:"lock"`
	Broke          string   `json:"broke"`
	FaultTypes     []string `json:"fault_types"`
	Classification string   `json:"classification"`
	// FirstRun found it, FirstAtS seconds into the exploration; Runs are
	// every run index with this signature.
	FirstRun int     `json:"first_run"`
	FirstAtS float64 `json:"first_at_s"`
	Runs     []int   `json:"runs"`
	// Shrink is the finding's shrinking: "done", "rare" (done, but the
	// result reproduced in fewer than 3 of 5 runs), "stopped" (budget or
	// interrupt: Minimal is the last step kept), "subsumed" (a shrunk
	// finding of the same lock and breakage needs only faults of this
	// one's types, or this one's shrinking came down to that finding's
	// fault types; its minimal scenario is given), "running" or "" (not
	// started).
	Shrink string `json:"shrink"`
	// ShrinkRuns are the runs its shrinking cost, ShrinkS its seconds.
	ShrinkRuns int     `json:"shrink_runs,omitempty"`
	ShrinkS    float64 `json:"shrink_s,omitempty"`
	// Minimal is the minimal scenario, relative to the explore folder,
	// MinimalFaults its number of faults; Repro the command that checks it.
	Minimal       string `json:"minimal,omitempty"`
	MinimalFaults int    `json:"minimal_faults"`
	// MinimalTypes are the minimal scenario's sorted fault types.
	MinimalTypes []string `json:"minimal_types"`
	Repro        string   `json:"repro,omitempty"`
	// Reproduced of Tries runs of the minimal scenario showed the finding;
	// Rate and its Wilson 95% interval [RateLow, RateHigh].
	Reproduced int     `json:"reproduced"`
	Tries      int     `json:"tries"`
	Rate       float64 `json:"rate"`
	RateLow    float64 `json:"rate_low"`
	RateHigh   float64 `json:"rate_high"`
	Steps      []Step  `json:"steps"`
}

// Step is one shrinking step tried.
type Step struct {
	What       string `json:"what"`
	Reproduced int    `json:"reproduced"`
	Tries      int    `json:"tries"`
	Kept       bool   `json:"kept"`
	// Refused is the validator's answer when the step was not run.
	Refused string `json:"refused,omitempty"`
}

// Tried counts the runs of one lock with one fault type ("none": runs
// without faults).
type Tried struct {
	Lock  string `json:"lock"`
	Fault string `json:"fault"`
	Runs  int    `json:"runs"`
	// Opened counts the runs where a fault of this type opened its race
	// (Outcome.Opened): the pair was exercised, not only drawn.
	Opened       int `json:"opened"`
	Unsafe       int `json:"unsafe"`
	Inconclusive int `json:"inconclusive"`
}

// Options say how Run explores.
type Options struct {
	// Dir is the explore folder (OUT/explore).
	Dir string
	// Parallel runs this many schedules at once. Default 1.
	Parallel int
	// Shard k of n keeps the run indexes i with i mod n == k-1.
	ShardK, ShardN int
	Logger         *slog.Logger
	// Progress receives a line per finished run and shrinking step.
	Progress io.Writer
}

// Read loads dir/explore.json.
func Read(dir string) (*Explore, error) {
	data, err := os.ReadFile(filepath.Join(dir, "explore.json"))
	if err != nil {
		return nil, err
	}
	var e Explore
	if err := json.Unmarshal(data, &e); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "explore.json"), err)
	}
	if e.Schema != Schema {
		return nil, fmt.Errorf("%s: schema %q, want %q", filepath.Join(dir, "explore.json"), e.Schema, Schema)
	}
	return &e, nil
}

// explorer is one session of Run.
type explorer struct {
	e     *Explore
	o     Options
	gen   Generator
	start time.Time // this session's start
	spent float64   // ElapsedS of earlier sessions
	mu    sync.Mutex
	next  int // the next candidate run index
	// slots bound the runs at once, shrinking first (nil: unbounded).
	slots *slots
	// drawing counts the drawn runs under way; drawn is set when no more
	// schedule will be drawn; runSum and runCount time the runs that
	// ended.
	drawing  int
	drawn    bool
	gated    bool // drawing waits for the backlog (said once)
	runSum   float64
	runCount int
}

func (x *explorer) elapsed() float64 { return x.spent + time.Since(x.start).Seconds() }

func (x *explorer) progress(format string, a ...any) {
	if x.o.Progress != nil {
		fmt.Fprintf(x.o.Progress, "explore: "+format+"\n", a...)
	}
}

// Run explores: it draws and runs schedules and shrinks the findings
// they show at the same time, shrinking first, drawing only while the
// budget left can shrink what was found (Pace), until the plan's runs
// are done and shrunk or the budget is spent, and writes explore.json,
// .md and .html. With resume it continues the exploration in o.Dir (runs already
// done are kept, shrinking that finished is kept). It returns ctx's error
// when interrupted, after writing what it has.
func Run(ctx context.Context, plan Plan, o Options, resume bool) (*Explore, error) {
	if o.Parallel < 1 {
		o.Parallel = 1
	}
	if o.ShardN < 1 {
		o.ShardK, o.ShardN = 1, 1
	}
	x := &explorer{o: o, gen: plan.Generator(), start: time.Now(), slots: newSlots(o.Parallel)}
	old, err := Read(o.Dir)
	switch {
	case err == nil && !resume:
		return nil, fmt.Errorf("%s holds an exploration already: choose another --out, or --resume it", o.Dir)
	case err == nil:
		if !old.Plan.Same(plan) {
			return nil, fmt.Errorf("%s holds an exploration of another plan (seed, locks or faults differ)", o.Dir)
		}
		x.e, x.spent = old, old.ElapsedS
		for _, f := range x.e.Findings {
			if f.Shrink == "stopped" || f.Shrink == "running" {
				f.Shrink = "" // shrink it again from its first run
			}
		}
		x.e.Plan.Runs, x.e.Plan.Budget = plan.Runs, plan.Budget
	case resume && !errors.Is(err, os.ErrNotExist):
		return nil, err
	default:
		x.e = &Explore{Schema: Schema, Plan: plan, Started: time.Now().UTC()}
	}
	if o.ShardN > 1 {
		x.e.Shard = fmt.Sprintf("%d/%d", o.ShardK, o.ShardN)
	}
	x.e.Parallel = o.Parallel
	if err := os.MkdirAll(filepath.Join(o.Dir, "runs"), 0o755); err != nil {
		return nil, fmt.Errorf("explore folder: %w", err)
	}
	x.next = o.ShardK - 1
	bctx := ctx
	if b := x.e.Plan.Budget; b > 0 {
		var cancel context.CancelFunc
		left := time.Duration((b.Seconds() - x.spent) * float64(time.Second))
		bctx, cancel = context.WithTimeoutCause(ctx, left, errBudget)
		defer cancel()
	}
	err = x.explore(bctx)
	if context.Cause(bctx) == errBudget && ctx.Err() == nil {
		err = nil // the budget is spent: what was found is written
	}
	x.subsumeRest()
	x.e.ElapsedS = x.elapsed()
	x.e.Complete = ctx.Err() == nil
	if werr := Write(o.Dir, x.e); werr != nil {
		return x.e, werr
	}
	return x.e, err
}

var errBudget = errors.New("explore: budget spent")

// nextIndex returns the next run index of this shard not yet done and
// counts it under way. ok is false when none may be drawn now: wait is
// then true when that may change (a shrinking or a run is under way, or
// findings wait), false when drawing is over (the plan's runs are done,
// or the budget left cannot shrink one more finding).
func (x *explorer) nextIndex(done map[int]bool) (i int, ok, wait bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	p := x.pace()
	if !p.MayDraw() {
		if !x.gated {
			x.gated = true
			x.progress("drawing waits: %d findings waiting, %d shrinking, %d drawn runs under way need %.0f run-seconds, the %.0f s left hold %.0f (a shrinking: %.1f runs of %.1f s, %.0f s long)",
				p.Backlog, p.Shrinking, p.Drawing, p.Need(), p.Remaining, p.Capacity(), p.ShrinkRuns, p.RunS, p.ShrinkS)
		}
		return 0, false, p.Backlog+p.Shrinking+p.Drawing > 0
	}
	if x.gated {
		x.gated = false
		x.progress("drawing resumes: %d findings waiting, %.0f s left", p.Backlog, p.Remaining)
	}
	for {
		i := x.next
		if x.e.Plan.Runs > 0 && i >= x.e.Plan.Runs {
			return 0, false, false
		}
		x.next += x.o.ShardN
		if !done[i] {
			x.drawing++
			return i, true, false
		}
	}
}

// explore draws and runs schedules (--parallel at once) while shrinkers
// shrink the findings, each run taking a slot, shrinking first. It
// returns when drawing is over and nothing is left to shrink, or ctx
// ends.
func (x *explorer) explore(ctx context.Context) error {
	done := map[int]bool{}
	for _, r := range x.e.Runs {
		done[r.Index] = true
	}
	if len(done) > 0 {
		x.progress("%d runs already done in %s, continuing", len(done), x.o.Dir)
	}
	sessionStart := time.Now()
	exploredBefore := x.e.ExploreS
	var draws, shrinks sync.WaitGroup
	for w := 0; w < x.o.Parallel; w++ {
		draws.Go(func() {
			for ctx.Err() == nil {
				if !x.slots.acquire(ctx, false) {
					return
				}
				i, ok, wait := x.nextIndex(done)
				if !ok {
					x.slots.release()
					if !wait {
						return
					}
					sleep(ctx, time.Second)
					continue
				}
				x.runOne(ctx, i)
				x.slots.release()
				x.mu.Lock()
				x.drawing--
				x.mu.Unlock()
			}
		})
	}
	for w := 0; w < shrinkers(x.o.Parallel); w++ {
		shrinks.Go(func() { x.shrinkLoop(ctx) })
	}
	draws.Wait()
	x.mu.Lock()
	x.drawn = true
	x.e.ExploreS = exploredBefore + time.Since(sessionStart).Seconds()
	x.mu.Unlock()
	if n := x.backlog(); n > 0 && ctx.Err() == nil {
		x.progress("drawing over: %d findings left to shrink", n)
	}
	shrinks.Wait()
	return ctx.Err()
}

// timedRun runs s as runSchedule does and times the runs that end (the
// pace reads their mean).
func (x *explorer) timedRun(ctx context.Context, s Schedule, dir string, seed int64) (*report.Run, error) {
	start := time.Now()
	r, err := runSchedule(ctx, s, dir, seed, x.o.Logger)
	if ctx.Err() == nil {
		x.mu.Lock()
		x.runSum += time.Since(start).Seconds()
		x.runCount++
		x.mu.Unlock()
	}
	return r, err
}

// runOne draws, writes and runs schedule i and records it.
func (x *explorer) runOne(ctx context.Context, i int) {
	s, err := x.gen.Draw(i)
	if err != nil {
		x.progress("run %d: %v", i, err)
		return
	}
	name := fmt.Sprintf("run-%05d", i)
	file := filepath.Join("runs", name+".yaml")
	if err := os.WriteFile(filepath.Join(x.o.Dir, file), []byte(s.YAML()), 0o644); err != nil {
		x.progress("run %d: %v", i, err)
		return
	}
	r, err := x.timedRun(ctx, s, filepath.Join(x.o.Dir, "runs", name), int64(i)+1)
	if ctx.Err() != nil {
		return // interrupted: not done, --resume runs it again
	}
	rec := RunRecord{Index: i, Lock: s.Lock, Scenario: file, Dir: filepath.Join("runs", name)}
	for _, f := range s.Faults {
		rec.Faults = append(rec.Faults, f.Type+" "+f.Target())
	}
	if err != nil {
		rec.Outcome = Outcome{Verdict: Inconclusive, Reason: err.Error()}
	} else {
		rec.Outcome = Judge(*r)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	rec.AtS = x.elapsed()
	note := ""
	if rec.Verdict == Unsafe {
		rec.Signature = Signature(s.Lock, rec.Outcome)
		f := x.finding(rec.Signature)
		if f == nil {
			f = &Finding{Signature: rec.Signature, Lock: s.Lock, Broke: rec.Broke, FaultTypes: rec.Bit,
				Classification: Classify(s.Lock, rec.Outcome), FirstRun: i, FirstAtS: rec.AtS}
			x.e.Findings = append(x.e.Findings, f)
			note = " NEW FINDING " + rec.Signature
		}
		f.Runs = append(f.Runs, i)
	}
	x.e.Runs = append(x.e.Runs, rec)
	slices.SortFunc(x.e.Runs, func(a, b RunRecord) int { return a.Index - b.Index })
	tally(x.e)
	x.progress("run %d %s [%s]: %s %s%s (%d runs, %d unsafe, %d inconclusive, %d findings, %s)",
		i, s.Lock, strings.Join(s.FaultTypes(), ","), rec.Verdict, rec.Broke, note,
		len(x.e.Runs), x.e.Unsafe, x.e.Inconclusive, len(x.e.Findings), time.Duration(rec.AtS*float64(time.Second)).Round(time.Second))
	x.e.ElapsedS = x.elapsed()
	if err := writeJSON(x.o.Dir, x.e); err != nil {
		x.progress("%v", err)
	}
}

func (x *explorer) finding(sig string) *Finding {
	for _, f := range x.e.Findings {
		if f.Signature == sig {
			return f
		}
	}
	return nil
}

// tally recounts e's outcome counts, runs per hour and tried matrix.
func tally(e *Explore) {
	e.RootCauses, e.Unshrunk = RootCauses(e.Findings), unshrunk(e.Findings)
	e.Safe, e.Unsafe, e.Inconclusive = 0, 0, 0
	tried := map[[2]string]*Tried{}
	var keys [][2]string
	for _, r := range e.Runs {
		switch r.Verdict {
		case Safe:
			e.Safe++
		case Unsafe:
			e.Unsafe++
		default:
			e.Inconclusive++
		}
		types := []string{}
		for _, f := range r.Faults {
			t, _, _ := strings.Cut(f, " ")
			if !slices.Contains(types, t) {
				types = append(types, t)
			}
		}
		if len(types) == 0 {
			types = []string{"none"}
		}
		for _, t := range types {
			k := [2]string{r.Lock, t}
			c := tried[k]
			if c == nil {
				c = &Tried{Lock: r.Lock, Fault: t}
				tried[k] = c
				keys = append(keys, k)
			}
			c.Runs++
			if slices.Contains(r.Opened, t) {
				c.Opened++
			}
			if r.Verdict == Unsafe {
				c.Unsafe++
			} else if r.Verdict != Safe {
				c.Inconclusive++
			}
		}
	}
	slices.SortFunc(keys, func(a, b [2]string) int { return strings.Compare(a[0]+"\x00"+a[1], b[0]+"\x00"+b[1]) })
	e.Tried = e.Tried[:0]
	for _, k := range keys {
		e.Tried = append(e.Tried, *tried[k])
	}
	if e.ExploreS > 0 {
		e.RunsPerHour = float64(len(e.Runs)) / e.ExploreS * 3600
	}
}

// runTimeout bounds one run: three times the workload plus a minute for
// starting and stopping servers (a cluster that never comes up must not
// stall the exploration).
func runTimeout(s Schedule) time.Duration { return 3*s.Duration + time.Minute }

// runSchedule runs s once into dir with seed and returns its one run,
// the folder slimmed (result.json, gzipped history) as the atlas keeps
// its runs.
func runSchedule(ctx context.Context, s Schedule, dir string, seed int64, log *slog.Logger) (*report.Run, error) {
	sc, err := s.Parse()
	if err != nil {
		return nil, err
	}
	os.RemoveAll(dir) // a partial run of an interrupted session
	rctx, cancel := context.WithTimeout(ctx, runTimeout(s))
	defer cancel()
	res, _, err := runner.Run(rctx, sc, runner.Options{OutDir: dir, Seed: &seed, Logger: log})
	if res != nil && ctx.Err() == nil {
		if serr := atlas.Slim(dir); serr != nil && log != nil {
			log.Warn("explore slim", "dir", dir, "err", serr)
		}
	}
	if err != nil {
		return nil, err
	}
	if res == nil || len(res.Runs) == 0 {
		return nil, fmt.Errorf("%s: no run recorded", dir)
	}
	return &res.Runs[0], nil
}
