package cluster

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// Peer demultiplexers: one address per node that all its peers dial, and
// per-directed-pair links behind it.
//
// Some servers must give every peer the same address for a node: etcd
// members agree on each member's peer URL (the cluster id is derived from
// them); in a Redis topology a replica's replicaof, the address Sentinel
// monitors, the addresses replicas announce and the ones Sentinel hands to
// clients and to the other sentinels are all one address per node. A proxy
// per directed pair cannot be given out there, since every peer would
// dial the same one. So a demultiplexer listens on the node's peer address:
// it accepts a connection, names the process that opened it, and forwards
// the connection — what it had to read first, then both directions spliced
// — through the link of that directed pair ("etcd-1->etcd-0",
// "sentinel-1->redis-0"), a toxiproxy proxy with its gate like every other
// link. A connection whose sender stays unknown goes through the node's
// fallback link ("etcd-peers->etcd-0", "redis-peers->redis-0").
//
// How a sender is named depends on the backend and the provider: by the
// request headers etcd's raft transport sets (cluster/backends/etcd), by
// the local process whose file descriptors hold the connecting socket
// (senderBySocket), or, with containers, by the source address, each
// container's fixed address on the run's network (senderByAddr).
//
// A demultiplexer follows its node's listening state like the proxies do
// (listen.go, cluster/providers/docker/watch.go): it refuses connections
// while the node does not listen, unless one of its links is cut (then
// nothing about the node leaks through the partition).

// peerDialTimeout bounds dialing a pair link's proxy.
const peerDialTimeout = 2 * time.Second

// PeerDemux fronts one node's peer port at addr, its peer address.
type PeerDemux struct {
	log      *slog.Logger
	node     string  // the node it fronts (logs)
	addr     string  // where it listens
	fallback *Link   // "<backend>-peers-><node>": senders not named
	pairs    []*Link // pairs[j] is the link from sender j; nil where none
	// proxy is which proxy of each link d forwards through: 0, or 1 for a
	// Redis Cluster node's bus (Build.FrontPeerPorts).
	proxy int
	// sender names the sender of c: the bytes it read from c to do so
	// (forwarded first) and the sender's index in pairs, -1 when unknown.
	sender func(c net.Conn) ([]byte, int)

	mu     sync.Mutex
	ln     net.Listener // nil while not listening
	conns  map[net.Conn]struct{}
	closed bool
	synced uint64 // the newest socket reading applied (listen.go)
	wg     sync.WaitGroup
}

func newPeerDemux(log *slog.Logger, node string, fallback *Link, senders int) *PeerDemux {
	return &PeerDemux{log: log, node: node, fallback: fallback, pairs: make([]*Link, senders),
		conns: map[net.Conn]struct{}{}}
}

// through returns a demultiplexer like d, fronting the same node over the
// same links and naming senders the same way, that forwards through
// proxy i of each link (label names it in logs): a Redis Cluster node's
// bus beside its port (Build.FrontPeerPorts).
func (d *PeerDemux) through(i int, label string) *PeerDemux {
	t := newPeerDemux(d.log, d.node+" "+label, d.fallback, len(d.pairs))
	copy(t.pairs, d.pairs)
	t.sender, t.proxy = d.sender, i
	return t
}

// listen starts d listening on listenAddr (port 0: a free one); d.addr is
// then the address it listens on, kept when it stops and starts again.
func (d *PeerDemux) listen(listenAddr string) error {
	ln, err := listen(listenAddr) // ports.go: port 0 is never a port picked for a server
	if err != nil {
		return err
	}
	d.addr = ln.Addr().String()
	d.serve(ln)
	return nil
}

// Upstream is the address d's links forward to: the node's real peer
// address.
func (d *PeerDemux) Upstream() string {
	d.fallback.mu.Lock()
	defer d.fallback.mu.Unlock()
	return d.fallback.upstreams[d.proxy]
}

// Cut reports whether any link of d is cut.
func (d *PeerDemux) Cut() bool {
	if d.fallback.IsCut() {
		return true
	}
	for _, l := range d.pairs {
		if l != nil && l.IsCut() {
			return true
		}
	}
	return false
}

// syncListening makes d listen when its node listens and refuse
// connections when it does not, unless one of d's links is cut. seq orders
// socket readings (readListening): an older one than already applied is
// ignored.
func (d *PeerDemux) syncListening(ls map[string]bool, seq uint64) {
	if d.Cut() {
		return
	}
	d.SetListening(upstreamListens(ls, d.Upstream()), seq)
}

// SetListening makes d listen or not. seq orders the calls as in
// syncListening; 0 orders nothing and is always applied.
func (d *PeerDemux) SetListening(want bool, seq uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return
	}
	if seq != 0 {
		if seq < d.synced {
			return
		}
		d.synced = seq
	}
	switch {
	case want && d.ln == nil:
		ln, err := net.Listen("tcp", d.addr)
		if err != nil {
			return // retried next round
		}
		d.ln = ln
		d.wg.Add(1)
		go d.accept(ln)
	case !want && d.ln != nil:
		d.ln.Close()
		d.ln = nil
	}
}

// serve starts accepting on ln (d.mu not held).
func (d *PeerDemux) serve(ln net.Listener) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ln = ln
	d.wg.Add(1)
	go d.accept(ln)
}

