package calibrate

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/backends/zookeeper"
	"github.com/locklab/locklab/testenv"
)

func run(t *testing.T, o Options) *Figures {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if o.Duration == 0 {
		o.Duration = time.Second
	}
	o.Requests, o.Samples, o.Nodes = 5000, 100, 1
	f, err := Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	if err := f.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + text.String())
	return f
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(math.Abs(a), math.Abs(b)) }

func TestMem(t *testing.T) {
	f := run(t, Options{Backends: []string{"mem"}})
	m := f.Mem
	if m == nil || f.Redis != nil || f.ZooKeeper != nil || f.Etcd != nil {
		t.Fatalf("figures = %+v, want the mem section only", f)
	}
	if m.Clients != MemClients || m.Ops <= 0 || m.Rate <= 0 || m.CPUNsPerOp <= 0 {
		t.Errorf("mem = %+v", *m)
	}
	// Wall time per critical section is the inverse of the rate.
	if got := m.WallNsPerOp * m.Rate; math.Abs(got-1e9) > 0.01*1e9 {
		t.Errorf("wall ns/op %.0f x rate %.0f = %.0f, want 1e9", m.WallNsPerOp, m.Rate, got)
	}
}

func TestRedis(t *testing.T) {
	testenv.RequireBinaries(t, "redis-server", "redis-benchmark")
	f := run(t, Options{Backends: []string{"redis"}, Clients: 4, Rounds: 2})
	r := f.Redis
	if r == nil {
		t.Fatal("no redis figures")
	}
	if len(r.Rounds) != 2 {
		t.Fatalf("%d rounds, want 2", len(r.Rounds))
	}
	for name, v := range map[string]float64{"set": r.SetRate, "release": r.ReleaseRate, "acquire": r.AcquireRate,
		"direct": r.Direct, "proxied": r.Proxied, "bare direct": r.BareDirect, "bare proxied": r.BareProxied,
		"direct of bare": r.DirectOfBare, "proxied of bare": r.ProxiedOfBare, "ping": r.PingMs} {
		if v <= 0 {
			t.Errorf("%s = %v, want > 0", name, v)
		}
	}
	// A cycle of two commands is slower than either command alone.
	if r.RawCycle >= min(r.SetRate, r.ReleaseRate) || r.OwnCycle >= min(r.AcquireRate, r.ReleaseRate) {
		t.Errorf("cycles %.0f, %.0f not below their commands' rates (%+v)", r.RawCycle, r.OwnCycle, *r)
	}
	// With two rounds every median is the mean of the rounds' figures.
	mean := func(v func(r RedisRound) float64) float64 { return (v(r.Rounds[0]) + v(r.Rounds[1])) / 2 }
	if !near(r.DirectRatio, mean(func(x RedisRound) float64 { return x.Direct / cycle(x.SetRate, x.ReleaseRate) })) ||
		!near(r.ProxiedRatio, mean(func(x RedisRound) float64 { return x.Proxied / cycle(x.SetRate, x.ReleaseRate) })) {
		t.Errorf("ratios %v, %v do not divide by each round's raw cycle: %+v", r.DirectRatio, r.ProxiedRatio, r.Rounds)
	}
	if len(r.Handoff) != 2 {
		t.Fatalf("hand-offs = %+v, want redis-reentrant and redis-cad", r.Handoff)
	}
	for _, h := range r.Handoff {
		if h.Count == 0 || h.P50Ms <= 0 || !near(h.RoundTrips, h.P50Ms/r.PingMs) {
			t.Errorf("hand-off %+v", h)
		}
	}
}

