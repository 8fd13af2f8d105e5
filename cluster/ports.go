package cluster

// Free ports for servers and proxies.

import (
	"fmt"
	"net"
	"strconv"
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
// or hands out comes from here, never from a bare 127.0.0.1:0.
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
	ls, err := listenFree(n)
	ports := make([]int, len(ls))
	for i, l := range ls {
		ports[i] = l.Addr().(*net.TCPAddr).Port
		l.Close()
	}
	return ports, err
}

// listenFree returns n listeners on 127.0.0.1 ports not handed out before
// in this process, and marks their ports handed out. Ports the kernel
// offers that were handed out are held until the end, so it offers others.
func listenFree(n int) ([]net.Listener, error) {
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
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			for _, l := range out {
				l.Close()
			}
			return nil, fmt.Errorf("cluster: free port: %w", err)
		}
		p := l.Addr().(*net.TCPAddr).Port
		if _, taken := picked.until[p]; taken {
			skipped = append(skipped, l)
			continue
		}
		picked.until[p] = now.Add(pickedFor)
		out = append(out, l)
	}
	return out, nil
}

// freeAddr is one address from freePorts, for a listener that binds it
// itself (a toxiproxy proxy).
func freeAddr() (string, error) {
	ps, err := freePorts(1)
	if err != nil {
		return "", err
	}
	return hostPort(ps[0]), nil
}

func hostPort(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }
