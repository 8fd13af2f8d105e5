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
	"github.com/locklab/locklab/internal/testenv"
)

func run(t *testing.T, o Options) *Figures {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	o.Duration, o.Requests, o.Samples, o.Nodes = time.Second, 5000, 100, 1
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
	f := run(t, Options{Backends: []string{"redis"}, Clients: 4})
	r := f.Redis
	if r == nil {
		t.Fatal("no redis figures")
	}
	for name, v := range map[string]float64{"set": r.SetRate, "release": r.ReleaseRate, "acquire": r.AcquireRate,
		"direct": r.Direct, "proxied": r.Proxied, "ping": r.PingMs} {
		if v <= 0 {
			t.Errorf("%s = %v, want > 0", name, v)
		}
	}
	// A cycle of two commands is slower than either command alone.
	if r.RawCycle >= min(r.SetRate, r.ReleaseRate) || r.OwnCycle >= min(r.AcquireRate, r.ReleaseRate) {
		t.Errorf("cycles %.0f, %.0f not below their commands' rates (%+v)", r.RawCycle, r.OwnCycle, *r)
	}
	if !near(r.DirectRatio, r.Direct/r.RawCycle) || !near(r.ProxiedRatio, r.Proxied/r.RawCycle) {
		t.Errorf("ratios %v, %v do not divide by the raw cycle", r.DirectRatio, r.ProxiedRatio)
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

func checkCommit(t *testing.T, lock string, c *CommitFigures) {
	t.Helper()
	if c == nil {
		t.Fatal("no figures")
	}
	if c.Nodes != 1 || c.WriteMs <= 0 || c.DeleteMs <= 0 || c.ReadMs <= 0 {
		t.Errorf("raw costs %+v", *c)
	}
	h := c.Handoff
	if h.Lock != lock || h.Count == 0 || h.P50Ms <= 0 {
		t.Fatalf("hand-off %+v", h)
	}
	if !near(h.Commits, h.P50Ms/c.WriteMs) || !near(h.Beyond, (h.P50Ms-c.WriteMs)/c.ReadMs) {
		t.Errorf("hand-off %+v not in units of write %.3f ms and read %.3f ms", h, c.WriteMs, c.ReadMs)
	}
}

func TestZooKeeper(t *testing.T) {
	testenv.RequireBinaries(t, "java")
	testenv.RequireFiles(t, cluster.ZooKeeperJar)
	checkCommit(t, "zk-recipe", run(t, Options{Backends: []string{"zookeeper"}}).ZooKeeper)
}

func TestEtcd(t *testing.T) {
	testenv.RequireBinaries(t, "etcd")
	checkCommit(t, "etcd-recipe", run(t, Options{Backends: []string{"etcd"}}).Etcd)
}

func TestUnknownBackend(t *testing.T) {
	_, err := Run(context.Background(), Options{Backends: []string{"consul"}})
	if err == nil || !strings.Contains(err.Error(), `unknown backend "consul"`) {
		t.Fatalf("Run = %v, want unknown backend", err)
	}
}

func TestJSONNames(t *testing.T) {
	b, err := json.Marshal(&Figures{Mem: &MemFigures{}, Redis: &RedisFigures{}, Etcd: &CommitFigures{Handoff: Handoff{Commits: 1.5, Beyond: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{`"ops_per_s"`, `"wall_ns_per_op"`, `"direct_ratio"`, `"proxied_ratio"`, `"raw_cycle_per_s"`,
		`"write_p50_ms"`, `"round_trips_beyond_commit"`} {
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
