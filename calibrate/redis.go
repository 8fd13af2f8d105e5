package calibrate

import (
	"context"
	"encoding/csv"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/redislock"
	"github.com/locklab/locklab/workload"
)

// RedisFigures compares the harness's redis-cad with redis-benchmark
// running the same commands on the same server, and with a bare Go client
// (see bareCycles) running them on the same paths. The rates are measured
// in interleaved rounds (Rounds), so that a machine's slow spell falls on
// every figure of a round alike; each figure is the median over the rounds
// and each ratio the median of the ratios taken within a round.
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
	// BareDirect and BareProxied are the bare Go client's cycles per second
	// on the same two paths, their ratios likewise of RawCycle;
	// DirectOfBare and ProxiedOfBare divide the harness's rates by them.
	BareDirect       float64      `json:"bare_direct_per_s"`
	BareDirectRatio  float64      `json:"bare_direct_ratio"`
	BareProxied      float64      `json:"bare_proxied_per_s"`
	BareProxiedRatio float64      `json:"bare_proxied_ratio"`
	DirectOfBare     float64      `json:"direct_of_bare"`
	ProxiedOfBare    float64      `json:"proxied_of_bare"`
	Rounds           []RedisRound `json:"rounds"`
	// PingMs is the p50 of a PING through a proxy: one idle round trip.
	PingMs  float64   `json:"ping_p50_ms"`
	Handoff []Handoff `json:"handoff"`
}

// RedisRound is one round of the Redis rates, measured one after the other
// in the order of the fields.
type RedisRound struct {
	SetRate     float64 `json:"set_nx_px_per_s"`
	ReleaseRate float64 `json:"release_script_per_s"`
	AcquireRate float64 `json:"acquire_script_per_s"`
	Direct      float64 `json:"direct_per_s"`
	BareDirect  float64 `json:"bare_direct_per_s"`
	Proxied     float64 `json:"proxied_per_s"`
	BareProxied float64 `json:"bare_proxied_per_s"`
}

// Handoff is one lock's hand-off p50 on one contended key (4 clients, 1ms
// critical section) in the backend's own units.
type Handoff struct {
	Lock  string  `json:"lock"`
	P50Ms float64 `json:"p50_ms"`
	Count int64   `json:"count"`
	// RoundTrips is P50Ms in idle round trips of the backend.
	RoundTrips float64 `json:"round_trips"`
	// Commits is P50Ms in units of the backend's raw write
	// (CommitFigures.WriteMs: a consensus commit on ZooKeeper and etcd
	// only); Beyond is what is left after one write, in round trips
	// (target: at most 2). For the table backends, P50Ms is the median
	// over the rounds and each ratio the median of the ratios taken within
	// a round (see CommitFigures).
	Commits float64 `json:"commits,omitempty"`
	Beyond  float64 `json:"round_trips_beyond_commit,omitempty"`
}

func measureRedis(ctx context.Context, opts Options) (*RedisFigures, error) {
	if _, err := exec.LookPath("redis-benchmark"); err != nil {
		return nil, fmt.Errorf("redis-benchmark not found (make deps installs redis-tools): %w", err)
	}
	cl, stop, err := startCluster(ctx, "redis", cluster.Spec{Redis: &cluster.RedisSpec{Primaries: 1}, Clients: opts.Clients}, opts)
	if err != nil {
		return nil, err
	}
	defer stop()
	node, _ := cl.Node("redis-0")
	real := node.Addr()
	direct := func(int) string { return real }
	proxied := func(i int) string { return cl.Endpoints(i).Redis[0] }

	var relSHA, acqSHA string
	if relSHA, err = loadScript(ctx, real, redislock.ScriptSource(redislock.ScriptRelease)); err != nil {
		return nil, err
	}
	if acqSHA, err = loadScript(ctx, real, redislock.ScriptSource(redislock.ScriptAcquire)); err != nil {
		return nil, err
	}
	cad, err := lookup(string(redislock.CAD))
	if err != nil {
		return nil, err
	}
	bench := benchmark{addr: real, clients: opts.Clients, requests: max(1, opts.Requests/opts.Rounds)}
	d := opts.Duration / time.Duration(opts.Rounds)
	rates := workload.Config{Clients: opts.Clients, Keys: opts.Clients, KeyPerClient: true, Duration: d}
	harness := func(addr func(int) string) (float64, error) {
		run, err := measure(ctx, cad, rates, func(i int) locks.Endpoints { return locks.Endpoints{Redis: []string{addr(i)}} }, nil)
		return run.Throughput, err
	}
	f := &RedisFigures{Clients: opts.Clients}
	for n := range opts.Rounds {
		var r RedisRound
		steps := []struct {
			what string
			into *float64
			run  func() (float64, error)
		}{
			{"redis-benchmark SET", &r.SetRate, func() (float64, error) {
				return bench.run(ctx, "SET", "calib:__rand_int__", "owner", "NX", "PX", "10000")
			}},
			{"redis-benchmark release", &r.ReleaseRate, func() (float64, error) {
				return bench.run(ctx, "EVALSHA", relSHA, "1", "calib:__rand_int__", "owner")
			}},
			{"redis-benchmark acquire", &r.AcquireRate, func() (float64, error) {
				return bench.run(ctx, "EVALSHA", acqSHA, "2", "calib:__rand_int__", "calibfence:__rand_int__", "owner", "10000")
			}},
			{"direct", &r.Direct, func() (float64, error) { return harness(direct) }},
			{"bare direct", &r.BareDirect, func() (float64, error) {
				return bareCycles(ctx, direct, opts.Clients, d, acqSHA, relSHA, fmt.Sprintf("calibrate:bare:%d:direct:", n))
			}},
			{"proxied", &r.Proxied, func() (float64, error) { return harness(proxied) }},
			{"bare proxied", &r.BareProxied, func() (float64, error) {
				return bareCycles(ctx, proxied, opts.Clients, d, acqSHA, relSHA, fmt.Sprintf("calibrate:bare:%d:proxied:", n))
			}},
		}
		for _, s := range steps {
			if *s.into, err = s.run(); err != nil {
				return nil, fmt.Errorf("round %d, %s: %w", n+1, s.what, err)
			}
		}
		f.Rounds = append(f.Rounds, r)
	}
	f.summarize()

	if f.PingMs, err = redisPing(ctx, cl.Endpoints(0).Redis[0], opts.Samples); err != nil {
		return nil, err
	}
	for _, name := range []string{string(redislock.Reentrant), string(redislock.CAD)} {
		h, err := handoff(ctx, name, nil, proxiedEndpoints(cl), opts.Duration)
		if err != nil {
			return nil, err
		}
		h.RoundTrips = h.P50Ms / f.PingMs
		f.Handoff = append(f.Handoff, h)
	}
	return f, nil
}

