package runner

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/external"
	"github.com/locklab/locklab/report"
	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/workload"
)

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
	// evidence is each point's visits in each fault's window, by point
	// index (as the result's runs), for evaluate.
	evidence map[int][]checker.WindowEvidence
}

var unsafeChars = regexp.MustCompile(`[^a-zA-Z0-9._=-]+`)

// point runs one lock at one sweep value on a fresh cluster.
func (r *run) point(ctx context.Context, pt Point) report.Run {
	spec, _ := locks.Lookup(pt.Lock.Name)
	if pt.Lock.Name == external.Exec {
		spec.Backend = locks.Backend(pt.Lock.Options["backend"]) // exec: the entry names its backend
	}
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
	resetPeakRSS()
	cspec := pt.Cluster
	cspec.Dir, cspec.Logger = filepath.Join(r.dir, "logs", name), r.log
	r.progressf("[%d/%d] %s: starting %s", r.index+1, r.total, out.Lock, describe(cspec))
	cl, err := cluster.StartPlan(ctx, cspec, pt.Plan)
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
	// Flushed after drv.close (deferred later, so run earlier): the exits
	// of client processes killed at the end are in the file too.
	defer r.recordHistory(resource)()
	lcfg := func(i int) locks.Config {
		return locks.Config{
			Endpoints: cl.Endpoints(i).ForLocks(),
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
		KeyPerClient: r.wl.KeyPerClient,
	}
	if wcfg.KeyPerClient {
		wcfg.Keys = max(wcfg.Keys, pt.Clients)
	}
	if r.wl.Mode == "open" {
		wcfg.Rate = r.wl.Rate
	}
	var drv driver
	if external.IsProgram(pt.Lock.Name) {
		drv, err = startPrograms(ctx, cl, pt.Lock.Name, pt.Lock.Options, wcfg, lcfg, filepath.Join(cspec.Dir, "clients"))
	} else if r.wl.ProcessPerClient {
		drv, err = startProcesses(ctx, cl, pt.Lock.Name, wcfg, lcfg, resource, filepath.Join(cspec.Dir, "clients"))
	} else {
		drv, err = connectInProcess(ctx, spec, wcfg, lcfg)
	}
	if err != nil {
		out.Error = err.Error()
		r.progressDone("[%d/%d] %s: %s", r.index+1, r.total, out.Lock, out.Error)
		return out
	}
	defer drv.close()
	if pd, ok := drv.(*programs); ok {
		pd.versions(r.versions) // the library each client program said it runs
	}

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
			Cluster: cl, Clients: drv.control(), Holder: holderOf(resource), Base: base, Logger: r.log,
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
			Bit: w.Bit, Observed: w.Observed,
		})
	}
	for i := range min(len(out.Faults), len(pt.Dropped)) {
		if d := pt.Dropped[i]; d != "" {
			out.Faults[i].Detail = strings.TrimPrefix(out.Faults[i].Detail+"; "+d, "; ")
		}
	}
	out.Faults = append(out.Faults, neverStarted(pt.Faults, len(out.Faults))...)
	out.Faults = append(out.Faults, pt.NotApplicable...)
	counters, serr := drv.finish(wcfg, rec)
	if werr == nil {
		werr = serr
	}
	stop()
	<-progressDone

	r.evidence[r.index] = collect(&out, rec, resource, elapsed, counters, wcfg.Rate)
	out.Complete = werr == nil && ctx.Err() == nil
	if werr != nil && ctx.Err() == nil {
		out.Error = werr.Error()
	}
	r.progressDone("[%d/%d] %-22s %7d ops %8.0f ops/s  errors %s  violations %d  (%s)",
		r.index+1, r.total, out.Lock, out.Ops, out.Throughput, report.ErrorsString(out.Errors), out.Violations,
		startupString(r.provider, info.Startup))
	if out.RateWarning != "" {
		r.progressDone("[%d/%d] %s: warning: %s", r.index+1, r.total, out.Lock, out.RateWarning)
	}
	return out
}
