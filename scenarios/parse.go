package scenarios

import (
	"fmt"
	"net"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

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
	topFields      = []string{"name", "description", "seed", "cluster", "locks", "workload", "sweep", "faults", "resource", "expect"}
	clusterFields  = []string{"provider", "redis", "zookeeper", "etcd", "external"}
	redisFields    = []string{"primaries", "replicas", "sentinels", "persistence", "image"}
	ensembleFields = []string{"nodes", "image"}
	externalFields = []string{"redis", "zookeeper", "etcd"}
	workloadFields = []string{"clients", "duration", "ops", "ttl", "critical_section", "keys", "mode", "rate",
		"process_per_client", "acquire_timeout", "on_lost"}
	resourceFields = []string{"fencing"}
	expectFields   = []string{"violations", "stale_tokens", "stale_rejected", "stale_accepted", "lost_updates", "errors", "incidents", "lock_faults", "client_faults", "duplicate_tokens", "token_regressions", "min_visits"}
	lockFields     = []string{"name", "ttl", "retry", "key", "label"}

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
	if err := p.err(); err != nil {
		return nil, err
	}
	return p.s, nil
}

// parser holds one Parse call's state.
type parser struct {
	problems
	s    *Scenario
	topo topology

	// unsure is the node kinds whose cluster section had errors, so fault
	// checks do not pile more errors on them.
	unsure    nodeKind
	clientsOK bool
	primaries *entry // cluster.redis.primaries as written
	locks     []lockMeta
	faults    []faultInfo
	sweepVals [][]*yaml.Node  // value nodes of each Sweep.Params entry
	extBad    map[string]bool // cluster.external lists with a bad entry
}

// lockMeta is what validation needs about how a locks entry was written.
type lockMeta struct {
	path     string
	line     int
	spec     locks.Spec
	known    bool
	explicit bool     // label: given
	written  []string // "k=v" of ttl, retry, key and options as written
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
	p.buildTopology()
	p.checkFaults()
	if e, ok := top["expect"]; ok {
		p.expect(e)
	}
	p.finish()
}

func (p *parser) cluster(e entry) {
	before := len(p.list)
	c := &p.s.Cluster
	c.Provider = DefaultProvider
	f, _ := p.fields(e.val, "cluster", clusterFields)
	if x, ok := f["provider"]; ok {
		if v, ok := get(p, x, "cluster.provider", oneOf("local", "docker", "external")); ok {
			c.Provider = v
		}
	}
	if len(p.list) > before {
		p.unsure = kServer // provider or section shape unknown
	}
	section := func(name string, kinds nodeKind, parse func(entry)) {
		if x, ok := f[name]; ok {
			n := len(p.list)
			parse(x)
			if len(p.list) > n {
				p.unsure |= kinds
			}
		}
	}
	section("redis", kPrimary|kReplica|kSentinel, func(x entry) { c.Redis = p.redis(x) })
	section("zookeeper", kZK, func(x entry) { c.ZooKeeper = p.ensemble(x, "cluster.zookeeper") })
	section("etcd", kEtcd, func(x entry) { c.Etcd = p.ensemble(x, "cluster.etcd") })
	section("external", kServer, func(x entry) { c.External = p.external(x) })
	if c.Provider == "external" {
		for _, name := range []string{"redis", "zookeeper", "etcd"} {
			if x, ok := f[name]; ok {
				p.add(x.key.Line, "cluster."+name, "not used with provider external: list the servers under cluster.external.%s", name)
			}
		}
		if c.External == nil {
			p.add(e.line(), "cluster.external", "required with provider external: {redis: [host:port], zookeeper: [...], etcd: [...]}")
		}
	} else if x, ok := f["external"]; ok {
		p.add(x.key.Line, "cluster.external", "only used with provider: external (provider is %s)", c.Provider)
	}
}

