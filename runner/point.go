package runner

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
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
	spec := lockSpec(pt.Lock)
	ttl := r.wl.LockTTL(pt.Lock)
	out := emptyRun(pt, spec, ttl)
	kindFields(&out, spec, pt.Lock, r.wl)
	dir := filepath.Join(r.dir, "logs", pointName(out.Lock, pt.Params))
	resetPeakRSS()
	cl, err := r.startCluster(ctx, pt, dir, &out)
	if err != nil {
		return r.failed(out, fmt.Sprintf("start cluster: %v", err))
	}
	defer cl.Close()
	resource := checker.New(mustFencing(r.sc.Resource.Fencing), time.Now())
	resource.SetFences(spec.Fencing)
	resource.SetKind(out.Kind, out.Permits)
	resource.SetStanding(spec.Standing)
	// Flushed after clients.Close (deferred later, so run earlier): the
	// exits of client processes killed at the end are in the file too.
	defer r.recordHistory(resource)()
	wcfg := r.workloadConfig(pt.Clients)
	wcfg.ReadShare = out.ReadShare
	clients, err := workload.StartClients(ctx, wcfg, workload.Setup{
		Spec: spec, Options: pt.Lock.Options, ProcessPerClient: r.wl.ProcessPerClient,
		LockConfig: r.lockConfig(pt.Lock, cl, ttl, out.Lock), Host: cl, LogDir: filepath.Join(dir, "clients"),
	}, resource)
	if err != nil {
		return r.failed(out, err.Error())
	}
	defer clients.Close()
	for _, lib := range clients.Libraries() {
		if name, _, ok := strings.Cut(lib, " "); ok && lib != "" {
			r.versions[name] = lib // the library each client program said it runs
		}
	}
	werr := r.drive(ctx, pt, cl, clients, wcfg, resource, &out)
	out.Complete = werr == nil && ctx.Err() == nil
	if werr != nil && ctx.Err() == nil {
		out.Error = werr.Error()
	}
	r.progressDone("[%d/%d] %-22s %7d ops %8.0f ops/s  errors %s  violations %d  (%s)",
		r.index+1, r.total, out.Lock, out.Ops, out.Throughput, report.ErrorsString(out.Errors), out.Violations,
		startupString(r.provider, cl.Info().Startup))
	if out.RateWarning != "" {
		r.progressDone("[%d/%d] %s: warning: %s", r.index+1, r.total, out.Lock, out.RateWarning)
	}
	return out
}

// lockSpec is l's registry entry; an exec entry names its backend.
func lockSpec(l scenarios.Lock) locks.Spec {
	spec, _ := locks.Lookup(l.Name)
	if l.Name == external.Exec {
		spec.Backend = locks.Backend(l.Options["backend"])
		spec.Standing, _ = strconv.ParseBool(l.Options["standing"])
	}
	return spec
}

// emptyRun is the result of pt before anything ran.
func emptyRun(pt Point, spec locks.Spec, ttl time.Duration) report.Run {
	out := report.Run{
		Lock: label(pt.Lock), LockName: pt.Lock.Name, Backend: string(spec.Backend),
		Options: pt.Lock.Options, Fences: spec.Fencing, Clients: pt.Clients, Kind: string(spec.KindOf()),
		Params: pt.Params, TTLMs: msf(ttl), Errors: map[string]int64{},
		TimelineBucketMs: int(workload.BucketWidth / time.Millisecond),
		Timeline:         []report.TimelineBucket{}, ViolationEvents: []report.ViolationEvent{},
		Faults: []report.FaultWindow{},
	}
	if len(out.Params) == 0 {
		out.Params = nil
	}
	return out
}

// pointName names a point's folder: its lock label and sweep values.
func pointName(lock string, params map[string]string) string {
	name := unsafeChars.ReplaceAllString(lock, "_")
	for _, k := range slices.Sorted(maps.Keys(params)) {
		name += "_" + unsafeChars.ReplaceAllString(k+"="+params[k], "_")
	}
	return name
}

// failed ends a point that could not run, with msg as its error.
func (r *run) failed(out report.Run, msg string) report.Run {
	out.Error = msg
	r.progressDone("[%d/%d] %s: %s", r.index+1, r.total, out.Lock, out.Error)
	return out
}

// startCluster starts pt's cluster from its plan, logging under dir, and
// records its links, server versions and startup times in out.
func (r *run) startCluster(ctx context.Context, pt Point, dir string, out *report.Run) (*cluster.Cluster, error) {
	cspec := pt.Cluster
	cspec.Dir, cspec.Logger = dir, r.log
	r.progressf("[%d/%d] %s: starting %s", r.index+1, r.total, out.Lock, describe(cspec))
	cl, err := cluster.StartPlan(ctx, cspec, pt.Plan)
	if err != nil {
		return nil, err
	}
	out.LossyDisks = cspec.LossyDisks
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
	return cl, nil
}

