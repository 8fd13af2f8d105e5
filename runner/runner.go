package runner

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/internal/endpoints"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/report"
	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/workload"
)

// Options are the caller's overrides and outputs for one Run.
type Options struct {
	// ResultsDir is the root under which <scenario>-<time>/ is created.
	// Default "results".
	ResultsDir string
	// OutDir, when set, is the exact folder to write (no timestamp).
	OutDir string
	// Duration, Clients, Seed and Provider override the scenario when set.
	Duration time.Duration
	Clients  int
	Seed     *int64
	Provider string
	// Locks keeps only these lock names or labels from the scenario.
	Locks []string
	// Logger receives diagnostics (servers, libraries); nil discards.
	Logger *slog.Logger
	// Progress receives a live progress line; nil prints none.
	Progress io.Writer
}

// Point is one run of a scenario: a lock at one sweep value.
type Point struct {
	Lock    scenarios.Lock
	Clients int
	Params  map[string]string
	Faults  []scenarios.Fault
	// Dropped, one per Faults entry, names what a multi-backend fault lost
	// for this lock ("" when nothing); NotApplicable are the faults left
	// with nothing to act on, recorded in the run as such.
	Dropped       []string
	NotApplicable []report.FaultWindow
}

// Plan lists the runs of sc after applying opts, in order.
func Plan(sc *scenarios.Scenario, opts Options) ([]Point, error) {
	lks := sc.Locks
	if len(opts.Locks) > 0 {
		lks = nil
		for _, want := range opts.Locks {
			found := false
			for _, l := range sc.Locks {
				if l.Name == want || l.Label == want {
					lks = append(lks, l)
					found = true
				}
			}
			if !found {
				return nil, fmt.Errorf("--locks: %q is not among the scenario's locks (%s)", want, strings.Join(labels(sc.Locks), ", "))
			}
		}
	}
	if providerOf(sc, opts) == cluster.ProviderExternal && sc.Cluster.External == nil {
		return nil, fmt.Errorf("%s: provider external needs cluster.external: {redis: [host:port], zookeeper: [...], etcd: [...]} in the scenario", sc.File)
	}
	// One variant per sweep combination (scenarios.Expand); --clients
	// replaces the clients dimension, so variants differing only in it
	// collapse into one.
	var variants []*scenarios.Scenario
	seen := map[string]bool{}
	for _, v := range sc.Expand() {
		if opts.Clients > 0 {
			v.Workload.Clients = opts.Clients
			delete(v.Params, "clients")
			key := fmt.Sprint(v.Params)
			if seen[key] {
				continue
			}
			seen[key] = true
		}
		variants = append(variants, v)
	}
	var pts []Point
	for _, l := range lks {
		spec, ok := locks.Lookup(l.Name)
		if !ok {
			return nil, fmt.Errorf("%s:%d: locks: %q is not registered", sc.File, l.Line, l.Name)
		}
		for _, v := range variants {
			n := v.Workload.Clients
			cs := clusterSpec(sc, providerOf(sc, opts), spec, n, "")
			fs, dropped, na := relevantFaults(v.Faults, cs)
			cs.ClientProxies = faults.ClientProxies(cs, sc.Workload.ProcessPerClient, fs)
			if err := checkFaults(sc, label(l), cs, sc.Workload.ProcessPerClient, fs); err != nil {
				return nil, err
			}
			var params map[string]string
			if len(v.Params) > 0 {
				params = v.Params
			}
			pts = append(pts, Point{Lock: l, Clients: n, Params: params, Faults: fs, Dropped: dropped, NotApplicable: na})
		}
	}
	return pts, nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func providerOf(sc *scenarios.Scenario, opts Options) string {
	switch {
	case opts.Provider != "":
		return opts.Provider
	case sc.Cluster.Provider != "":
		return sc.Cluster.Provider
	}
	return cluster.ProviderLocal
}

func labels(ls []scenarios.Lock) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = label(l)
	}
	return out
}

func label(l scenarios.Lock) string {
	if l.Label != "" {
		return l.Label
	}
	return l.Name
}

