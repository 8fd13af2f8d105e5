package calibrate

import (
	"context"
	"encoding/csv"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/internal/endpoints"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/redislock"
	"github.com/locklab/locklab/workload"
)

// RedisFigures compares the harness's redis-cad with redis-benchmark
// running the same commands on the same server.
type RedisFigures struct {
	Clients int `json:"clients"`
	// SetRate and ReleaseRate are redis-benchmark's rates for SET NX PX and
	// EVALSHA of redis-cad's compare-and-delete; RawCycle = 1/(1/set +
	// 1/release), a lock cycle with nothing but the two commands.
	SetRate     float64 `json:"set_nx_px_per_s"`
	ReleaseRate float64 `json:"release_script_per_s"`
	RawCycle    float64 `json:"raw_cycle_per_s"`
	// AcquireRate is redis-benchmark's rate for redis-cad's own acquire
	// script (SET NX PX + INCR of the fencing counter); OwnCycle the cycle
	// with it, the most the harness's redis-cad could reach.
	AcquireRate float64 `json:"acquire_script_per_s"`
	OwnCycle    float64 `json:"own_cycle_per_s"`
	// Direct and Proxied are the harness's redis-cad rates (one key per
	// client, zero critical section) with every client dialing the server
	// itself and through its own proxy; the ratios divide by RawCycle.
	Direct       float64 `json:"direct_per_s"`
	DirectRatio  float64 `json:"direct_ratio"`
	Proxied      float64 `json:"proxied_per_s"`
	ProxiedRatio float64 `json:"proxied_ratio"`
	// PingMs is the p50 of a PING through a proxy: one idle round trip.
	PingMs  float64   `json:"ping_p50_ms"`
	Handoff []Handoff `json:"handoff"`
}

// Handoff is one lock's hand-off p50 on one contended key (4 clients, 1ms
// critical section) in the backend's own units.
type Handoff struct {
	Lock  string  `json:"lock"`
	P50Ms float64 `json:"p50_ms"`
	Count int64   `json:"count"`
	// RoundTrips is P50Ms in idle round trips of the backend.
	RoundTrips float64 `json:"round_trips"`
	// Commits is P50Ms in the backend's own commit latency (ZooKeeper and
	// etcd: one write); Beyond is what is left after one commit, in round
	// trips (target: at most 2).
	Commits float64 `json:"commits,omitempty"`
	Beyond  float64 `json:"round_trips_beyond_commit,omitempty"`
}

func measureRedis(ctx context.Context, opts Options) (*RedisFigures, error) {
	if _, err := exec.LookPath("redis-benchmark"); err != nil {
		return nil, fmt.Errorf("redis-benchmark not found (make deps installs redis-tools): %w", err)
	}
	dir, cleanup, err := tempDir("redis")
	if err != nil {
		return nil, err
	}
	defer cleanup()
	cl, err := cluster.Start(ctx, cluster.Spec{Redis: &cluster.RedisSpec{Primaries: 1}, Clients: opts.Clients, Dir: dir, RunID: "calibrate", Logger: opts.Logger})
	if err != nil {
		return nil, fmt.Errorf("start redis: %w", err)
	}
	defer cl.Close()
	node, _ := cl.Node("redis-0")
	real := node.Addr()
	f := &RedisFigures{Clients: opts.Clients}

	bench := benchmark{addr: real, clients: opts.Clients, requests: opts.Requests}
	var relSHA, acqSHA string
	if relSHA, err = loadScript(ctx, real, redislock.ScriptSource(redislock.ScriptRelease)); err != nil {
		return nil, err
	}
	if acqSHA, err = loadScript(ctx, real, redislock.ScriptSource(redislock.ScriptAcquire)); err != nil {
		return nil, err
	}
	if f.SetRate, err = bench.run(ctx, "SET", "calib:__rand_int__", "owner", "NX", "PX", "10000"); err != nil {
		return nil, err
	}
	if f.ReleaseRate, err = bench.run(ctx, "EVALSHA", relSHA, "1", "calib:__rand_int__", "owner"); err != nil {
		return nil, err
	}
	if f.AcquireRate, err = bench.run(ctx, "EVALSHA", acqSHA, "2", "calib:__rand_int__", "calibfence:__rand_int__", "owner", "10000"); err != nil {
		return nil, err
	}
	f.RawCycle = cycle(f.SetRate, f.ReleaseRate)
	f.OwnCycle = cycle(f.AcquireRate, f.ReleaseRate)

	cad, err := lookup(string(redislock.CAD))
	if err != nil {
		return nil, err
	}
	rates := workload.Config{Clients: opts.Clients, Keys: opts.Clients, KeyPerClient: true, Duration: opts.Duration}
	direct, err := measure(ctx, cad, rates, func(int) locks.Endpoints { return locks.Endpoints{Redis: []string{real}} })
	if err != nil {
		return nil, fmt.Errorf("direct: %w", err)
	}
	proxied, err := measure(ctx, cad, rates, proxiedEndpoints(cl))
	if err != nil {
		return nil, fmt.Errorf("proxied: %w", err)
	}
	f.Direct, f.Proxied = direct.Throughput, proxied.Throughput
	f.DirectRatio, f.ProxiedRatio = f.Direct/f.RawCycle, f.Proxied/f.RawCycle

	if f.PingMs, err = redisPing(ctx, cl.Endpoints(0).Redis[0], opts.Samples); err != nil {
		return nil, err
	}
	for _, name := range []string{string(redislock.Reentrant), string(redislock.CAD)} {
		h, err := handoff(ctx, name, proxiedEndpoints(cl), opts.Duration)
		if err != nil {
			return nil, err
		}
		h.RoundTrips = h.P50Ms / f.PingMs
		f.Handoff = append(f.Handoff, h)
	}
	return f, nil
}

