package cluster

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// Ports the servers listen on inside their containers.
const (
	dockerZKClientPort  = 2181
	dockerZKQuorumPort  = 2888
	dockerZKElectPort   = 3888
	dockerDataDir       = "/data"
	dockerConfDir       = "/conf"
	dockerZooKeeperConf = dockerConfDir + "/zoo.cfg"
)

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

// dockerZKScript starts ZooKeeper in both kinds of image: Debian's
// packages (the locklab images: the jars under /usr/share/java, log4j
// configuration in /etc/zookeeper/conf) and the official image (a
// distribution under /apache-zookeeper-*-bin with its lib/ and conf/).
// The JVM flags come as arguments.
const dockerZKScript = `cp=/etc/zookeeper/conf:/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-log4j12.jar:/usr/share/java/log4j-1.2.jar
for d in /apache-zookeeper-*-bin /opt/zookeeper; do
  if [ -d "$d/lib" ]; then cp="$d/conf:$d/lib/*"; fi
done
exec java "$@" -cp "$cp" org.apache.zookeeper.server.quorum.QuorumPeerMain ` + dockerZooKeeperConf

// buildDockerZooKeeper is buildZooKeeper for the docker provider: the same
// nodes and per-directed-pair peer links. Each member's configuration
// lists, for every other member, the gateway address of the pair's two
// proxies (quorum and election port, dialling the peer's container
// address), and for itself its container ports; so every quorum and
// election connection goes through the proxy of its directed pair. The
// election address a member announces when it connects to a member with a
// higher id is rewritten on the way to the proxy of the reverse pair
// (zkelection.go), where the higher member dials back.
func (c *Cluster) buildDockerZooKeeper(zs ZooKeeperSpec) (backend, error) {
	p := c.docker
	b := backend{name: BackendZooKeeper}
	nodes, err := c.addPlanned(BackendZooKeeper)
	if err != nil {
		return b, err
	}
	if err := c.dockerAddrs(nodes, func(*Node) int { return dockerZKClientPort }); err != nil {
		return b, err
	}
	links := make([][]*Link, len(nodes)) // links[from][to]
	for from := range nodes {
		links[from] = make([]*Link, len(nodes))
		for to := range nodes {
			if from == to {
				continue
			}
			l, err := c.addLinkAt(nodes[from].Name, nodes[to].Name,
				[]string{p.containerAddr(nodes[to].Name, dockerZKQuorumPort), p.containerAddr(nodes[to].Name, dockerZKElectPort)},
				[]string{p.gatewayListen(), p.gatewayListen()}, []string{"quorum", "election"})
			if err != nil {
				return b, err
			}
			links[from][to] = l
		}
	}
	for from := range nodes {
		for to := from + 1; to < len(nodes); to++ {
			// to dials back what from announces: the election proxy of
			// to->from.
			if err := links[from][to].rewriteElectionAddr(links[to][from].addrs[1]); err != nil {
				return b, err
			}
		}
	}
	jvm := []string{
		"-Xms32m", "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-XX:-UsePerfData", "-Djava.net.preferIPv4Stack=true",
		"-Dzookeeper.root.logger=INFO,CONSOLE", zkTrustEmptySnapshot,
		"-Dzookeeper.fastleader.maxNotificationInterval=" + strconv.FormatInt(zkMaxNotifyInterval.Milliseconds(), 10),
	}
	for i, n := range nodes {
		var cfg strings.Builder
		fmt.Fprintf(&cfg, "tickTime=%d\ninitLimit=%d\nsyncLimit=%d\n", zkTickTime.Milliseconds(), zkInitLimit, zkSyncLimit)
		fmt.Fprintf(&cfg, "dataDir=%s\nclientPort=%d\n", dockerDataDir, dockerZKClientPort)
		fmt.Fprintf(&cfg, "minSessionTimeout=%d\nmaxSessionTimeout=%d\n", 2*zkTickTime.Milliseconds(), zkMaxSessionTimeout.Milliseconds())
		cfg.WriteString(zkServerConf(zs))
		if len(nodes) > 1 {
			for j := range nodes {
				if j == i {
					fmt.Fprintf(&cfg, "server.%d=0.0.0.0:%d:%d\n", j+1, dockerZKQuorumPort, dockerZKElectPort)
					continue
				}
				_, qp := splitHostPort(links[i][j].addrs[0])
				_, ep := splitHostPort(links[i][j].addrs[1])
				fmt.Fprintf(&cfg, "server.%d=%s:%s:%s\n", j+1, p.gateway, qp, ep)
			}
		}
		spec := &containerSpec{backend: BackendZooKeeper, image: zs.Image, port: dockerZKClientPort, files: []containerFile{
			{path: dockerZooKeeperConf, data: []byte(cfg.String())},
			{path: dockerDataDir + "/myid", data: []byte(strconv.Itoa(i+1) + "\n")},
		}}
		n.cmd = func() (command, error) {
			return command{path: "sh", args: append([]string{"-c", dockerZKScript, "zookeeper"}, jvm...),
				dir: dockerDataDir, container: spec}, nil
		}
		zkChecks(n)
	}
	// Containers start one after the other, highest myid first: a member
	// whose JVM comes up after the others elected a leader among themselves
	// takes over if its id is higher, and the first leader then waits
	// initLimit (5 s) for followers that never come. Container starts are
	// staggered anyway (the engine serialises much of them), so this order
	// costs little and makes that race rare.
	b.start = func(ctx context.Context) error {
		if err := p.createAll(ctx, nodes); err != nil {
			return err
		}
		rev := make([]*Node, len(nodes))
		for i, n := range nodes {
			rev[len(nodes)-1-i] = n
		}
		return dockerStartSequential(ctx, rev)
	}
	b.version = func(ctx context.Context) string {
		_, v, _ := zkSrvr(ctx, nodes[0].Addr())
		return v
	}
	return b, nil
}
