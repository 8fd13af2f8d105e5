package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ZooKeeperJar is the ZooKeeper server jar the local provider runs (Debian's
// zookeeper package).
const ZooKeeperJar = "/usr/share/java/zookeeper.jar"

// zkClasspath is the server's classpath on Debian: the conf dir for
// log4j.properties, the server and its logging binding. zookeeper.jar's
// manifest brings the rest (jute, netty, ...).
var zkClasspath = strings.Join([]string{
	"/etc/zookeeper/conf", ZooKeeperJar,
	"/usr/share/java/slf4j-log4j12.jar", "/usr/share/java/log4j-1.2.jar",
}, ":")

// ZooKeeper timing. tickTime is ZooKeeper's unit of time: a follower that
// hears nothing from the leader for syncLimit ticks (and a leader that
// hears from no quorum for as long) gives up and starts an election, so
// 250 ms × 8 = 2 s is how long a partition or pause must last before the
// ensemble reacts — short next to the seconds-long faults of scenarios,
// long next to the tens of milliseconds a small SerialGC heap pauses on a
// busy 2-core machine. initLimit (20 ticks = 5 s) bounds a follower's
// initial sync, which is tiny here. Elections themselves do not depend on
// the tick (FastLeaderElection waits 200 ms for late votes); the notification
// back-off is capped at 1 s instead of 60 s so an ensemble re-elects within
// a second or two of a partition healing. Session timeouts may range from 2
// ticks to maxSessionTimeout (2 min) so lock tests can ask for long sessions;
// the server's default cap would be 20 ticks = 5 s.
const (
	zkTickTime          = 250 * time.Millisecond
	zkInitLimit         = 20
	zkSyncLimit         = 8
	zkMaxSessionTimeout = 2 * time.Minute
	zkMaxNotifyInterval = time.Second
)

// zkTrustEmptySnapshot lets a member start from a transaction log without
// a snapshot. ZooKeeper writes its first snapshot without fsync but forces
// its log, so a power cut soon after the start leaves a log and no
// snapshot, and 3.8 then refuses to start ("No snapshot found, but there
// are log entries"); the log alone holds every acknowledged write.
const zkTrustEmptySnapshot = "-Dzookeeper.snapshot.trust.empty=true"

// zkPeerIP is the loopback address on which member from reaches member to:
// each directed pair has its own (127.77.<from+1>.<to+1>), see buildZooKeeper.
func zkPeerIP(from, to int) string { return fmt.Sprintf("127.77.%d.%d", from+1, to+1) }

type zkPorts struct{ client, quorum, election int }

// zkCommand runs member n with its configuration file conf, extra JVM
// flags going before ZooKeeper's own.
func zkCommand(n *Node, conf string, extra ...string) func() (command, error) {
	return func() (command, error) {
		args := append([]string{"-Xms32m", "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
			"-XX:-UsePerfData", "-Djava.net.preferIPv4Stack=true"}, extra...)
		return command{path: "java", dir: n.dataDir, args: append(args,
			"-Dzookeeper.root.logger=INFO,CONSOLE", zkTrustEmptySnapshot,
			"-Dzookeeper.fastleader.maxNotificationInterval="+strconv.FormatInt(zkMaxNotifyInterval.Milliseconds(), 10),
			"-cp", zkClasspath,
			"org.apache.zookeeper.server.quorum.QuorumPeerMain", conf,
		)}, nil
	}
}

// buildZooKeeper creates an ensemble zk-0..zk-<n-1> (myid 1..n).
//
// Peer links are per directed pair ("zk-1->zk-0"), each a proxy for the
// quorum port and one for the election port. The difficulty is that a
// member tells the peers it connects to its own election address, and a
// peer with a higher id drops that connection and dials the announced
// address back — which would bypass the proxies if it were a real address.
// So members name each other by hostname: every java process gets its own
// hosts file (-Djdk.net.hosts.file) in which its own name resolves to
// 127.0.0.1, where it binds its real ports, and every other member's name
// resolves to a loopback address unique to the pair (zkPeerIP), where the
// pair's proxies listen on the same port numbers. Whatever address a member
// dials from its configuration reaches the peer through the proxy of that
// directed pair; the address a member announces is rewritten to its name on
// the way (see zkelection.go), so dial-backs go through the proxies too.
func (c *Cluster) buildZooKeeper(zs ZooKeeperSpec) (backend, error) {
	b := backend{name: BackendZooKeeper}
	nodes, err := c.addPlanned(BackendZooKeeper)
	if err != nil {
		return b, err
	}
	hostname, _ := os.Hostname()
	ports := make([]zkPorts, len(nodes))
	for _, n := range nodes {
		conf := filepath.Join(n.dataDir, "zoo.cfg")
		hosts := filepath.Join(n.dataDir, "hosts")
		n.cmd = zkCommand(n, conf, "-Djdk.net.hosts.file="+hosts)
		zkChecks(n)
	}

	// configure picks ports, creates the peer links and writes every
	// member's files. It runs again when a port was taken meanwhile.
	var peerLinks []*Link
	configure := func() error {
		c.removeLinks(peerLinks)
		peerLinks = nil
		free, err := pickPorts(3 * len(nodes))
		if err != nil {
			return err
		}
		for i := range nodes {
			ports[i] = zkPorts{free[3*i], free[3*i+1], free[3*i+2]}
			nodes[i].setAddr(hostPort(ports[i].client))
		}
		for from := range nodes {
			for to := range nodes {
				if from == to {
					continue
				}
				ip := zkPeerIP(from, to)
				l, err := c.addLinkAt(nodes[from].Name, nodes[to].Name,
					[]string{hostPort(ports[to].quorum), hostPort(ports[to].election)},
					[]string{net.JoinHostPort(ip, strconv.Itoa(ports[to].quorum)),
						net.JoinHostPort(ip, strconv.Itoa(ports[to].election))},
					[]string{"quorum", "election"})
				if err != nil {
					return err
				}
				peerLinks = append(peerLinks, l)
				if from < to {
					if err := l.rewriteElectionAddr(fmt.Sprintf("%s:%d", nodes[from].Name, ports[from].election)); err != nil {
						return err
					}
				}
			}
		}
		for i, n := range nodes {
			if err := writeZooKeeperFiles(n, zs, i, nodes, ports, hostname); err != nil {
				return err
			}
		}
		return nil
	}

	b.start = func(ctx context.Context) error {
		for attempt := 0; ; attempt++ {
			if err := configure(); err != nil {
				return err
			}
			err := startNodes(ctx, nodes, nil)
			if err == nil {
				return nil
			}
			conflict := false
			for _, n := range nodes {
				conflict = conflict || n.bindConflict()
			}
			if !conflict || attempt >= 2 {
				return err
			}
			c.log.Warn("zookeeper: port taken, restarting the ensemble on new ports")
			for _, n := range nodes {
				_ = n.kill(ctx)
			}
		}
	}
	b.version = func(ctx context.Context) string {
		_, v, _ := zkSrvr(ctx, nodes[0].Addr())
		return v
	}
	return b, nil
}

// writeMyID creates member self's data directory under n's and writes
// its myid (self+1) there; it returns the data directory.
func writeMyID(n *Node, self int) (string, error) {
	data := filepath.Join(n.dataDir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return "", err
	}
	return data, writeDurable(filepath.Join(data, "myid"), []byte(strconv.Itoa(self+1)+"\n"))
}

func writeZooKeeperFiles(n *Node, zs ZooKeeperSpec, self int, nodes []*Node, ports []zkPorts, hostname string) error {
	data, err := writeMyID(n, self)
	if err != nil {
		return err
	}
	var hosts strings.Builder
	names := []string{"localhost", n.Name}
	if hostname != "" && hostname != "localhost" {
		names = append(names, hostname)
	}
	fmt.Fprintf(&hosts, "127.0.0.1 %s\n", strings.Join(names, " "))
	for j, o := range nodes {
		if j != self {
			fmt.Fprintf(&hosts, "%s %s\n", zkPeerIP(self, j), o.Name)
		}
	}
	if err := writeDurable(filepath.Join(n.dataDir, "hosts"), []byte(hosts.String())); err != nil {
		return err
	}
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "tickTime=%d\ninitLimit=%d\nsyncLimit=%d\n", zkTickTime.Milliseconds(), zkInitLimit, zkSyncLimit)
	fmt.Fprintf(&cfg, "dataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\n", data, ports[self].client)
	fmt.Fprintf(&cfg, "minSessionTimeout=%d\nmaxSessionTimeout=%d\n", 2*zkTickTime.Milliseconds(), zkMaxSessionTimeout.Milliseconds())
	cfg.WriteString(zkServerConf(zs))
	if len(nodes) > 1 {
		for j, o := range nodes {
			fmt.Fprintf(&cfg, "server.%d=%s:%d:%d\n", j+1, o.Name, ports[j].quorum, ports[j].election)
		}
	}
	return writeDurable(filepath.Join(n.dataDir, "zoo.cfg"), []byte(cfg.String()))
}

