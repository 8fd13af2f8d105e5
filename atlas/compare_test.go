package atlas

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/report"
)

// fakeRun is what writeAtlas puts in each run folder of one side.
type fakeRun struct {
	incidents   int
	errorBucket int // timeline bucket with an error (-1: none)
	history     []checker.Op
	zombieMs    float64 // a lost lease's zombie time (0: none lost)
}

// writeAtlas writes a real atlas folder for provider: plan.json, each
// run's result.json and history.jsonl as a run writes them, then the atlas
// built from them, the way `chaos atlas` does.
func writeAtlas(t *testing.T, provider string, runOf func(lock string) fakeRun) string {
	t.Helper()
	dir := t.TempDir()
	p, err := NewPlan(Config{Runs: 2, Provider: provider, Locks: []string{"zk-lib", "redis-py"},
		Families: []string{"reset-storm", "packet-loss"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := SavePlan(p, dir); err != nil {
		t.Fatal(err)
	}
	yes := true
	for _, j := range p.Jobs {
		fr := runOf(j.Cell.Lock)
		// 2 completions a bucket before the fault (1.5s), 1 during it
		// (to 4s), 2 after: availability during the fault 50%.
		tl := make([]report.TimelineBucket, 60)
		for i := range tl {
			tl[i].Completions = 2
			if i >= 15 && i < 40 {
				tl[i].Completions = 1
			}
		}
		if fr.errorBucket >= 0 {
			tl[fr.errorBucket].Errors = 1
		}
		run := report.Run{Lock: j.Cell.Lock, Clients: 3, DurationS: 6, TimelineBucketMs: 100, Timeline: tl,
			Verdict: "met", Faults: []report.FaultWindow{{Type: "reset", Target: "clients->x", StartS: 1.5, EndS: 4,
				Detail: "closed live connections on 2 links: client-0->x, client-1->x", Bit: &yes, VisitsAfter: 9}}}
		run.Incidents, run.ClientFaults = fr.incidents, fr.incidents
		if fr.zombieMs > 0 {
			lost := 1
			run.LostLeases, run.ZombieMsP50, run.ZombieMsMax = &lost, &fr.zombieMs, &fr.zombieMs
		}
		res := report.Result{Scenario: ScenarioName(j.Cell.Family, j.Cell.Lock), Provider: provider, Complete: true,
			Seed: j.Seed, Runs: []report.Run{run}}
		jd := j.Dir(dir)
		if err := os.MkdirAll(jd, 0o755); err != nil {
			t.Fatal(err)
		}
		data, _ := json.Marshal(res)
		if err := os.WriteFile(filepath.Join(jd, "result.json"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		var hist []byte
		for _, op := range fr.history {
			line, _ := json.Marshal(op)
			hist = append(append(hist, line...), '\n')
		}
		if err := os.WriteFile(filepath.Join(jd, report.HistoryFile), hist, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := Write(dir, Build(p, []string{dir}, dir)); err != nil {
		t.Fatal(err)
	}
	return dir
}

func op(client int, kind, outcome string, atMs int64) checker.Op {
	return checker.Op{Client: client, Lock: "lock-0", Op: kind, Invoke: atMs * 1e6, Return: atMs * 1e6, Outcome: outcome}
}

// Compare reads two real atlas folders: the verdicts and their rates,
// availability from the timelines, and the time until a client the fault
// acted on noticed, ignoring clients it did not act on and what happened
// before the fault.
func TestCompare(t *testing.T) {
	proxy := writeAtlas(t, "local", func(lock string) fakeRun {
		// client-2 is not on a faulted link: its early loss does not count;
		// client-1's lost line before the fault neither.
		return fakeRun{errorBucket: 25, history: []checker.Op{
			op(1, checker.OpLost, "lost_while_held", 1000),
			op(2, checker.OpLost, "lost_while_held", 1600),
			op(0, checker.OpRelease, "ok", 1700),
			op(0, checker.OpRelease, "release_error", 2300),
		}}
	})
	packet := writeAtlas(t, "netns", func(lock string) fakeRun {
		if lock == "zk-lib" {
			// The lost line falls inside the first error bucket (2.1-2.2s):
			// the line times it. A verdict that differs.
			return fakeRun{incidents: 1, errorBucket: 21, history: []checker.Op{op(1, checker.OpLost, "lost_while_held", 2150)}, zombieMs: 640}
		}
		// Only the timeline: an error in the bucket from 2.0s.
		return fakeRun{errorBucket: 20}
	})
	c, err := Compare(proxy, packet, []string{"reset-storm", "packet-loss"})
	if err != nil {
		t.Fatal(err)
	}
	if c.A.Provider != "local" || c.B.Provider != "netns" {
		t.Errorf("providers %q, %q", c.A.Provider, c.B.Provider)
	}
	if len(c.Rows) != 2 || c.Differ != 1 {
		t.Fatalf("%d rows, %d differ; want 2 rows (reset-storm of each lock), 1 differing", len(c.Rows), c.Differ)
	}
	for _, r := range c.Rows {
		if r.Family != "reset-storm" {
			t.Errorf("row %s/%s: only reset-storm applies on both sides", r.Family, r.Lock)
		}
		if a := r.A.Availability; a == nil || math.Abs(*a-0.5) > 0.01 {
			t.Errorf("%s: availability %v, want 0.5", r.Lock, a)
		}
		// The release error at 2.3s precedes the timeline's error bucket
		// at 2.5s: 800 ms after the fault's start.
		if n := r.A.Noticed; n.InRuns != 2 || n.MedianMs != 800 || n.By["release:release_error"] != 2 {
			t.Errorf("%s proxy side noticed %+v, want 800 ms by release:release_error in 2 of 2 runs", r.Lock, n)
		}
		switch r.Lock {
		case "zk-lib":
			if !r.Differs || r.A.Verdict != Safe || r.B.Verdict != UnsafeWithoutFencing || r.B.RunsWithIncidents != 2 || r.B.Rate != 1 {
				t.Errorf("zk-lib: %+v", r)
			}
			if n := r.B.Noticed; n.InRuns != 2 || n.MedianMs != 650 || n.By["lost"] != 2 {
				t.Errorf("zk-lib packet side noticed %+v, want 650 ms by lost", n)
			}
		case "redis-py":
			if n := r.B.Noticed; r.Differs || n.InRuns != 2 || n.MedianMs != 500 || n.By["timeline error"] != 2 {
				t.Errorf("redis-py: %+v, want the timeline's error 500 ms after the start", r)
			}
		}
	}
	if len(c.OneSided) != 2 {
		t.Fatalf("one-sided %+v, want packet-loss of both locks on the netns side", c.OneSided)
	}
	for _, o := range c.OneSided {
		if o.Family != "packet-loss" || o.Side != "B" || !strings.Contains(o.Why, "provider netns") {
			t.Errorf("one-sided %+v", o)
		}
	}
	out := t.TempDir()
	if err := WriteComparison(out, c); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(out, "compare.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"local vs netns", "| reset-storm | zk-lib | **≠** | safe | unsafe-without-fencing |", "| 0.0s | 0.0s |",
		"800 ms (2/2, release:release_error)", "650 ms (2/2, lost)", "500 ms (2/2, timeline error)", "## Cells of one atlas only",
		"650 ms (2/2, lost) | - | 640 / 640 |"} {
		if !strings.Contains(string(md), w) {
			t.Errorf("compare.md lacks %q:\n%s", w, md)
		}
	}
	var back Comparison
	data, _ := os.ReadFile(filepath.Join(out, "compare.json"))
	if err := json.Unmarshal(data, &back); err != nil || back.Differ != 1 || len(back.Rows) != 2 {
		t.Errorf("compare.json: %v, %+v", err, back)
	}
	// Without --families: only the families both atlases have.
	all, err := Compare(proxy, packet, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Rows) != 2 || len(all.OneSided) != 2 {
		t.Errorf("default families: %d rows, %d one-sided", len(all.Rows), len(all.OneSided))
	}
	if _, err := Compare(proxy, packet, []string{"no-such-family"}); err == nil {
		t.Error("a family in neither atlas accepted")
	}
}

// packet-loss is not applicable under local (a proxy never loses a
// packet) and a valid scenario under netns; latency-small, a proxied
// fault, is not applicable under netns. The provider is kept by plan.json.
func TestPacketLossByProvider(t *testing.T) {
	cfg := Config{Runs: 1, Families: []string{"packet-loss", "latency-small"}, Locks: []string{"zk-recipe", "redsync"}}
	local, err := NewPlan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Provider = "netns"
	netns, err := NewPlan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range local.Cells {
		switch c.Family {
		case "packet-loss":
			if !strings.Contains(c.NotApplicable, "never loses a packet") || !strings.Contains(c.NotApplicable, "provider netns") {
				t.Errorf("local %s: not applicable %q, want the proxy's reason", c.Key(), c.NotApplicable)
			}
		case "latency-small":
			if c.Scenario == nil || c.Scenario.Cluster.Provider != "local" {
				t.Errorf("local %s: %q", c.Key(), c.NotApplicable)
			}
		}
	}
	for _, c := range netns.Cells {
		switch c.Family {
		case "packet-loss":
			// NewPlan validated the scenario (scenarios.Parse, the fault
			// table's checks under provider netns).
			if c.Scenario == nil {
				t.Fatalf("netns %s: not applicable: %s", c.Key(), c.NotApplicable)
			}
			if c.Scenario.Cluster.Provider != "netns" || len(c.Scenario.Faults) != 3 {
				t.Errorf("netns %s: provider %q, %d faults, want netns and one per server", c.Key(), c.Scenario.Cluster.Provider, len(c.Scenario.Faults))
			}
			for _, f := range c.Scenario.Faults {
				if f.Type != "loss" || f.Percent != lossPercent || f.Node == "" || f.For <= 0 {
					t.Errorf("netns %s: fault %+v", c.Key(), f)
				}
			}
		case "latency-small":
			if c.Scenario != nil || !strings.Contains(c.NotApplicable, "proxy") {
				t.Errorf("netns %s: want not applicable for the proxy, got %q", c.Key(), c.NotApplicable)
			}
		}
	}
	dir := t.TempDir()
	netns.Config.Slim = true
	if err := SavePlan(netns, dir); err != nil {
		t.Fatal(err)
	}
	back, err := LoadPlan(dir)
	if err != nil {
		t.Fatal(err)
	}
	if back.Config.Provider != "netns" || !SamePlan(back, netns) || SamePlan(back, local) {
		t.Errorf("plan.json kept provider %q; same as netns %v, as local %v", back.Config.Provider, SamePlan(back, netns), SamePlan(back, local))
	}
	if !back.Config.Slim {
		t.Error("plan.json lost --slim: a resumed atlas would keep fat run folders")
	}
	if _, err := NewPlan(Config{Provider: "docker"}); err == nil {
		t.Error("provider docker accepted")
	}
}
