package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Sentinel timing: fast failure detection so failover scenarios finish in
// seconds. down-after is the silence after which a sentinel deems the
// primary down; failover-timeout bounds a failover attempt (and twice it is
// the pause before the same primary is failed over again).
const (
	sentinelDownAfter       = 1000 * time.Millisecond
	sentinelFailoverTimeout = 3000 * time.Millisecond
)

// buildRedis creates the nodes and links of a Redis topology, under any
// provider (its fabric, fabric.go, says where each node listens and how it
// is reached): primaries redis-<i>, replicas redis-<i>-r<j> and sentinels
// sentinel-<k> monitoring every primary under its node name. With replicas
// or sentinels every node has a peer address, which the whole topology
// uses for it: a demultiplexer in front of per-directed-pair links
// (redispeers.go) where links are proxies (providers local and docker), its
// own address under netns. A replica's replicaof is its primary's peer
// address, so it replicates through "redis-<i>-r<j>->redis-<i>". A Redis
// Cluster (mode: cluster) runs under provider local only
// (redis_cluster.go).
func (c *Cluster) buildRedis(rs RedisSpec) (backend, error) {
	b := backend{name: BackendRedis}
	rn, err := c.addRedisNodes()
	if err != nil {
		return b, err
	}
	primaries, replicas, sentinels, all := rn.primaries, rn.replicas, rn.sentinels, rn.all
	free, err := pickPorts(len(all))
	if err != nil {
		return b, err
	}
	f := c.prov
	port := map[*Node]int{}
	setPort := func(n *Node, picked int) {
		standard := redisPort
		if n.Kind == KindSentinel {
			standard = sentinelPort
		}
		port[n] = f.Port(picked, standard)
		c.serveAt(n, port[n])
	}
	for i, n := range all {
		if err := f.Place(n); err != nil {
			return b, err
		}
		setPort(n, free[i])
	}
	listen := func(n *Node) string { return f.ListenAddr(n, port[n]) }

	// Peer addresses, fixed for the cluster's life; the links behind them
	// follow their node when it moves ports (rebind).
	peer := map[*Node]string{}
	var bus map[*Node]string // a Redis Cluster's bus ports (redis_cluster.go)
	up, labels := func(n *Node) []string { return []string{listen(n)} }, []string(nil)
	if rs.Mode == RedisCluster {
		if bus, err = pickBusPorts(all); err != nil {
			return b, err
		}
		up, labels = func(n *Node) []string { return []string{n.Addr(), bus[n]} }, clusterProxyLabels
	}
	var demux []*PeerDemux // in the order of all
	if len(replicas) > 0 || len(sentinels) > 0 || rs.Mode == RedisCluster {
		if demux, err = f.FrontPeers(redisFront(all, up, labels)); err != nil {
			return b, err
		}
		for i, n := range demux {
			peer[all[i]] = n.addr
			c.addAlias(all[i].Name, n.addr)
		}
	}
	rebind := func(n *Node) func() error {
		return func() error {
			ports, err := pickPorts(1)
			if err != nil {
				return err
			}
			setPort(n, ports[0])
			return c.setUpstreamsTo(n.Name, n.Addr(), up(n)...)
		}
	}
	if rs.Mode == RedisCluster {
		return c.buildRedisCluster(b, rn, peer, bus, demux, rs, rebind)
	}

	// server is a Redis server's command. What its primary lists in INFO
	// replication, hence where Sentinel looks for it when it is a
	// replica, is its peer address, not the address it connects from.
	server := func(n *Node, extra ...string) (Command, error) {
		if a := peer[n]; a != "" {
			host, port := splitHostPort(a)
			extra = append([]string{"--replica-announce-ip", host, "--replica-announce-port", port}, extra...)
		}
		host, _ := splitHostPort(listen(n))
		cmd := redisCommand(strconv.Itoa(port[n]), host, n.dataDir, rs.Persistence, extra)
		var err error
		cmd.Container, err = f.Container(BackendRedis, rs.Image, n, cmd)
		return cmd, err
	}
	for _, n := range primaries {
		n.cmd = func() (Command, error) { return server(n) }
	}
	for _, n := range replicas {
		n.cmd = func() (Command, error) {
			host, port := splitHostPort(peerOr(peer, primaryOf(primaries, n)))
			return server(n, "--replicaof", host, port)
		}
	}
	for _, n := range rn.servers {
		n.probe = redisProbe(n)
		n.rebind = rebind(n)
		n.role = func(ctx context.Context) (string, error) { return redisRole(ctx, n.Addr()) }
	}
	quorum := len(sentinels)/2 + 1
	for _, n := range sentinels {
		conf := sentinelCommand(n, func() string {
			host, _ := splitHostPort(listen(n))
			return sentinelConf(n, strconv.Itoa(port[n]), n.dataDir, host, primaries, peer, quorum)
		})
		n.cmd = func() (Command, error) {
			cmd, err := conf()
			if err != nil {
				return cmd, err
			}
			cmd.Container, err = f.Container(BackendRedis, rs.Image, n, cmd)
			return cmd, err
		}
		n.probe = redisProbe(n)
		n.role = sentinelRole(n)
		n.rebind = func() error {
			if err := os.Remove(sentinelConfPath(n)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
			return rebind(n)()
		}
	}

	b.start = startRedis(primaries, replicas, sentinels, peer, rs.Replicas)
	b.version = func(ctx context.Context) string { return redisVersion(ctx, primaries[0]) }
	return b, nil
}

// The ports of a Redis server and a Sentinel where each node has an
// address of its own (provider netns): Redis's standard ones.
const (
	redisPort    = 6379
	sentinelPort = 26379
)

// redisRole is a Redis server's role as INFO replication says it:
// "primary" or "replica".
func redisRole(ctx context.Context, addr string) (string, error) {
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

// replicaLinkUp is a replica's readiness: its link to the primary is up.
// sentinelRole reports "sentinel" for a sentinel that answers PING.
func sentinelRole(n *Node) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		if err := redisPing(ctx, n.Addr()); err != nil {
			return "", err
		}
		return "sentinel", nil
	}
}

