// Package redis is Redis's row of the cluster's backend table: primaries
// redis-0, redis-1, ..., replicas redis-<i>-r<j> of each and sentinels
// sentinel-<k> (cluster.redis), under every provider, or one Redis Cluster
// of the primaries and their replicas (mode: cluster, provider local,
// cluster.go); their command lines, Sentinel's configuration, readiness,
// roles, versions and the primary of a group, and the peer fronts that
// carry replication and Sentinel's traffic through per-pair links
// (peers.go).
//
// The row is listed first in the table (cluster.Backends); a spec keeps its
// section as the typed cluster.RedisSpec, which the cluster hands the row
// as settings (Spec.SettingsOf).
//
// Of locklab it imports only cluster and internal/resp.
package redis

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/locklab/locklab/cluster"
)

// Sentinel timing: fast failure detection so failover scenarios finish in
// seconds. down-after is the silence after which a sentinel deems the
// primary down; failover-timeout bounds a failover attempt (and twice it is
// the pause before the same primary is failed over again).
const (
	sentinelDownAfter       = 1000 * time.Millisecond
	sentinelFailoverTimeout = 3000 * time.Millisecond
)

// The ports of a Redis server and a Sentinel where each node has an
// address of its own (provider netns): Redis's standard ones.
const (
	redisPort    = 6379
	sentinelPort = 26379
)

// DefaultImage is the official image provider docker runs when it is
// present and cluster.redis.image names none.
const DefaultImage = "redis:7.2"

// row is Redis's row of the backend table (registered by init). Its
// fields are RedisSpec's (Spec.Declare and Spec.SettingsOf convert).
var row = cluster.TableBackend{
	Name: cluster.BackendRedis,
	Doc:  "Redis servers (not with provider external): independent primaries with their replicas and sentinels, or one Redis Cluster",
	Fields: []cluster.TableField{
		{Name: "primaries", Kind: "int", Default: 1, DefaultDoc: "the most any lock needs (at least 1)", Min: &one, Example: "3",
			Doc: "independent Redis primaries (redis-0, redis-1, ...); quorum locks use every one"},
		{Name: "replicas", Kind: "int", Default: 0, Min: &zero, Example: "1",
			Doc: "replicas of each primary (redis-0-r0, ...)"},
		{Name: "sentinels", Kind: "int", Default: 0, Min: &zero, Example: "3",
			Doc: "Sentinel processes watching the primaries (sentinel-0, ...); a failover fault needs at least 1 and replicas"},
		{Name: "mode", Kind: "string", Default: cluster.RedisStandalone, Allowed: []string{cluster.RedisStandalone, cluster.RedisCluster}, Example: "cluster",
			Doc: "standalone: independent primaries, each with its replicas, failed over by Sentinel when sentinels > 0; cluster: one Redis Cluster of the primaries (16384 slots split evenly, redis-0 first) and their replicas, failed over by the cluster itself: needs primaries >= 3, sentinels: 0, provider local"},
		{Name: "persistence", Kind: "string", Default: cluster.PersistNone, Allowed: []string{cluster.PersistNone, cluster.PersistEverysec, cluster.PersistAlways}, Example: "always",
			Doc: "append-only file fsync policy: what a restarted Redis node still holds"},
		{Name: cluster.ImageField, Kind: "string", Default: "", DefaultDoc: DefaultImage + " (locklab/redis:7.0 when only that exists)", Example: DefaultImage,
			Doc: "container image, provider docker only"},
	},
	Check:       check,
	ExternalDoc: "Redis servers (as many as the locks need primaries)",
	Kinds: []cluster.TableKind{{Kind: cluster.KindRedis, Pattern: "redis-N", Faults: []string{"failover"}},
		{Kind: cluster.KindReplica, Pattern: "redis-N-rM"}, {Kind: cluster.KindSentinel, Pattern: "sentinel-N", ClockSource: "INFO server_time_usec"}},
	Providers:       []string{cluster.ProviderLocal, cluster.ProviderNetns, cluster.ProviderDocker},
	Faults:          []string{"pause", "kill", "restart", "power-cut", "clock-jump", "clock-drift", "clock-strobe"},
	ReadClock:       readClock,
	ClockSource:     "TIME",
	Binaries:        []string{"redis-server", "redis-sentinel"},
	Packages:        []string{"redis-server", "redis-sentinel"},
	ClientPort:      redisPort,
	DefaultImage:    DefaultImage,
	Fallback:        cluster.RedisPeers,
	SyncsEveryWrite: func(s cluster.Settings) bool { return s.String("persistence") == cluster.PersistAlways },
	Ping:            &cluster.TablePing{Request: []byte("PING\r\n"), Reply: 5, OK: func(b []byte) bool { return string(b) == "+PONG" }},
	Plan:            plan,
	PacketLinks:     packetLinks,
	Peered:          peered,
	Endpoints:       endpoints,
	Build:           build,
}

