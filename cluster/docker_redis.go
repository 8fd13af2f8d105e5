package cluster

import (
	"context"
	"net"
	"net/netip"
	"strconv"
)

// Ports the servers listen on inside their containers.
const (
	dockerRedisPort     = 6379
	dockerSentinelPort  = 26379
	dockerZKClientPort  = 2181
	dockerZKQuorumPort  = 2888
	dockerZKElectPort   = 3888
	dockerDataDir       = "/data"
	dockerConfDir       = "/conf"
	dockerSentinelConf  = dockerDataDir + "/sentinel.conf"
	dockerZooKeeperConf = dockerConfDir + "/zoo.cfg"
)

// buildDockerRedis is buildRedis for the docker provider: the same nodes
// and links. Every node's peer address is a demultiplexer on the network's
// gateway (redispeers.go), which names the sender of each connection by its
// source address, the sender's fixed container address, and forwards it
// through that pair's link, whose proxy dials the node's container
// address. A replica's replicaof is its primary's peer address, sentinels
// monitor the primaries there, and every server and sentinel announces its
// own; clients reach what Sentinel reports through Endpoints.Redirect.
func (c *Cluster) buildDockerRedis(rs RedisSpec) (backend, error) {
	p := c.docker
	b := backend{name: BackendRedis}
	rn, err := c.addRedisNodes()
	if err != nil {
		return b, err
	}
	primaries, replicas, sentinels, servers, all := rn.primaries, rn.replicas, rn.sentinels, rn.servers, rn.all
	err = c.dockerAddrs(all, func(n *Node) int {
		if n.Kind == KindSentinel {
			return dockerSentinelPort
		}
		return dockerRedisPort
	})
	if err != nil {
		return b, err
	}
	peer := map[*Node]string{}
	if len(replicas) > 0 || len(sentinels) > 0 {
		byIP := map[netip.Addr]int{}
		for i, n := range all {
			byIP[p.assignIP(n.Name)] = i
		}
		up := func(n *Node) []string {
			if n.Kind == KindSentinel {
				return []string{p.containerAddr(n.Name, dockerSentinelPort)}
			}
			return []string{p.containerAddr(n.Name, dockerRedisPort)}
		}
		demux, err := c.buildRedisPeers(all, up, nil, p.gatewayListen(),
			func([]*Node) func(net.Conn) ([]byte, int) {
				return func(conn net.Conn) ([]byte, int) { return nil, senderByAddr(byIP, conn) }
			}, p.watch.addDemux)
		if err != nil {
			return b, err
		}
		for i, n := range all {
			peer[n] = demux[i].addr
			c.addAlias(n.Name, demux[i].addr)
		}
	}

	server := func(n *Node, extra ...string) command {
		// What the primary lists in INFO replication, hence where Sentinel
		// looks for this server when it is a replica: its peer address, not
		// the gateway address it connects from.
		if a := peer[n]; a != "" {
			host, port := splitHostPort(a)
			extra = append([]string{"--replica-announce-ip", host, "--replica-announce-port", port}, extra...)
		}
		cmd := redisCommand(strconv.Itoa(dockerRedisPort), "0.0.0.0", dockerDataDir, rs.Persistence, extra)
		cmd.container = &containerSpec{backend: BackendRedis, image: rs.Image, port: dockerRedisPort}
		return cmd
	}
	for _, n := range primaries {
		n.cmd = func() (command, error) { return server(n), nil }
	}
	for _, n := range replicas {
		host, port := splitHostPort(peer[primaryOf(primaries, n)])
		n.cmd = func() (command, error) { return server(n, "--replicaof", host, port), nil }
	}
	for _, n := range servers {
		n.probe = func(ctx context.Context) error { return redisPing(ctx, n.Addr()) }
		n.role = func(ctx context.Context) (string, error) { return redisRole(ctx, n.Addr()) }
	}
	quorum := len(sentinels)/2 + 1
	for _, n := range sentinels {
		conf := sentinelConf(n, strconv.Itoa(dockerSentinelPort), dockerDataDir, "0.0.0.0", primaries, peer, quorum)
		// The file is copied into the container when it is created; Sentinel
		// rewrites it there, and a restarted sentinel (the same container)
		// keeps what it learned, as with the local provider.
		spec := &containerSpec{backend: BackendRedis, image: rs.Image, port: dockerSentinelPort,
			files: []containerFile{{path: dockerSentinelConf, data: []byte(conf)}}}
		n.cmd = func() (command, error) {
			return command{path: "redis-sentinel", args: []string{dockerSentinelConf}, dir: dockerDataDir, container: spec}, nil
		}
		n.probe = func(ctx context.Context) error { return redisPing(ctx, n.Addr()) }
		n.role = func(ctx context.Context) (string, error) {
			if err := redisPing(ctx, n.Addr()); err != nil {
				return "", err
			}
			return "sentinel", nil
		}
	}

	// Containers start side by side (a start is a docker round trip of
	// about half a second): a replica retries its primary until it
	// serves. Sentinels start once the replicas are in sync, as with
	// buildRedis: a sentinel that saw a primary without its replicas would
	// learn of them only at its next INFO, 10 s later.
	b.start = func(ctx context.Context) error {
		if err := p.createAll(ctx, all); err != nil {
			return err
		}
		err := startNodes(ctx, servers, func(ctx context.Context, n *Node) error {
			if n.Kind != KindReplica {
				return nil
			}
			return replicaLinkUp(ctx, n)
		})
		if err != nil {
			return err
		}
		return startNodes(ctx, sentinels, func(ctx context.Context, n *Node) error {
			return sentinelKnows(ctx, n, primaries, peer, rs.Replicas, len(sentinels)-1)
		})
	}
	b.version = func(ctx context.Context) string { return redisVersion(ctx, primaries[0]) }
	return b, nil
}

// dockerStartSequential launches the nodes' containers one after the other
// in the given order, then waits until each serves.
func dockerStartSequential(ctx context.Context, nodes []*Node) error {
	for _, n := range nodes {
		if err := n.spawn(ctx); err != nil {
			return err
		}
	}
	return each(nodes, func(n *Node) error { return n.waitServing(ctx, false) })
}