// lockConfig gives client i of lock l its configuration on cl.
func (r *run) lockConfig(l scenarios.Lock, cl *cluster.Cluster, ttl time.Duration, label string) func(int) locks.Config {
	return func(i int) locks.Config {
		return locks.Config{
			Endpoints: cl.Endpoints(i), TTL: ttl, Retry: l.Retry, Prefix: prefix(l, r.sc.Name),
			Options: l.Options, Seed: r.seed*1_000_003 + int64(i), Logger: r.log.With("client", i, "lock", label),
		}
	}
}

// workloadConfig is the scenario's workload for clients clients.
func (r *run) workloadConfig(clients int) workload.Config {
	wcfg := workload.Config{
		Clients: clients, Duration: r.wl.Duration, Ops: r.wl.Ops,
		CriticalSection: r.wl.CriticalSection, Keys: r.wl.Keys,
		AcquireTimeout: r.wl.AcquireTimeout, Seed: r.seed, OnLost: r.wl.OnLost,
		KeyPerClient: r.wl.KeyPerClient,
	}
	if wcfg.KeyPerClient {
		wcfg.Keys = max(wcfg.Keys, clients)
	}
	if r.wl.Mode == "open" {
		wcfg.Rate = r.wl.Rate
	}
	return wcfg
}

// drive runs the workload and pt's faults from now (the resource, the
// timeline and every fault's at count from here), then fills out with the
// fault windows and what was measured.
func (r *run) drive(ctx context.Context, pt Point, cl *cluster.Cluster, clients workload.Clients, wcfg workload.Config, resource *checker.Shared, out *report.Run) error {
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
	if len(pt.Faults) > 0 {
		resource.TrackExposure()
	}
	go func() {
		windows <- faults.Run(faultCtx, faults.Env{
			Cluster: cl, Clients: clients.Control(), Holder: holderOf(resource), Inside: insideOf(resource),
			Base: base, Logger: r.log,
		}, faults.DrawPhase(pt.Faults, r.seed))
	}()
	werr := clients.Drive(runCtx, wcfg, resource, rec)
	elapsed := time.Since(base)
	stopFaults() // heals whatever is still applied, resumes paused clients
	ws := <-windows
	out.Faults = faultWindows(pt, ws, elapsed, resource)
	counters, serr := clients.Finish(wcfg, rec)
	// After Finish: the attempts still waiting when the run ended are in
	// the history by now, and count for a fault as they do for the
	// re-check (bench check) that reads them there.
	exposures(out.Faults, ws, elapsed, time.Duration(out.TTLMs*float64(time.Millisecond)), resource)
	stop()
	<-progressDone
	r.evidence[r.index] = collect(out, rec, resource, elapsed, counters, wcfg.Rate)
	return cmp.Or(werr, serr)
}

// faultWindows are pt's faults as they happened (ws, ending by elapsed),
// then those that never started and those not applicable to its lock.
func faultWindows(pt Point, ws []faults.Window, elapsed time.Duration, resource *checker.Shared) []report.FaultWindow {
	out := []report.FaultWindow{}
	for _, w := range ws {
		end := w.End
		if end == 0 || end > elapsed {
			end = elapsed
		}
		out = append(out, report.FaultWindow{
			Type: w.Type, Target: w.Target, StartS: w.Start.Seconds(), EndS: end.Seconds(),
			Detail: w.Detail, Method: w.Method, Error: w.Err, VisitsAfter: resource.VisitsAfter(w.Start),
			Bit: w.Bit, Observed: w.Observed,
		})
		if w.Index < len(pt.Faults) && pt.Faults[w.Index].Aimed() {
			out[len(out)-1].When = faults.WhenHolderInside
		}
	}
	for i := range min(len(out), len(pt.Dropped)) {
		if d := pt.Dropped[i]; d != "" {
			out[i].Detail = strings.TrimPrefix(out[i].Detail+"; "+d, "; ")
		}
	}
	out = append(out, neverStarted(pt.Faults, len(out))...)
	return append(out, pt.NotApplicable...)
}

// kindFields sets the run's kind figures the workload and checker read:
// a semaphore's permits (its option, or the default), a read-write lock's
// read share (a program run by exec is told it too: it may have a shared
// side).
func kindFields(out *report.Run, spec locks.Spec, l scenarios.Lock, wl scenarios.Workload) {
	switch spec.KindOf() {
	case locks.KindSemaphore:
		out.Permits = locks.Permits(l.Options)
	case locks.KindRW:
		out.ReadShare = wl.ReadShare
	}
	if l.Name == external.Exec && wl.ReadShare > 0 {
		// a program told to take a shared side is judged as a read-write lock
		out.ReadShare, out.Kind = wl.ReadShare, string(locks.KindRW)
	}
}