// summarize sets f's figures from its rounds: each rate the median over
// the rounds, each ratio the median of the ratios within a round.
func (f *RedisFigures) summarize() {
	each := func(v func(r RedisRound) float64) float64 { return medianOf(f.Rounds, v) }
	raw := func(r RedisRound) float64 { return cycle(r.SetRate, r.ReleaseRate) }
	f.SetRate = each(func(r RedisRound) float64 { return r.SetRate })
	f.ReleaseRate = each(func(r RedisRound) float64 { return r.ReleaseRate })
	f.AcquireRate = each(func(r RedisRound) float64 { return r.AcquireRate })
	f.RawCycle = each(raw)
	f.OwnCycle = each(func(r RedisRound) float64 { return cycle(r.AcquireRate, r.ReleaseRate) })
	f.Direct = each(func(r RedisRound) float64 { return r.Direct })
	f.Proxied = each(func(r RedisRound) float64 { return r.Proxied })
	f.BareDirect = each(func(r RedisRound) float64 { return r.BareDirect })
	f.BareProxied = each(func(r RedisRound) float64 { return r.BareProxied })
	f.DirectRatio = each(func(r RedisRound) float64 { return ratio(r.Direct, raw(r)) })
	f.ProxiedRatio = each(func(r RedisRound) float64 { return ratio(r.Proxied, raw(r)) })
	f.BareDirectRatio = each(func(r RedisRound) float64 { return ratio(r.BareDirect, raw(r)) })
	f.BareProxiedRatio = each(func(r RedisRound) float64 { return ratio(r.BareProxied, raw(r)) })
	f.DirectOfBare = each(func(r RedisRound) float64 { return ratio(r.Direct, r.BareDirect) })
	f.ProxiedOfBare = each(func(r RedisRound) float64 { return ratio(r.Proxied, r.BareProxied) })
}

// medianOf is the median of v over rounds.
func medianOf[R any](rounds []R, v func(R) float64) float64 {
	xs := make([]float64, len(rounds))
	for i, r := range rounds {
		xs[i] = v(r)
	}
	return median(xs)
}

// median of xs (the mean of the middle two for an even count); 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

func ratio(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}

// handoff measures lock name's hand-off (with the lock's options) on one
// key contended by 4 clients holding it 1ms each.
func handoff(ctx context.Context, name string, options map[string]string, ep func(int) locks.Endpoints, d time.Duration) (Handoff, error) {
	spec, err := lookup(name)
	if err != nil {
		return Handoff{}, err
	}
	run, err := measure(ctx, spec, workload.Config{Clients: 4, Keys: 1, Duration: d, CriticalSection: time.Millisecond}, ep, options)
	if err != nil {
		return Handoff{}, err
	}
	return Handoff{Lock: name, P50Ms: run.Handoff.P50Ms, Count: run.Handoff.Count}, nil
}

// proxiedEndpoints gives client i its own proxied addresses, as a run does.
func proxiedEndpoints(cl *cluster.Cluster) func(int) locks.Endpoints {
	return func(i int) locks.Endpoints { return cl.Endpoints(i) }
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
