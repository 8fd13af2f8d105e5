package runner

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/internal/version"
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
	wl.ProcessPerClient = processPerClient(sc, opts)
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
		Version:     version.Short(),
		Started:     time.Now().UTC(),
		Host:        host(),
		Versions:    map[string]string{},
		Fencing:     orDefault(sc.Resource.Fencing, "off"),
		Workload: report.Workload{
			Clients: wl.Clients, DurationS: wl.Duration.Seconds(), Ops: wl.Ops,
			TTLMs: msf(wl.TTL), CriticalMs: msf(wl.CriticalSection), Keys: wl.Keys,
			Mode: orDefault(wl.Mode, "closed"), Rate: wl.Rate, ProcessPerClient: wl.ProcessPerClient,
			OnLost:       orDefault(wl.OnLost, workload.OnLostIgnore),
			KeyPerClient: wl.KeyPerClient, ReadShare: wl.ReadShare,
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
	r := &run{sc: sc, opts: opts, seed: seed, provider: provider, dir: dir, wl: wl, log: log, total: len(pts), versions: res.Versions, history: hf,
		evidence: map[int][]checker.WindowEvidence{}}
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
	evaluate(sc, res, r.evidence)
	if err := report.Write(dir, res); err != nil {
		return res, dir, err
	}
	return res, dir, ctx.Err()
}

// lockCluster is the cluster one lock runs on: the scenario's
// (Scenario.ClusterSpec, whose defaults give every lock's backend a
// section) with the lock's backend only, a fresh cluster per lock.
func lockCluster(sc *scenarios.Scenario, provider string, backend locks.Backend, clients int) cluster.Spec {
	cs := sc.ClusterSpec(clients)
	cs.Provider, cs.RunID = provider, sc.Name
	return cs.KeepBackend(string(backend))
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
	parts = append(parts, cs.TableParts()...)
	if len(parts) == 0 {
		return "no servers (in process)"
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
	if len(startup) == 0 {
		return "no servers"
	}
	kinds := slices.Sorted(maps.Keys(startup))
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s ready in %s", k, startup[k].Round(10*time.Millisecond))
	}
	return provider + ": " + strings.Join(parts, ", ")
}