func (d *PeerDemux) accept(ln net.Listener) {
	defer d.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond) // EMFILE and the like: do not spin
			continue
		}
		if !d.track(c) {
			c.Close()
			continue
		}
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			d.forward(c)
		}()
	}
}

// track registers a live connection; false when d is closed.
func (d *PeerDemux) track(c net.Conn) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return false
	}
	d.conns[c] = struct{}{}
	return true
}

func (d *PeerDemux) untrack(cs ...net.Conn) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range cs {
		delete(d.conns, c)
		c.Close()
	}
}

// link is the link a connection from sender from goes through.
func (d *PeerDemux) link(from int) *Link {
	if from >= 0 && from < len(d.pairs) && d.pairs[from] != nil {
		return d.pairs[from]
	}
	return d.fallback
}

// forward names c's sender and splices c with a connection through the
// sender's link.
func (d *PeerDemux) forward(c net.Conn) {
	head, from := d.sender(c)
	l := d.link(from)
	if l == d.fallback && d.log != nil {
		d.log.Debug("peer connection from an unknown sender", "to", d.node, "from", c.RemoteAddr().String())
	}
	up, err := net.DialTimeout("tcp", l.addrs[d.proxy], peerDialTimeout)
	if err != nil {
		// The link's proxy refuses: its node does not listen.
		if d.log != nil {
			d.log.Debug("peer connection refused", "to", d.node, "link", l.Name, "from", c.RemoteAddr().String(), "err", err)
		}
		d.untrack(c)
		return
	}
	if !d.track(up) {
		d.untrack(c, up)
		return
	}
	defer d.untrack(c, up)
	if len(head) > 0 {
		if _, err := up.Write(head); err != nil {
			return
		}
	}
	splice(c, up)
}

// Close stops accepting and closes every live connection.
func (d *PeerDemux) Close() {
	d.mu.Lock()
	d.closed = true
	if d.ln != nil {
		d.ln.Close()
		d.ln = nil
	}
	for c := range d.conns {
		c.Close()
	}
	d.mu.Unlock()
	d.wg.Wait()
}

// senderBySocket names the node whose process opened c (c's remote end is
// a socket of this host): the index in nodes of the node whose
// /proc/<pid>/fd holds the socket's inode, found through sock_diag; -1
// when none does or it cannot be found (the sender closed the socket
// already). nil entries are skipped.
func senderBySocket(nodes []*Node, c net.Conn) int {
	remote, ok1 := c.RemoteAddr().(*net.TCPAddr)
	local, ok2 := c.LocalAddr().(*net.TCPAddr)
	if !ok1 || !ok2 {
		return -1
	}
	inode, err := socketInode(remote, local)
	if err != nil || inode == 0 {
		return -1
	}
	link := "socket:[" + strconv.FormatUint(uint64(inode), 10) + "]"
	for j, n := range nodes {
		if n == nil {
			continue
		}
		pid := n.Pid()
		if pid == 0 {
			continue
		}
		dir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
		fds, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			if t, err := os.Readlink(filepath.Join(dir, fd.Name())); err == nil && t == link {
				return j
			}
		}
	}
	return -1
}

// senderByAddr names the sender of c by its source address: byIP maps
// each possible sender's fixed address to its index; -1 for any other.
func senderByAddr(byIP map[netip.Addr]int, c net.Conn) int {
	ap, err := netip.ParseAddrPort(c.RemoteAddr().String())
	if err != nil {
		return -1
	}
	if j, ok := byIP[ap.Addr().Unmap()]; ok {
		return j
	}
	return -1
}

// splice copies both ways between a and b until both directions ended. An
// end of data (EOF) is passed on as a half-close; an error closes both.
func splice(a, b net.Conn) {
	done := make(chan struct{})
	cp := func(dst, src net.Conn) {
		_, err := io.Copy(dst, src)
		cw, ok := dst.(interface{ CloseWrite() error })
		if err != nil || !ok {
			a.Close()
			b.Close()
			return
		}
		_ = cw.CloseWrite()
	}
	go func() {
		defer close(done)
		cp(b, a)
	}()
	cp(a, b)
	<-done
}

// addPeerDemux registers a local demultiplexer: it follows its node's
// listening state (listen.go) and Close closes it.
func (c *Cluster) addPeerDemux(d *PeerDemux) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.demux = append(c.demux, d)
}

// peerDemuxes are the cluster's local demultiplexers.
func (c *Cluster) peerDemuxes() []*PeerDemux {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*PeerDemux(nil), c.demux...)
}

// setUpstreamsTo points every link into node at its new addresses (the
// node moved ports, its rebind): a client's link at client, any other
// link's proxies at peer, one address per proxy (a Redis Cluster node's
// port and bus, a ZooKeeper member's quorum and election ports).
func (c *Cluster) setUpstreamsTo(node, client string, peer ...string) error {
	var errs []error
	for _, l := range c.AllLinks() {
		switch {
		case l.To != node:
		case isClient(l.From):
			errs = append(errs, setUpstream(l, 0, client))
		default:
			for i := range min(len(l.proxies), len(peer)) {
				errs = append(errs, setUpstream(l, i, peer[i]))
			}
		}
	}
	return errors.Join(errs...)
}