// startRedis starts the primaries, then the replicas (each ready once its
// replication link is up), then the sentinels (each ready once it knows
// every primary, its replicas and the other sentinels); peer maps a node
// to the address the others reach it at, where that is not its own.
func startRedis(primaries, replicas, sentinels []*Node, peer map[*Node]string, replicasPer int) func(context.Context) error {
	return func(ctx context.Context) error {
		if err := startNodes(ctx, primaries, nil); err != nil {
			return err
		}
		if err := startNodes(ctx, replicas, replicaLinkUp); err != nil {
			return err
		}
		return startNodes(ctx, sentinels, func(ctx context.Context, n *Node) error {
			return sentinelKnows(ctx, n, primaries, peer, replicasPer, len(sentinels)-1)
		})
	}
}

func replicaLinkUp(ctx context.Context, n *Node) error {
	info, err := respString(ctx, n.Addr(), "INFO", "replication")
	if err != nil {
		return err
	}
	if s := infoField(info, "master_link_status"); s != "up" {
		return fmt.Errorf("master_link_status %q", s)
	}
	return nil
}

// redisVersion asks n for its version; "" when it does not answer.
func redisVersion(ctx context.Context, n *Node) string {
	info, err := respString(ctx, n.Addr(), "INFO", "server")
	if err != nil {
		return ""
	}
	return infoField(info, "redis_version")
}

func redisPersistArgs(p string) []string {
	switch p {
	case PersistAlways:
		return []string{"--save", "", "--appendonly", "yes", "--appendfsync", "always"}
	case PersistEverysec:
		return []string{"--save", "", "--appendonly", "yes", "--appendfsync", "everysec"}
	default:
		return []string{"--save", "", "--appendonly", "no"}
	}
}