// Run executes every point of sc and returns the result and the folder it
// was written to. The result file is rewritten after each point, so an
// interrupted run leaves every finished point on disk with complete=false.
// Run returns ctx's error when interrupted; a point that fails (cluster
// does not start) is recorded in its Run.Error and the next point runs.
func Run(ctx context.Context, sc *scenarios.Scenario, opts Options) (*report.Result, string, error) {
	pts, err := Plan(sc, opts)
	if err != nil {
		return nil, "", err
	}
	seed := sc.Seed
	if opts.Seed != nil {
		seed = *opts.Seed
	}
	provider := providerOf(sc, opts)
	dir := opts.OutDir
	if dir == "" {
		root := opts.ResultsDir
		if root == "" {
			root = "results"
		}
		dir = filepath.Join(root, sc.Name+"-"+time.Now().Format("20060102-150405"))
		// Two runs started within the same second get their own folders.
		for i, base := 2, dir; exists(dir); i++ {
			dir = fmt.Sprintf("%s-%d", base, i)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, "", fmt.Errorf("results folder: %w", err)
	}
	// Servers run with their own working directory: give them absolute paths.
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	wl := sc.Workload
	if opts.Duration > 0 {
		wl.Duration, wl.Ops = opts.Duration, 0
	}
	res := &report.Result{
		Schema:      report.Schema,
		Scenario:    sc.Name,
		Description: sc.Description,
		File:        sc.File,
		Seed:        seed,
		Provider:    provider,
		Started:     time.Now().UTC(),
		Host:        host(),
		Versions:    map[string]string{},
		Fencing:     orDefault(sc.Resource.Fencing, "off"),
		Workload: report.Workload{
			Clients: wl.Clients, DurationS: wl.Duration.Seconds(), Ops: wl.Ops,
			TTLMs: msf(wl.TTL), CriticalMs: msf(wl.CriticalSection), Keys: wl.Keys,
			Mode: orDefault(wl.Mode, "closed"), Rate: wl.Rate, ProcessPerClient: wl.ProcessPerClient,
			OnLost: orDefault(wl.OnLost, workload.OnLostIgnore),
		},
		Runs: []report.Run{},
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	hf, err := os.Create(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		return nil, "", fmt.Errorf("history: %w", err)
	}
	defer hf.Close()
	r := &run{sc: sc, opts: opts, seed: seed, provider: provider, dir: dir, wl: wl, log: log, total: len(pts), versions: res.Versions, history: hf}
	for i, pt := range pts {
		if ctx.Err() != nil {
			break
		}
		r.index = i
		out := r.point(ctx, pt)
		res.Runs = append(res.Runs, out)
		if err := report.Write(dir, res); err != nil {
			return res, dir, err
		}
	}
	res.Finished = time.Now().UTC()
	res.Complete = ctx.Err() == nil && len(res.Runs) == len(pts)
	for _, run := range res.Runs {
		if !run.Complete {
			res.Complete = false
		}
	}
	if ctx.Err() != nil {
		res.Interrupted = "interrupted: " + context.Cause(ctx).Error()
	}
	hf.Close() // every point flushed its history: read it back
	if err := secondOpinion(dir, res); err != nil {
		log.Warn("porcupine", "err", err)
	}
	evaluate(sc, res)
	if err := report.Write(dir, res); err != nil {
		return res, dir, err
	}
	return res, dir, ctx.Err()
}

type run struct {
	history  io.Writer // history.jsonl of the result folder
	sc       *scenarios.Scenario
	opts     Options
	seed     int64
	provider string
	dir      string
	wl       scenarios.Workload
	log      *slog.Logger
	index    int
	total    int
	versions map[string]string
}

var unsafeChars = regexp.MustCompile(`[^a-zA-Z0-9._=-]+`)

// point runs one lock at one sweep value on a fresh cluster.
func (r *run) point(ctx context.Context, pt Point) report.Run {
	spec, _ := locks.Lookup(pt.Lock.Name)
	ttl := pt.Lock.TTL
	if ttl == 0 {
		ttl = r.wl.TTL
	}
	out := report.Run{
		Lock: label(pt.Lock), LockName: pt.Lock.Name, Backend: string(spec.Backend),
		Options: pt.Lock.Options, Fences: spec.Fencing, Clients: pt.Clients,
		Params: pt.Params, TTLMs: msf(ttl), Errors: map[string]int64{},
		TimelineBucketMs: int(workload.BucketWidth / time.Millisecond),
		Timeline:         []report.TimelineBucket{}, ViolationEvents: []report.ViolationEvent{},
		Faults: []report.FaultWindow{},
	}
	if len(out.Params) == 0 {
		out.Params = nil
	}
	name := unsafeChars.ReplaceAllString(out.Lock, "_")
	keys := make([]string, 0, len(pt.Params))
	for k := range pt.Params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		name += "_" + unsafeChars.ReplaceAllString(k+"="+pt.Params[k], "_")
	}
	cspec := clusterSpec(r.sc, r.provider, spec, pt.Clients, filepath.Join(r.dir, "logs", name))
	cspec.Logger = r.log
	cspec.ClientProxies = faults.ClientProxies(cspec, r.sc.Workload.ProcessPerClient, pt.Faults)
	r.progressf("[%d/%d] %s: starting %s", r.index+1, r.total, out.Lock, describe(cspec))
	cl, err := cluster.Start(ctx, cspec)
	if err != nil {
		out.Error = fmt.Sprintf("start cluster: %v", err)
		r.progressDone("[%d/%d] %s: %s", r.index+1, r.total, out.Lock, out.Error)
		return out
	}
	defer cl.Close()
	out.ProxiedLinks = []string{}
	for _, l := range cl.AllLinks() {
		out.ProxiedLinks = append(out.ProxiedLinks, l.Name)
	}
	info := cl.Info()
	for k, v := range info.Versions {
		r.versions[k] = v
	}
	out.StartupMs = map[string]float64{}
	for k, d := range info.Startup {
		out.StartupMs[k] = msf(d)
	}

	resource := checker.New(mustFencing(r.sc.Resource.Fencing), time.Now())
	hist := checker.NewHistory(r.history, r.index)
	resource.SetHistory(hist)
	// Runs after drv.close (deferred later, so run earlier): the exits of
	// client processes killed at the end are in the file too.
	defer func() {
		if err := hist.Flush(); err != nil {
			r.log.Warn("history", "err", err)
		}
	}()
	lcfg := func(i int) locks.Config {
		return locks.Config{
			Endpoints: endpoints.ForLocks(cl.Endpoints(i)),
			TTL:       ttl,
			Retry:     pt.Lock.Retry,
			Prefix:    prefix(pt.Lock, r.sc.Name),
			Options:   pt.Lock.Options,
			Seed:      r.seed*1_000_003 + int64(i),
			Logger:    r.log.With("client", i, "lock", out.Lock),
		}
	}
	wcfg := workload.Config{
		Clients: pt.Clients, Duration: r.wl.Duration, Ops: r.wl.Ops,
		CriticalSection: r.wl.CriticalSection, Keys: r.wl.Keys,
		AcquireTimeout: r.wl.AcquireTimeout, Seed: r.seed, OnLost: r.wl.OnLost,
	}
	if r.wl.Mode == "open" {
		wcfg.Rate = r.wl.Rate
	}
	var drv driver
	if r.wl.ProcessPerClient {
		drv, err = startProcesses(ctx, pt.Lock.Name, wcfg, lcfg, resource, filepath.Join(cspec.Dir, "clients"))
	} else {
		drv, err = connectInProcess(ctx, spec, wcfg, lcfg)
	}
	if err != nil {
		out.Error = err.Error()
		r.progressDone("[%d/%d] %s: %s", r.index+1, r.total, out.Lock, out.Error)
		return out
	}
	defer drv.close()

	// The workload starts now: the resource, the timeline and every fault's
	// `at` count from here.
	base := time.Now()
	resource.SetBase(base)
	rec := workload.NewRecorder(base)
	resource.OnViolation(func(v checker.Violation) { rec.Violation(v.At) })
	wcfg.Base = base

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	progressDone := make(chan struct{})
	go func() {
		defer close(progressDone)
		r.watch(runCtx, out.Lock, wcfg, base, rec, resource)
	}()
	faultCtx, stopFaults := context.WithCancel(ctx)
	windows := make(chan []faults.Window, 1)
	go func() {
		windows <- faults.Run(faultCtx, faults.Env{
			Cluster: cl, Clients: drv.control(), Holder: resource.WaitInside, Base: base, Logger: r.log,
		}, pt.Faults)
	}()
	werr := drv.drive(runCtx, wcfg, resource, rec)
	elapsed := time.Since(base)
	stopFaults() // heals whatever is still applied, resumes paused clients
	for _, w := range <-windows {
		end := w.End
		if end == 0 || end > elapsed {
			end = elapsed
		}
		out.Faults = append(out.Faults, report.FaultWindow{
			Type: w.Type, Target: w.Target, StartS: w.Start.Seconds(), EndS: end.Seconds(),
			Detail: w.Detail, Method: w.Method, Error: w.Err, VisitsAfter: resource.VisitsAfter(w.Start),
		})
	}
	for i := range min(len(out.Faults), len(pt.Dropped)) {
		if d := pt.Dropped[i]; d != "" {
			out.Faults[i].Detail = strings.TrimPrefix(out.Faults[i].Detail+"; "+d, "; ")
		}
	}
	for _, f := range pt.Faults[min(len(out.Faults), len(pt.Faults)):] {
		out.Faults = append(out.Faults, report.FaultWindow{Type: f.Type, Target: f.Node + f.Link + f.Isolate + f.Client,
			StartS: f.At.Seconds(), EndS: f.At.Seconds(), Error: "never started (the run ended first)"})
	}
	out.Faults = append(out.Faults, pt.NotApplicable...)
	counters, serr := drv.finish(wcfg, rec)
	if werr == nil {
		werr = serr
	}
	stop()
	<-progressDone

	sum := rec.Summary()
	truth := resource.Summary()
	handoff := workload.NewHistogram()
	for _, d := range resource.TakeHandoffs() {
		workload.RecordDuration(handoff, d)
	}
	out.DurationS = elapsed.Seconds()
	out.Ops = sum.Ops
	if elapsed > 0 {
		out.Throughput = float64(sum.Ops) / elapsed.Seconds()
	}
	out.Errors = sum.Errors
	out.Violations = truth.Violations
	out.LostUpdates = truth.LostUpdates
	out.StaleTokens = truth.StaleTokens
	out.StaleRejected = truth.StaleRejected
	out.StaleAccepted = truth.StaleAccepted
	out.MaxOverlapMs = msf(truth.MaxOverlap)
	out.Visits = truth.Visits
	verdictFields(&out, truth)
	out.Acquire = report.LatencyOf(sum.Acquire)
	out.Release = report.LatencyOf(sum.Release)
	out.Handoff = report.LatencyOf(handoff)
	out.Counters = counters
	for _, b := range sum.Timeline {
		out.Timeline = append(out.Timeline, report.TimelineBucket(b))
	}
	const maxEvents = 1000
	for i, ev := range truth.Events {
		if i == maxEvents {
			out.ViolationEventsDropped = len(truth.Events) - maxEvents
			break
		}
		out.ViolationEvents = append(out.ViolationEvents, report.ViolationEvent{
			Lock: ev.Lock, FirstClient: ev.First, SecondClient: ev.Second,
			FirstToken: ev.FirstToken, SecondToken: ev.SecondToken,
			AtS: ev.At.Seconds(), OverlapMs: msf(ev.Overlap),
		})
	}
	out.Complete = werr == nil && ctx.Err() == nil
	if werr != nil && ctx.Err() == nil {
		out.Error = werr.Error()
	}
	r.progressDone("[%d/%d] %-22s %7d ops %8.0f ops/s  errors %s  violations %d  (%s)",
		r.index+1, r.total, out.Lock, out.Ops, out.Throughput, report.ErrorsString(out.Errors), out.Violations,
		startupString(r.provider, info.Startup))
	return out
}

// clusterSpec is the cluster one lock runs on: the scenario's section for
// the lock's backend only (a fresh cluster per lock).
func clusterSpec(sc *scenarios.Scenario, provider string, spec locks.Spec, clients int, dir string) cluster.Spec {
	c := sc.Cluster
	cs := cluster.Spec{Provider: provider, Clients: clients, Dir: dir, RunID: sc.Name}
	switch spec.Backend {
	case locks.Redis:
		if c.Redis != nil {
			cs.Redis = &cluster.RedisSpec{Primaries: c.Redis.Primaries, Replicas: c.Redis.Replicas,
				Sentinels: c.Redis.Sentinels, Persistence: c.Redis.Persistence, Image: c.Redis.Image}
		} else {
			cs.Redis = &cluster.RedisSpec{Primaries: max(1, spec.MinRedis)}
		}
	case locks.ZooKeeper:
		cs.ZooKeeper = &cluster.ZooKeeperSpec{Nodes: 1}
		if c.ZooKeeper != nil {
			cs.ZooKeeper = &cluster.ZooKeeperSpec{Nodes: c.ZooKeeper.Nodes, Image: c.ZooKeeper.Image}
		}
	case locks.Etcd:
		cs.Etcd = &cluster.EtcdSpec{Nodes: 1}
		if c.Etcd != nil {
			cs.Etcd = &cluster.EtcdSpec{Nodes: c.Etcd.Nodes, Image: c.Etcd.Image}
		}
	}
	if c.External != nil {
		cs.External = &cluster.ExternalSpec{Redis: c.External.Redis, ZooKeeper: c.External.ZooKeeper, Etcd: c.External.Etcd}
	}
	return cs
}

func describe(cs cluster.Spec) string {
	var parts []string
	if r := cs.Redis; r != nil {
		s := fmt.Sprintf("redis %d primary", r.Primaries)
		if r.Replicas > 0 {
			s += fmt.Sprintf(" x%d replica", r.Replicas)
		}
		if r.Sentinels > 0 {
			s += fmt.Sprintf(" + %d sentinel", r.Sentinels)
		}
		parts = append(parts, s)
	}
	if cs.ZooKeeper != nil {
		parts = append(parts, fmt.Sprintf("zookeeper x%d", cs.ZooKeeper.Nodes))
	}
	if cs.Etcd != nil {
		parts = append(parts, fmt.Sprintf("etcd x%d", cs.Etcd.Nodes))
	}
	return strings.Join(parts, ", ") + " (" + cs.Provider + ")"
}

// prefix namespaces a run's keys: the scenario's own prefix, never anything
// a user's other keys could share (the external provider relies on it).
func prefix(l scenarios.Lock, scenario string) string {
	if l.Key != "" {
		return l.Key
	}
	return "locklab:" + scenario + ":"
}

func sumCounters(cs []locks.Client) map[string]int64 {
	var out map[string]int64
	for _, c := range cs {
		st, ok := c.(locks.Stats)
		if !ok {
			continue
		}
		if out == nil {
			out = map[string]int64{}
		}
		for k, v := range st.Counters() {
			out[k] += v
		}
	}
	return out
}

func mustFencing(s string) checker.Fencing {
	f, err := checker.ParseFencing(s)
	if err != nil {
		// the scenario was validated; an unknown value here is a bug.
		panic(err)
	}
	return f
}

func msf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func host() report.Host {
	h := report.Host{CPUs: runtime.NumCPU(), OS: runtime.GOOS, Arch: runtime.GOARCH, GoVersion: runtime.Version()}
	h.Hostname, _ = os.Hostname()
	return h
}

// startupString says how long each backend took to be ready, e.g.
// "local: zookeeper ready in 1.3s".
func startupString(provider string, startup map[string]time.Duration) string {
	kinds := make([]string, 0, len(startup))
	for k := range startup {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s ready in %s", k, startup[k].Round(10*time.Millisecond))
	}
	return provider + ": " + strings.Join(parts, ", ")
}
