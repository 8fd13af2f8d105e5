package atlas

import (
	"fmt"
	"hash/fnv"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/external"
	"github.com/locklab/locklab/scenarios"
)

// Config selects what an atlas covers. The zero value of each field means
// its default.
type Config struct {
	// Locks keeps these lock names; default every registered lock.
	Locks []string
	// Families keeps these family names; default every family.
	Families []string
	// Runs is the number of seeded runs per cell. Default 5.
	Runs int
	// TTL is the lease every family scales from. Default 1s.
	TTL time.Duration
}

// Cell is one (lock, family) pair of the plan: its scenario, or why the
// family does not apply.
type Cell struct {
	Lock, Family string
	// YAML is the scenario, empty when not applicable.
	YAML     string
	Scenario *scenarios.Scenario `json:"-"`
	// NotApplicable says why the family does not apply to the lock.
	NotApplicable string
}

// Key names the cell in folders and shard lists: family/lock.
func (c Cell) Key() string { return c.Family + "/" + c.Lock }

// Job is one seeded run of a cell.
type Job struct {
	Cell  *Cell
	Index int // 1-based
	Seed  int64
}

// Dir is the job's result folder under the atlas folder.
func (j Job) Dir(root string) string {
	return filepath.Join(root, "runs", j.Cell.Family, j.Cell.Lock, fmt.Sprintf("run-%d", j.Index))
}

// Plan is the atlas's cells and jobs, in a fixed order (families, then
// locks, then runs), the same on every machine for the same Config.
type Plan struct {
	Config   Config
	Locks    []string
	Families []Family
	Cells    []*Cell
	Jobs     []Job
}

// Locks are the locks an atlas judges: every registered lock a team could
// deploy. Not exec, which names no program of its own (a scenario supplies
// its command), nor a calibration lock such as mem, real only among the
// clients of one process: no server to fault, no client process to pause.
func Locks() []string {
	return slices.DeleteFunc(locks.Names(), func(n string) bool {
		s, _ := locks.Lookup(n)
		return n == external.Exec || s.InProcess
	})
}

// NewPlan builds the plan; it fails on an unknown lock or family name.
// A cell whose scenario the validator refuses (a lock without Sentinel
// support in a Sentinel topology, ...) is not applicable with that reason.
func NewPlan(cfg Config) (*Plan, error) {
	if cfg.Runs <= 0 {
		cfg.Runs = 5
	}
	if cfg.TTL <= 0 {
		cfg.TTL = time.Second
	}
	p := &Plan{Config: cfg}
	names := Locks()
	if len(cfg.Locks) == 0 {
		p.Locks = names
	}
	for _, l := range cfg.Locks {
		if s, _ := locks.Lookup(l); s.InProcess {
			return nil, fmt.Errorf("--locks: %s is a calibration lock, real only among the clients of one process: nothing for a fault to act on (bench calibrate measures it)", l)
		}
		if l == external.Exec {
			return nil, fmt.Errorf("--locks: %s runs a program of yours: write a scenario with {name: exec, backend: ..., command: [...]} and run it with chaos run", l)
		}
		if !slices.Contains(names, l) {
			return nil, fmt.Errorf("--locks: %q is not a registered lock (%s)", l, strings.Join(names, ", "))
		}
		p.Locks = append(p.Locks, l)
	}
	all := Families()
	if len(cfg.Families) == 0 {
		p.Families = all
	}
	for _, name := range cfg.Families {
		i := slices.IndexFunc(all, func(f Family) bool { return f.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("--families: %q is not a family (%s)", name, strings.Join(FamilyNames(), ", "))
		}
		p.Families = append(p.Families, all[i])
	}
	t := timing{TTL: cfg.TTL}
	for _, f := range p.Families {
		for _, name := range p.Locks {
			spec, _ := locks.Lookup(name)
			c := &Cell{Lock: name, Family: f.Name}
			y, reason := f.Scenario(t, infoOf(spec))
			if reason == "" {
				sc, err := scenarios.Parse(ScenarioName(f.Name, name)+".yaml", []byte(y))
				if err != nil {
					reason = "the scenario validator refuses it: " + firstLine(err.Error())
				} else {
					c.YAML, c.Scenario = y, sc
				}
			}
			c.NotApplicable = reason
			p.Cells = append(p.Cells, c)
			if reason != "" {
				continue
			}
			for i := 1; i <= cfg.Runs; i++ {
				p.Jobs = append(p.Jobs, Job{Cell: c, Index: i, Seed: SeedOf(c.Key(), i)})
			}
		}
	}
	return p, nil
}

// SeedOf derives a run's seed from its cell and index, so the same run
// has the same seed on every machine and in every shard.
func SeedOf(key string, index int) int64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s#%d", key, index)
	return int64(h.Sum64() >> 1)
}

// Shard keeps job i (0-based) when i mod n == k-1: a deterministic slice
// of the job list, balanced across families and locks.
func (p *Plan) Shard(k, n int) []Job {
	var out []Job
	for i, j := range p.Jobs {
		if i%n == k-1 {
			out = append(out, j)
		}
	}
	return out
}

// ParseShard reads "i/n" (1 <= i <= n).
func ParseShard(s string) (k, n int, err error) {
	if _, err := fmt.Sscanf(s, "%d/%d", &k, &n); err != nil || n < 1 || k < 1 || k > n {
		return 0, 0, fmt.Errorf("--shard %q: want i/n with 1 <= i <= n, e.g. 1/4", s)
	}
	return k, n, nil
}

// FamilyNames lists every family's name.
func FamilyNames() []string {
	var out []string
	for _, f := range Families() {
		out = append(out, f.Name)
	}
	return out
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		rest := strings.TrimSpace(s[i+1:])
		if j := strings.IndexByte(rest, '\n'); j >= 0 {
			rest = rest[:j]
		}
		return strings.TrimSpace(s[:i] + " " + rest)
	}
	return s
}