// TestSummarize: rates are medians over the rounds, ratios the medians of
// the ratios taken within each round (not a ratio of medians).
func TestSummarize(t *testing.T) {
	f := &RedisFigures{Rounds: []RedisRound{
		{SetRate: 100, ReleaseRate: 100, AcquireRate: 80, Direct: 40, BareDirect: 45, Proxied: 20, BareProxied: 25},
		{SetRate: 60, ReleaseRate: 60, AcquireRate: 40, Direct: 27, BareDirect: 30, Proxied: 3, BareProxied: 30},
		{SetRate: 200, ReleaseRate: 200, AcquireRate: 100, Direct: 10, BareDirect: 90, Proxied: 50, BareProxied: 50},
	}}
	f.summarize()
	// Raw cycles 50, 30, 100; direct ratios 0.8, 0.9, 0.1; of bare 40/45, 0.9, 1/9.
	for name, c := range map[string][2]float64{
		"set": {f.SetRate, 100}, "raw cycle": {f.RawCycle, 50}, "direct": {f.Direct, 27}, "bare direct": {f.BareDirect, 45},
		"direct ratio": {f.DirectRatio, 0.8}, "proxied ratio": {f.ProxiedRatio, 0.4}, "bare direct ratio": {f.BareDirectRatio, 0.9},
		"direct of bare": {f.DirectOfBare, 40.0 / 45}, "proxied of bare": {f.ProxiedOfBare, 0.8},
	} {
		if !near(c[0], c[1]) {
			t.Errorf("%s = %v, want %v", name, c[0], c[1])
		}
	}
	if got := median([]float64{4, 1, 3, 2}); got != 2.5 {
		t.Errorf("median of an even count = %v, want 2.5", got)
	}
}

func checkCommit(t *testing.T, lock string, c *CommitFigures) {
	t.Helper()
	if c == nil {
		t.Fatal("no figures")
	}
	if c.Nodes != 1 || c.WriteMs <= 0 || c.DeleteMs <= 0 || c.ReadMs <= 0 {
		t.Errorf("raw costs %+v", *c)
	}
	if len(c.Rounds) != 2 {
		t.Fatalf("%d rounds, want 2", len(c.Rounds))
	}
	var count int64
	for i, r := range c.Rounds {
		if r.WriteMs <= 0 || r.DeleteMs <= 0 || r.ReadMs <= 0 || r.HandoffMs <= 0 || r.Handoffs == 0 {
			t.Errorf("round %d: %+v", i+1, r)
		}
		count += r.Handoffs
	}
	h := c.Handoff
	if h.Lock != lock || h.Count != count || h.P50Ms <= 0 {
		t.Fatalf("hand-off %+v (rounds' hand-offs %d)", h, count)
	}
	// With two rounds every median is the mean of the rounds' figures.
	r0, r1 := c.Rounds[0], c.Rounds[1]
	mean := func(v func(r CommitRound) float64) float64 { return (v(r0) + v(r1)) / 2 }
	if !near(h.Commits, mean(func(r CommitRound) float64 { return r.HandoffMs / r.WriteMs })) ||
		!near(h.Beyond, mean(func(r CommitRound) float64 { return (r.HandoffMs - r.WriteMs) / r.ReadMs })) {
		t.Errorf("hand-off %+v not in units of each round's write and read: %+v", h, c.Rounds)
	}
}

// TestSummarizeCommits: a consensus backend's ratios are the medians of
// the ratios taken within each round, the hand-off count their sum.
func TestSummarizeCommits(t *testing.T) {
	c := &CommitFigures{Rounds: []CommitRound{
		{WriteMs: 1, DeleteMs: 1, ReadMs: 0.25, HandoffMs: 1.5, Handoffs: 10},
		{WriteMs: 2, DeleteMs: 2, ReadMs: 0.5, HandoffMs: 2.5, Handoffs: 20},
		{WriteMs: 4, DeleteMs: 3, ReadMs: 1, HandoffMs: 20, Handoffs: 5},
	}}
	c.summarize("zk-recipe")
	// Commits 1.5, 1.25, 5; beyond 2, 1, 16; round trips 6, 5, 20.
	h := c.Handoff
	for name, v := range map[string][2]float64{
		"write": {c.WriteMs, 2}, "read": {c.ReadMs, 0.5}, "hand-off": {h.P50Ms, 2.5},
		"commits": {h.Commits, 1.5}, "beyond": {h.Beyond, 2}, "round trips": {h.RoundTrips, 6},
	} {
		if !near(v[0], v[1]) {
			t.Errorf("%s = %v, want %v", name, v[0], v[1])
		}
	}
	if h.Lock != "zk-recipe" || h.Count != 35 {
		t.Errorf("hand-off %+v, want zk-recipe with 35 hand-offs", h)
	}
}

