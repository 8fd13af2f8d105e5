package cluster

// Free ports for servers and proxies.

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// pickPorts chooses ports for servers; tests replace it to provoke a port
// conflict.
var pickPorts = freePorts

// picked holds every port freePorts handed out in this process during the
// last pickedFor. A server binds its port a while after it was picked (and
// leaves it while killed or restarting); in between, any bind to port 0 in
// this process may get that port from the kernel: another cluster's pick
// (an atlas runs several clusters at once), or a proxy, which would then
// take its own server's port and proxy to itself, every connection opening
// another until no file descriptor is left (seen once in a 1,000-run
// atlas: "pipe2: too many open files"). So every port this package binds
// or hands out comes from here, never from a bare port 0 (listen, freeAddr).
var picked = struct {
	sync.Mutex
	until map[int]time.Time
}{until: map[int]time.Time{}}

// pickedFor outlasts any run's restarts; the ephemeral range (28,000
// ports) holds thousands of such reservations.
const pickedFor = 15 * time.Minute

// freePorts returns n distinct free 127.0.0.1 ports, none of them handed
// out before in this process (within pickedFor). They are free when
// chosen; a server that loses one to another process before binding it
// exits with "address already in use" and Start picks new ports for it.
func freePorts(n int) ([]int, error) {
	ls, err := listenFree("127.0.0.1", n)
	ports := make([]int, len(ls))
	for i, l := range ls {
		ports[i] = l.Addr().(*net.TCPAddr).Port
		l.Close()
	}
	return ports, err
}

// listenFree returns n listeners on host, on ports not handed out before
// in this process, and marks their ports handed out. Ports the kernel
// offers that were handed out are held until the end, so it offers others.
func listenFree(host string, n int) ([]net.Listener, error) {
	picked.Lock()
	defer picked.Unlock()
	now := time.Now()
	for p, until := range picked.until {
		if now.After(until) {
			delete(picked.until, p)
		}
	}
	var skipped, out []net.Listener
	defer func() {
		for _, l := range skipped {
			l.Close()
		}
	}()
	for len(out) < n {
		l, err := listenPort(host)
		if err != nil {
			for _, l := range out {
				l.Close()
			}
			return nil, fmt.Errorf("cluster: free port on %s: %w", host, err)
		}
		p := l.Addr().(*net.TCPAddr).Port
		if _, taken := picked.until[p]; taken || !claimPort(p) {
			skipped = append(skipped, l)
			continue
		}
		picked.until[p] = now.Add(pickedFor)
		out = append(out, l)
	}
	return out, nil
}

// Other locklab processes on the host (a second run, the test packages go
// test runs side by side) pick ports too, and a port this process handed
// out is free whenever its listener lets it go: a proxy or demultiplexer
// whose server is down stops listening, a killed server leaves its port.
// Another process could then take it, and a server of its cluster that
// still dials the address reaches this cluster (seen under six test
// processes at once: a replica of one cluster synced from another's
// primary, and sentinels found another cluster's server at the address of
// their killed primary and never failed over). So each port handed out is
// also claimed in a file of portClaimDir holding this process's pid, and a
// port another live process claimed within pickedFor is not handed out.

// portClaimDir is the directory of the host's port claims ("" when it
// cannot be made: claims are then this process's only).
var portClaimDir = sync.OnceValue(func() string {
	dir := filepath.Join(os.TempDir(), "locklab-ports-"+strconv.Itoa(os.Getuid()))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return ""
	}
	return dir
})

// claimPort claims port p for this process, unless another live process
// claimed it within pickedFor.
func claimPort(p int) bool {
	dir := portClaimDir()
	if dir == "" {
		return true
	}
	path := filepath.Join(dir, strconv.Itoa(p))
	if pid, live := claimant(path); live && pid != os.Getpid() {
		if fi, err := os.Stat(path); err == nil && time.Since(fi.ModTime()) < pickedFor {
			return false
		}
	}
	// A claim that cannot be written still leaves this process's own.
	_ = os.WriteFile(path, []byte(strconv.Itoa(os.Getpid())), 0o600)
	return true
}

// claimant is the pid the claim at path holds and whether that process
// runs; an unreadable claim has no live claimant.
func claimant(path string) (pid int, live bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
	return pid, err == nil && ProcessAlive(pid)
}

// PortClaimCleanup removes the port claims of processes that ended (the
// `cleanup` verb); a claim is otherwise only taken over when its port is
// handed out again. dryRun counts them without removing. It returns how
// many it removed (or would remove).
func PortClaimCleanup(dryRun bool) (int, error) {
	dir := portClaimDir()
	if dir == "" {
		return 0, nil
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("port claims: %w", err)
	}
	n := 0
	for _, e := range ents {
		path := filepath.Join(dir, e.Name())
		if _, live := claimant(path); live {
			continue
		}
		if dryRun || os.Remove(path) == nil {
			n++
		}
	}
	return n, nil
}

// ProcessAlive reports whether pid names a process that runs (not a
// zombie).
func ProcessAlive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && len(s) > i+2 && s[i+2] != 'Z'
}

// Ports for servers and proxies come from below the kernel's ephemeral
// range (net.ipv4.ip_local_port_range), from which outgoing connections
// take their source ports. A listener that lets its port go for a moment
// (a proxy restarted by a reset, a server killed and restarted) could
// otherwise find it taken as the source port of some client's
// connection, and could not bind it again ("address already in use":
// seen once as a failed reset in an atlas reset storm).
const (
	portsFrom    = 10000 // the lowest port handed out
	portsAtLeast = 2000  // fewer ports below the ephemeral range: use the kernel's choice
	portTries    = 200   // ports found taken before listenPort falls back to the kernel's choice
)

// portsBelow is the first port of the ephemeral range, read once; 0 when
// the range is unknown or leaves fewer than portsAtLeast ports above
// portsFrom.
var portsBelow = sync.OnceValue(func() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0
	}
	lo, err := strconv.Atoi(f[0])
	if err != nil || lo-portsFrom < portsAtLeast {
		return 0
	}
	return lo
})

// listenPort listens on a random free port of host below the ephemeral
// range; after portTries ports taken, or when that range is too small, on
// the kernel's choice (port 0).
func listenPort(host string) (net.Listener, error) {
	below := portsBelow()
	for try := 0; below > 0 && try < portTries; try++ {
		p := portsFrom + rand.IntN(below-portsFrom)
		l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(p)))
		if err == nil {
			return l, nil
		}
	}
	return net.Listen("tcp", net.JoinHostPort(host, "0"))
}

// listen listens on addr; port 0 means a port from listenFree, never the
// kernel's bare choice.
func listen(addr string) (net.Listener, error) {
	host, ok := portZero(addr)
	if !ok {
		return net.Listen("tcp", addr)
	}
	ls, err := listenFree(host, 1)
	if err != nil {
		return nil, err
	}
	return ls[0], nil
}

// freeAddr is addr with port 0 replaced by a port from listenFree, for a
// listener that binds the address itself (a toxiproxy proxy); other
// addresses are returned as they are.
func freeAddr(addr string) (string, error) {
	if _, ok := portZero(addr); !ok {
		return addr, nil
	}
	ln, err := listen(addr)
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// portZero returns addr's host when addr asks for any port (port 0).
func portZero(addr string) (host string, ok bool) {
	host, port, err := net.SplitHostPort(addr)
	return host, err == nil && port == "0"
}

func hostPort(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }
