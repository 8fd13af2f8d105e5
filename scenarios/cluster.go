package scenarios

// The cluster section, its defaults from the locks' needs, and its cluster.Spec.

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

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
	section("redis", func(x entry) { c.Redis = p.redis(x) })
	for _, b := range cluster.Backends() {
		section(b.Name, func(x entry) {
			if c.Backends == nil {
				c.Backends = map[string]cluster.Settings{}
			}
			c.Backends[b.Name] = p.tableSection(x, b)
			if err := b.Runs(c.Provider); err != nil && c.Provider != "external" {
				p.add(x.key.Line, "cluster."+b.Name, "%v", err)
			}
		})
	}
	section("external", func(x entry) { c.External = p.external(x) })
	defer func() { p.clusterBad = len(p.list) > before }()
	if c.Provider == "external" {
		for _, name := range append([]string{"redis"}, tableNames()...) {
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

func (p *parser) redis(e entry) *cluster.RedisSpec {
	r := &cluster.RedisSpec{Persistence: "none"}
	f, _ := p.fields(e.val, "cluster.redis", redisFields)
	if x, ok := f["primaries"]; ok {
		p.primaries = &x
		p.optInt(f, "cluster.redis", "primaries", 1, &r.Primaries)
	}
	p.optInt(f, "cluster.redis", "replicas", 0, &r.Replicas)
	p.optInt(f, "cluster.redis", "sentinels", 0, &r.Sentinels)
	if x, ok := f["persistence"]; ok {
		if v, ok := get(p, x, "cluster.redis.persistence", oneOf(allowedValues("cluster.redis.persistence")...)); ok {
			r.Persistence = v
		}
	}
	if x, ok := f["image"]; ok {
		r.Image, _ = get(p, x, "cluster.redis.image", asString)
	}
	if x, ok := f["mode"]; ok {
		if v, ok := get(p, x, "cluster.redis.mode", oneOf(allowedValues("cluster.redis.mode")...)); ok {
			r.Mode = v
		}
		if r.Mode == cluster.RedisCluster {
			p.redisClusterMode(e, x, f, r)
		}
	}
	return r
}

// redisClusterMode checks a cluster.redis section with mode: cluster (at
// x): one Redis Cluster needs at least 3 primaries (a majority of them
// must survive a primary's loss to promote its replica; default 3), no
// sentinels (the cluster fails over by itself), and a provider that
// builds it.
func (p *parser) redisClusterMode(e, x entry, f map[string]entry, r *cluster.RedisSpec) {
	if pv := p.s.Cluster.Provider; pv != cluster.ProviderLocal && pv != cluster.ProviderExternal { // external: reported for the whole section
		p.add(x.line(), "cluster.redis.mode", "cluster is not supported by provider %s yet (use provider: local)", pv)
	}
	if pe, ok := f["primaries"]; ok && r.Primaries > 0 && r.Primaries < 3 {
		p.add(pe.line(), "cluster.redis.primaries", "mode cluster needs at least 3 primaries, so that a majority of them survives a primary's loss to promote its replica (got %d)", r.Primaries)
	}
	if r.Sentinels != 0 {
		line := e.line()
		if se, ok := f["sentinels"]; ok {
			line = se.line()
		}
		p.add(line, "cluster.redis.sentinels", "must be 0 with mode cluster: a Redis Cluster promotes replicas by itself (got %d)", r.Sentinels)
	}
}

func (p *parser) external(e entry) *cluster.ExternalSpec {
	x := &cluster.ExternalSpec{}
	f, _ := p.fields(e.val, "cluster.external", externalFields)
	for _, b := range []struct {
		name string
		dst  *[]string
	}{{"redis", &x.Redis}} {
		fe, ok := f[b.name]
		if !ok {
			continue
		}
		*b.dst = p.hostPorts(fe, b.name)
	}
	for _, name := range tableNames() {
		if fe, ok := f[name]; ok {
			if x.Table == nil {
				x.Table = map[string][]string{}
			}
			x.Table[name] = p.hostPorts(fe, name)
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
		lists := []struct {
			backend locks.Backend
			field   string
			list    []string
		}{{locks.Redis, "redis", x.Redis}}
		for _, name := range tableNames() {
			lists = append(lists, struct {
				backend locks.Backend
				field   string
				list    []string
			}{locks.Backend(name), name, x.Table[name]})
		}
		for _, b := range lists {
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
		c.Redis = &cluster.RedisSpec{Persistence: "none"}
	}
	if r := c.Redis; r != nil {
		switch {
		case p.primaries == nil && r.Mode == cluster.RedisCluster:
			r.Primaries = max(3, minRedis)
		case p.primaries == nil:
			r.Primaries = minRedis
		case r.Primaries == 0:
			r.Primaries = 1 // invalid as written, already reported
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
	for _, name := range tableNames() {
		if lock, ok := need[locks.Backend(name)]; ok && c.Backends[name] == nil {
			if c.Backends == nil {
				c.Backends = map[string]cluster.Settings{}
			}
			c.Backends[name] = cluster.Settings{}
			b, _ := cluster.LookupBackend(name)
			if err := b.Runs(c.Provider); err != nil {
				p.add(p.lockLine(lock), "cluster.provider", "lock %s: %v", lock, err)
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

// tableSection reads the section of table backend b: each field checked
// against its row (kind, least value, allowed values), then b's Check.
func (p *parser) tableSection(e entry, b cluster.TableBackend) cluster.Settings {
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
			if tf.Min != nil && v < *tf.Min {
				p.add(x.line(), fp, "must be >= %d (got %d)", *tf.Min, v)
				continue
			}
			if n := len(tf.Allowed); n > 0 && !slices.Contains(tf.Allowed, strconv.Itoa(v)) {
				list := tf.Allowed[0]
				if n > 1 {
					list = strings.Join(tf.Allowed[:n-1], ", ") + " or " + tf.Allowed[n-1]
				}
				p.add(x.line(), fp, "must be %s (got %d)", list, v)
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
		if field, msg := b.Check(set); msg != "" {
			line := e.line()
			if x, ok := f[field]; ok {
				line = x.line()
			}
			p.add(line, join(path, field), "%s", msg)
		}
	}
	return set
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