func TestZooKeeper(t *testing.T) {
	testenv.RequireBinaries(t, "java")
	testenv.RequireFiles(t, zookeeper.Jar)
	checkCommit(t, "zk-recipe", run(t, Options{Backends: []string{"zookeeper"}, Rounds: 2, Duration: 2 * time.Second}).ZooKeeper)
}

func TestEtcd(t *testing.T) {
	testenv.RequireBinaries(t, "etcd")
	checkCommit(t, "etcd-recipe", run(t, Options{Backends: []string{"etcd"}, Rounds: 2, Duration: 2 * time.Second}).Etcd)
}

// TestTables: PostgreSQL, MariaDB, NATS and memcached, each on its own real server,
// with their locks' hand-offs in units of their own clients' raw writes.
func TestTables(t *testing.T) {
	for _, c := range []struct {
		backend, lock string
		figures       func(*Figures) *CommitFigures
	}{
		{"postgres", "pg-advisory", func(f *Figures) *CommitFigures { return f.Postgres }},
		{"mariadb", "mariadb-get-lock", func(f *Figures) *CommitFigures { return f.MariaDB }},
		{"nats", "nats-kv", func(f *Figures) *CommitFigures { return f.NATS }},
		{"memcached", "memcached-add", func(f *Figures) *CommitFigures { return f.Memcached }},
	} {
		t.Run(c.backend, func(t *testing.T) {
			row, ok := cluster.LookupBackend(c.backend)
			if !ok {
				t.Fatalf("no %s row in the backend table", c.backend)
			}
			testenv.RequireBinaries(t, row.Binaries...)
			checkCommit(t, c.lock, c.figures(run(t, Options{Backends: []string{c.backend}, Rounds: 2, Duration: 2 * time.Second})))
		})
	}
}

func TestUnknownBackend(t *testing.T) {
	_, err := Run(context.Background(), Options{Backends: []string{"consul"}})
	if err == nil || !strings.Contains(err.Error(), `unknown backend "consul"`) {
		t.Fatalf("Run = %v, want unknown backend", err)
	}
	for _, b := range Backends {
		if !strings.Contains(err.Error(), b) {
			t.Errorf("%v does not list %s", err, b)
		}
	}
}

// TestRefusedSettings: settings a backend's row refuses (NATS on 2 nodes)
// fail the run before anything is measured.
func TestRefusedSettings(t *testing.T) {
	f, err := Run(context.Background(), Options{Backends: []string{"mem", "nats"}, Nodes: 2, Duration: time.Second})
	if f != nil || err == nil || !strings.Contains(err.Error(), "nats.nodes") {
		t.Fatalf("Run = %+v, %v; want nats nodes refused before mem ran", f, err)
	}
	t.Log(err)
}

func TestJSONNames(t *testing.T) {
	b, err := json.Marshal(&Figures{Mem: &MemFigures{}, Redis: &RedisFigures{}, Etcd: &CommitFigures{Handoff: Handoff{Commits: 1.5, Beyond: 2}},
		Postgres: &CommitFigures{}, MariaDB: &CommitFigures{}, NATS: &CommitFigures{}, Memcached: &CommitFigures{}})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{`"ops_per_s"`, `"wall_ns_per_op"`, `"direct_ratio"`, `"proxied_ratio"`, `"raw_cycle_per_s"`, `"bare_direct_ratio"`, `"direct_of_bare"`, `"rounds"`,
		`"write_p50_ms"`, `"round_trips_beyond_commit"`, `"postgres"`, `"mariadb"`, `"nats"`, `"memcached"`} {
		if !bytes.Contains(b, []byte(k)) {
			t.Errorf("JSON %s has no %s", b, k)
		}
	}
	if bytes.Contains(b, []byte(`"zookeeper"`)) {
		t.Errorf("JSON %s has a zookeeper section that was not measured", b)
	}
}

func TestParseBenchCSV(t *testing.T) {
	got, err := parseBenchCSV([]byte("\"test\",\"rps\",\"avg_latency_ms\"\n\"SET\",\"52110.12\",\"0.2\"\n"))
	if err != nil || got != 52110.12 {
		t.Errorf("parseBenchCSV = %v, %v", got, err)
	}
	if _, err := parseBenchCSV([]byte("garbage")); err == nil {
		t.Error("parseBenchCSV accepted garbage")
	}
}
