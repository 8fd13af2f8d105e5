package calibrate

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/locks"
	_ "github.com/locklab/locklab/locks/all" // zk-recipe, etcd-recipe, redis-reentrant by name
	"github.com/locklab/locklab/locks/memlock"
	"github.com/locklab/locklab/report"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/workload"
)

// Options choose what Run measures. Zero values get the defaults noted.
type Options struct {
	// Clients is the number of clients (and keys, one each) of the Redis
	// rate measurements and redis-benchmark's connections. Default 16.
	Clients int
	// Duration is the length of each harness measurement. Default 5s. The
	// Redis rates and the table backends' hand-offs split it (and
	// Requests, Samples) over their Rounds.
	Duration time.Duration
	// Requests is redis-benchmark's request count per command. Default 200000.
	Requests int
	// Rounds is the number of interleaved rounds of the Redis rates
	// (redis-benchmark, harness and bare client, each in turn) and of the
	// table backends' figures (raw write, delete and read, then the
	// lock's hand-off). Default 5.
	Rounds int
	// Samples is the number of raw writes timed on each table backend (and
	// of round trips on each backend). Default 1000.
	Samples int
	// Nodes is the size of the ZooKeeper ensemble, the etcd cluster and
	// the NATS cluster (1, 3 or 5); PostgreSQL, MariaDB and memcached run
	// one server. Default 3.
	Nodes int
	// Backends is what the run measures, of the package's Backends (in
	// that order). Default all.
	Backends []string
	// Logger receives diagnostics; nil discards.
	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.Clients <= 0 {
		o.Clients = 16
	}
	if o.Duration <= 0 {
		o.Duration = 5 * time.Second
	}
	if o.Requests <= 0 {
		o.Requests = 200000
	}
	if o.Rounds <= 0 {
		o.Rounds = 5
	}
	if o.Samples <= 0 {
		o.Samples = 1000
	}
	if o.Nodes <= 0 {
		o.Nodes = 3
	}
	if len(o.Backends) == 0 {
		o.Backends = Backends
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Backends are the names Run accepts, in the order a default run
// measures them and WriteText prints them: mem, redis, then the table
// backends (tables).
var Backends = append([]string{"mem", "redis"}, tableBackends()...)

// tableBackends are the table backends' names, in the order of tables.
func tableBackends() []string {
	names := make([]string, len(tables))
	for i, t := range tables {
		names[i] = t.backend
	}
	return names
}

// Figures is everything one calibration run measured; absent sections were
// not asked for.
type Figures struct {
	DurationS float64        `json:"duration_s"`
	Mem       *MemFigures    `json:"mem,omitempty"`
	Redis     *RedisFigures  `json:"redis,omitempty"`
	ZooKeeper *CommitFigures `json:"zookeeper,omitempty"`
	Etcd      *CommitFigures `json:"etcd,omitempty"`
	Postgres  *CommitFigures `json:"postgres,omitempty"`
	MariaDB   *CommitFigures `json:"mariadb,omitempty"`
	NATS      *CommitFigures `json:"nats,omitempty"`
	Memcached *CommitFigures `json:"memcached,omitempty"`
}

// MemFigures is the harness's ceiling: the mem lock with zero critical
// section, one key per client.
type MemFigures struct {
	Clients int     `json:"clients"`
	Ops     int64   `json:"ops"`
	Rate    float64 `json:"ops_per_s"`
	// WallNsPerOp is elapsed time per critical section (1/Rate);
	// CPUNsPerOp the process's CPU time (user+system) per critical section,
	// what one critical section costs the harness on all cores together.
	WallNsPerOp float64 `json:"wall_ns_per_op"`
	CPUNsPerOp  float64 `json:"cpu_ns_per_op"`
}

// Run measures the backends of opts, one after the other, each on its own
// freshly started local servers.
func Run(ctx context.Context, opts Options) (*Figures, error) {
	opts = opts.withDefaults()
	f := &Figures{DurationS: opts.Duration.Seconds()}
	for _, b := range opts.Backends {
		if !slices.Contains(Backends, b) {
			return nil, fmt.Errorf("calibrate: unknown backend %q (allowed: %s)", b, strings.Join(Backends, ", "))
		}
		// Settings a backend refuses (nats: nodes other than 1, 3 or 5)
		// fail before anything is measured.
		if t, ok := table(b); ok {
			if err := t.spec(opts).CheckBackends(); err != nil {
				return nil, fmt.Errorf("calibrate: %w", err)
			}
		}
	}
	for _, b := range opts.Backends {
		var err error
		switch b {
		case "mem":
			f.Mem, err = measureMem(ctx, opts)
		case "redis":
			f.Redis, err = measureRedis(ctx, opts)
		default:
			t, _ := table(b)
			*t.figures(f), err = measureTable(ctx, opts, t)
		}
		if err != nil {
			return f, fmt.Errorf("calibrate %s: %w", b, err)
		}
	}
	return f, nil
}

// MemClients is the number of clients of the mem ceiling.
const MemClients = 8

func measureMem(ctx context.Context, opts Options) (*MemFigures, error) {
	spec, err := lookup(memlock.Name)
	if err != nil {
		return nil, err
	}
	cfg := workload.Config{Clients: MemClients, Keys: MemClients, KeyPerClient: true, Duration: opts.Duration}
	cpu0 := cpuTime()
	run, err := measure(ctx, spec, cfg, func(int) locks.Endpoints { return locks.Endpoints{} }, nil)
	cpu := cpuTime() - cpu0
	if err != nil {
		return nil, err
	}
	m := &MemFigures{Clients: MemClients, Ops: run.Ops, Rate: run.Throughput}
	if run.Ops > 0 {
		m.WallNsPerOp = run.DurationS * 1e9 / float64(run.Ops)
		m.CPUNsPerOp = float64(cpu.Nanoseconds()) / float64(run.Ops)
	}
	return m, nil
}

// lockTTL is the TTL of every lock the calibration takes.
const lockTTL = 10 * time.Second

// measurements numbers the measurements of this process.
var measurements atomic.Int64

// measure runs spec through runner.Measure with endpoints ep(i) for client
// i and the lock's options, and fails when the resource saw a violation: a
// calibration of a broken run would mislead.
func measure(ctx context.Context, spec locks.Spec, cfg workload.Config, ep func(int) locks.Endpoints, options map[string]string) (report.Run, error) {
	// A prefix of its own per measurement: a client cut off at the end of
	// the previous one may have left its key behind for a TTL.
	prefix := fmt.Sprintf("calibrate:%s:%d:", spec.Name, measurements.Add(1))
	run, err := runner.Measure(ctx, spec, cfg, func(i int) locks.Config {
		return locks.Config{Endpoints: ep(i), TTL: lockTTL, Prefix: prefix, Seed: int64(i), Options: options}
	})
	if err != nil {
		return run, err
	}
	if run.Violations > 0 {
		return run, fmt.Errorf("%s: %d violations during calibration", spec.Name, run.Violations)
	}
	if run.Ops == 0 {
		return run, fmt.Errorf("%s: no critical section completed (errors %s)", spec.Name, report.ErrorsString(run.Errors))
	}
	return run, nil
}

func lookup(name string) (locks.Spec, error) {
	spec, ok := locks.Lookup(name)
	if !ok {
		return spec, fmt.Errorf("lock %s is not registered", name)
	}
	return spec, nil
}

// cpuTime is the process's user+system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// startCluster starts spec's servers (backend name) in a folder of their
// own for the calibration; the returned function stops them and removes
// the folder.
func startCluster(ctx context.Context, name string, spec cluster.Spec, opts Options) (*cluster.Cluster, func(), error) {
	dir, err := os.MkdirTemp("", "locklab-calibrate-"+name+"-")
	if err != nil {
		return nil, nil, err
	}
	spec.Dir, spec.RunID, spec.Logger = dir, "calibrate", opts.Logger
	cl, err := cluster.Start(ctx, spec)
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, fmt.Errorf("start %s: %w", name, err)
	}
	return cl, func() { cl.Close(); os.RemoveAll(dir) }, nil
}
