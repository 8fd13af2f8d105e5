package atlas

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/locklab/locklab/cluster"
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
	// Exec are programs of the user's (client protocol) judged beside the
	// registered locks, each under its own name.
	Exec []ExecLock
	// Provider runs every scenario on this cluster provider: local
	// (default) or netns. A family whose faults the provider cannot
	// inflict is not applicable, with the reason.
	Provider string
	// Slim records that the atlas keeps slim run folders (Slim), so a
	// resumed atlas keeps them slim too; no part of the plan's cells.
	Slim bool
}

// ExecLock is a user's program in the atlas: an exec lock entry
// ({name: exec, backend: ..., command: [...], label: Name}).
type ExecLock struct {
	Name    string   `json:"name"`
	Backend string   `json:"backend"`
	Command []string `json:"command"`
}

// ParseExec reads `NAME=CMD ARGS...` (the command split at spaces) for
// backend: the value of chaos atlas --exec.
func ParseExec(s, backend string) (ExecLock, error) {
	name, cmd, ok := strings.Cut(s, "=")
	name = strings.TrimSpace(name)
	argv := strings.Fields(cmd)
	switch {
	case !ok || name == "" || len(argv) == 0:
		return ExecLock{}, fmt.Errorf("--exec %q: want NAME=CMD ARGS..., e.g. mylock='python3 mylock_client.py'", s)
	case !execName.MatchString(name):
		return ExecLock{}, fmt.Errorf("--exec %q: name %q: use letters, digits, - and _", s, name)
	}
	if !locks.IsServerBackend(locks.Backend(backend)) {
		return ExecLock{}, fmt.Errorf("--exec %s: --backend must be %s (got %q)", name, locks.ServerBackendList(), backend)
	}
	return ExecLock{Name: name, Backend: backend, Command: argv}, nil
}

var execName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*$`)

// entry is the exec lock entry of e in a scenario's locks list.
func (e ExecLock) entry() string {
	q := make([]string, len(e.Command))
	for i, a := range e.Command {
		b, _ := json.Marshal(a) // a JSON string is a YAML flow scalar
		q[i] = string(b)
	}
	return fmt.Sprintf("{name: %s, backend: %s, command: [%s], label: %s}", external.Exec, e.Backend, strings.Join(q, ", "), e.Name)
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
	// Control says why the cell is a control, not a safety claim ("": a
	// claim).
	Control string
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
	switch cfg.Provider {
	case "":
		cfg.Provider = cluster.ProviderLocal
	case cluster.ProviderLocal, cluster.ProviderNetns:
	default:
		return nil, fmt.Errorf("--provider: %q: the atlas runs on local or netns (docker and external clusters are not started per run)", cfg.Provider)
	}
	p := &Plan{Config: cfg}
	names := Locks()
	execs := map[string]ExecLock{}
	for _, e := range cfg.Exec {
		if slices.Contains(names, e.Name) || e.Name == external.Exec {
			return nil, fmt.Errorf("--exec %s: the name of a registered lock: choose another", e.Name)
		}
		if _, dup := execs[e.Name]; dup {
			return nil, fmt.Errorf("--exec %s: given twice", e.Name)
		}
		execs[e.Name] = e
	}
	if len(cfg.Locks) == 0 {
		p.Locks = names
		for _, e := range cfg.Exec {
			p.Locks = append(p.Locks, e.Name)
		}
	}
	for _, l := range cfg.Locks {
		if _, ok := execs[l]; ok {
			p.Locks = append(p.Locks, l)
			continue
		}
		if s, _ := locks.Lookup(l); s.InProcess {
			return nil, fmt.Errorf("--locks: %s is a calibration lock, real only among the clients of one process: nothing for a fault to act on (bench calibrate measures it)", l)
		}
		if l == external.Exec {
			return nil, fmt.Errorf("--locks: %s runs a program of yours: name it with --exec NAME='CMD ARGS' --backend B and list NAME here", l)
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
	t := timing{TTL: cfg.TTL, Provider: cfg.Provider}
	for _, f := range p.Families {
		for _, name := range p.Locks {
			spec, _ := locks.Lookup(name)
			info := infoOf(spec)
			e, isExec := execs[name]
			if isExec {
				// What a family needs to know of a program: its backend.
				// Whether it renews is unknown, so partition-holder (a
				// holder inside longer than its lease) does not apply.
				info = lockInfo{Name: name, Backend: locks.Backend(e.Backend)}
			}
			c := &Cell{Lock: name, Family: f.Name}
			y, reason := f.Scenario(t, info)
			if isExec && reason == "" {
				y, reason = execScenario(y, e)
			}
			if reason == "" {
				sc, err := scenarios.Parse(ScenarioName(f.Name, name)+".yaml", []byte(y))
				if err != nil {
					reason = "the scenario validator refuses it: " + firstLine(distinctErrors(err.Error()))
				} else {
					c.YAML, c.Scenario = y, sc
				}
			}
			c.NotApplicable = reason
			c.Control = f.ControlOf(t, info)
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

// execScenario puts e's exec entry in place of the lock list a family
// wrote for the name alone.
func execScenario(y string, e ExecLock) (string, string) {
	old := "locks: [" + e.Name + "]\n"
	if !strings.Contains(y, old) {
		return "", "the family's scenario names the lock in a form --exec cannot replace"
	}
	return strings.Replace(y, old, "locks: ["+e.entry()+"]\n", 1), ""
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

// distinctErrors drops from a validator's error lines their position
// (file:line: faults[i].), which the cell already names, and the lines
// that then repeat one before them: three faults a provider refuses for
// one reason read as that reason once.
func distinctErrors(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		l = validatorPosition.ReplaceAllString(strings.TrimSpace(l), "")
		if l != "" && !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

var validatorPosition = regexp.MustCompile(`^\S+\.yaml:\d+: (faults\[\d+\]\.)?`)

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
