package report

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// syntheticLocks are the lock labels of the synthetic results: more than
// ten, with spaces and '=' as scenario labels have.
var syntheticLocks = []string{
	"redis-setnx-expire", "redis-set-del", "redis-cad", "redis-watchdog ttl=5s", "redis-reentrant",
	"redlock", "zk-recipe", "zk-herd", "etcd-recipe", "redsync", "bsm-redislock", "etcd-mutex",
}

// syntheticResult builds a result of nLocks locks swept over the given
// client counts (one point when clients has one value), with timelines,
// fault windows, violations and expectations, as a real chaos run has.
func syntheticResult(nLocks int, clients []int) *Result {
	rng := rand.New(rand.NewPCG(1, 2))
	met, missed := true, false
	r := &Result{
		Schema: Schema, Scenario: "synthetic-sweep", Seed: 42, Provider: "local", Complete: true,
		Description: "Synthetic result: every lock under a latency fault on the replication link, a primary kill and a paused holder.",
		File:        "builtin:synthetic-sweep",
		Started:     time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Finished:    time.Date(2026, 1, 2, 3, 9, 5, 0, time.UTC),
		Host:        Host{CPUs: 2, OS: "linux", Arch: "amd64", GoVersion: "go1.26", Hostname: "test"},
		Versions:    map[string]string{"redis": "7.0.15", "zookeeper": "3.8.0", "etcd": "3.4.30"},
		Workload:    Workload{Clients: clients[0], DurationS: 30, TTLMs: 2000, CriticalMs: 1, Keys: 1, Mode: "closed"},
		Fencing:     "observe",
		ExpectMet:   &missed,
	}
	const buckets = 300 // 30 s of 100 ms
	for li := 0; li < nLocks; li++ {
		lock := syntheticLocks[li%len(syntheticLocks)]
		name, _, _ := strings.Cut(lock, " ")
		broken := li < 2
		for _, n := range clients {
			base := 400.0 * (1 + float64(li)/3) * math.Sqrt(float64(n))
			run := Run{
				Lock: lock, LockName: name, Backend: "redis", Fences: true, Clients: n,
				TTLMs: 2000, DurationS: 30, Errors: map[string]int64{"acquire_timeout": int64(li)},
				TimelineBucketMs: 100, Complete: true,
				StartupMs: map[string]float64{"redis-0": 12.5, "redis-0-r0": 14},
			}
			if len(clients) > 1 {
				run.Params = map[string]string{"clients": strconv.Itoa(n)}
			}
			for b := 0; b < buckets; b++ {
				c := base / 10 * (0.9 + 0.2*rng.Float64())
				if b >= 50 && b < 150 { // latency fault: throughput drops
					c *= 0.3
				}
				tb := TimelineBucket{Completions: int64(c)}
				if b >= 80 && b < 90 {
					tb.Errors = int64(rng.IntN(4))
				}
				if broken && (b == 85 || b == 130) {
					tb.Violations = 2
				}
				run.Timeline = append(run.Timeline, tb)
				run.Ops += tb.Completions
				run.Violations += int(tb.Violations)
			}
			run.Throughput = float64(run.Ops) / run.DurationS
			for _, at := range []float64{8.51, 8.55, 13.02, 13.07} {
				if broken {
					run.ViolationEvents = append(run.ViolationEvents, ViolationEvent{
						Lock: lock, FirstClient: 1, SecondClient: 3, FirstToken: 17, SecondToken: 18, AtS: at, OverlapMs: 40 + at,
					})
				}
			}
			if broken {
				run.StaleAccepted, run.StaleTokens, run.MaxOverlapMs = 3, 3, 53.07
				run.ExpectMet = &met
				run.Expectations = []Expectation{{Field: "violations", Want: ">0", Got: run.Violations, Met: true}}
			} else {
				run.StaleRejected = li % 3
				ok := li != 4
				run.ExpectMet = &ok
				run.Expectations = []Expectation{{Field: "violations", Want: "0", Got: 0, Met: true}, {Field: "lost_updates", Want: "0", Got: 0, Met: ok}}
			}
			run.Acquire = syntheticLatency(0.2*float64(li+1)*float64(n), 3000)
			run.Release = syntheticLatency(0.1, 3000)
			run.Handoff = syntheticLatency(0.05*float64(li+1), 3000)
			run.Faults = []FaultWindow{
				{Type: "latency", Target: "redis-0-r0->redis-0", StartS: 5, EndS: 15, Detail: "latency 3s"},
				{Type: "kill", Target: "redis-0", StartS: 8, EndS: 8},
				{Type: "pause-client", Target: "holder", StartS: 12, EndS: 15},
			}
			r.Runs = append(r.Runs, run)
		}
	}
	return r
}

