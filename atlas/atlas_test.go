package atlas

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/checker"
	_ "github.com/locklab/locklab/locks/all"
	"github.com/locklab/locklab/testenv"
	"github.com/locklab/locklab/workload"
)

// TestMain lets the test binary act as a client process (every family
// runs process_per_client).
func TestMain(m *testing.M) {
	workload.MaybeWorker()
	os.Exit(m.Run())
}

func TestWilson(t *testing.T) {
	for _, tc := range []struct {
		k, n   int
		lo, hi float64
	}{
		{0, 5, 0, 0.4345}, {5, 5, 0.5655, 1}, {1, 2, 0.0945, 0.9055}, {3, 10, 0.1078, 0.6032},
	} {
		lo, hi := Wilson(tc.k, tc.n)
		if math.Abs(lo-tc.lo) > 1e-3 || math.Abs(hi-tc.hi) > 1e-3 {
			t.Errorf("Wilson(%d, %d) = %.4f-%.4f, want %.4f-%.4f", tc.k, tc.n, lo, hi, tc.lo, tc.hi)
		}
	}
}

// Every registered lock meets every family: a scenario that validates, or
// a reason; never a gap. The plan is the same on every call (seeds too).
func TestPlanCoversEveryLock(t *testing.T) {
	p, err := NewPlan(Config{Runs: 2})
	if err != nil {
		t.Fatal(err)
	}
	if want := len(Locks()) * len(Families()); len(p.Cells) != want {
		t.Fatalf("%d cells, want %d", len(p.Cells), want)
	}
	for _, c := range p.Cells {
		if (c.Scenario == nil) == (c.NotApplicable == "") {
			t.Errorf("%s: scenario %v, not applicable %q: want exactly one", c.Key(), c.Scenario != nil, c.NotApplicable)
		}
		if c.Family == "baseline" && c.NotApplicable != "" {
			t.Errorf("%s: the baseline must apply to every lock: %s", c.Key(), c.NotApplicable)
		}
	}
	q, _ := NewPlan(Config{Runs: 2})
	if !SamePlan(p, q) {
		t.Error("two plans of one config differ")
	}
	if _, err := NewPlan(Config{Families: []string{"nope"}}); err == nil {
		t.Error("unknown family accepted")
	}
}