func (p *parser) redis(e entry) *Redis {
	r := &Redis{Persistence: "none"}
	f, _ := p.fields(e.val, "cluster.redis", redisFields)
	if x, ok := f["primaries"]; ok {
		p.primaries = &x
		p.optInt(f, "cluster.redis", "primaries", 1, &r.Primaries)
	}
	p.optInt(f, "cluster.redis", "replicas", 0, &r.Replicas)
	p.optInt(f, "cluster.redis", "sentinels", 0, &r.Sentinels)
	if x, ok := f["persistence"]; ok {
		if v, ok := get(p, x, "cluster.redis.persistence", oneOf("none", "everysec", "always")); ok {
			r.Persistence = v
		}
	}
	if x, ok := f["image"]; ok {
		r.Image, _ = get(p, x, "cluster.redis.image", asString)
	}
	return r
}

func (p *parser) ensemble(e entry, path string) *Nodes {
	n := &Nodes{Nodes: 1}
	f, _ := p.fields(e.val, path, ensembleFields)
	if x, ok := f["nodes"]; ok {
		if v, ok := get(p, x, join(path, "nodes"), asInt); ok {
			if v == 1 || v == 3 || v == 5 {
				n.Nodes = v
			} else {
				p.add(x.line(), join(path, "nodes"), "must be 1, 3 or 5 (got %d)", v)
			}
		}
	}
	if x, ok := f["image"]; ok {
		n.Image, _ = get(p, x, join(path, "image"), asString)
	}
	return n
}

func (p *parser) external(e entry) *External {
	x := &External{}
	f, _ := p.fields(e.val, "cluster.external", externalFields)
	for _, b := range []struct {
		name string
		dst  *[]string
	}{{"redis", &x.Redis}, {"zookeeper", &x.ZooKeeper}, {"etcd", &x.Etcd}} {
		fe, ok := f[b.name]
		if !ok {
			continue
		}
		path := "cluster.external." + b.name
		items, _ := p.sequence(fe.val, path)
		for i, it := range items {
			s, msg := asString(it)
			if msg == "" {
				msg = checkHostPort(s)
			}
			if msg != "" {
				p.add(it.Line, index(path, i), "%s", msg)
				if p.extBad == nil {
					p.extBad = map[string]bool{}
				}
				p.extBad[b.name] = true
				continue
			}
			*b.dst = append(*b.dst, s)
		}
	}
	return x
}

func checkHostPort(s string) string {
	host, port, err := net.SplitHostPort(s)
	if err == nil && host != "" {
		if n, err := strconv.Atoi(port); err == nil && n > 0 && n < 65536 {
			return ""
		}
	}
	return fmt.Sprintf("%q is not host:port (e.g. 10.0.0.5:6379)", s)
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
		w.Mode, modeOK = get(p, x, "workload.mode", oneOf("closed", "open"))
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
	p.optDuration(f, path, "acquire_timeout", true, &w.AcquireTimeout)
	if x, ok := f["on_lost"]; ok {
		w.OnLost, _ = get(p, x, "workload.on_lost", oneOf("ignore", "abort"))
	}
}

