package scenarios

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/locks"
)

// Defaults applied by Parse (see the package doc for the full list).
const (
	DefaultSeed     = 1
	DefaultProvider = "local"
	DefaultDuration = 10 * time.Second
	DefaultTTL      = 10 * time.Second
	// MinAcquireTimeout is the least default workload.acquire_timeout; the
	// default is max(2 × the longest lock TTL, MinAcquireTimeout).
	MinAcquireTimeout = 10 * time.Second
	// MaxSweepRuns bounds the combinations a sweep may ask for, per lock.
	MaxSweepRuns = 1000
)

var (
	// The known fields of each section come from the field table (fields.go).
	topFields      = fieldNames("")
	clusterFields  = fieldNames("cluster")
	externalFields = fieldNames("cluster.external")
	workloadFields = fieldNames("workload")
	resourceFields = fieldNames("resource")
	expectFields   = []string{"violations", "stale_tokens", "stale_rejected", "stale_accepted", "lost_updates", "errors",
		"incidents", "lock_faults", "client_faults", "duplicate_tokens", "token_regressions", "zero_tokens",
		"changed_reads", "peak_holders", "throughput", "acquire_p50_ms", "acquire_p99_ms", "handoff_p50_ms", "availability_during_fault", "permits_leaked_ms", "min_visits"}
	lockFields = fieldNames("locks[]")

	nameRE     = regexp.MustCompile(`^[a-z0-9-]+$`)
	sweepKeyRE = regexp.MustCompile(`^faults\[(0|[1-9][0-9]{0,5})\]\.([a-z_]+)$`)
)

// Load reads and parses the scenario file at path (see Parse).
func Load(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("scenarios: %w", err)
	}
	return Parse(path, data)
}

// Parse parses and validates one scenario file; file names it in errors and
// in Scenario.File. Lock names are checked against the locks registry, so
// the lock packages must be imported (locks/all) before Parse is called.
// Every problem found is reported in one *Error; on error the scenario is
// nil. A returned scenario has every default applied.
func Parse(file string, data []byte) (*Scenario, error) {
	p := &parser{problems: problems{file: file}, s: &Scenario{File: file}}
	if root := readDoc(data, &p.problems); root != nil {
		p.scenario(root)
	}
	p.tabHint(data)
	if err := p.err(); err != nil {
		return nil, err
	}
	return p.s, nil
}

// parser holds one Parse call's state.
type parser struct {
	problems
	s *Scenario
	// plan is the cluster's plan faults are checked against; nil when the
	// cluster section had errors (clusterBad), so fault checks do not pile
	// more errors on them.
	plan       *cluster.Plan
	clusterBad bool
	clientsOK  bool
	readShare  *entry // workload.read_share as written
	primaries  *entry // cluster.redis.primaries as written
	locks      []lockMeta
	faults     []faultInfo
	sweepVals  [][]*yaml.Node  // value nodes of each Sweep.Params entry
	extBad     map[string]bool // cluster.external lists with a bad entry
}

func (p *parser) scenario(root *yaml.Node) {
	root = resolve(root)
	if root.Kind != yaml.MappingNode {
		p.add(root.Line, "", "a scenario is a mapping (name:, locks:, workload:, ...), got %s", kindName(root))
		return
	}
	top, _ := p.fields(root, "", topFields)
	s := p.s
	if e, ok := top["name"]; ok {
		if name, ok := get(p, e, "name", asString); ok {
			if nameRE.MatchString(name) {
				s.Name = name
			} else {
				p.add(e.line(), "name", "must be lowercase letters, digits and dashes, [a-z0-9-]+ (got %q)", name)
			}
		}
	} else {
		p.add(root.Line, "name", "required: the scenario's name, [a-z0-9-]+")
	}
	if e, ok := top["description"]; ok {
		if d, msg := scalar(e.val, "text"); msg != "" {
			p.add(e.line(), "description", "%s", msg)
		} else {
			s.Description = strings.TrimSpace(d)
		}
	}
	if e, ok := top["references"]; ok {
		items, _ := p.sequence(e.val, "references")
		for i, it := range items {
			if r, msg := asString(it); msg != "" {
				p.add(it.Line, index("references", i), "%s: want a URL or a citation", msg)
			} else {
				s.References = append(s.References, strings.TrimSpace(r))
			}
		}
	}
	s.Seed = DefaultSeed
	if e, ok := top["seed"]; ok {
		if v, ok := get(p, e, "seed", asInt64); ok {
			s.Seed = v
		}
	}

	p.cluster(top["cluster"])
	p.workload(top["workload"])
	p.resource(top["resource"])
	if e, ok := top["locks"]; ok {
		p.lockList(e)
	} else {
		p.add(root.Line, "locks", "required: the locks to run (known: %s)", knownLocks())
	}
	p.clusterDefaults()

	if e, ok := top["faults"]; ok {
		items, _ := p.sequence(e.val, "faults")
		for i, n := range items {
			p.faults = append(p.faults, p.parseFault(n, i))
		}
	}
	if e, ok := top["sweep"]; ok {
		p.sweep(e)
	}
	p.checkFaults()
	p.checkReadShare()
	if e, ok := top["expect"]; ok {
		p.expect(e)
	}
	p.finish()
}

