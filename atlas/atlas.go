package atlas

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"
)

// Schema is the version of atlas.json. Fields are added, never renamed.
const Schema = "locklab/atlas/v1"

// Atlas is every cell of a plan, built from the runs found on disk.
type Atlas struct {
	Schema string `json:"schema"`
	// Runs is the number of seeded runs per cell; TTLMs the lease every
	// family scales from.
	Runs  int   `json:"runs_per_cell"`
	TTLMs int64 `json:"ttl_ms"`
	// Provider is the cluster provider every run used (local, netns);
	// empty in atlases that predate the field, which ran on local.
	Provider string             `json:"provider,omitempty"`
	Locks    []string           `json:"locks"`
	Families []FamilyInfo       `json:"families"`
	Shard    string             `json:"shard,omitempty"` // "i/n" when this folder holds one shard
	Parallel int                `json:"parallel,omitempty"`
	WallS    float64            `json:"wall_s,omitempty"` // time spent running its jobs, summed over --resume
	Complete bool               `json:"complete"`         // every run of every applicable cell found
	Missing  int                `json:"missing_runs"`
	Created  time.Time          `json:"created"`
	Cells    []CellResult       `json:"cells"`
	Baseline map[string]float64 `json:"baseline_rate"` // per lock: completions per second without faults
	// Quorums is the 2N+1 check from the kill-k-of-n cells.
	Quorums []Quorum `json:"quorums,omitempty"`
	// Readings say per lock what its cells add up to (Readings, set by
	// Write).
	Readings []LockReading `json:"readings,omitempty"`
}

// FamilyInfo describes a column of the atlas.
type FamilyInfo struct {
	Name    string `json:"name"`
	Doc     string `json:"doc"`
	Control bool   `json:"control,omitempty"`
}

// planFile records the Config of an atlas folder so `merge` and
// `--resume` rebuild the same plan.
const planFile = "plan.json"

type planRecord struct {
	Schema   string     `json:"schema"`
	Runs     int        `json:"runs"`
	TTLMs    int64      `json:"ttl_ms"`
	Locks    []string   `json:"locks"`
	Families []string   `json:"families"`
	Exec     []ExecLock `json:"exec,omitempty"`
	Provider string     `json:"provider,omitempty"`
	Slim     bool       `json:"slim,omitempty"`
}

// SavePlan writes dir/plan.json.
func SavePlan(p *Plan, dir string) error {
	rec := planRecord{Schema: Schema, Runs: p.Config.Runs, TTLMs: p.Config.TTL.Milliseconds(), Locks: p.Locks, Exec: p.Config.Exec, Provider: p.Config.Provider, Slim: p.Config.Slim}
	for _, f := range p.Families {
		rec.Families = append(rec.Families, f.Name)
	}
	data, _ := json.MarshalIndent(rec, "", "  ")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("atlas folder: %w", err)
	}
	return os.WriteFile(filepath.Join(dir, planFile), append(data, '\n'), 0o644)
}

// LoadPlan rebuilds the plan recorded in dir/plan.json.
func LoadPlan(dir string) (*Plan, error) {
	data, err := os.ReadFile(filepath.Join(dir, planFile))
	if err != nil {
		return nil, fmt.Errorf("atlas %s: %w", dir, err)
	}
	var rec planRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, planFile), err)
	}
	return NewPlan(Config{Runs: rec.Runs, TTL: time.Duration(rec.TTLMs) * time.Millisecond, Locks: rec.Locks, Families: rec.Families, Exec: rec.Exec, Provider: rec.Provider, Slim: rec.Slim})
}

// SamePlan reports whether two plans have the same cells and jobs on the
// same provider.
func SamePlan(a, b *Plan) bool {
	if a.Config.Provider != b.Config.Provider || len(a.Jobs) != len(b.Jobs) || len(a.Cells) != len(b.Cells) {
		return false
	}
	for i := range a.Jobs {
		if a.Jobs[i].Cell.Key() != b.Jobs[i].Cell.Key() || a.Jobs[i].Seed != b.Jobs[i].Seed {
			return false
		}
	}
	return true
}

