package netns_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/providers/netns"
	"github.com/locklab/locklab/locks"
	_ "github.com/locklab/locklab/locks/all"
	"github.com/locklab/locklab/testenv"
)

// dialWithin dials addr and reports how it ended within d: nil when
// accepted.
func dialWithin(addr string, d time.Duration) error {
	conn, err := net.DialTimeout("tcp", addr, d)
	if err == nil {
		conn.Close()
	}
	return err
}

func TestNetnsRedisPartition(t *testing.T) {
	if !testenv.Netns(t) {
		return
	}
	c := testenv.Cluster(t, cluster.Spec{Provider: cluster.ProviderNetns,
		Redis: &cluster.RedisSpec{Primaries: 1, Replicas: 1}, Clients: 2})
	n, _ := c.Node("redis-0")
	if !strings.HasPrefix(n.Addr(), "198.1") {
		t.Fatalf("redis-0 at %s, want an address of 198.18.0.0/15", n.Addr())
	}
	e := c.Endpoints(0)
	if e.Redis[0] != n.Addr() {
		t.Fatalf("client 0 dials %s, want redis-0's own address %s (no proxy)", e.Redis[0], n.Addr())
	}
	if err := dialWithin(n.Addr(), time.Second); err != nil {
		t.Fatalf("dial redis-0 before the cut: %v", err)
	}
	ls, err := c.Partition([][]string{{"redis-0"}, {"redis-0-r0", "clients"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 4 { // client-0, client-1 -> redis-0 and both replication directions
		t.Fatalf("partition cuts %d links, want 4", len(ls))
	}
	for _, l := range ls {
		if err := l.Cut(); err != nil {
			t.Fatal(err)
		}
	}
	err = dialWithin(n.Addr(), 500*time.Millisecond)
	var ne net.Error
	if err == nil || !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("dial a cut node: %v, want a timeout (packets dropped, not refused)", err)
	}
	var dropped uint64
	for _, l := range ls {
		dropped += l.Dropped()
	}
	if dropped == 0 {
		t.Fatalf("the cut links' rules dropped no packet")
	}
	for _, l := range ls {
		if err := l.Heal(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if err := dialWithin(n.Addr(), time.Second); err != nil {
		t.Fatalf("dial redis-0 after healing: %v", err)
	}
}

// TestNetnsLocks takes and hands over a redis-cad, zk-recipe and
// etcd-recipe lock between two clients of one netns cluster: the locks dial
// the servers' namespace addresses directly.
func TestNetnsLocks(t *testing.T) {
	if !testenv.Netns(t) {
		return
	}
	c := testenv.Cluster(t, cluster.Spec{Provider: cluster.ProviderNetns, Clients: 2,
		Redis: &cluster.RedisSpec{Primaries: 1}, Backends: map[string]cluster.Settings{"zookeeper": {"nodes": 3}, "etcd": {"nodes": 3}}})
	for _, name := range []string{"redis-cad", "zk-recipe", "etcd-recipe"} {
		t.Run(name, func(t *testing.T) {
			spec, ok := locks.Lookup(name)
			if !ok {
				t.Fatalf("no lock %s", name)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var ls []locks.Locker
			for i := range 2 {
				e := c.Endpoints(i)
				for _, a := range append(append(e.Redis, e.Table["zookeeper"]...), e.Table["etcd"]...) {
					if !strings.HasPrefix(a, "198.1") {
						t.Fatalf("client %d dials %s, want a namespace address", i, a)
					}
				}
				cl, err := spec.New(ctx, locks.Config{Endpoints: e, TTL: 5 * time.Second, Prefix: "netns/"})
				if err != nil {
					t.Fatalf("client %d: %v", i, err)
				}
				t.Cleanup(func() { cl.Close() })
				ls = append(ls, cl.Locker("k"))
			}
			a, err := ls[0].Acquire(ctx)
			if err != nil {
				t.Fatalf("acquire 0: %v", err)
			}
			short, cancelShort := context.WithTimeout(ctx, 300*time.Millisecond)
			_, err = ls[1].Acquire(short)
			cancelShort()
			if err == nil {
				t.Fatal("client 1 acquired while client 0 held the lock")
			}
			if err := a.Release(ctx); err != nil {
				t.Fatalf("release 0: %v", err)
			}
			b, err := ls[1].Acquire(ctx)
			if err != nil {
				t.Fatalf("acquire 1 after the release: %v", err)
			}
			if err := b.Release(ctx); err != nil {
				t.Fatalf("release 1: %v", err)
			}
		})
	}
}

// TestNetnsLoss drops 50% of the clients' packets to redis-0 and counts
// what the rule dropped of 2,000 datagrams sent there.
func TestNetnsLoss(t *testing.T) {
	if !testenv.Netns(t) {
		return
	}
	c := testenv.Cluster(t, cluster.Spec{Provider: cluster.ProviderNetns, Redis: &cluster.RedisSpec{Primaries: 1}})
	n, _ := c.Node("redis-0")
	f, err := c.AddPacketRule(cluster.PacketRule{From: cluster.Clients, To: "redis-0", Action: cluster.PacketDrop, Percent: 50})
	if err != nil {
		t.Fatal(err)
	}
	pc, err := net.ListenPacket("udp4", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	host, _, _ := net.SplitHostPort(n.Addr())
	to := &net.UDPAddr{IP: net.ParseIP(host), Port: 9} // nobody listens: the server's kernel answers or drops
	const sent = 2000
	for range sent {
		if _, err := pc.WriteTo([]byte("x"), to); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, 5*time.Second, "the rule counts", func() error {
		m, err := f.Matched()
		if err != nil {
			return err
		}
		if m < sent*35/100 || m > sent*65/100 {
			return fmt.Errorf("dropped %d of %d, want about half", m, sent)
		}
		t.Logf("loss 50%%: dropped %d of %d datagrams (%.1f%%)", m, sent, 100*float64(m)/sent)
		return nil
	})
	if err := f.Remove(); err != nil {
		t.Fatal(err)
	}
	if err := dialWithin(n.Addr(), time.Second); err != nil {
		t.Fatalf("dial after removing the rule: %v", err)
	}
}

// TestNetnsBlackholeAndReset: a blackhole lets a live connection carry on
// and makes a new one time out; a reset rule breaks the live connection.
func TestNetnsBlackholeAndReset(t *testing.T) {
	if !testenv.Netns(t) {
		return
	}
	c := testenv.Cluster(t, cluster.Spec{Provider: cluster.ProviderNetns, Redis: &cluster.RedisSpec{Primaries: 1}})
	n, _ := c.Node("redis-0")
	conn, err := net.DialTimeout("tcp", n.Addr(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ping := func() error {
		conn.SetDeadline(time.Now().Add(time.Second))
		if _, err := conn.Write([]byte("PING\r\n")); err != nil {
			return err
		}
		b := make([]byte, 7)
		_, err := io.ReadFull(conn, b)
		return err
	}
	bh, err := c.AddPacketRule(cluster.PacketRule{From: cluster.Clients, To: "redis-0", Action: cluster.PacketDropSYN})
	if err != nil {
		t.Fatal(err)
	}
	if err := ping(); err != nil {
		t.Fatalf("a live connection under a blackhole: %v", err)
	}
	var ne net.Error
	if err := dialWithin(n.Addr(), 500*time.Millisecond); err == nil || !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("a new connection under a blackhole: %v, want a timeout", err)
	}
	if m, _ := bh.Matched(); m == 0 {
		t.Fatal("the blackhole counted no SYN")
	}
	if err := bh.Remove(); err != nil {
		t.Fatal(err)
	}
	// Both ways, as the reset fault installs them: the reset one rule
	// sends must not be dropped by the other's (it leaves through the
	// output hook where the other direction's rule sits).
	rst, err := c.AddPacketRule(cluster.PacketRule{From: cluster.Clients, To: "redis-0", Action: cluster.PacketReset})
	if err != nil {
		t.Fatal(err)
	}
	back, err := c.AddPacketRule(cluster.PacketRule{From: "redis-0", To: cluster.Clients, Action: cluster.PacketReset})
	if err != nil {
		t.Fatal(err)
	}
	defer back.Remove()
	if err := ping(); err == nil || !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("a live connection under reset rules both ways: %v, want connection reset", err)
	}
	if m, _ := rst.Matched(); m == 0 {
		t.Fatal("the reset rule counted no packet")
	}
	start := time.Now()
	if err := dialWithin(n.Addr(), 2*time.Second); err == nil || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("a new connection under reset rules both ways: %v after %v, want connection refused", err, time.Since(start))
	}
}

// TestNetnsCleanupAfterKill SIGKILLs a harness (this test binary, in a
// helper mode) running a netns cluster and checks that NetnsCleanup leaves
// no namespace, veth link or server process behind.
func TestNetnsCleanupAfterKill(t *testing.T) {
	if os.Getenv("LOCKLAB_NETNS_HOLD") != "" {
		if !netns.InHarness() {
			// The helper harness: like bench run, it starts itself again
			// in a namespace of the run, its output passed through.
			code, err := netns.Run(context.Background(), os.Args, nil)
			if err != nil || code != 0 {
				t.Fatalf("harness in netns: exit %d, %v", code, err)
			}
			return
		}
		c := testenv.Cluster(t, cluster.Spec{Provider: cluster.ProviderNetns, Redis: &cluster.RedisSpec{Primaries: 1, Replicas: 1}})
		fmt.Printf("READY %d %d\n", c.Nodes()[0].Pid(), os.Getpid())
		time.Sleep(time.Minute) // killed long before
		return
	}
	if testing.Short() {
		t.Skip("provider netns: skipped under -short")
	}
	if err := netns.Available(); err != nil {
		testenv.Unavailable(t, "%v", err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestNetnsCleanupAfterKill$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "LOCKLAB_NETNS_HOLD=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	ready := make(chan [2]int, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if s, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "READY "); ok {
				var p [2]int
				fmt.Sscan(s, &p[0], &p[1])
				ready <- p
			}
		}
		close(ready)
	}()
	var server, inner int
	select {
	case p := <-ready:
		server, inner = p[0], p[1]
	case <-time.After(90 * time.Second):
	}
	if server == 0 {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("the harness never came up")
	}
	mine := func() []string {
		b, _ := exec.Command("ip", "netns", "list").Output()
		var out []string
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) > 0 && (strings.HasPrefix(f[0], netns.Prefix+strconv.Itoa(pid)+"-") ||
				strings.HasPrefix(f[0], netns.Prefix+strconv.Itoa(inner)+"-")) {
				out = append(out, f[0])
			}
		}
		return out
	}
	before := mine()
	if len(before) == 0 {
		t.Fatal("no namespace of the harness in `ip netns list`")
	}
	// The harness (the parent that made the harness namespace) is killed;
	// its child test process and the servers die with it (Pdeathsig).
	syscall.Kill(pid, syscall.SIGKILL)
	cmd.Wait()
	testenv.Eventually(t, 10*time.Second, "the server process gone", func() error {
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(server) + "/stat"); err == nil && !strings.Contains(string(b), ") Z") {
			return fmt.Errorf("server pid %d still runs", server)
		}
		return nil
	})
	t.Logf("left after SIGKILL: %v", before)
	res, err := netns.Cleanup(netns.CleanupOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cleanup removed %v, killed %v", res.Namespaces, res.Processes)
	if left := mine(); len(left) > 0 {
		t.Fatalf("namespaces left after cleanup: %v", left)
	}
	b, _ := exec.Command("ip", "-br", "link").Output()
	if strings.Contains(string(b), "ll") && strings.Contains(string(b), "@") {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "ll") {
				t.Fatalf("veth link left in the machine's namespace: %s", l)
			}
		}
	}
}