func init() { cluster.RegisterBackend(row) }

var one, zero = 1, 0

// check refuses a Redis Cluster (mode: cluster) with fewer than 3
// primaries (a majority of them must survive a primary's loss to promote
// its replica), with sentinels (it fails over by itself), or on a
// provider that does not build it.
func check(s cluster.Settings, provider string) (field, msg string) {
	if s.String("mode") != cluster.RedisCluster {
		return "", ""
	}
	p, given := s["primaries"].(int)
	switch {
	case provider != "" && provider != cluster.ProviderLocal && provider != cluster.ProviderExternal:
		return "mode", fmt.Sprintf("cluster is not supported by provider %s yet (use provider: local)", provider)
	case given && p < 3:
		return "primaries", fmt.Sprintf("mode cluster needs at least 3 primaries, so that a majority of them survives a primary's loss to promote its replica (got %d)", p)
	case s.Int("sentinels") != 0:
		return "sentinels", fmt.Sprintf("must be 0 with mode cluster: a Redis Cluster promotes replicas by itself (got %d)", s.Int("sentinels"))
	}
	return "", ""
}

// plan is redis-<i> primaries, redis-<i>-r<j> replicas of each and
// sentinel-<k>, and, with replicas or sentinels, their peer links
// (peers.go): for each node, a link from every node that dials its peer
// address, then redis-peers->node.
//
// In a Redis Cluster every server dials every other one (the cluster bus:
// gossip, failure reports, votes), so every ordered pair of servers has a
// link, with a second proxy for the bus; a replica replicates through the
// same links, and the cluster changes roles by itself (cluster.go).
func plan(s cluster.Settings) ([]cluster.PlanNode, []cluster.PlanLink) {
	r := cluster.RedisSpecOf(s)
	nodes := planNodes(r)
	if !peered(s) {
		return nodes, nil // independent primaries: nothing dials a peer address
	}
	var links []cluster.PlanLink
	for _, to := range nodes {
		for _, from := range nodes {
			if r.Mode == cluster.RedisCluster && from.Name != to.Name || peerFrom(from, to, r.Sentinels > 0) {
				links = append(links, cluster.PlanLink{From: from.Name, To: to.Name})
			}
		}
		links = append(links, cluster.PlanLink{From: cluster.RedisPeers, To: to.Name})
	}
	return nodes, links
}

// planNodes are redis-<i> primaries, redis-<i>-r<j> replicas of each and
// sentinel-<k>, in start order.
func planNodes(r cluster.RedisSpec) []cluster.PlanNode {
	var nodes []cluster.PlanNode
	for i := range r.Primaries {
		nodes = append(nodes, cluster.PlanNode{Name: "redis-" + strconv.Itoa(i), Kind: cluster.KindRedis})
	}
	for i := range r.Primaries {
		for j := range r.Replicas {
			nodes = append(nodes, cluster.PlanNode{Name: fmt.Sprintf("redis-%d-r%d", i, j), Kind: cluster.KindReplica})
		}
	}
	for k := range r.Sentinels {
		nodes = append(nodes, cluster.PlanNode{Name: "sentinel-" + strconv.Itoa(k), Kind: cluster.KindSentinel})
	}
	return nodes
}

// peered says whether the nodes have peer addresses: with replicas or
// sentinels, or in a Redis Cluster.
func peered(s cluster.Settings) bool {
	r := cluster.RedisSpecOf(s)
	return r.Replicas > 0 || r.Sentinels > 0 || r.Mode == cluster.RedisCluster
}