func redisCommand(port, bind, dir, persistence string, extra []string) Command {
	args := []string{
		"--port", port, "--bind", bind, "--dir", dir,
		"--daemonize", "no", "--logfile", "", "--protected-mode", "no",
		// Full syncs start at once instead of waiting 5 s for more
		// replicas to join the same diskless transfer.
		"--repl-diskless-sync-delay", "0",
		"--enable-debug-Command", "local",
	}
	args = append(args, redisPersistArgs(persistence)...)
	args = append(args, extra...)
	return Command{Path: "redis-server", Args: args, Dir: dir}
}

// localRedis is a local server's command: on its own port of 127.0.0.1
// (taken when it starts: a rebind moves it), data in its data dir.
func localRedis(n *Node, persistence string, extra []string) Command {
	_, port := splitHostPort(n.Addr())
	return redisCommand(port, "127.0.0.1", n.dataDir, persistence, extra)
}

// sentinelConfPath is where a sentinel keeps its file (in its data dir).
func sentinelConfPath(n *Node) string { return filepath.Join(n.dataDir, "sentinel.conf") }

// sentinelCommand is a sentinel's command. Sentinel
// rewrites its file (ids, discovered replicas and sentinels, failovers),
// so conf's text is written on the first launch only: a restarted sentinel
// keeps what it learned, as in production.
func sentinelCommand(n *Node, conf func() string) func() (Command, error) {
	return func() (Command, error) {
		path := sentinelConfPath(n)
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			if err := writeDurable(path, []byte(conf())); err != nil {
				return Command{}, err
			}
		}
		return Command{Path: "redis-sentinel", Args: []string{path}, Dir: n.dataDir}, nil
	}
}

// sentinelConf is sentinel self's first configuration: it listens on port
// (bind), keeps its state in dir, monitors every primary at its peer
// address (its real one without peer addresses) and announces its own peer
// address to the other sentinels.
func sentinelConf(self *Node, port, dir, bind string, primaries []*Node, peer map[*Node]string, quorum int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "port %s\nbind %s\ndaemonize no\nlogfile \"\"\nprotected-mode no\ndir %s\n", port, bind, dir)
	if a := peer[self]; a != "" {
		host, aport := splitHostPort(a)
		fmt.Fprintf(&b, "sentinel announce-ip %s\nsentinel announce-port %s\n", host, aport)
	}
	for _, p := range primaries {
		host, pport := splitHostPort(peerOr(peer, p))
		fmt.Fprintf(&b, "sentinel monitor %s %s %s %d\n", p.Name, host, pport, quorum)
		fmt.Fprintf(&b, "sentinel down-after-milliseconds %s %d\n", p.Name, sentinelDownAfter.Milliseconds())
		fmt.Fprintf(&b, "sentinel failover-timeout %s %d\n", p.Name, sentinelFailoverTimeout.Milliseconds())
		fmt.Fprintf(&b, "sentinel parallel-syncs %s 1\n", p.Name)
	}
	return b.String()
}

// peerOr is n's peer address, else its real address.
func peerOr(peer map[*Node]string, n *Node) string {
	if a := peer[n]; a != "" {
		return a
	}
	return n.Addr()
}

// primaryOf is the primary of replica r.
func primaryOf(primaries []*Node, r *Node) *Node {
	for _, p := range primaries {
		if p.Name == redisGroup(r.Name) {
			return p
		}
	}
	return nil
}