// zkChecks sets how n's role and readiness are asked: srvr on its client
// port; it is ready once it leads, follows or runs standalone.
func zkChecks(n *Node) {
	n.role = func(ctx context.Context) (string, error) {
		mode, _, err := zkSrvr(ctx, n.Addr())
		return mode, err
	}
	n.probe = func(ctx context.Context) error {
		mode, _, err := zkSrvr(ctx, n.Addr())
		if err != nil {
			return err
		}
		if mode != "leader" && mode != "follower" && mode != "standalone" {
			return fmt.Errorf("mode %q", mode)
		}
		return nil
	}
}

// zkSrvr runs the srvr four-letter command and returns the member's mode
// (leader, follower, standalone) and server version.
func zkSrvr(ctx context.Context, addr string) (mode, version string, err error) {
	out, err := zk4lw(ctx, addr, "srvr")
	if err != nil {
		return "", "", err
	}
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, "Mode: "); ok {
			mode = strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(line, "Zookeeper version: "); ok {
			version, _, _ = strings.Cut(strings.TrimSpace(v), "-")
		}
	}
	if mode == "" {
		return "", version, fmt.Errorf("srvr: %q", strings.TrimSpace(out))
	}
	return mode, version, nil
}

// zk4lw sends a four-letter command and returns the reply.
func zk4lw(ctx context.Context, addr, cmd string) (string, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	if _, err := io.WriteString(conn, cmd); err != nil {
		return "", err
	}
	b, err := io.ReadAll(conn)
	if err != nil && !errors.Is(err, io.EOF) {
		return string(b), err
	}
	return string(b), nil
}