// packetLinks are the links where the kernel carries them (provider
// netns): with replicas or sentinels every directed pair of nodes.
func packetLinks(s cluster.Settings) []cluster.PlanLink {
	if !peered(s) {
		return nil
	}
	var names []string
	for _, n := range planNodes(cluster.RedisSpecOf(s)) {
		names = append(names, n.Name)
	}
	var links []cluster.PlanLink
	for _, to := range names {
		for _, from := range names {
			if from != to {
				links = append(links, cluster.PlanLink{From: from, To: to})
			}
		}
	}
	return links
}

// group is the master group a server belongs to: "redis-0" for redis-0
// and its replicas redis-0-r<j>.
func group(name string) string { return strings.SplitN(name, "-r", 2)[0] }

// peerFrom reports whether from dials to's peer address, so that the link
// from->to exists: a sentinel dials every server and every other sentinel;
// a server dials only servers of its own master group (as a replica, its
// primary), any of them when sentinels or the cluster may change the roles
// (failover), else a replica its primary.
func peerFrom(from, to cluster.PlanNode, failover bool) bool {
	switch {
	case from.Name == to.Name:
		return false
	case from.Kind == cluster.KindSentinel:
		return true
	case to.Kind == cluster.KindSentinel:
		return false
	case group(from.Name) != group(to.Name):
		return false
	case failover:
		return true
	default:
		return from.Kind == cluster.KindReplica && to.Kind == cluster.KindRedis
	}
}

// endpoints are a client's addresses of the primaries (Endpoints.Redis,
// with their node names as Sentinel's master names) and of the sentinels.
func endpoints(e *cluster.Endpoints, nodes []*cluster.Node, addrs []string) {
	for i, n := range nodes {
		switch n.Kind {
		case cluster.KindRedis:
			e.Redis = append(e.Redis, addrs[i])
			e.MasterNames = append(e.MasterNames, n.Name)
		case cluster.KindSentinel:
			e.Sentinels = append(e.Sentinels, addrs[i])
		}
	}
	if len(e.Sentinels) == 0 {
		e.MasterNames = nil
	}
}

// topology is a build's nodes by kind, in start order, with where each
// listens and is reached.
type topology struct {
	b                              *cluster.Build
	spec                           cluster.RedisSpec
	primaries, replicas, sentinels []*cluster.Node
	servers                        []*cluster.Node // primaries, then replicas
	all                            []*cluster.Node // servers, then sentinels
	port                           map[*cluster.Node]int
	peer                           map[*cluster.Node]string // peer address, where it is not its own
}

// build creates the nodes of a Redis topology, under any provider (its
// fabric, through cluster.Build, says where each node listens and how it
// is reached): primaries redis-<i>, replicas redis-<i>-r<j> and sentinels
// sentinel-<k> monitoring every primary under its node name. With replicas
// or sentinels every node has a peer address, which the whole topology
// uses for it: a demultiplexer in front of per-directed-pair links
// (peers.go) where links are proxies (providers local and docker), its own
// address under netns. A replica's replicaof is its primary's peer
// address, so it replicates through "redis-<i>-r<j>->redis-<i>". A Redis
// Cluster (mode: cluster) runs under provider local only (cluster.go).
func build(b *cluster.Build) (cluster.Started, error) {
	var st cluster.Started
	t := &topology{b: b, spec: cluster.RedisSpecOf(b.Settings), port: map[*cluster.Node]int{}, peer: map[*cluster.Node]string{}}
	for _, n := range b.Nodes {
		switch n.Kind {
		case cluster.KindRedis:
			t.primaries = append(t.primaries, n)
		case cluster.KindReplica:
			t.replicas = append(t.replicas, n)
		case cluster.KindSentinel:
			t.sentinels = append(t.sentinels, n)
		}
	}
	t.servers = append(append([]*cluster.Node(nil), t.primaries...), t.replicas...)
	t.all = append(append([]*cluster.Node(nil), t.servers...), t.sentinels...)
	free, err := b.Ports(len(t.all))
	if err != nil {
		return st, err
	}
	for i, n := range t.all {
		t.setPort(n, free[i])
	}
	if t.spec.Mode == cluster.RedisCluster {
		return t.buildCluster()
	}
	if peered(b.Settings) {
		front, err := b.FrontPeers(t.front(func(n *cluster.Node) []string { return []string{t.listen(n)} }, nil))
		if err != nil {
			return st, err
		}
		for i, a := range front {
			t.peer[t.all[i]] = a
		}
	}

	// server is a Redis server's command. What its primary lists in INFO
	// replication, hence where Sentinel looks for it when it is a
	// replica, is its peer address, not the address it connects from.
	server := func(n *cluster.Node, extra ...string) (cluster.Command, error) {
		if a := t.peer[n]; a != "" {
			host, port := splitHostPort(a)
			extra = append([]string{"--replica-announce-ip", host, "--replica-announce-port", port}, extra...)
		}
		host, _ := splitHostPort(t.listen(n))
		return serverCommand(strconv.Itoa(t.port[n]), host, n.DataDir(), t.spec.Persistence, extra), nil
	}
	for _, n := range t.primaries {
		t.configure(n, func() (cluster.Command, error) { return server(n) }, t.rebind(n))
	}
	for _, n := range t.replicas {
		t.configure(n, func() (cluster.Command, error) {
			host, port := splitHostPort(t.peerOr(primaryOf(t.primaries, n)))
			return server(n, "--replicaof", host, port)
		}, t.rebind(n))
	}
	quorum := len(t.sentinels)/2 + 1
	for _, n := range t.sentinels {
		conf := func() string {
			host, _ := splitHostPort(t.listen(n))
			return t.sentinelConf(n, strconv.Itoa(t.port[n]), host, quorum)
		}
		b.Configure(n, cluster.Setup{
			Command: func() (cluster.Command, error) { return sentinelCommand(b, n, conf) },
			Probe:   probe(b, n),
			Role:    sentinelRole(n),
			Rebind: func() error {
				if err := os.Remove(sentinelConfPath(n)); err != nil && !errors.Is(err, os.ErrNotExist) {
					return err
				}
				return t.rebind(n)()
			},
		})
	}
	st.Start = t.start
	st.Version = func(ctx context.Context) string { return version(ctx, t.primaries[0]) }
	st.Primary = t.sentinelPrimary
	return st, nil
}