func syntheticLatency(p50 float64, count int64) Latency {
	l := Latency{Count: count, MeanMs: p50 * 1.5}
	for _, p := range CurvePercentiles {
		v := p50 * math.Pow(1+p/100, 3) * (1 + 50*math.Pow(p/100, 40))
		if p == 0 {
			v = p50 / 4
		}
		l.Curve = append(l.Curve, [2]float64{p, v})
	}
	l.P50Ms, l.P90Ms, l.P99Ms, l.P999Ms, l.MaxMs = l.Curve[3][1], l.Curve[5][1], l.Curve[7][1], l.Curve[9][1], l.Curve[13][1]
	return l
}

// outDir is a temporary folder, or $LOCKLAB_REPORT_DIR/<name> when set, to
// keep a test's report for a human to look at.
func outDir(t *testing.T, name string) string {
	t.Helper()
	if root := os.Getenv("LOCKLAB_REPORT_DIR"); root != "" {
		dir := filepath.Join(root, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	return t.TempDir()
}

// checkPNG fails unless path is a decodable PNG of a plausible size.
func checkPNG(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s: %v", filepath.Base(path), err)
	}
	if cfg.Width < 300 || cfg.Height < 150 {
		t.Errorf("%s: %dx%d, want at least 300x150", filepath.Base(path), cfg.Width, cfg.Height)
	}
	if _, err := png.Decode(bytes.NewReader(data)); err != nil {
		t.Errorf("%s: %v", filepath.Base(path), err)
	}
}

func TestRenderSweep(t *testing.T) {
	tests := []struct {
		name    string
		locks   int
		clients []int
	}{
		{"10-locks-5-points", 10, []int{1, 2, 4, 8, 16}},
		{"12-locks-single", 12, []int{8}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := outDir(t, tt.name)
			r := syntheticResult(tt.locks, tt.clients)
			if err := Render(dir, r); err != nil {
				t.Fatal(err)
			}
			want := []string{"throughput", "latency", "handoff", "safety"}
			for _, n := range timelineNames(r.Runs) {
				want = append(want, n)
			}
			if got := len(want) - 4; got != tt.locks*len(tt.clients) {
				t.Errorf("%d timelines, want one per run (%d)", got, tt.locks*len(tt.clients))
			}
			for _, n := range want {
				checkPNG(t, filepath.Join(dir, n+".png"))
				svg, err := os.ReadFile(filepath.Join(dir, n+".svg"))
				if err != nil || !bytes.Contains(svg, []byte("<svg")) {
					t.Errorf("%s.svg: not an SVG (%v)", n, err)
				}
			}
			md, err := os.ReadFile(filepath.Join(dir, "report.md"))
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range []string{"![", "throughput.png", "redis-watchdog ttl=5s", "redis-0-r0->redis-0", "client-1 (17)", "Expectations failed", "7.0.15"} {
				if !bytes.Contains(md, []byte(mdEscape(s))) && !bytes.Contains(md, []byte(s)) {
					t.Errorf("report.md lacks %q", s)
				}
			}
			page, err := os.ReadFile(filepath.Join(dir, "report.html"))
			if err != nil {
				t.Fatal(err)
			}
			if n := bytes.Count(page, []byte(`src="data:image/png;base64,`)); n != len(want) {
				t.Errorf("report.html inlines %d images, want %d", n, len(want))
			}
			if bytes.Contains(page, []byte(`src="http`)) || bytes.Contains(page, []byte(`<link`)) {
				t.Error("report.html refers to external resources")
			}
		})
	}
}

// BenchmarkRenderPlots renders every plot (PNG and SVG) of a 10-lock,
// 5-point clients sweep: 4 summary plots and 50 timelines.
func BenchmarkRenderPlots(b *testing.B) {
	r := syntheticResult(10, []int{1, 2, 4, 8, 16})
	dir := b.TempDir()
	for b.Loop() {
		if _, err := WritePlots(dir, r); err != nil {
			b.Fatal(err)
		}
	}
}