// handoff measures lock name's hand-off on one key contended by 4 clients
// holding it 1ms each.
func handoff(ctx context.Context, name string, ep func(int) locks.Endpoints, d time.Duration) (Handoff, error) {
	spec, err := lookup(name)
	if err != nil {
		return Handoff{}, err
	}
	run, err := measure(ctx, spec, workload.Config{Clients: 4, Keys: 1, Duration: d, CriticalSection: time.Millisecond}, ep)
	if err != nil {
		return Handoff{}, err
	}
	return Handoff{Lock: name, P50Ms: run.Handoff.P50Ms, Count: run.Handoff.Count}, nil
}

// proxiedEndpoints gives client i its own proxied addresses, as a run does.
func proxiedEndpoints(cl *cluster.Cluster) func(int) locks.Endpoints {
	return func(i int) locks.Endpoints { return endpoints.ForLocks(cl.Endpoints(i)) }
}

func cycle(acquire, release float64) float64 {
	if acquire <= 0 || release <= 0 {
		return 0
	}
	return 1 / (1/acquire + 1/release)
}

func loadScript(ctx context.Context, addr, src string) (string, error) {
	rc := redis.NewClient(&redis.Options{Addr: addr})
	defer rc.Close()
	sha, err := rc.ScriptLoad(ctx, src).Result()
	if err != nil {
		return "", fmt.Errorf("load script: %w", err)
	}
	return sha, nil
}

func redisPing(ctx context.Context, addr string, n int) (float64, error) {
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	return p50(n, func() error { return c.Ping(ctx).Err() })
}

// benchmark runs redis-benchmark against one server, on as many keys as
// connections.
type benchmark struct {
	addr              string
	clients, requests int
}

// run returns redis-benchmark's requests per second for one command.
func (b benchmark) run(ctx context.Context, cmd ...string) (float64, error) {
	host, port, _ := strings.Cut(b.addr, ":")
	args := append([]string{"-h", host, "-p", port, "-c", strconv.Itoa(b.clients), "-n", strconv.Itoa(b.requests),
		"-r", strconv.Itoa(b.clients), "--csv"}, cmd...)
	out, err := exec.CommandContext(ctx, "redis-benchmark", args...).Output()
	if err != nil {
		return 0, fmt.Errorf("redis-benchmark %s: %w", cmd[0], err)
	}
	return parseBenchCSV(out)
}

// parseBenchCSV reads the rps column of redis-benchmark --csv output.
func parseBenchCSV(out []byte) (float64, error) {
	recs, err := csv.NewReader(strings.NewReader(string(out))).ReadAll()
	if err != nil || len(recs) < 2 || len(recs[1]) < 2 {
		return 0, fmt.Errorf("unexpected redis-benchmark output %q", out)
	}
	return strconv.ParseFloat(recs[1][1], 64)
}