// setPort gives n the port picked (its standard one under netns).
func (t *topology) setPort(n *cluster.Node, picked int) {
	standard := redisPort
	if n.Kind == cluster.KindSentinel {
		standard = sentinelPort
	}
	t.port[n] = t.b.Port(picked, standard)
	t.b.Serve(n, t.port[n])
}

// listen is the address n's server listens on.
func (t *topology) listen(n *cluster.Node) string { return t.b.ListenAddr(n, t.port[n]) }

// peerOr is n's peer address, else its real address.
func (t *topology) peerOr(n *cluster.Node) string {
	if a := t.peer[n]; a != "" {
		return a
	}
	return n.Addr()
}

// rebind moves n to a new port: its links follow (up: its peer ports).
func (t *topology) rebind(n *cluster.Node, up ...func(*cluster.Node) []string) func() error {
	return func() error {
		ports, err := t.b.Ports(1)
		if err != nil {
			return err
		}
		t.setPort(n, ports[0])
		peers := []string{t.listen(n)}
		if len(up) > 0 {
			peers = up[0](n)
		}
		return t.b.SetUpstreams(n, n.Addr(), peers...)
	}
}

// configure sets a server's command, its probe and role, and rebind.
func (t *topology) configure(n *cluster.Node, cmd func() (cluster.Command, error), rebind func() error) {
	t.b.Configure(n, cluster.Setup{
		Command: cmd,
		Probe:   probe(t.b, n),
		Role:    func(ctx context.Context) (string, error) { return role(ctx, n.Addr()) },
		Rebind:  rebind,
	})
}

// start starts the primaries, then the replicas (each ready once its
// replication link is up), then the sentinels (each ready once it knows
// every primary, its replicas and the other sentinels).
func (t *topology) start(ctx context.Context) error {
	if err := t.b.StartNodes(ctx, t.primaries, nil); err != nil {
		return err
	}
	if err := t.b.StartNodes(ctx, t.replicas, replicaLinkUp); err != nil {
		return err
	}
	return t.b.StartNodes(ctx, t.sentinels, func(ctx context.Context, n *cluster.Node) error {
		return t.sentinelKnows(ctx, n)
	})
}

// role is a Redis server's role as INFO replication says it: "primary" or
// "replica".
func role(ctx context.Context, addr string) (string, error) {
	info, err := respString(ctx, addr, "INFO", "replication")
	if err != nil {
		return "", err
	}
	switch r := infoField(info, "role"); r {
	case "master":
		return "primary", nil
	case "slave":
		return "replica", nil
	default:
		return r, nil
	}
}

