package scenarios

// The cluster section, its defaults from the locks' needs, and its cluster.Spec.

import (
	"fmt"
	"net"
	"strconv"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/locks"
)

func (p *parser) cluster(e entry) {
	before := len(p.list)
	c := &p.s.Cluster
	c.Provider = DefaultProvider
	f, _ := p.fields(e.val, "cluster", clusterFields)
	if x, ok := f["provider"]; ok {
		if v, ok := get(p, x, "cluster.provider", oneOf(allowedValues("cluster.provider")...)); ok {
			c.Provider = v
		}
	}
	section := func(name string, parse func(entry)) {
		if x, ok := f[name]; ok {
			parse(x)
		}
	}
	for _, b := range cluster.Backends() {
		section(b.Name, func(x entry) {
			set, given := p.tableSection(x, b)
			c.Declare(b.Name, set)
			if _, valid := set["primaries"]; valid && b.Name == cluster.BackendRedis {
				// clusterDefaults checks the locks' needs against it;
				// absent or invalid, it sets it from them.
				x := given["primaries"]
				p.primaries = &x
			}
			if err := b.Runs(c.Provider); err != nil && c.Provider != "external" {
				p.add(x.key.Line, "cluster."+b.Name, "%v", err)
			}
		})
	}
	section("external", func(x entry) { c.External = p.external(x) })
	defer func() { p.clusterBad = len(p.list) > before }()
	if c.Provider == "external" {
		for _, name := range tableNames() {
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

func (p *parser) external(e entry) *cluster.ExternalSpec {
	x := &cluster.ExternalSpec{}
	f, _ := p.fields(e.val, "cluster.external", externalFields)
	for _, name := range tableNames() {
		if fe, ok := f[name]; ok {
			x.Set(name, p.hostPorts(fe, name))
		}
	}
	return x
}

// hostPorts reads the list cluster.external.<name>.
func (p *parser) hostPorts(fe entry, name string) []string {
	var out []string
	path := "cluster.external." + name
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
			p.extBad[name] = true
			continue
		}
		out = append(out, s)
	}
	return out
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
		for _, name := range tableNames() {
			lock, ok := need[locks.Backend(name)]
			list := x.List(name)
			switch {
			case p.extBad[name]:
				// the list has entries that are not host:port, already reported
			case ok && len(list) == 0:
				p.add(p.lockLine(lock), "cluster.external."+name, "lock %s needs %s servers: list them as host:port", lock, name)
			case name == cluster.BackendRedis && minLock != "" && len(list) < minRedis:
				p.add(p.lockLine(minLock), "cluster.external.redis", "lock %s needs at least %d independent primaries (got %d)", minLock, minRedis, len(list))
			}
		}
		return
	}
	if _, ok := need[locks.Redis]; ok && c.Redis == nil {
		c.Redis = &cluster.RedisSpec{Persistence: "none"} // primaries below
	}
	for _, b := range cluster.Backends() {
		if lock, ok := need[locks.Backend(b.Name)]; ok {
			if _, declared := c.SettingsOf(b); declared {
				continue
			}
			c.Declare(b.Name, cluster.Settings{})
			if err := b.Runs(c.Provider); err != nil {
				p.add(p.lockLine(lock), "cluster.provider", "lock %s: %v", lock, err)
			}
		}
	}
	if r := c.Redis; r != nil {
		switch {
		case p.primaries == nil && r.Mode == cluster.RedisCluster:
			r.Primaries = max(3, minRedis)
		case p.primaries == nil:
			r.Primaries = minRedis
		case r.Primaries < minRedis && minLock != "":
			p.add(p.primaries.line(), "cluster.redis.primaries", "lock %s needs at least %d independent primaries (got %d)", minLock, minRedis, r.Primaries)
		}
	}
	if r := c.Redis; r != nil && r.Mode == cluster.RedisCluster {
		for _, m := range p.locks {
			if m.known && m.spec.Backend == locks.Redis && !m.spec.RedisCluster {
				p.add(m.line, m.path, "lock %s cannot run on a Redis Cluster (cluster.redis.mode: cluster): %s", m.spec.Name, noClusterReason(m.spec))
			}
		}
		for i, l := range p.s.Locks {
			// WAIT counts the acks of its own connection's writes, and a
			// cluster client sends it on a connection of its choosing.
			if v, ok := l.Options["wait_replicas"]; ok && v != "0" {
				p.add(l.Line, p.locks[i].path+".wait_replicas", "not supported on a Redis Cluster (cluster.redis.mode: cluster): WAIT would not count the replicas of the lock key's writes")
			}
		}
	}
}

// ClusterSpec is the cluster section with every backend it declares, for
// clients clients (at least one): what validation checks faults against,
// and what each run starts (its lock's backend only).
func (s *Scenario) ClusterSpec(clients int) cluster.Spec {
	cs := s.Cluster
	cs.Clients = max(clients, 1)
	return cs
}

// tableNames are the backends of the cluster's backend table, each a
// section cluster.<name> and a list cluster.external.<name>.
func tableNames() []string {
	var out []string
	for _, b := range cluster.Backends() {
		out = append(out, b.Name)
	}
	return out
}

// tableSection reads the section of backend b: each field checked against
// its row (kind, least value, allowed values), then b's Check. It returns
// the fields as given and their entries.
func (p *parser) tableSection(e entry, b cluster.TableBackend) (cluster.Settings, map[string]entry) {
	path := "cluster." + b.Name
	set := cluster.Settings{}
	f, _ := p.fields(e.val, path, fieldNames(path))
	for _, tf := range b.Fields {
		x, ok := f[tf.Name]
		if !ok {
			continue
		}
		fp := join(path, tf.Name)
		switch tf.Kind {
		case "int":
			v, ok := get(p, x, fp, asInt)
			if !ok {
				continue
			}
			if msg := tf.Refuses(v); msg != "" {
				p.add(x.line(), fp, "%s", msg)
				continue
			}
			set[tf.Name] = v
		case "bool":
			if v, ok := get(p, x, fp, asBool); ok {
				set[tf.Name] = v
			}
		default:
			conv := asString
			if len(tf.Allowed) > 0 {
				conv = oneOf(tf.Allowed...)
			}
			if v, ok := get(p, x, fp, conv); ok {
				set[tf.Name] = v
			}
		}
	}
	if b.Check != nil {
		if field, msg := b.Check(set, p.s.Cluster.Provider); msg != "" {
			line := e.line()
			if x, ok := f[field]; ok {
				line = x.line()
			}
			p.add(line, join(path, field), "%s", msg)
		}
	}
	return set, f
}

// noClusterReason says why lock s does not run on a Redis Cluster.
func noClusterReason(s locks.Spec) string {
	switch {
	case s.Name == execName:
		return "client programs connect to one Redis server; use a Go Redis lock such as redis-cad"
	case s.Quorum || s.MinRedis > 1:
		return "it takes a majority of independent primaries, not one cluster"
	}
	return "its client connects to one Redis server, not to a cluster"
}