// sentinelKnows checks that sentinel n reports every primary at its peer
// address and knows its replicas and the other sentinels.
func sentinelKnows(ctx context.Context, n *Node, primaries []*Node, peer map[*Node]string, replicas, others int) error {
	for _, p := range primaries {
		v, err := respDo(ctx, n.Addr(), "SENTINEL", "get-master-addr-by-name", p.Name)
		if err != nil {
			return err
		}
		a, ok := v.([]any)
		if !ok || len(a) != 2 {
			return fmt.Errorf("get-master-addr-by-name %s: %v", p.Name, v)
		}
		if got, want := fmt.Sprintf("%v:%v", a[0], a[1]), peerOr(peer, p); got != want {
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
		if m["flags"] != "master" || m["num-slaves"] != strconv.Itoa(replicas) ||
			m["num-other-sentinels"] != strconv.Itoa(others) {
			return fmt.Errorf("sentinel view of %s: flags=%s num-slaves=%s num-other-sentinels=%s",
				p.Name, m["flags"], m["num-slaves"], m["num-other-sentinels"])
		}
	}
	return nil
}

func redisPing(ctx context.Context, addr string) error {
	s, err := respString(ctx, addr, "PING")
	if err != nil {
		return err
	}
	if s != "PONG" {
		return fmt.Errorf("PING: %q", s)
	}
	return nil
}

// redisProbe is the readiness probe of a Redis or Sentinel node: PING, and
// for a process of ours, INFO's process_id must be the node's pid. A port
// picked free can be taken by another program (another test package's
// server) before ours binds it: ours then exits with "address already in
// use" and is started on new ports (Node.waitServing), and the other
// program's PONG must not pass for ours meanwhile.
func redisProbe(n *Node) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		addr := n.Addr()
		if err := redisPing(ctx, addr); err != nil {
			return err
		}
		pid := n.Pid()
		if pid == 0 || n.c.spec.Provider != ProviderLocal {
			return nil // not a process of ours (external servers)
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

// startNodes launches nodes side by side, waits until each serves and then
// until ready (when not nil) holds for each. A local server that exited
// because its port was taken meanwhile starts again on new ports (its
// rebind; docker publishes ports itself).
func startNodes(ctx context.Context, nodes []*Node, ready func(context.Context, *Node) error) error {
	return startNodesThen(ctx, nodes, nil, ready)
}

// startNodesThen is startNodes calling served (when not nil) as each node
// serves, before ready is asked.
func startNodesThen(ctx context.Context, nodes []*Node, served func(), ready func(context.Context, *Node) error) error {
	return each(nodes, func(n *Node) error {
		if err := n.spawn(ctx); err != nil {
			return err
		}
		if err := n.waitServing(ctx, true); err != nil {
			return err
		}
		if served != nil {
			served()
		}
		if ready == nil {
			return nil
		}
		return poll(ctx, n.Name+" ready", func(ctx context.Context) error { return ready(ctx, n) })
	})
}

// poll calls f every pollEvery until it returns nil or ctx ends; the error
// then says what was awaited and f's last error.
func poll(ctx context.Context, what string, f func(context.Context) error) error {
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		err := f(pctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for %s (last: %v): %w", what, err, ctx.Err())
		case <-tick.C:
		}
	}
}

// addRedisNodes names the nodes of a Redis topology (docs/faults.md):
// redis-<i> primaries, redis-<i>-r<j> replicas of each, sentinel-<k>.
func (c *Cluster) addRedisNodes() (redisNodes, error) {
	var r redisNodes
	nodes, err := c.addPlanned(BackendRedis)
	if err != nil {
		return r, err
	}
	for _, n := range nodes {
		switch n.Kind {
		case KindRedis:
			r.primaries = append(r.primaries, n)
		case KindReplica:
			r.replicas = append(r.replicas, n)
		case KindSentinel:
			r.sentinels = append(r.sentinels, n)
		}
	}
	r.servers = append(append([]*Node(nil), r.primaries...), r.replicas...)
	r.all = append(append([]*Node(nil), r.servers...), r.sentinels...)
	return r, nil
}

// redisNodes are a Redis topology's nodes by kind, in start order.
type redisNodes struct {
	primaries, replicas, sentinels []*Node
	servers                        []*Node // primaries, then replicas
	all                            []*Node // servers, then sentinels
}

// redisRawPing is PING on a new connection, for PingOf (Redis, replicas
// and Sentinels).
var redisRawPing = &TablePing{Request: []byte("PING\r\n"), Reply: 5, OK: replyIs("+PONG")}