func (p *parser) resource(e entry) {
	p.s.Resource.Fencing = "off"
	f, _ := p.fields(e.val, "resource", resourceFields)
	if x, ok := f["fencing"]; ok {
		if v, ok := get(p, x, "resource.fencing", oneOf("off", "observe", "enforce")); ok {
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

// knownLocks lists the registered lock names for messages.
func knownLocks() string {
	names := locks.Names()
	if len(names) == 0 {
		return "none registered: import github.com/locklab/locklab/locks/all"
	}
	return strings.Join(names, ", ")
}

func (p *parser) lockList(e entry) {
	items, ok := p.sequence(e.val, "locks")
	if ok && len(items) == 0 {
		p.add(e.line(), "locks", "needs at least one lock (known: %s)", knownLocks())
	}
	for i, n := range items {
		p.lock(n, i)
	}
	p.labels()
}

// lookup finds a lock spec, reporting an unknown name at line under field.
func (p *parser) lookup(name string, line int, field string) (locks.Spec, bool) {
	spec, ok := locks.Lookup(name)
	if !ok {
		p.add(line, field, "unknown lock %q (known: %s)", name, knownLocks())
	}
	return spec, ok
}

func (p *parser) lock(n *yaml.Node, i int) {
	path := index("locks", i)
	l := Lock{Line: n.Line}
	m := lockMeta{path: path, line: n.Line}
	rn := resolve(n)
	switch {
	case rn.Kind == yaml.ScalarNode && !isNull(rn):
		l.Name = rn.Value
		m.spec, m.known = p.lookup(l.Name, n.Line, path)
	case rn.Kind == yaml.MappingNode:
		es, _ := p.mapping(rn, path)
		var opts []entry
		for _, e := range es {
			if e.name == "name" {
				if name, ok := get(p, e, join(path, "name"), asString); ok {
					l.Name = name
					m.spec, m.known = p.lookup(name, e.line(), join(path, "name"))
				}
			}
		}
		if l.Name == "" {
			if _, named := find(es, "name"); !named {
				p.add(n.Line, join(path, "name"), "required: the lock's name (known: %s)", knownLocks())
			}
		}
		for _, e := range es {
			field := join(path, e.name)
			raw, _ := scalar(e.val, "")
			switch e.name {
			case "name":
			case "ttl":
				if v, ok := get(p, e, field, asDuration); ok {
					if v <= 0 {
						p.add(e.line(), field, "must be > 0 (got %s)", v)
					}
					l.TTL = v
					m.written = append(m.written, "ttl="+raw)
				}
			case "retry":
				if v, ok := get(p, e, field, asDuration); ok {
					if v <= 0 {
						p.add(e.line(), field, "must be > 0 (got %s)", v)
					}
					l.Retry = v
					m.written = append(m.written, "retry="+raw)
				}
			case "key":
				if v, ok := get(p, e, field, asString); ok {
					l.Key = v
					m.written = append(m.written, "key="+v)
				}
			case "label":
				if v, ok := get(p, e, field, asString); ok {
					l.Label, m.explicit = v, true
				}
			default:
				opts = append(opts, e)
			}
		}
		p.lockOptions(&l, &m, opts)
	default:
		p.add(n.Line, path, "must be a lock name or {name: NAME, ttl: ..., <options>} (got %s)", kindName(rn))
	}
	p.s.Locks = append(p.s.Locks, l)
	p.locks = append(p.locks, m)
}

// lockOptions checks a lock entry's backend options against its spec.
func (p *parser) lockOptions(l *Lock, m *lockMeta, opts []entry) {
	if !m.known {
		return // the name is wrong or missing: nothing to check options against
	}
	allowed := append([]string(nil), lockFields...)
	for _, o := range m.spec.Options {
		allowed = append(allowed, o.Name)
	}
	good := true
	for _, e := range opts {
		field := join(m.path, e.name)
		if !contains(allowed, e.name) {
			p.add(e.key.Line, field, "unknown field (allowed: %s)", strings.Join(allowed, ", "))
			good = false
			continue
		}
		v, msg := scalar(e.val, "a value")
		if msg == "" {
			msg = checkOption(m.spec, e.name, v)
		}
		if msg != "" {
			p.add(e.line(), field, "%s", msg)
			good = false
			continue
		}
		if l.Options == nil {
			l.Options = map[string]string{}
		}
		l.Options[e.name] = v
		m.written = append(m.written, e.name+"="+v)
	}
	if good && len(l.Options) > 0 {
		if err := m.spec.CheckOptions(l.Options); err != nil {
			p.add(m.line, m.path, "%v", err)
		}
	}
}

// checkOption runs the option's own Check, for a message without the
// "lock x option y:" prefix CheckOptions adds (the field path says that).
func checkOption(spec locks.Spec, name, v string) string {
	for _, o := range spec.Options {
		if o.Name == name && o.Check != nil {
			if err := o.Check(v); err != nil {
				return err.Error()
			}
		}
	}
	return ""
}

func find(es []entry, name string) (entry, bool) {
	for _, e := range es {
		if e.name == name {
			return e, true
		}
	}
	return entry{}, false
}

// labels gives every lock entry its label and checks they are unique.
func (p *parser) labels() {
	ls := p.s.Locks
	count := map[string]int{}
	for _, l := range ls {
		count[l.Name]++
	}
	for i := range ls {
		m := &p.locks[i]
		switch {
		case m.explicit:
		case count[ls[i].Name] > 1 && len(m.written) > 0:
			w := append([]string(nil), m.written...)
			sort.Strings(w)
			ls[i].Label = ls[i].Name + " " + strings.Join(w, " ")
		default:
			ls[i].Label = ls[i].Name
		}
	}
	used := map[string]int{}
	for i, l := range ls {
		if l.Name == "" {
			continue
		}
		m := p.locks[i]
		switch j, dup := used[l.Label]; {
		case l.Label == "default":
			p.add(m.line, m.path, `label "default" is reserved for expect: default; choose another label`)
			continue
		case dup && !m.explicit && !p.locks[j].explicit && ls[j].Name == l.Name:
			p.add(m.line, m.path, "same lock and options as locks[%d]: give one a label: to run both", j)
			continue
		case dup:
			p.add(m.line, m.path, "label %q is already used by locks[%d]", l.Label, j)
			continue
		}
		used[l.Label] = i
		for j, o := range ls {
			if j != i && o.Name == l.Label && l.Name != l.Label {
				p.add(m.line, m.path, "label %q is the name of another lock (locks[%d]), so expect: could not tell them apart", l.Label, j)
				break
			}
		}
	}
}

// clusterDefaults adds the backend sections locks need and checks the ones
// given: a missing section becomes a single node (Redis: as many primaries
// as the locks need), a given one must be big enough.
func (p *parser) clusterDefaults() {
	c := &p.s.Cluster
	need := map[locks.Backend]string{} // backend -> first lock needing it
	minRedis, minLock := 1, ""
	for i, m := range p.locks {
		if !m.known {
			continue
		}
		if _, ok := need[m.spec.Backend]; !ok {
			need[m.spec.Backend] = p.s.Locks[i].Name
		}
		if m.spec.MinRedis > minRedis {
			minRedis, minLock = m.spec.MinRedis, m.spec.Name
		}
	}
	if c.Provider == "external" {
		x := c.External
		if x == nil {
			return
		}
		for _, b := range []struct {
			backend locks.Backend
			field   string
			list    []string
		}{{locks.Redis, "redis", x.Redis}, {locks.ZooKeeper, "zookeeper", x.ZooKeeper}, {locks.Etcd, "etcd", x.Etcd}} {
			lock, ok := need[b.backend]
			switch {
			case p.extBad[b.field]:
				// the list has entries that are not host:port, already reported
			case ok && len(b.list) == 0:
				p.add(p.lockLine(lock), "cluster.external."+b.field, "lock %s needs %s servers: list them as host:port", lock, b.field)
			case b.backend == locks.Redis && minLock != "" && len(b.list) < minRedis:
				p.add(p.lockLine(minLock), "cluster.external.redis", "lock %s needs at least %d independent primaries (got %d)", minLock, minRedis, len(b.list))
			}
		}
		return
	}
	if _, ok := need[locks.Redis]; ok && c.Redis == nil {
		c.Redis = &Redis{Persistence: "none"}
	}
	if r := c.Redis; r != nil {
		switch {
		case p.primaries == nil:
			r.Primaries = minRedis
		case r.Primaries == 0:
			r.Primaries = 1 // invalid as written, already reported
		case r.Primaries < minRedis && minLock != "":
			p.add(p.primaries.line(), "cluster.redis.primaries", "lock %s needs at least %d independent primaries (got %d)", minLock, minRedis, r.Primaries)
		}
	}
	if _, ok := need[locks.ZooKeeper]; ok && c.ZooKeeper == nil {
		c.ZooKeeper = &Nodes{Nodes: 1}
	}
	if _, ok := need[locks.Etcd]; ok && c.Etcd == nil {
		c.Etcd = &Nodes{Nodes: 1}
	}
}

// lockLine is the line of the first locks entry named name.
func (p *parser) lockLine(name string) int {
	for _, l := range p.s.Locks {
		if l.Name == name {
			return l.Line
		}
	}
	return 0
}

func (p *parser) buildTopology() {
	c := &p.s.Cluster
	t := topology{external: c.Provider == "external", etcdPairs: c.Provider != "external", unsure: p.unsure}
	if t.external {
		if x := c.External; x != nil {
			t.redis, t.zk, t.etcd = len(x.Redis), len(x.ZooKeeper), len(x.Etcd)
		}
	} else {
		if r := c.Redis; r != nil {
			t.redis, t.replicas, t.sentinel = r.Primaries, r.Replicas, r.Sentinels
		}
		if z := c.ZooKeeper; z != nil {
			t.zk = z.Nodes
		}
		if e := c.Etcd; e != nil {
			t.etcd = e.Nodes
		}
	}
	if p.clientsOK {
		t.clients = p.s.Workload.Clients
		if sw := p.s.Sweep; sw != nil && len(sw.Clients) > 0 {
			t.clients = sw.Clients[0]
			for _, n := range sw.Clients {
				t.clients = min(t.clients, n)
			}
		}
	}
	p.topo = t
}

func (p *parser) sweep(e entry) {
	es, ok := p.mapping(e.val, "sweep")
	sw := &Sweep{}
	clientsOK := true
	for _, x := range es {
		path := join("sweep", x.name)
		if x.name == "clients" {
			items, _ := p.sequence(x.val, path)
			seen := map[int]bool{}
			for j, it := range items {
				v, msg := asInt(it)
				switch {
				case msg != "":
				case v < 1:
					msg = fmt.Sprintf("must be >= 1 (got %d)", v)
				case seen[v]:
					msg = fmt.Sprintf("duplicate value %d", v)
				}
				if msg != "" {
					p.add(it.Line, index(path, j), "%s", msg)
					clientsOK = false
					continue
				}
				seen[v] = true
				sw.Clients = append(sw.Clients, v)
			}
			if len(items) == 0 {
				p.add(x.line(), path, "needs at least one value, e.g. clients: [1, 4, 16]")
			}
			continue
		}
		m := sweepKeyRE.FindStringSubmatch(x.name)
		if m == nil {
			p.add(x.key.Line, path, `unknown field (allowed: clients, faults[N].FIELD such as "faults[0].for")`)
			continue
		}
		i, _ := strconv.Atoi(m[1])
		field := m[2]
		if i >= len(p.faults) {
			p.add(x.key.Line, path, "no fault %d (faults has %d entries)", i, len(p.faults))
			continue
		}
		if !sweepable(field) {
			var fields []string
			for _, f := range faultFields {
				if sweepable(f) {
					fields = append(fields, f)
				}
			}
			p.add(x.key.Line, path, "%s cannot be swept (sweepable fault fields: %s)", field, strings.Join(fields, ", "))
			continue
		}
		if spec, ok := faultSpecs[p.faults[i].f.Type]; ok && !contains(spec.fields(), field) {
			p.add(x.key.Line, path, "a %s fault has no field %s (allowed: %s)", p.faults[i].f.Type, field, strings.Join(spec.fields(), ", "))
			continue
		}
		items, _ := p.sequence(x.val, path)
		if len(items) == 0 {
			p.add(x.line(), path, "needs at least one value, e.g. [1s, 5s]")
			continue
		}
		param := SweepParam{Fault: i, Field: field, Line: x.key.Line}
		seen := map[string]bool{}
		var nodes []*yaml.Node
		for j, it := range items {
			v, msg := scalar(it, "a value")
			if msg == "" {
				// Store client and link values the way the fault field
				// stores them, so "client-3" and 3 sweep the same client.
				var f Fault
				if setFaultField(&f, field, it) == "" {
					switch field {
					case "client":
						v = f.Client
					case "link":
						v = f.Link
					}
				}
			}
			if msg == "" && seen[v] {
				msg = fmt.Sprintf("duplicate value %q", v)
			}
			if msg != "" {
				p.add(it.Line, index(path, j), "%s", msg)
				continue
			}
			seen[v] = true
			param.Values = append(param.Values, v)
			nodes = append(nodes, resolve(it))
		}
		if len(nodes) > 0 {
			sw.Params = append(sw.Params, param)
			p.sweepVals = append(p.sweepVals, nodes)
		}
	}
	if !clientsOK {
		p.clientsOK = false
	}
	if ok && len(es) == 0 {
		p.add(e.line(), "sweep", `empty: set clients: [1, 4] and/or "faults[N].FIELD": [values]`)
	}
	runs := max(1, len(sw.Clients))
	for _, sp := range sw.Params {
		runs = min(runs*len(sp.Values), MaxSweepRuns+1)
	}
	if runs > MaxSweepRuns {
		p.add(e.key.Line, "sweep", "more than %d runs per lock (every combination of the values runs); sweep fewer values", MaxSweepRuns)
	}
	if len(sw.Clients) > 0 || len(sw.Params) > 0 {
		p.s.Sweep = sw
	}
}

// checkFaults validates every fault against the topology. A fault with
// swept fields is checked once per swept value (the other swept fields at
// their first value), and problems with a swept value are reported at the
// value in sweep:.
func (p *parser) checkFaults() {
	var params []SweepParam
	if p.s.Sweep != nil {
		params = p.s.Sweep.Params
	}
	for i := range p.faults {
		fi := &p.faults[i]
		var mine []int
		for k, sp := range params {
			if sp.Fault == i {
				mine = append(mine, k)
			}
		}
		if len(mine) == 0 {
			p.checkFault(fi)
			continue
		}
		base := fi.clone()
		for _, k := range mine {
			sp := params[k]
			for j, v := range p.sweepVals[k] {
				if setFaultField(&base.f, sp.Field, v) == "" {
					base.has[sp.Field] = pos{v.Line, index("sweep.faults["+strconv.Itoa(i)+"]."+sp.Field, j)}
					delete(base.bad, sp.Field)
					break
				}
			}
		}
		for _, k := range mine {
			sp := params[k]
			for j, v := range p.sweepVals[k] {
				inst := base.clone()
				field := index("sweep.faults["+strconv.Itoa(i)+"]."+sp.Field, j)
				if msg := setFaultField(&inst.f, sp.Field, v); msg != "" {
					p.add(v.Line, field, "%s", msg)
					continue
				}
				inst.has[sp.Field] = pos{v.Line, field}
				delete(inst.bad, sp.Field)
				p.checkFault(&inst)
			}
		}
	}
	for _, fi := range p.faults {
		f := fi.f
		f.Line = fi.line
		p.s.Faults = append(p.s.Faults, f)
		if f.Type == FaultPauseClient {
			// DESIGN §4: pause-client implies process_per_client, even
			// over an explicit false (the design's own example has one).
			p.s.Workload.ProcessPerClient = true
		}
	}
}

func (p *parser) expect(e entry) {
	es, _ := p.mapping(e.val, "expect")
	known := map[string]bool{"default": true}
	var names []string
	for _, l := range p.s.Locks {
		for _, k := range []string{l.Label, l.Name} {
			if k != "" && !known[k] {
				known[k] = true
				names = append(names, k)
			}
		}
	}
	fencing := p.s.Resource.Fencing
	for _, x := range es {
		path := join("expect", x.name)
		if !known[x.name] {
			p.add(x.key.Line, path, "no lock or label %q in locks (known: default, %s)", x.name, strings.Join(names, ", "))
		}
		f, _ := p.fields(x.val, path, expectFields)
		ex := Expect{Line: x.key.Line}
		p.optInt(f, path, "min_visits", 0, &ex.MinVisits)
		for _, name := range expectFields {
			fe, ok := f[name]
			if !ok || name == "min_visits" {
				continue
			}
			field := join(path, name)
			s, msg := scalar(fe.val, "a condition ("+conditionHint+")")
			if msg != "" {
				p.add(fe.line(), field, "%s", msg)
				continue
			}
			c, err := ParseCondition(s)
			if err != nil {
				p.add(fe.line(), field, "%v", err)
				continue
			}
			if name == "stale_rejected" && fencing != "enforce" && !c.Check(0) {
				p.add(fe.line(), field, "%s can never hold: tokens are only rejected with resource.fencing: enforce (fencing is %s)", c, fencing)
			}
			if dst := ex.field(name); dst != nil {
				*dst = c.String()
			}
		}
		if p.s.Expect == nil {
			p.s.Expect = map[string]Expect{}
		}
		p.s.Expect[x.name] = ex
	}
}

// finish applies the defaults that depend on several sections.
func (p *parser) finish() {
	w := &p.s.Workload
	longest := w.TTL
	for i := range p.s.Locks {
		l := &p.s.Locks[i]
		if l.TTL <= 0 {
			l.TTL = w.TTL
		}
		longest = max(longest, l.TTL)
	}
	if w.AcquireTimeout == 0 {
		w.AcquireTimeout = max(2*longest, MinAcquireTimeout)
	}
}
