package main

import (
	"context"
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/internal/cli"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/redislock"
	"github.com/locklab/locklab/report"
	"github.com/locklab/locklab/workload"
)

// cadScript is the compare-and-delete release every Redis lock guide shows;
// redis-benchmark runs it by SHA as the raw second half of a lock cycle.
const cadScript = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`

type calibrateFlags struct {
	clients  int
	duration time.Duration
	requests int
}

// calibrate measures, in one run on one server, the harness's redis-cad
// cycle rate against redis-benchmark's raw rate for the same two commands,
// and the hand-off of redis-reentrant (pub/sub) and redis-cad (polling) on
// one contended key in Redis round trips.
func calibrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench calibrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f calibrateFlags
	fs.IntVar(&f.clients, "clients", 16, "clients and keys (one key per client)")
	fs.DurationVar(&f.duration, "duration", 5*time.Second, "length of each harness measurement")
	fs.IntVar(&f.requests, "requests", 200000, "redis-benchmark requests per command")
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: bench calibrate [flags]

Starts one redis-server and measures in one run:
  1. redis-benchmark: SET NX PX and EVALSHA compare-and-delete, --clients connections,
     on --clients keys; the raw lock cycle rate is 1/(1/set + 1/evalsha);
  2. the harness: redis-cad with --clients clients on as many keys (one each, no
     contention, zero critical section), directly and through the proxies;
  3. hand-off p50 on one contended key, redis-reentrant (pub/sub wake-up) beside
     redis-cad (polling), in Redis round trips (PING p50 through a proxy).

Flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return &cli.UsageError{Err: err}
	}
	if _, err := exec.LookPath("redis-benchmark"); err != nil {
		return fmt.Errorf("redis-benchmark not found (make deps installs redis-tools): %w", err)
	}
	dir, err := os.MkdirTemp("", "locklab-calibrate-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cl, err := cluster.Start(ctx, cluster.Spec{Redis: &cluster.RedisSpec{Primaries: 1}, Clients: f.clients, Dir: dir, RunID: "calibrate"})
	if err != nil {
		return fmt.Errorf("start redis: %w", err)
	}
	defer cl.Close()
	node, _ := cl.Node("redis-0")
	real := node.Addr()
	host, port, _ := strings.Cut(real, ":")

	fmt.Fprintf(stdout, "calibrate: redis-server at %s, %d clients, %s per harness run\n\n", real, f.clients, f.duration)

	// 1. raw rates.
	rc := redis.NewClient(&redis.Options{Addr: real})
	sha, err := rc.ScriptLoad(ctx, cadScript).Result()
	rc.Close()
	if err != nil {
		return fmt.Errorf("load script: %w", err)
	}
	bench := func(cmd ...string) (float64, error) {
		a := append([]string{"-h", host, "-p", port, "-c", strconv.Itoa(f.clients), "-n", strconv.Itoa(f.requests),
			"-r", strconv.Itoa(f.clients), "--csv"}, cmd...)
		out, err := exec.CommandContext(ctx, "redis-benchmark", a...).Output()
		if err != nil {
			return 0, fmt.Errorf("redis-benchmark %s: %w", cmd[0], err)
		}
		return parseBenchCSV(out)
	}
	setRate, err := bench("SET", "calib:__rand_int__", "owner", "NX", "PX", "10000")
	if err != nil {
		return err
	}
	evalRate, err := bench("EVALSHA", sha, "1", "calib:__rand_int__", "owner")
	if err != nil {
		return err
	}
	cycle := 1 / (1/setRate + 1/evalRate)
	fmt.Fprintf(stdout, "redis-benchmark (%d connections):  SET NX PX %.0f/s   EVALSHA compare-and-delete %.0f/s   => raw cycle %.0f/s\n",
		f.clients, setRate, evalRate, cycle)
	// The harness's acquire is a script (SET NX PX + INCR of the fencing
	// counter, atomically): measure it too, so the reader sees how much of
	// the gap is the server's cost of the fencing token rather than the
	// harness.
	rc = redis.NewClient(&redis.Options{Addr: real})
	acqSHA, err := rc.ScriptLoad(ctx, redislock.ScriptSource(redislock.ScriptAcquire)).Result()
	rc.Close()
	if err != nil {
		return fmt.Errorf("load script: %w", err)
	}
	acqRate, err := bench("EVALSHA", acqSHA, "2", "calib:__rand_int__", "calibfence:__rand_int__", "owner", "10000")
	if err != nil {
		return err
	}
	ownCycle := 1 / (1/acqRate + 1/evalRate)
	fmt.Fprintf(stdout, "redis-benchmark, the harness's own acquire script (SET NX PX + INCR fence): %.0f/s   => cycle %.0f/s\n", acqRate, ownCycle)

	// 2. harness rates, direct and proxied.
	spec, ok := locks.Lookup("redis-cad")
	if !ok {
		return errors.New("redis-cad is not registered")
	}
	for _, via := range []string{"direct", "proxied"} {
		ep := func(i int) locks.Endpoints {
			if via == "direct" {
				return locks.Endpoints{Redis: []string{real}}
			}
			return locks.Endpoints{Redis: cl.Endpoints(i).Redis}
		}
		sum, _, err := measure(ctx, spec, ep, workload.Config{Clients: f.clients, Keys: f.clients, KeyPerClient: true, Duration: f.duration})
		if err != nil {
			return err
		}
		rate := float64(sum.Ops) / f.duration.Seconds()
		fmt.Fprintf(stdout, "harness redis-cad %-8s %d clients x %d keys: %.0f ops/s = %.2f of the raw cycle rate (%.2f of the own-script cycle)\n",
			via, f.clients, f.clients, rate, rate/cycle, rate/ownCycle)
	}

	// 3. hand-off in round trips.
	rtt, err := pingP50(ctx, cl.Endpoints(0).Redis[0])
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nRedis round trip through a proxy: PING p50 %.3f ms\n", rtt)
	for _, name := range []string{"redis-reentrant", "redis-cad"} {
		spec, ok := locks.Lookup(name)
		if !ok {
			return fmt.Errorf("%s is not registered", name)
		}
		ep := func(i int) locks.Endpoints { return locks.Endpoints{Redis: cl.Endpoints(i).Redis} }
		sum, handoff, err := measure(ctx, spec, ep, workload.Config{Clients: 4, Keys: 1, Duration: f.duration, CriticalSection: time.Millisecond})
		if err != nil {
			return err
		}
		how := "polling"
		if name == "redis-reentrant" {
			how = "pub/sub wake-up"
		}
		// A round trip under the same load: the release script's p50 in
		// this very run (one EVALSHA through the proxy).
		loaded := float64(sum.Release.ValueAtQuantile(50)) / 1000
		fmt.Fprintf(stdout, "hand-off p50 on one key, 4 clients: %-16s %.3f ms = %.1f idle round trips = %.1f loaded round trips (release p50 %.3f ms) (%s, %d hand-offs)\n",
			name, handoff.P50Ms, handoff.P50Ms/rtt, handoff.P50Ms/loaded, loaded, how, handoff.Count)
	}
	return nil
}

// measure runs the workload of one lock in this process.
func measure(ctx context.Context, spec locks.Spec, ep func(int) locks.Endpoints, cfg workload.Config) (workload.Summary, report.Latency, error) {
	base := time.Now()
	cfg.Base = base
	res := checker.New(checker.FencingOff, base)
	rec := workload.NewRecorder(base)
	connect := func(ctx context.Context, i int) (locks.Client, error) {
		return spec.New(ctx, locks.Config{Endpoints: ep(i), TTL: 10 * time.Second, Prefix: "calibrate:" + spec.Name + ":", Seed: int64(i)})
	}
	if err := workload.Run(ctx, cfg, connect, res, rec); err != nil {
		return workload.Summary{}, report.Latency{}, err
	}
	if err := ctx.Err(); err != nil {
		return workload.Summary{}, report.Latency{}, err
	}
	if v := res.Summary().Violations; v > 0 {
		return workload.Summary{}, report.Latency{}, fmt.Errorf("%s: %d violations during calibration", spec.Name, v)
	}
	h := workload.NewHistogram()
	for _, d := range res.TakeHandoffs() {
		workload.RecordDuration(h, d)
	}
	return rec.Summary(), report.LatencyOf(h), nil
}

func pingP50(ctx context.Context, addr string) (float64, error) {
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	h := workload.NewHistogram()
	for i := 0; i < 2000; i++ {
		start := time.Now()
		if err := c.Ping(ctx).Err(); err != nil {
			return 0, fmt.Errorf("ping: %w", err)
		}
		workload.RecordDuration(h, time.Since(start))
	}
	return float64(h.ValueAtQuantile(50)) / 1000, nil
}

// parseBenchCSV reads the rps column of redis-benchmark --csv output.
func parseBenchCSV(out []byte) (float64, error) {
	recs, err := csv.NewReader(strings.NewReader(string(out))).ReadAll()
	if err != nil || len(recs) < 2 || len(recs[1]) < 2 {
		return 0, fmt.Errorf("unexpected redis-benchmark output %q", out)
	}
	return strconv.ParseFloat(recs[1][1], 64)
}