func (p *parser) workload(e entry) {
	w := &p.s.Workload
	*w = Workload{Clients: 1, TTL: DefaultTTL, Keys: 1, Mode: "closed"}
	const path = "workload"
	f, _ := p.fields(e.val, path, workloadFields)
	p.clientsOK = p.optInt(f, path, "clients", 1, &w.Clients)
	d, hasD := f["duration"]
	o, hasO := f["ops"]
	switch {
	case hasD && hasO:
		p.add(o.key.Line, "workload.ops", "set duration or ops, not both (duration is on line %d)", d.key.Line)
	case hasD:
		p.optDuration(f, path, "duration", true, &w.Duration)
	case hasO:
		p.optInt(f, path, "ops", 1, &w.Ops)
	default:
		w.Duration = DefaultDuration
	}
	p.optDuration(f, path, "ttl", true, &w.TTL)
	p.optDuration(f, path, "critical_section", false, &w.CriticalSection)
	p.optInt(f, path, "keys", 1, &w.Keys)
	modeOK := true
	if x, ok := f["mode"]; ok {
		w.Mode, modeOK = get(p, x, "workload.mode", oneOf(allowedValues("workload.mode")...))
	}
	if x, ok := f["rate"]; ok {
		if v, ok := get(p, x, "workload.rate", asFloat); ok {
			switch {
			case v <= 0:
				p.add(x.line(), "workload.rate", "must be > 0 ops/s (got %v)", v)
			case w.Mode == "closed" && modeOK:
				p.add(x.line(), "workload.rate", "only used with mode: open (mode is closed: each client starts its next operation when the last ends)")
			default:
				w.Rate = v
			}
		}
	}
	if x, ok := f["mode"]; ok && w.Mode == "open" && modeOK {
		if _, hasRate := f["rate"]; !hasRate {
			p.add(x.line(), "workload.mode", "open needs rate: the arrival rate in ops/s, e.g. rate: 200")
		}
	}
	if x, ok := f["process_per_client"]; ok {
		w.ProcessPerClient, _ = get(p, x, "workload.process_per_client", asBool)
	}
	if x, ok := f["key_per_client"]; ok {
		w.KeyPerClient, _ = get(p, x, "workload.key_per_client", asBool)
	}
	p.optDuration(f, path, "acquire_timeout", true, &w.AcquireTimeout)
	if x, ok := f["on_lost"]; ok {
		w.OnLost, _ = get(p, x, "workload.on_lost", oneOf(allowedValues("workload.on_lost")...))
	}
	if x, ok := f["read_share"]; ok {
		if v, ok := get(p, x, "workload.read_share", asFloat); ok {
			if v < 0 || v > 1 {
				p.add(x.line(), "workload.read_share", "must be from 0 to 1 (got %v)", v)
			} else {
				w.ReadShare, p.readShare = v, &x
			}
		}
	}
}

// checkReadShare reports each lock without a shared side when
// workload.read_share asks for readers (a program run by exec may have
// one: it is told each operation's side).
func (p *parser) checkReadShare() {
	if p.readShare == nil || p.s.Workload.ReadShare == 0 {
		return
	}
	for _, m := range p.locks {
		if !m.known || m.spec.Name == execName || m.spec.KindOf() == locks.KindRW {
			continue
		}
		p.add(p.readShare.line(), "workload.read_share", "needs read-write locks (kind rw), but %s (line %d) is a %s: use a read-write lock such as redis-rw, or drop read_share",
			m.spec.Name, m.line, m.spec.KindOf())
	}
}

func (p *parser) resource(e entry) {
	p.s.Resource.Fencing = "off"
	f, _ := p.fields(e.val, "resource", resourceFields)
	if x, ok := f["fencing"]; ok {
		if v, ok := get(p, x, "resource.fencing", oneOf(allowedValues("resource.fencing")...)); ok {
			p.s.Resource.Fencing = v
		}
	}
}

// optInt sets *dst from f[name] when present; the value must be >= min.
// It reports whether the field is absent or valid.
func (p *parser) optInt(f map[string]entry, path, name string, min int, dst *int) bool {
	e, ok := f[name]
	if !ok {
		return true
	}
	v, ok := get(p, e, join(path, name), asInt)
	if !ok {
		return false
	}
	if v < min {
		p.add(e.line(), join(path, name), "must be >= %d (got %d)", min, v)
		return false
	}
	*dst = v
	return true
}

// optDuration sets *dst from f[name] when present; the value must be > 0
// when positive, else >= 0.
func (p *parser) optDuration(f map[string]entry, path, name string, positive bool, dst *time.Duration) bool {
	e, ok := f[name]
	if !ok {
		return true
	}
	v, ok := get(p, e, join(path, name), asDuration)
	if !ok {
		return false
	}
	switch {
	case positive && v <= 0:
		p.add(e.line(), join(path, name), "must be > 0 (got %s)", v)
		return false
	case v < 0:
		p.add(e.line(), join(path, name), "must be >= 0 (got %s)", v)
		return false
	}
	*dst = v
	return true
}

// finish applies the defaults that depend on several sections.
func (p *parser) finish() {
	w := &p.s.Workload
	longest := w.TTL
	for i := range p.s.Locks {
		l := &p.s.Locks[i]
		l.TTL = w.LockTTL(*l)
		longest = max(longest, l.TTL)
	}
	if w.AcquireTimeout == 0 {
		w.AcquireTimeout = max(2*longest, MinAcquireTimeout)
	}
}
