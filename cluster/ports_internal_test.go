package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestPortTaken makes the first port handed to a server one that another
// process holds: Start must notice the bind failure and use new ports.
func TestPortTaken(t *testing.T) {
	for _, tc := range []struct {
		name string
		bin  string
		spec Spec
		// byRedis: the port is held by another redis-server, which answers
		// PING as ours would (another test package's server): Start must
		// not take its PONG for our node's.
		byRedis bool
	}{
		{"redis", "redis-server", Spec{Redis: &RedisSpec{Replicas: 1}}, false},
		{"redis-held-by-a-redis", "redis-server", Spec{Redis: &RedisSpec{Replicas: 1, Sentinels: 1}}, true},
		{"etcd", "etcd", Spec{Backends: map[string]Settings{"etcd": {"nodes": 3}}}, false},
		{"zookeeper", "java", Spec{Backends: map[string]Settings{"zookeeper": {"nodes": 3}}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if testing.Short() {
				t.Skip("needs real servers")
			}
			if _, err := exec.LookPath(tc.bin); err != nil {
				// testenv.RequireBinaries would import this package; same
				// policy: fail in CI, skip elsewhere.
				if ci := strings.ToLower(os.Getenv("CI")); ci == "true" || ci == "1" {
					t.Fatal(tc.bin + " not found on PATH (run `make deps`)")
				}
				t.Skip(tc.bin + " not installed")
			}
			takenPort := holdPort(t, tc.byRedis)
			first := true
			pickPorts = func(n int) ([]int, error) {
				ps, err := freePorts(n)
				if err == nil && first {
					first = false
					ps[0] = takenPort
				}
				return ps, err
			}
			defer func() { pickPorts = freePorts }()

			tc.spec.Dir = t.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			c, err := Start(ctx, tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			for _, n := range c.Nodes() {
				if n.Addr() == hostPort(takenPort) {
					t.Errorf("%s on the taken port %d", n.Name, takenPort)
				}
				if !n.Alive() {
					t.Errorf("%s not alive", n.Name)
				}
			}
			t.Logf("started around taken port %s in %v", strconv.Itoa(takenPort), c.Info().Startup)
		})
	}
}

// holdPort returns a port another process holds until the test ends: a
// plain listener, or with byRedis a redis-server answering PING on it.
func holdPort(t *testing.T, byRedis bool) int {
	t.Helper()
	if !byRedis {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l.Addr().(*net.TCPAddr).Port
	}
	ports, err := freePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("redis-server", "--port", strconv.Itoa(ports[0]), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := poll(ctx, "the other redis-server", func(ctx context.Context) error {
		return rawPing(ctx, hostPort(ports[0]))
	}); err != nil {
		t.Fatal(err)
	}
	return ports[0]
}

// rawPing is the row's raw PING to addr (PingOf).
func rawPing(ctx context.Context, addr string) error {
	p := PingOf(KindRedis)
	if p == nil {
		return errors.New("no redis row registered")
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.Write(p.Request); err != nil {
		return err
	}
	b := make([]byte, p.Reply)
	if _, err := io.ReadFull(conn, b); err != nil {
		return err
	}
	if !p.OK(b) {
		return fmt.Errorf("PING: %q", b)
	}
	return nil
}

// freePorts never hands out a port twice in one process (within
// pickedFor), although the kernel offers a released port again: without
// that, a proxy or another cluster's server got a port picked for a
// server that had not bound it yet.
func TestFreePortsNeverRepeat(t *testing.T) {
	seen := map[int]bool{}
	for range 300 {
		ps, err := freePorts(10)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ps {
			if seen[p] {
				t.Fatalf("port %d handed out twice (after %d ports)", p, len(seen))
			}
			seen[p] = true
		}
	}
	ls, err := listenFree("127.0.0.1", 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range ls {
		if seen[l.Addr().(*net.TCPAddr).Port] {
			t.Errorf("listenFree gave %s, handed out before", l.Addr())
		}
		l.Close()
	}
}

// Ports handed out lie below the ephemeral range, where no outgoing
// connection takes its source port: a proxy that a reset restarts on its
// port must find it free.
func TestFreePortsBelowEphemeral(t *testing.T) {
	below := portsBelow()
	if below == 0 {
		t.Skip("the ephemeral range leaves too few ports below it; the kernel chooses")
	}
	ps, err := freePorts(50)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if p < portsFrom || p >= below {
			t.Errorf("port %d handed out, want one in [%d, %d)", p, portsFrom, below)
		}
	}
	// Outgoing connections take their source ports from the ephemeral
	// range: none of them can hold a port handed out.
	l, err := listenFree("127.0.0.1", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer l[0].Close()
	c, err := net.Dial("tcp", l[0].Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if src := c.LocalAddr().(*net.TCPAddr).Port; src < below {
		t.Errorf("a connection's source port %d lies below the ephemeral range (%d): the range read is wrong", src, below)
	}
}

// TestPortClaims: a port another live process claimed is not handed out
// here (the claim of a process that ended is taken over), so two locklab
// processes never give one port to two clusters.
func TestPortClaims(t *testing.T) {
	if portClaimDir() == "" {
		t.Fatal("no claim directory")
	}
	other := exec.Command("sleep", "60")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { other.Process.Kill(); other.Wait() }()
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	claim := func(p, pid int) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(portClaimDir(), strconv.Itoa(p)), []byte(strconv.Itoa(pid)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Ports above those handed out here: each claimed by the live process
	// is refused.
	var live []int
	for p := 60000; p < 60010; p++ {
		claim(p, other.Process.Pid)
		live = append(live, p)
		if claimPort(p) {
			t.Errorf("port %d, claimed by live pid %d: claimed again", p, other.Process.Pid)
		}
	}
	claim(60010, gone.Process.Pid)
	if !claimPort(60010) {
		t.Errorf("port 60010, claimed by ended pid %d: not taken over", gone.Process.Pid)
	}
	if b, _ := os.ReadFile(filepath.Join(portClaimDir(), "60010")); strings.TrimSpace(string(b)) != strconv.Itoa(os.Getpid()) {
		t.Errorf("claim of 60010 after the take-over: %q, want this pid", b)
	}

	// cleanup removes the ended process's claim and keeps the live ones.
	claim(60011, gone.Process.Pid)
	if n, err := PortClaimCleanup(true); err != nil || n < 1 {
		t.Errorf("PortClaimCleanup(dry run) = %d, %v; want the ended process's claim at least", n, err)
	}
	if _, err := os.Stat(filepath.Join(portClaimDir(), "60011")); err != nil {
		t.Errorf("a dry run removed a claim: %v", err)
	}
	if n, err := PortClaimCleanup(false); err != nil || n < 1 {
		t.Errorf("PortClaimCleanup = %d, %v", n, err)
	}
	if _, err := os.Stat(filepath.Join(portClaimDir(), "60011")); !os.IsNotExist(err) {
		t.Errorf("claim of an ended process after cleanup: %v", err)
	}
	for _, p := range append(live, 60010) {
		if _, err := os.Stat(filepath.Join(portClaimDir(), strconv.Itoa(p))); err != nil {
			t.Errorf("claim of port %d (a live process's or this one's) after cleanup: %v", p, err)
		}
		os.Remove(filepath.Join(portClaimDir(), strconv.Itoa(p)))
	}
}
