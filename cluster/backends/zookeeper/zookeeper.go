// Package zookeeper is ZooKeeper's row of the cluster's backend table:
// members zk-0, zk-1, ... with myid 1, 2, ... (cluster.zookeeper: {nodes,
// fsync, image}) under every provider, their zoo.cfg and JVM command line,
// srvr for readiness, role and version, the election-address rewrite on
// the election proxies of their links (election.go), and each member's
// own clock read from its log, the evidence of clock faults.
//
// Of locklab it imports only cluster.
package zookeeper

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/locklab/locklab/cluster"
)

// Names of ZooKeeper's row (contract: they appear in scenario files).
const (
	// Name is the backend's name: the section cluster.zookeeper, the list
	// cluster.external.zookeeper and the locks' Backend.
	Name = "zookeeper"
	// Kind is the node kind of every member (zk-0, zk-1, ...).
	Kind = "zookeeper"
	// LeaderSelector names, in a fault, the member leading when the fault
	// starts.
	LeaderSelector = "zk-leader"
	// DefaultImage is the official image provider docker runs when it is
	// present and cluster.zookeeper.image names none.
	DefaultImage = "zookeeper:3.9"
)

// Jar is the ZooKeeper server jar the local provider runs (Debian's
// zookeeper package).
const Jar = "/usr/share/java/zookeeper.jar"