// rewriteElectionAddr installs the election-address rewrite (zkelection.go)
// on the link's election proxy, upstream.
func (l *Link) rewriteElectionAddr(addr string) error {
	body := fmt.Sprintf(`{"name":"locklab-zk-election","type":%q,"stream":"upstream","toxicity":1,"attributes":{"addr":%q}}`,
		zkElectionToxicType, addr)
	if _, err := l.proxies[1].Toxics.AddToxicJson(strings.NewReader(body)); err != nil {
		return fmt.Errorf("link %s: %w", l.Name, err)
	}
	return nil
}

// zkServerConf is the part of zoo.cfg every provider writes alike: no
// admin server, every four-letter word, no connection limit, and
// forceSync=no when the spec turns fsync off (cluster.zookeeper.fsync:
// false: the transaction log is written, never forced to disk).
func zkServerConf(zs ZooKeeperSpec) string {
	conf := "admin.enableServer=false\n4lw.commands.whitelist=*\nmaxClientCnxns=0\n"
	if zs.NoFsync {
		conf += "forceSync=no\n"
	}
	return conf
}

// zkRawPing is the srvr four-letter word, for PingOf.
var zkRawPing = &TablePing{Request: []byte("srvr"), Reply: 17, OK: replyIs("Zookeeper version")}