// Build assembles the atlas of p from the runs found under dirs (one
// folder, or the shards of one plan); out is the folder the atlas is
// written to, which run links are relative to.
func Build(p *Plan, dirs []string, out string) *Atlas {
	a := &Atlas{Schema: Schema, Runs: p.Config.Runs, TTLMs: p.Config.TTL.Milliseconds(), Provider: p.Config.Provider, Locks: p.Locks,
		Created: time.Now().UTC(), Baseline: map[string]float64{}}
	for _, f := range p.Families {
		a.Families = append(a.Families, FamilyInfo{Name: f.Name, Doc: f.Doc, Control: f.Control})
	}
	byCell := map[string][]RunSummary{}
	fences := map[string]bool{}
	missing := map[string]int{}
	for _, j := range p.Jobs {
		found := false
		for _, d := range dirs {
			jd := j.Dir(d)
			res, err := readResult(jd)
			if err != nil || !res.Complete {
				continue
			}
			rel, err := filepath.Rel(out, jd)
			if err != nil {
				rel = jd
			}
			byCell[j.Cell.Key()] = append(byCell[j.Cell.Key()], summarize(res, j.Index, rel))
			if len(res.Runs) > 0 {
				fences[j.Cell.Lock] = res.Runs[0].Fences
			}
			found = true
			break
		}
		if !found {
			a.Missing++
			missing[j.Cell.Key()]++
		}
	}
	a.Complete = a.Missing == 0
	for _, c := range p.Cells {
		if c.Family != "baseline" {
			continue
		}
		var rates []float64
		for _, r := range byCell[c.Key()] {
			rates = append(rates, r.Rate)
		}
		if m := mean(rates); m > 0 {
			a.Baseline[c.Lock] = m
		}
	}
	for _, c := range p.Cells {
		cr := CellResult{Lock: c.Lock, Family: c.Family, NotApplicable: c.NotApplicable, Fences: fences[c.Lock],
			RunList: byCell[c.Key()], Missing: missing[c.Key()], Role: RoleClaim, ControlWhy: c.Control}
		if c.Control != "" {
			cr.Role = RoleControl
		}
		if cr.RunList == nil {
			cr.RunList = []RunSummary{}
		}
		judge(&cr, baselineFor(p, c, a.Baseline[c.Lock]))
		if cr.Verdict == Unsafe || cr.Verdict == UnsafeWithoutFencing {
			cr.Reproduce = reproduce(cr, out)
		}
		a.Cells = append(a.Cells, cr)
	}
	a.Quorums = Quorums(a)
	return a
}

// baselineFor is the lock's baseline rate when c ran the baseline's
// workload timings; 0 (availability unknown) when it did not (the Sentinel
// failover runs with longer critical sections).
func baselineFor(p *Plan, c *Cell, rate float64) float64 {
	for _, b := range p.Cells {
		if b.Family == "baseline" && b.Lock == c.Lock && b.Scenario != nil && c.Scenario != nil {
			if b.Scenario.Workload.CriticalSection == c.Scenario.Workload.CriticalSection && b.Scenario.Workload.TTL == c.Scenario.Workload.TTL {
				return rate
			}
		}
	}
	return 0
}

// reproduce is the command that re-runs the cell's first run with an
// incident: the scenario written into the atlas folder, that run's seed.
// The seed fixes every random choice, not the servers' timing: where only
// some of the cell's runs broke, the command repeats the run often enough
// (--runs) to break at least once with 95% probability at the cell's rate.
func reproduce(c CellResult, out string) string {
	for _, r := range c.RunList {
		if r.Incidents > 0 || r.LostUpdates > 0 || r.StaleAccepted > 0 {
			file := filepath.Join(out, "scenarios", ScenarioName(c.Family, c.Lock)+".yaml")
			runs := ""
			if n := repeats(c.Rate); n > 1 {
				runs = fmt.Sprintf("--runs %d ", n)
			}
			return fmt.Sprintf("chaos run %s--seed %d --out results/repro-%s-%s-%d %s", runs, r.Seed, c.Family, c.Lock, r.Index, file)
		}
	}
	return ""
}

// repeats is the fewest runs that see an event of probability rate at
// least once with probability 0.95, at most 20.
func repeats(rate float64) int {
	if rate >= 1 {
		return 1
	}
	if rate <= 0 {
		return 20
	}
	return min(20, int(math.Ceil(math.Log(0.05)/math.Log(1-rate))))
}

// Cell returns the cell of lock and family, nil when absent.
func (a *Atlas) Cell(lock, family string) *CellResult {
	for i := range a.Cells {
		if a.Cells[i].Lock == lock && a.Cells[i].Family == family {
			return &a.Cells[i]
		}
	}
	return nil
}