// zkClasspath is the server's classpath on Debian: the conf dir for
// log4j.properties, the server and its logging binding. zookeeper.jar's
// manifest brings the rest (jute, netty, ...).
var zkClasspath = strings.Join([]string{
	"/etc/zookeeper/conf", Jar,
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

// zkJVM are the JVM flags of every member, before ZooKeeper's own system
// properties.
var zkJVM = []string{"-Xms32m", "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
	"-XX:-UsePerfData", "-Djava.net.preferIPv4Stack=true",
	"-Dzookeeper.root.logger=INFO,CONSOLE", zkTrustEmptySnapshot,
	"-Dzookeeper.fastleader.maxNotificationInterval=" + strconv.FormatInt(zkMaxNotifyInterval.Milliseconds(), 10),
}

// zkCommand runs the member whose data dir is dir with the configuration
// file conf: java with Debian's classpath, or in a container (whose image
// may be Debian's packages or the official distribution) a shell that
// finds the classpath first (zkContainerScript).
func zkCommand(dir, conf string, inContainer bool) cluster.Command {
	if inContainer {
		return cluster.Command{Path: "sh", Dir: dir,
			Args: append([]string{"-c", zkContainerScript + " " + conf, "zookeeper"}, zkJVM...)}
	}
	return cluster.Command{Path: "java", Dir: dir, Args: append(slices.Clone(zkJVM),
		"-cp", zkClasspath, "org.apache.zookeeper.server.quorum.QuorumPeerMain", conf)}
}

// zkContainerScript starts ZooKeeper in both kinds of image: Debian's
// packages (the locklab images: the jars under /usr/share/java, log4j
// configuration in /etc/zookeeper/conf) and the official image (a
// distribution under /apache-zookeeper-*-bin with its lib/ and conf/).
// The JVM flags come as arguments, the configuration file after it.
const zkContainerScript = `cp=/etc/zookeeper/conf:/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-log4j12.jar:/usr/share/java/log4j-1.2.jar
for d in /apache-zookeeper-*-bin /opt/zookeeper; do
  if [ -d "$d/lib" ]; then cp="$d/conf:$d/lib/*"; fi
done
exec java "$@" -cp "$cp" org.apache.zookeeper.server.quorum.QuorumPeerMain`

// zkPorts are a member's client, quorum and election ports.
type zkPorts struct{ client, quorum, election int }

// The ports of a member where it has an address of its own (provider
// netns): ZooKeeper's standard ones.
const (
	zkClientPort   = 2181
	zkQuorumPort   = 2888
	zkElectionPort = 3888
)

// zkRow is ZooKeeper's row of the backend table (registered by init).
var zkRow = cluster.TableBackend{
	Name: Name,
	Doc:  "a ZooKeeper ensemble (not with provider external)",
	Fields: []cluster.TableField{
		{Name: "nodes", Kind: "int", Default: 1, Allowed: []string{"1", "3", "5"}, Example: "3",
			Doc: "ensemble members (zk-0, zk-1, ...)"},
		{Name: "fsync", Kind: "bool", Default: true, Example: "false",
			Doc: "false runs the members with forceSync=no: the transaction log is not forced to disk, so a power-cut fault can lose acknowledged writes"},
		{Name: cluster.ImageField, Kind: "string", Default: "", Example: DefaultImage,
			Doc: "container image, provider docker only (default: " + DefaultImage + ", or the newest locklab/zookeeper image when only that exists)"},
	},
	Kinds:      []cluster.TableKind{{Kind: Kind, Pattern: "zk-N"}},
	Providers:  []string{cluster.ProviderLocal, cluster.ProviderNetns, cluster.ProviderDocker},
	Binaries:   []string{"java"},
	Files:      []string{Jar},
	Packages:   []string{"zookeeper"},
	ClientPort: zkClientPort,
	Leader:     LeaderSelector,
	Faults: []string{"pause", "kill", "restart", "power-cut",
		"clock-jump", "clock-drift", "clock-strobe"},
	ReadClock:       zkClock,
	ClockSource:     "the log timestamp of srvr",
	NoPeerPing:      true, // a peer port speaks no four-letter words
	DefaultImage:    DefaultImage,
	SyncsEveryWrite: zkFsync,
	Ping:            zkRawPing,
	Plan:            plan,
	Build:           buildZooKeeper,
}

func init() { cluster.RegisterBackend(zkRow) }

// plan is zk-0 .. zk-<nodes-1> and, with more than one, a link for every
// directed pair (zk-1->zk-0: the quorum and election connections zk-1
// opens to zk-0).
func plan(s cluster.Settings) ([]cluster.PlanNode, []cluster.PlanLink) {
	return cluster.Members("zk-", Kind, s.Int("nodes"))
}

// zkFsync is cluster.zookeeper.fsync.
func zkFsync(s cluster.Settings) bool { return s.Bool("fsync") }

// buildZooKeeper creates an ensemble zk-0..zk-<n-1> (myid 1..n), under any
// provider, from its fabric (cluster.Build).
//
// Peer links are per directed pair ("zk-1->zk-0"), each a proxy for the
// quorum port and one for the election port where links are proxies
// (providers local and docker): member i's zoo.cfg names every other
// member j by the proxies of the link i->j, so whatever i dials from its
// configuration goes through that link. ZooKeeper keeps one election
// connection per pair, opened by the member with the higher id: when the
// lower one connects first, its opening message announces its own election
// address and the higher one dials that back, which would bypass the
// proxies; the election proxy of each lower->higher link rewrites that
// address on the way to the election proxy of higher->lower (election.go).
// Under netns every member is named by its own address, and the kernel
// carries the links.
func buildZooKeeper(b *cluster.Build) (cluster.Started, error) {
	var st cluster.Started
	nodes := b.Nodes
	fsync := zkFsync(b.Settings)
	free, err := b.Ports(3 * len(nodes))
	if err != nil {
		return st, err
	}
	ports := make([]zkPorts, len(nodes))
	setPorts := func(i int, p zkPorts) {
		ports[i] = zkPorts{b.Port(p.client, zkClientPort), b.Port(p.quorum, zkQuorumPort), b.Port(p.election, zkElectionPort)}
		b.Serve(nodes[i], ports[i].client)
	}
	for i := range nodes {
		setPorts(i, zkPorts{free[3*i], free[3*i+1], free[3*i+2]})
	}
	listen := func(i, port int) string { return b.ListenAddr(nodes[i], port) }

	// peerAddrs[i][j]: the quorum and election addresses member i dials
	// for j.
	peerAddrs := make([][][]string, len(nodes))
	for from := range nodes {
		peerAddrs[from] = make([][]string, len(nodes))
		for to := range nodes {
			if from == to {
				continue
			}
			addrs, err := b.PeerLinks(nodes[from], nodes[to],
				[]string{listen(to, ports[to].quorum), listen(to, ports[to].election)}, []string{"quorum", "election"})
			if err != nil {
				return st, err
			}
			peerAddrs[from][to] = addrs
		}
	}
	for from := range nodes {
		for to := from + 1; to < len(nodes); to++ {
			// to dials back what from announces: make it the election
			// proxy of to->from.
			if _, err := b.AddToxic(nodes[from], nodes[to], 1, electionToxicType,
				map[string]string{"addr": peerAddrs[to][from][1]}); err != nil {
				return st, err
			}
		}
	}

	for i, n := range nodes {
		conf := filepath.Join(n.DataDir(), "zoo.cfg")
		b.Configure(n, cluster.Setup{
			Command: func() (cluster.Command, error) {
				if err := writeZooKeeperFiles(b, n, fsync, i, ports[i], listen, peerAddrs[i]); err != nil {
					return cluster.Command{}, err
				}
				return zkCommand(n.DataDir(), conf, b.InContainer()), nil
			},
			Probe: func(ctx context.Context) error {
				mode, _, err := zkSrvr(ctx, n.Addr())
				if err != nil {
					return err
				}
				if mode != "leader" && mode != "follower" && mode != "standalone" {
					return fmt.Errorf("mode %q", mode)
				}
				return nil
			},
			Role: func(ctx context.Context) (string, error) {
				mode, _, err := zkSrvr(ctx, n.Addr())
				return mode, err
			},
			// A member whose port was taken before it bound it moves: only
			// its own zoo.cfg and the links into it name its real ports.
			Rebind: func() error {
				p, err := b.Ports(3)
				if err != nil {
					return err
				}
				setPorts(i, zkPorts{p[0], p[1], p[2]})
				return b.SetUpstreams(n, n.Addr(), listen(i, ports[i].quorum), listen(i, ports[i].election))
			},
		})
	}
	// Members start highest myid first: a member whose JVM comes up after
	// the others elected a leader among themselves takes over if its id is
	// higher, and the first leader then waits initLimit (5 s) for followers
	// that never come. (Container starts are staggered, which made that
	// race likely under docker.)
	st.Start = func(ctx context.Context) error {
		highestFirst := slices.Clone(nodes)
		slices.Reverse(highestFirst)
		return b.StartInOrder(ctx, highestFirst)
	}
	st.Version = func(ctx context.Context) string {
		_, v, _ := zkSrvr(ctx, nodes[0].Addr())
		return v
	}
	return st, nil
}

// writeMyID creates member self's data directory under n's and writes
// its myid (self+1) there; it returns the data directory.
func writeMyID(b *cluster.Build, n *cluster.Node, self int) (string, error) {
	data := filepath.Join(n.DataDir(), "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return "", err
	}
	return data, b.WriteFile(filepath.Join(data, "myid"), []byte(strconv.Itoa(self+1)+"\n"))
}

// writeZooKeeperFiles writes member self's myid and zoo.cfg: its own
// ports at listen, every other member j at peers[j] (its quorum and
// election addresses as self dials them).
func writeZooKeeperFiles(b *cluster.Build, n *cluster.Node, fsync bool, self int, own zkPorts, listen func(i, port int) string, peers [][]string) error {
	data, err := writeMyID(b, n, self)
	if err != nil {
		return err
	}
	host, _, err := net.SplitHostPort(listen(self, own.client))
	if err != nil {
		return fmt.Errorf("zookeeper %s: client address: %w", n.Name, err)
	}
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "tickTime=%d\ninitLimit=%d\nsyncLimit=%d\n", zkTickTime.Milliseconds(), zkInitLimit, zkSyncLimit)
	fmt.Fprintf(&cfg, "dataDir=%s\nclientPort=%d\nclientPortAddress=%s\n", data, own.client, host)
	fmt.Fprintf(&cfg, "minSessionTimeout=%d\nmaxSessionTimeout=%d\n", 2*zkTickTime.Milliseconds(), zkMaxSessionTimeout.Milliseconds())
	cfg.WriteString(zkServerConf(fsync))
	if len(peers) > 1 {
		for j := range peers {
			q, e := listen(self, own.quorum), listen(self, own.election)
			if j != self {
				q, e = peers[j][0], peers[j][1]
			}
			qh, qp, err := net.SplitHostPort(q)
			if err != nil {
				return fmt.Errorf("zookeeper %s: member %d's quorum address: %w", n.Name, j+1, err)
			}
			eh, ep, err := net.SplitHostPort(e)
			if err != nil {
				return fmt.Errorf("zookeeper %s: member %d's election address: %w", n.Name, j+1, err)
			}
			if eh != qh {
				return fmt.Errorf("zookeeper %s: member %d's quorum and election addresses differ in host (%s, %s)", n.Name, j+1, q, e)
			}
			fmt.Fprintf(&cfg, "server.%d=%s:%s:%s\n", j+1, qh, qp, ep)
		}
	}
	return b.WriteFile(filepath.Join(n.DataDir(), "zoo.cfg"), []byte(cfg.String()))
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

// zkServerConf is the part of zoo.cfg every provider writes alike: no
// admin server, every four-letter word, no connection limit, and
// forceSync=no without fsync (cluster.zookeeper.fsync: false: the
// transaction log is written, never forced to disk).
func zkServerConf(fsync bool) string {
	conf := "admin.enableServer=false\n4lw.commands.whitelist=*\nmaxClientCnxns=0\n"
	if !fsync {
		conf += "forceSync=no\n"
	}
	return conf
}

// zkRawPing is the srvr four-letter word, for PingOf.
var zkRawPing = &cluster.TablePing{Request: []byte("srvr"), Reply: 17,
	OK: func(b []byte) bool { return string(b) == "Zookeeper version" }}

// zkLogTime is the layout of the timestamps of ZooKeeper's console log
// (log4j's ISO8601 in the server's local time zone, which the harness
// shares).
const zkLogTime = "2006-01-02 15:04:05,000"

// zkClockTimeout bounds the srvr of zkClock and the wait for its log line.
const zkClockTimeout = time.Second

// zkClock sends srvr to a ZooKeeper member and finds the line its log
// wrote for it ("Processing srvr command from /ADDR"), whose timestamp is
// the member's wall clock when it processed the command (milliseconds:
// half of one is uncertainty).
func zkClock(ctx context.Context, n *cluster.Node) (cluster.ClockReading, error) {
	var size int64
	if st, err := os.Stat(n.LogPath()); err == nil {
		size = st.Size()
	}
	d := net.Dialer{Timeout: zkClockTimeout}
	r := cluster.ClockReading{Sent: time.Now(), Unsure: time.Millisecond}
	c, err := d.DialContext(ctx, "tcp", n.Addr())
	if err != nil {
		return r, fmt.Errorf("srvr to %s: %w", n.Name, err)
	}
	from := c.LocalAddr().String()
	c.SetDeadline(time.Now().Add(zkClockTimeout))
	_, err = c.Write([]byte("srvr"))
	if err == nil {
		_, err = io.Copy(io.Discard, c)
	}
	c.Close()
	r.Received = time.Now()
	if err != nil {
		return r, fmt.Errorf("srvr to %s: %w", n.Name, err)
	}
	want := "Processing srvr command from /" + from
	deadline := time.Now().Add(zkClockTimeout)
	for {
		if line, ok := findFrom(n.LogPath(), size, want); ok {
			if len(line) < len(zkLogTime) {
				return r, fmt.Errorf("%s log: no timestamp in %q", n.Name, line)
			}
			r.T, err = time.ParseInLocation(zkLogTime, line[:len(zkLogTime)], time.Local)
			if err != nil {
				return r, fmt.Errorf("%s log: %w", n.Name, err)
			}
			return r, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return r, fmt.Errorf("%s log %s: no line %q", n.Name, n.LogPath(), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// findFrom returns the first line of the file at path after offset that
// contains want.
func findFrom(path string, offset int64, want string) (string, bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return "", false
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if line := sc.Text(); strings.Contains(line, want) {
			return line, true
		}
	}
	return "", false
}