func TestShardsPartitionTheJobs(t *testing.T) {
	p, err := NewPlan(Config{Runs: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, 2, 3, 7} {
		seen := map[string]int{}
		for k := 1; k <= n; k++ {
			for _, j := range p.Shard(k, n) {
				seen[j.Dir("")]++
			}
		}
		if len(seen) != len(p.Jobs) {
			t.Errorf("n=%d: shards cover %d of %d jobs", n, len(seen), len(p.Jobs))
		}
		for d, c := range seen {
			if c != 1 {
				t.Errorf("n=%d: %s in %d shards", n, d, c)
			}
		}
	}
	if _, _, err := ParseShard("3/2"); err == nil {
		t.Error("shard 3/2 accepted")
	}
}

// A tiny real atlas in two shards: merging them gives the cells of the
// same runs in one folder (what an unsharded atlas writes), every run is
// found, the fault-free baseline reads safe, and resume runs nothing again.
func TestShardMergeResume(t *testing.T) {
	testenv.RequireBinaries(t, "redis-server")
	p, err := NewPlan(Config{Runs: 2, TTL: 500 * time.Millisecond,
		Locks: []string{"redis-cad", "redis-set-del"}, Families: []string{"baseline", "latency-small"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Jobs) != 8 {
		t.Fatalf("%d jobs, want 8", len(p.Jobs))
	}
	root := t.TempDir()
	shards := []string{filepath.Join(root, "s1"), filepath.Join(root, "s2")}
	ctx := context.Background()
	for i, d := range shards {
		if err := SavePlan(p, d); err != nil {
			t.Fatal(err)
		}
		if n, err := Execute(ctx, p.Shard(i+1, 2), RunOptions{Dir: d, Resume: true}); err != nil || n != 4 {
			t.Fatalf("shard %d: %d runs, %v", i+1, n, err)
		}
	}
	if n, _ := Execute(ctx, p.Shard(1, 2), RunOptions{Dir: shards[0], Resume: true}); n != 0 {
		t.Errorf("resume ran %d finished runs again", n)
	}
	merged := Build(p, shards, filepath.Join(root, "merged"))
	if !merged.Complete || merged.Missing != 0 {
		t.Fatalf("merged atlas misses %d runs", merged.Missing)
	}
	// One folder holding every run, as an unsharded atlas lays them out.
	one := filepath.Join(root, "one")
	for _, j := range p.Jobs {
		for _, d := range shards {
			if Finished(j.Dir(d)) {
				if err := os.MkdirAll(filepath.Dir(j.Dir(one)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Rename(j.Dir(d), j.Dir(one)); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	whole := Build(p, []string{one}, one)
	if len(whole.Cells) != len(merged.Cells) {
		t.Fatalf("%d cells unsharded, %d merged", len(whole.Cells), len(merged.Cells))
	}
	for i := range whole.Cells {
		a, b := whole.Cells[i], merged.Cells[i]
		clearDirs(&a)
		clearDirs(&b)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("cell %s/%s differs:\nunsharded %+v\nmerged    %+v", a.Family, a.Lock, a, b)
		}
	}
	for _, l := range p.Locks {
		c := whole.Cell(l, "baseline")
		if c.Verdict != Safe || c.Runs != 2 {
			t.Errorf("baseline %s: %s over %d runs, want safe over 2: %+v", l, c.Verdict, c.Runs, c.RunList)
		}
		if whole.Baseline[l] <= 0 {
			t.Errorf("baseline %s: no completion rate", l)
		}
	}
	if err := Write(one, whole); err != nil {
		t.Fatal(err)
	}
	back, err := Read(one)
	if err != nil || len(back.Cells) != len(whole.Cells) || back.Schema != Schema {
		t.Fatalf("atlas.json read back: %v", err)
	}
	for _, f := range []string{"atlas.md", "atlas.html", "atlas.png"} {
		if _, err := os.Stat(filepath.Join(one, f)); err != nil {
			t.Error(err)
		}
	}
}

func clearDirs(c *CellResult) {
	runs := append([]RunSummary(nil), c.RunList...)
	for i := range runs {
		runs[i].Dir = ""
	}
	c.RunList, c.Reproduce = runs, ""
}

func TestJudge(t *testing.T) {
	met := RunSummary{Verdict: "met", RateDuring: 10, RateAfter: 10, RecoveryS: 0.2}
	for _, tc := range []struct {
		name string
		na   string
		runs []RunSummary
		want string
	}{
		{"all met", "", []RunSummary{met, met}, Safe},
		{"lock fault", "", []RunSummary{met, {Verdict: "failed", SafetyFigures: checker.SafetyFigures{Incidents: 1, LockFaults: 1}}}, Unsafe},
		{"client fault only", "", []RunSummary{met, {Verdict: "failed", SafetyFigures: checker.SafetyFigures{Incidents: 1, ClientFaults: 1}}}, UnsafeWithoutFencing},
		{"lost update", "", []RunSummary{{Verdict: "failed", SafetyFigures: checker.SafetyFigures{LostUpdates: 2}}}, UnsafeWithoutFencing},
		{"one inconclusive", "", []RunSummary{met, {Verdict: "inconclusive"}}, Inconclusive},
		{"run error", "", []RunSummary{met, {Verdict: "met", Error: "start cluster: boom"}}, Inconclusive},
		{"no runs", "", nil, Inconclusive},
		{"a run missing", "", []RunSummary{met}, Inconclusive},
		{"not applicable", "no Sentinel", nil, NotApplicable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := CellResult{NotApplicable: tc.na, RunList: tc.runs}
			if tc.name == "a run missing" {
				c.Missing = 1
			}
			judge(&c, 10)
			if c.Verdict != tc.want {
				t.Errorf("verdict %s, want %s", c.Verdict, tc.want)
			}
		})
	}
	c := CellResult{RunList: []RunSummary{met, met}}
	judge(&c, 20)
	if c.AvailDuring != 0.5 || c.AvailAfter != 0.5 || c.RecoveryS != 0.2 {
		t.Errorf("availability %.2f/%.2f recovery %.2f, want 0.50/0.50 0.20", c.AvailDuring, c.AvailAfter, c.RecoveryS)
	}
}

func TestQuorums(t *testing.T) {
	a := &Atlas{Cells: []CellResult{
		{Lock: "redlock", Family: "kill-1-of-3", Verdict: Safe, Runs: 1, RunList: []RunSummary{{RateDuring: 5, VisitsAfter: 9}}},
		{Lock: "redlock", Family: "kill-2-of-3", Verdict: Inconclusive, Runs: 1, RunList: []RunSummary{{RateDuring: 0.2, VisitsAfter: 0}}},
		{Lock: "redis-cad", Family: "kill-2-of-3", Verdict: NotApplicable},
	}}
	qs := Quorums(a)
	if len(qs) != 2 || !qs[0].Available || !qs[0].Expected || qs[1].Available || qs[1].Expected {
		t.Errorf("quorums %+v", qs)
	}
}

func TestRepeats(t *testing.T) {
	for rate, want := range map[float64]int{1: 1, 0.5: 5, 0.2: 14, 0.01: 20} {
		if got := repeats(rate); got != want {
			t.Errorf("repeats(%v) = %d, want %d", rate, got, want)
		}
	}
}

// The families' scenarios put each fault where it bites: the Redis
// minority partition keeps one client with the old primary, restart-always
// runs with appendfsync always, the reset storm covers every server's
// client links, and quorum locks are the registry's (not a name list).
func TestFamilyScenarios(t *testing.T) {
	p, err := NewPlan(Config{Runs: 1, Families: []string{"minority-leader", "restart-empty", "restart-always", "reset-storm"},
		Locks: []string{"redis-cad", "redsync", "zk-recipe", "etcd-recipe", "memcached-add", "pg-advisory"}})
	if err != nil {
		t.Fatal(err)
	}
	cell := func(family, lock string) *Cell {
		for _, c := range p.Cells {
			if c.Family == family && c.Lock == lock {
				return c
			}
		}
		t.Fatalf("no cell %s/%s", family, lock)
		return nil
	}
	for _, tc := range []struct {
		family, lock string
		want         []string // substrings of the scenario; none: not applicable
	}{
		{"minority-leader", "redis-cad", []string{"sentinels: 3", "groups: [[redis-0, client-0], [redis-0-r0, sentinel-0, sentinel-1, sentinel-2, client-1, client-2]]"}},
		{"minority-leader", "zk-recipe", []string{"groups: [[zk-leader], [zk-0, zk-1, zk-2, clients]]"}},
		{"minority-leader", "etcd-recipe", []string{"etcd: {nodes: 3}", "groups: [[etcd-leader], [etcd-0, etcd-1, etcd-2, clients]]"}},
		{"minority-leader", "redsync", nil},
		{"restart-always", "redis-cad", []string{"persistence: always", "type: restart, when: holder-inside", "node: redis-0"}},
		{"restart-always", "redsync", []string{"primaries: 3, persistence: always"}},
		{"restart-always", "zk-recipe", nil},
		// A backend that keeps everything in memory restarts empty; one
		// that keeps its data on disk is not written for it.
		{"restart-empty", "memcached-add", []string{"memcached: {}", "type: restart, when: holder-inside", "node: memcached-0, delay: 0s"}},
		{"restart-empty", "pg-advisory", nil},
		{"restart-always", "memcached-add", nil},
		{"reset-storm", "redsync", []string{"link: clients->redis-0", "link: clients->redis-2", "when: holder-inside, after_enter: 0ms, for"}},
		{"reset-storm", "zk-recipe", []string{"link: clients->zk-0", "link: clients->zk-2", "when: holder-inside, after_enter: 0ms, for"}},
		{"reset-storm", "etcd-recipe", []string{"link: clients->etcd-0", "link: clients->etcd-2"}},
	} {
		c := cell(tc.family, tc.lock)
		if tc.want == nil {
			if c.NotApplicable == "" {
				t.Errorf("%s: applies, want not applicable", c.Key())
			}
			continue
		}
		if c.NotApplicable != "" {
			t.Errorf("%s: not applicable: %s", c.Key(), c.NotApplicable)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(c.YAML, w) {
				t.Errorf("%s: scenario lacks %q:\n%s", c.Key(), w, c.YAML)
			}
		}
	}
	if _, err := NewPlan(Config{Locks: []string{"mem"}}); err == nil {
		t.Error("the calibration lock mem accepted in an atlas")
	}
}

// Slim keeps what the atlas and bench check read, and the atlas page then
// links each run's report.md.
func TestSlim(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "runs", "baseline", "redis-cad", "run-1")
	for name, body := range map[string]string{
		"result.json": "{}", "history.jsonl": `{"op":"acquire"}` + "\n", "report.md": "# r", "report.html": "<html>",
		"latency.png": "png", "latency.svg": "svg", "logs/redis-cad/logs/redis-0.log": "log",
		"token-order-0.html": "<html>",
	} {
		p := filepath.Join(run, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if runReport(dir, "runs/baseline/redis-cad/run-1") != "report.html" {
		t.Error("a full run's link is not its report.html")
	}
	if err := Slim(run); err != nil {
		t.Fatal(err)
	}
	var left []string
	filepath.WalkDir(run, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			left = append(left, d.Name())
		}
		return err
	})
	if want := []string{"history.jsonl.gz", "report.md", "result.json"}; !reflect.DeepEqual(left, want) {
		t.Errorf("slim left %v, want %v", left, want)
	}
	if runReport(dir, "runs/baseline/redis-cad/run-1") != "report.md" {
		t.Error("a slim run's link is not its report.md")
	}
}