// sentinelRole reports "sentinel" for a sentinel that answers PING.
func sentinelRole(n *cluster.Node) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		if err := ping(ctx, n.Addr()); err != nil {
			return "", err
		}
		return "sentinel", nil
	}
}

// replicaLinkUp is a replica's readiness: its link to the primary is up.
func replicaLinkUp(ctx context.Context, n *cluster.Node) error {
	info, err := respString(ctx, n.Addr(), "INFO", "replication")
	if err != nil {
		return err
	}
	if s := infoField(info, "master_link_status"); s != "up" {
		return fmt.Errorf("master_link_status %q", s)
	}
	return nil
}

// version asks n for its version; "" when it does not answer.
func version(ctx context.Context, n *cluster.Node) string {
	info, err := respString(ctx, n.Addr(), "INFO", "server")
	if err != nil {
		return ""
	}
	return infoField(info, "redis_version")
}

func persistArgs(p string) []string {
	switch p {
	case cluster.PersistAlways:
		return []string{"--save", "", "--appendonly", "yes", "--appendfsync", "always"}
	case cluster.PersistEverysec:
		return []string{"--save", "", "--appendonly", "yes", "--appendfsync", "everysec"}
	default:
		return []string{"--save", "", "--appendonly", "no"}
	}
}

// serverCommand is a Redis server's command line: on port of bind, data
// in dir.
func serverCommand(port, bind, dir, persistence string, extra []string) cluster.Command {
	args := []string{
		"--port", port, "--bind", bind, "--dir", dir,
		"--daemonize", "no", "--logfile", "", "--protected-mode", "no",
		// Full syncs start at once instead of waiting 5 s for more
		// replicas to join the same diskless transfer.
		"--repl-diskless-sync-delay", "0",
		"--enable-debug-Command", "local",
	}
	args = append(args, persistArgs(persistence)...)
	args = append(args, extra...)
	return cluster.Command{Path: "redis-server", Args: args, Dir: dir}
}

// sentinelConfPath is where a sentinel keeps its file (in its data dir).
func sentinelConfPath(n *cluster.Node) string { return filepath.Join(n.DataDir(), "sentinel.conf") }

// sentinelCommand is a sentinel's command. Sentinel rewrites its file
// (ids, discovered replicas and sentinels, failovers), so conf's text is
// written on the first launch only: a restarted sentinel keeps what it
// learned, as in production.
func sentinelCommand(b *cluster.Build, n *cluster.Node, conf func() string) (cluster.Command, error) {
	path := sentinelConfPath(n)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		if err := b.WriteFile(path, []byte(conf())); err != nil {
			return cluster.Command{}, err
		}
	}
	return cluster.Command{Path: "redis-sentinel", Args: []string{path}}, nil
}

// sentinelConf is sentinel self's first configuration: it listens on port
// (bind), keeps its state in its data dir, monitors every primary at its
// peer address (its real one without peer addresses) and announces its
// own peer address to the other sentinels.
func (t *topology) sentinelConf(self *cluster.Node, port, bind string, quorum int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "port %s\nbind %s\ndaemonize no\nlogfile \"\"\nprotected-mode no\ndir %s\n", port, bind, self.DataDir())
	if a := t.peer[self]; a != "" {
		host, aport := splitHostPort(a)
		fmt.Fprintf(&b, "sentinel announce-ip %s\nsentinel announce-port %s\n", host, aport)
	}
	for _, p := range t.primaries {
		host, pport := splitHostPort(t.peerOr(p))
		fmt.Fprintf(&b, "sentinel monitor %s %s %s %d\n", p.Name, host, pport, quorum)
		fmt.Fprintf(&b, "sentinel down-after-milliseconds %s %d\n", p.Name, sentinelDownAfter.Milliseconds())
		fmt.Fprintf(&b, "sentinel failover-timeout %s %d\n", p.Name, sentinelFailoverTimeout.Milliseconds())
		fmt.Fprintf(&b, "sentinel parallel-syncs %s 1\n", p.Name)
	}
	return b.String()
}

// primaryOf is the primary of replica r.
func primaryOf(primaries []*cluster.Node, r *cluster.Node) *cluster.Node {
	for _, p := range primaries {
		if p.Name == group(r.Name) {
			return p
		}
	}
	return nil
}