func TestRenderEdgeCases(t *testing.T) {
	partial := syntheticResult(3, []int{4})
	partial.Complete = false
	partial.Interrupted = "interrupted: signal interrupt"
	partial.Runs[2].Complete = false
	partial.Runs[2].Timeline = partial.Runs[2].Timeline[:40]
	failed := syntheticResult(2, []int{4})
	failed.Runs[1] = Run{Lock: "zk-recipe", LockName: "zk-recipe", Clients: 4, Error: "start cluster: java not found"}
	tests := []struct {
		name  string
		r     *Result
		files []string
		text  []string
	}{
		{"partial", partial, []string{"throughput", "latency", "timeline-redis-cad"}, []string{"Partial result: interrupted: signal interrupt", "Partial: cut short"}},
		{"failed-run", failed, []string{"throughput", "safety", "timeline-redis-setnx-expire"}, []string{"Failed: start cluster: java not found"}},
		{"no-runs", &Result{Schema: Schema, Scenario: "empty", Interrupted: "interrupted: signal interrupt"}, nil, []string{"Partial result"}},
		{"no-faults-no-latency", &Result{Schema: Schema, Scenario: "bare", Complete: true, Runs: []Run{{Lock: "redis-cad", Clients: 1, Ops: 10, Throughput: 5, Complete: true, DurationS: 2, TimelineBucketMs: 100, Timeline: []TimelineBucket{{Completions: 3}, {Completions: 7}}}}},
			[]string{"throughput", "timeline-redis-cad", "safety"}, []string{"Complete: 10 ops"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := outDir(t, tt.name)
			if err := Render(dir, tt.r); err != nil {
				t.Fatal(err)
			}
			for _, f := range tt.files {
				checkPNG(t, filepath.Join(dir, f+".png"))
			}
			md, err := os.ReadFile(filepath.Join(dir, "report.md"))
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range tt.text {
				if !strings.Contains(string(md), mdEscape(s)) {
					t.Errorf("report.md lacks %q", s)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, "report.html")); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestTimelineNames(t *testing.T) {
	runs := []Run{
		{Lock: "redis-watchdog ttl=5s", Clients: 4},
		{Lock: "redis-watchdog ttl=5s", Clients: 16},
		{Lock: "a/b c", Clients: 4},
		{Lock: "a b c", Clients: 4},
		{Lock: "redis-cad", Clients: 4, Params: map[string]string{"clients": "4", "keys": "8"}},
	}
	got := timelineNames(runs)
	want := []string{
		"timeline-redis-watchdog_ttl_5s-clients-4", "timeline-redis-watchdog_ttl_5s-clients-16",
		"timeline-a_b_c-clients-4", "timeline-a_b_c-clients-4-2", "timeline-redis-cad_keys_8-clients-4",
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("run %d (%q): %q, want %q", i, runs[i].Lock, got[i], want[i])
		}
	}
}

func TestEncodePNG(t *testing.T) {
	img := image.NewRGBA(image.Rect(0, 0, 7, 5))
	for i := range img.Pix {
		img.Pix[i] = uint8(i * 37)
	}
	for i := 3; i < len(img.Pix); i += 4 {
		img.Pix[i] = 0xff
	}
	img.Pix[3] = 0 // a transparent pixel comes out white
	img.Pix[0], img.Pix[1], img.Pix[2] = 0, 0, 0
	var buf bytes.Buffer
	if err := encodePNG(&buf, img); err != nil {
		t.Fatal(err)
	}
	got, err := png.Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for y := 0; y < 5; y++ {
		for x := 0; x < 7; x++ {
			want := color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)
			if x == 0 && y == 0 {
				want = color.RGBA{0xff, 0xff, 0xff, 0xff}
			}
			if g := color.RGBAModel.Convert(got.At(x, y)).(color.RGBA); g != want {
				t.Fatalf("pixel (%d,%d) = %v, want %v", x, y, g, want)
			}
		}
	}
}

// TestZombieLine: a run that lost leases says so in one line of report.md
// and report.html, with its zombie times; a run that lost none, or whose
// result predates the figures, says nothing of them.
func TestZombieLine(t *testing.T) {
	lost, none := 2, 0
	p50, longest := 1686.978131, 3189.176806
	run := func(label string) Run {
		return Run{Lock: label, LockName: "redis-cad", Clients: 3, Ops: 40, Complete: true, DurationS: 2, TimelineBucketMs: 100,
			Timeline: []TimelineBucket{{Completions: 20}, {Completions: 20}}}
	}
	r := &Result{Schema: Schema, Scenario: "zombies", Complete: true, Runs: []Run{run("a"), run("b"), run("c")}}
	r.Runs[0].LostLeases, r.Runs[0].ZombieMsP50, r.Runs[0].ZombieMsMax = &lost, &p50, &longest
	r.Runs[1].LostLeases = &none
	dir := outDir(t, "zombies")
	if err := Render(dir, r); err != nil {
		t.Fatal(err)
	}
	want := "zombie time: 2 lost leases, p50 1687 ms, max 3189 ms from the lock state lost on the server to its holder learning it"
	for _, f := range []string{"report.md", "report.html"} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(data), "zombie time:"); n != 1 || !strings.Contains(string(data), want) {
			t.Errorf("%s: %d zombie lines, want one: %q", f, n, want)
		}
	}
}

// TestLossyDisksNoted: a report whose runs had their data dirs on the
// lossy filesystem says so beside the setup, naming those runs' locks;
// one without says nothing of it.
func TestLossyDisksNoted(t *testing.T) {
	r := syntheticResult(2, []int{4})
	r.Runs[1].LossyDisks = true
	const note = "on the lossy filesystem of a power cut (redis-set-del)"
	for _, lossy := range []bool{true, false} {
		if !lossy {
			r.Runs[1].LossyDisks = false
		}
		dir := outDir(t, fmt.Sprintf("lossy-%v", lossy))
		if err := Render(dir, r); err != nil {
			t.Fatal(err)
		}
		md, err := os.ReadFile(filepath.Join(dir, "report.md"))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(string(md), mdEscape(note)); got != lossy {
			t.Errorf("lossy disks %v: report.md has %q: %v", lossy, note, got)
		}
	}
}