// TestNetnsClientNamespace: a client process started through
// ClientStarter lives in a namespace of its own with its own address, so
// a partition of that one client cuts it alone; the cluster's Close
// removes its namespace.
func TestNetnsClientNamespace(t *testing.T) {
	if !testenv.Netns(t) {
		return
	}
	testenv.RequireBinaries(t, "redis-cli")
	c, err := cluster.Start(context.Background(), cluster.Spec{Provider: cluster.ProviderNetns,
		Redis: &cluster.RedisSpec{Primaries: 1}, Clients: 2, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			c.Close()
		}
	}()
	n, _ := c.Node("redis-0")
	host, port, _ := net.SplitHostPort(n.Addr())
	if c.ClientStarter(0) == nil {
		t.Fatal("no ClientStarter under provider netns")
	}
	ping := func() (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, "redis-cli", "-h", host, "-p", port, "ping")
		var out strings.Builder
		cmd.Stdout = &out
		if err := c.ClientStarter(0)(cmd.Start); err != nil {
			return "", err
		}
		err := cmd.Wait()
		return strings.TrimSpace(out.String()), err
	}
	if out, err := ping(); out != "PONG" {
		t.Fatalf("client-0 pings redis-0: %q, %v", out, err)
	}
	if !c.OwnClientAddress("client-0") || c.OwnClientAddress("client-1") {
		t.Fatal("client-0 should have an address of its own, client-1 (never started) not")
	}
	names, _ := os.ReadDir("/run/netns")
	var mine string
	for _, e := range names {
		if strings.HasPrefix(e.Name(), netns.Prefix+strconv.Itoa(os.Getpid())+"-") && strings.HasSuffix(e.Name(), "-client-0") {
			mine = e.Name()
		}
	}
	if mine == "" {
		t.Fatal("no namespace ...-client-0 of this process")
	}
	ls, err := c.Partition([][]string{{"client-0"}, {"redis-0", "client-1"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range ls {
		if err := l.Cut(); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := ping(); err == nil {
		t.Fatalf("client-0 pings redis-0 through its partition: %q", out)
	}
	if err := dialWithin(n.Addr(), time.Second); err != nil {
		t.Fatalf("the harness (client-1's address) is cut too: %v", err)
	}
	var dropped uint64
	for _, l := range ls {
		dropped += l.Dropped()
	}
	if dropped == 0 {
		t.Fatal("the partition's rules dropped no packet")
	}
	for _, l := range ls {
		if err := l.Heal(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := ping(); out != "PONG" {
		t.Fatalf("client-0 pings redis-0 after the heal: %q, %v", out, err)
	}
	closed = true
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/run/netns/" + mine); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s left after Close: %v", mine, err)
	}
}