// sentinelKnows checks that sentinel n reports every primary at its peer
// address and knows its replicas and the other sentinels.
func (t *topology) sentinelKnows(ctx context.Context, n *cluster.Node) error {
	for _, p := range t.primaries {
		v, err := respDo(ctx, n.Addr(), "SENTINEL", "get-master-addr-by-name", p.Name)
		if err != nil {
			return err
		}
		a, ok := v.([]any)
		if !ok || len(a) != 2 {
			return fmt.Errorf("get-master-addr-by-name %s: %v", p.Name, v)
		}
		if got, want := fmt.Sprintf("%v:%v", a[0], a[1]), t.peerOr(p); got != want {
			return fmt.Errorf("master %s at %s, want %s", p.Name, got, want)
		}
		v, err = respDo(ctx, n.Addr(), "SENTINEL", "MASTER", p.Name)
		if err != nil {
			return err
		}
		kv, _ := v.([]any)
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[fmt.Sprint(kv[i])] = fmt.Sprint(kv[i+1])
		}
		if m["flags"] != "master" || m["num-slaves"] != strconv.Itoa(t.spec.Replicas) ||
			m["num-other-sentinels"] != strconv.Itoa(len(t.sentinels)-1) {
			return fmt.Errorf("sentinel view of %s: flags=%s num-slaves=%s num-other-sentinels=%s",
				p.Name, m["flags"], m["num-slaves"], m["num-other-sentinels"])
		}
	}
	return nil
}

// sentinelPrimary returns the node Sentinel currently reports as the
// primary of master (a primary's node name, "redis-0"): after a failover,
// the promoted replica's node. It asks the sentinels in order and returns
// the first answer that names a known node.
func (t *topology) sentinelPrimary(ctx context.Context, master string) (*cluster.Node, error) {
	var errs []error
	for _, s := range t.sentinels {
		if !s.Alive() {
			continue
		}
		v, err := respDo(ctx, s.Addr(), "SENTINEL", "get-master-addr-by-name", master)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.Name, err))
			continue
		}
		a, ok := v.([]any)
		if !ok || len(a) != 2 {
			errs = append(errs, fmt.Errorf("%s: no master %q", s.Name, master))
			continue
		}
		addr := fmt.Sprintf("%v:%v", a[0], a[1])
		if n, ok := t.b.NodeAt(addr); ok && (n.Kind == cluster.KindRedis || n.Kind == cluster.KindReplica) {
			return n, nil
		}
		errs = append(errs, fmt.Errorf("%s: master at unknown address %s", s.Name, addr))
	}
	if len(errs) == 0 {
		return nil, fmt.Errorf("cluster: primary of %s: no sentinel running", master)
	}
	return nil, fmt.Errorf("cluster: primary of %s: %w", master, errors.Join(errs...))
}

func ping(ctx context.Context, addr string) error {
	s, err := respString(ctx, addr, "PING")
	if err != nil {
		return err
	}
	if s != "PONG" {
		return fmt.Errorf("PING: %q", s)
	}
	return nil
}

// probe is the readiness probe of a Redis or Sentinel node: PING, and for
// a process of ours, INFO's process_id must be the node's pid. A port
// picked free can be taken by another program (another test package's
// server) before ours binds it: ours then exits with "address already in
// use" and is started on new ports (its rebind), and the other program's
// PONG must not pass for ours meanwhile.
func probe(b *cluster.Build, n *cluster.Node) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		addr := n.Addr()
		if err := ping(ctx, addr); err != nil {
			return err
		}
		pid := n.Pid()
		if pid == 0 || b.Provider() != cluster.ProviderLocal {
			return nil // not a process of ours, or not one this host's pid names
		}
		info, err := respString(ctx, addr, "INFO", "server")
		if err != nil {
			return err
		}
		if got := infoField(info, "process_id"); got != strconv.Itoa(pid) {
			return fmt.Errorf("%s answered by process %s, not %s's (%d)", addr, got, n.Name, pid)
		}
		return nil
	}
}

func splitHostPort(addr string) (string, string) {
	i := strings.LastIndexByte(addr, ':')
	if i < 0 {
		return addr, ""
	}
	return addr[:i], addr[i+1:]
}
