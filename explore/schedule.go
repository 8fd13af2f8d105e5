package explore

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/scenarios"
)

// Schedule is one drawn run as data: the lock and its parameters, the
// topology, the workload and the faults. YAML writes it as an ordinary
// scenario file; shrinking edits a copy and writes it again.
type Schedule struct {
	// Name is the scenario's name ([a-z0-9-]+).
	Name string `json:"name"`
	Lock string `json:"lock"`
	// Options are the lock entry's options (renew, wait_replicas).
	Options map[string]string `json:"options,omitempty"`
	// Topology: Redis primaries, replicas per primary, sentinels and
	// persistence, or the ZooKeeper or etcd members.
	Primaries   int    `json:"primaries,omitempty"`
	Replicas    int    `json:"replicas,omitempty"`
	Sentinels   int    `json:"sentinels,omitempty"`
	Persistence string `json:"persistence,omitempty"`
	// RedisMode is "cluster" for a Redis Cluster of the primaries (each
	// with its replicas), "" for standalone primaries.
	RedisMode string `json:"redis_mode,omitempty"`
	// ZooKeeper and Etcd are the members of a schedule written before
	// they joined the backend table (Backend "zookeeper" or "etcd"
	// since); read, never drawn.
	ZooKeeper int `json:"zookeeper,omitempty"`
	Etcd      int `json:"etcd,omitempty"`
	// Backend is a table backend's name (postgres, nats, ...) when the
	// lock runs on one, with its section's int fields in Settings.
	Backend  string         `json:"backend,omitempty"`
	Settings map[string]int `json:"settings,omitempty"`
	// Workload.
	Clients  int            `json:"clients"`
	TTL      time.Duration  `json:"ttl"`
	CS       time.Duration  `json:"critical_section"`
	Duration time.Duration  `json:"duration"`
	Faults   []faults.Fault `json:"faults"`
	// Expect is the expect section's default line ("{incidents: 0,
	// lock_faults: 0}" for an explored run; the finding for a minimal one).
	Expect string `json:"expect"`
	// Description is the scenario's description.
	Description string `json:"description"`
}

// Clone returns a deep copy of s.
func (s Schedule) Clone() Schedule {
	c := s
	c.Options = map[string]string{}
	for k, v := range s.Options {
		c.Options[k] = v
	}
	c.Settings = maps.Clone(s.Settings)
	c.Faults = make([]faults.Fault, len(s.Faults))
	for i, f := range s.Faults {
		c.Faults[i] = f
		c.Faults[i].Groups = nil
		for _, g := range f.Groups {
			c.Faults[i].Groups = append(c.Faults[i].Groups, slices.Clone(g))
		}
	}
	return c
}

// FaultTypes returns the sorted distinct types of s's faults.
func (s Schedule) FaultTypes() []string {
	var out []string
	for _, f := range s.Faults {
		if !slices.Contains(out, f.Type) {
			out = append(out, f.Type)
		}
	}
	sort.Strings(out)
	return out
}

// ms writes d as a YAML duration in whole milliseconds.
func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) + "ms" }

// YAML is s as a scenario file `chaos run` accepts.
func (s Schedule) YAML() string {
	var b strings.Builder
	fmt.Fprintf(&b, "name: %s\n", s.Name)
	if s.Description != "" {
		fmt.Fprintf(&b, "description: >\n  %s\n", s.Description)
	}
	b.WriteString("seed: 1\ncluster:\n  provider: local\n")
	switch {
	case s.ZooKeeper > 0:
		fmt.Fprintf(&b, "  zookeeper: {nodes: %d}\n", s.ZooKeeper)
	case s.Etcd > 0:
		fmt.Fprintf(&b, "  etcd: {nodes: %d}\n", s.Etcd)
	case s.Backend != "":
		var fields []string
		for _, k := range slices.Sorted(maps.Keys(s.Settings)) {
			fields = append(fields, fmt.Sprintf("%s: %d", k, s.Settings[k]))
		}
		fmt.Fprintf(&b, "  %s: {%s}\n", s.Backend, strings.Join(fields, ", "))
	default:
		mode := ""
		if s.RedisMode != "" {
			mode = "mode: " + s.RedisMode + ", "
		}
		fmt.Fprintf(&b, "  redis: {%sprimaries: %d, replicas: %d, sentinels: %d, persistence: %s}\n",
			mode, s.Primaries, s.Replicas, s.Sentinels, orNone(s.Persistence))
	}
	lock := s.Lock
	if len(s.Options) > 0 {
		parts := []string{"name: " + s.Lock}
		for _, k := range slices.Sorted(maps.Keys(s.Options)) {
			parts = append(parts, k+": "+s.Options[k])
		}
		lock = "{" + strings.Join(parts, ", ") + "}"
	}
	fmt.Fprintf(&b, "locks: [%s]\n", lock)
	fmt.Fprintf(&b, "workload:\n  clients: %d\n  duration: %s\n  ttl: %s\n  critical_section: %s\n  process_per_client: true\n",
		s.Clients, ms(s.Duration), ms(s.TTL), ms(s.CS))
	if len(s.Faults) > 0 {
		b.WriteString("faults:\n")
		for _, f := range s.Faults {
			fmt.Fprintf(&b, "  - %s\n", faultYAML(f))
		}
	}
	b.WriteString("resource:\n  fencing: observe\n")
	expect := s.Expect
	if expect == "" {
		expect = "{incidents: 0, lock_faults: 0}"
	}
	fmt.Fprintf(&b, "expect:\n  default: %s\n", expect)
	return b.String()
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// faultYAML writes f as one flow mapping, its set fields only.
func faultYAML(f faults.Fault) string {
	parts := []string{"at: " + ms(f.At)}
	if f.For > 0 {
		parts = append(parts, "for: "+ms(f.For))
	}
	parts = append(parts, "type: "+f.Type)
	add := func(k, v string) {
		if v != "" {
			parts = append(parts, k+": "+v)
		}
	}
	add("link", f.Link)
	add("node", f.Node)
	add("isolate", f.Isolate)
	add("client", f.Client)
	if len(f.Groups) > 0 {
		var gs []string
		for _, g := range f.Groups {
			gs = append(gs, "["+strings.Join(g, ", ")+"]")
		}
		parts = append(parts, "groups: ["+strings.Join(gs, ", ")+"]")
	}
	if f.Aimed() {
		add("when", f.When)
		if f.AfterEnter > 0 {
			add("after_enter", ms(f.AfterEnter))
		}
		if f.AfterEnterMax > 0 {
			add("after_enter_max", ms(f.AfterEnterMax))
		}
	}
	// The value fields its type declares: each one required, set, or
	// with a default (written out, so the file says what the run did).
	typ, _ := faults.Lookup(f.Type)
	for _, v := range typ.Values {
		var text string
		switch v.Kind {
		case faults.KindDuration:
			if d := f.Duration(v.Name); d != 0 || v.Required || v.Default != "" {
				text = ms(d)
			}
		case faults.KindEnum:
			text = f.Text(v.Name)
		case faults.KindFactor:
			text = strconv.FormatFloat(f.Factor(v.Name), 'g', -1, 64)
		default:
			if n := f.Number(v.Name); n != 0 || v.Required || v.Default != "" {
				text = strconv.Itoa(n)
			}
		}
		add(v.Name, text)
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// Parse validates s with the scenario validator, as `chaos run` would
// read its file.
func (s Schedule) Parse() (*scenarios.Scenario, error) {
	return scenarios.Parse(s.Name+".yaml", []byte(s.YAML()))
}
