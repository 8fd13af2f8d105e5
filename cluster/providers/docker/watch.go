package docker

import (
	"bufio"
	"bytes"
	"github.com/locklab/locklab/cluster"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// dockerWatch makes a docker cluster's proxies follow their upstreams'
// listening state, as listen.go does for local servers (a proxy whose
// server does not listen refuses connections instead of accepting and
// closing them; see listen.go for why ZooKeeper needs that). The listening
// sockets of a container are in its own network namespace, which the
// harness reads from the host through /proc/<pid>/net/tcp of the
// container's init process every watchEvery. A server listening on port P
// in its container makes "<container address>:P" listen (the upstream of
// peer proxies) and, for the client port, the node's published address
// (the upstream of client proxies).
//
// When /proc/<pid>/net is not readable (a remote or rootless engine), the
// proxies simply listen all the time, as with a local cluster whose
// watcher failed.
type dockerWatch struct {
	p      *dockerProvider
	stopCh chan struct{}
	doneCh chan struct{}
	once   sync.Once

	mu    sync.Mutex
	procs map[*dockerProcess]watched
	born  map[*cluster.Link]time.Time
	demux []*cluster.PeerDemux // peer demultiplexers (peers.go)
	off   bool
}

type watched struct {
	n          *cluster.Node
	ip         string
	clientPort int
}

func newDockerWatch(p *dockerProvider) *dockerWatch {
	w := &dockerWatch{p: p, stopCh: make(chan struct{}), doneCh: make(chan struct{}),
		procs: map[*dockerProcess]watched{}, born: map[*cluster.Link]time.Time{}}
	go func() {
		defer close(w.doneCh)
		w.loop()
	}()
	return w
}

// following reports whether links should follow listening state.
func (w *dockerWatch) following() bool {
	if w == nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return !w.off
}

// linkAdded records when l was created: a round whose reading of the
// sockets is older than the link does not act on it. (A new link's proxies
// listen, and the round that read the sockets just before the server
// listened, and was slow to apply what it read, would stop them and close
// the connections clients had just opened.)
func (w *dockerWatch) linkAdded(l *cluster.Link) {
	w.mu.Lock()
	w.born[l] = time.Now()
	w.mu.Unlock()
}

// addDemux has d follow its node's listening state too; stop closes it.
func (w *dockerWatch) addDemux(d *cluster.PeerDemux) {
	w.mu.Lock()
	w.demux = append(w.demux, d)
	w.mu.Unlock()
}

func (w *dockerWatch) add(n *cluster.Node, pr *dockerProcess, clientPort int) {
	w.mu.Lock()
	w.procs[pr] = watched{n: n, ip: w.p.assignIP(n.Name).String(), clientPort: clientPort}
	w.mu.Unlock()
}

// exited forgets a launch and brings the proxies up to date at once, so
// that a killed server's proxies refuse before Kill returns.
func (w *dockerWatch) exited(pr *dockerProcess) {
	w.mu.Lock()
	delete(w.procs, pr)
	w.mu.Unlock()
	w.sync()
}

func (w *dockerWatch) stop() {
	w.once.Do(func() { close(w.stopCh) })
	<-w.doneCh
	w.mu.Lock()
	demux := w.demux
	w.mu.Unlock()
	for _, d := range demux {
		d.Close()
	}
}

func (w *dockerWatch) loop() {
	t := time.NewTicker(cluster.WatchEvery)
	defer t.Stop()
	for {
		select {
		case <-w.stopCh:
			return
		case <-t.C:
		}
		w.sync()
	}
}

// sync reads every running container's listening sockets and starts or
// stops the proxies accordingly.
func (w *dockerWatch) sync() {
	read := time.Now()
	w.mu.Lock()
	if w.off {
		w.mu.Unlock()
		return
	}
	procs := make(map[*dockerProcess]watched, len(w.procs))
	for pr, wd := range w.procs {
		procs[pr] = wd
	}
	w.mu.Unlock()
	ls := map[string]bool{}
	for pr, wd := range procs {
		if pr.exited() || pr.hostPid <= 0 {
			continue
		}
		ports, err := netnsListening(pr.hostPid)
		if err != nil {
			if os.IsPermission(err) {
				w.disable(err)
				return
			}
			continue // the container is stopping: nothing listens
		}
		for port := range ports {
			ls[wd.ip+":"+strconv.Itoa(port)] = true
			if port == wd.clientPort {
				ls[wd.n.Addr()] = true
			}
		}
	}
	w.mu.Lock()
	born := make(map[*cluster.Link]time.Time, len(w.born))
	for l, t := range w.born {
		born[l] = t
	}
	demux := append([]*cluster.PeerDemux(nil), w.demux...)
	w.mu.Unlock()
	for _, d := range demux {
		if !d.Cut() {
			d.SetListening(ls[d.Upstream()], 0)
		}
	}
	for _, l := range w.p.c.AllLinks() {
		if t, ok := born[l]; ok && t.After(read) {
			continue
		}
		before := l.Listening()
		l.SyncListening(ls)
		if after := l.Listening(); after != before {
			w.p.log.Debug("proxies follow their upstream", "link", l.Name, "listening", after)
		}
	}
}

func (w *dockerWatch) disable(err error) {
	w.mu.Lock()
	w.off = true
	demux := w.demux
	w.mu.Unlock()
	for _, d := range demux {
		d.SetListening(true, 0)
	}
	w.p.log.Warn("cluster: proxies cannot follow the containers' listening state", "err", err)
	w.p.c.StopWatching()
}

// netnsListening returns the ports on which some socket listens on a
// non-loopback address in the network namespace of process pid.
func netnsListening(pid int) (map[int]bool, error) {
	out := map[int]bool{}
	for i, file := range []string{"tcp", "tcp6"} {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/net/" + file)
		if err != nil {
			if i == 1 && os.IsNotExist(err) {
				break // no IPv6 in the namespace
			}
			return nil, err
		}
		parseProcNetTCP(b, out)
	}
	return out, nil
}

// parseProcNetTCP adds the listening ports of a /proc/net/tcp{,6} table to
// out, skipping sockets bound to a loopback address.
func parseProcNetTCP(b []byte, out map[int]bool) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	first := true
	for sc.Scan() {
		if first {
			first = false
			continue
		}
		f := strings.Fields(sc.Text())
		if len(f) < 4 || f[3] != "0A" { // TCP_LISTEN
			continue
		}
		ipHex, portHex, ok := strings.Cut(f[1], ":")
		if !ok {
			continue
		}
		port, err := strconv.ParseUint(portHex, 16, 16)
		if err != nil {
			continue
		}
		if ip, ok := procNetIP(ipHex); ok && ip.IsLoopback() {
			continue
		}
		out[int(port)] = true
	}
}

// procNetIP decodes an address of /proc/net/tcp{,6}: 32-bit words in host
// (little-endian on every platform Docker runs this on) byte order.
func procNetIP(h string) (netip.Addr, bool) {
	if len(h) != 8 && len(h) != 32 {
		return netip.Addr{}, false
	}
	raw := make([]byte, len(h)/2)
	for i := range raw {
		v, err := strconv.ParseUint(h[2*i:2*i+2], 16, 8)
		if err != nil {
			return netip.Addr{}, false
		}
		raw[i] = byte(v)
	}
	for w := 0; w+4 <= len(raw); w += 4 {
		raw[w], raw[w+1], raw[w+2], raw[w+3] = raw[w+3], raw[w+2], raw[w+1], raw[w]
	}
	ip, ok := netip.AddrFromSlice(raw)
	return ip.Unmap(), ok
}
