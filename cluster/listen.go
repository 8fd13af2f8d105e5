package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// A toxiproxy proxy listens all the time: when its upstream is down it
// accepts the connection, fails to dial upstream and closes it, so the
// client sees a connection that opens and then ends (EOF) where it would
// have seen "connection refused". Most clients retry either way, but some
// do not treat the two alike: a ZooKeeper follower retries a refused
// connection to the new leader's quorum port for a while, yet drops out to
// a new election round on EOF, and the ensemble then waits initLimit for a
// quorum that never comes — 5 s instead of 0.3 s after a leader dies.
//
// So a local cluster mirrors each server's listening socket on its proxies:
// every watchEvery the cluster reads the kernel's table of listening TCP
// sockets and starts a proxy whose upstream listens, stops one whose
// upstream does not. Stopping closes the proxy's live connections, which the
// server closed anyway when it stopped listening (it died, or a ZooKeeper
// leader stepped down). A cut link is left alone until healed, so nothing
// about the far side leaks through a partition. The window between a server
// starting to listen and its proxies following is at most watchEvery, and a
// client that connects within it is refused as it would have been a moment
// earlier.

// watchEvery is how often proxies follow their upstreams' listening state.
const watchEvery = 20 * time.Millisecond

// listeningSockets returns the local addresses ("127.0.0.1:6379",
// "0.0.0.0:2181") of listening IPv4 TCP sockets. It asks the kernel through
// netlink sock_diag for listening sockets only: reading /proc/net/tcp costs
// milliseconds of system time on a machine with thousands of sockets, too
// much to do 50 times a second.
func listeningSockets() (map[string]bool, error) {
	fd, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, netlinkSockDiag)
	if err != nil {
		return nil, fmt.Errorf("sock_diag: %w", err)
	}
	defer syscall.Close(fd)
	// nlmsghdr + inet_diag_req_v2 asking for every IPv4 TCP socket in
	// state LISTEN.
	req := make([]byte, 16+56)
	ne := binary.NativeEndian
	ne.PutUint32(req[0:], uint32(len(req)))
	ne.PutUint16(req[4:], sockDiagByFamily)
	ne.PutUint16(req[6:], syscall.NLM_F_REQUEST|syscall.NLM_F_DUMP)
	ne.PutUint32(req[8:], 1) // seq
	req[16] = syscall.AF_INET
	req[17] = syscall.IPPROTO_TCP
	ne.PutUint32(req[20:], 1<<tcpListen)
	if err := syscall.Sendto(fd, req, 0, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK}); err != nil {
		return nil, fmt.Errorf("sock_diag: %w", err)
	}
	out := map[string]bool{}
	buf := make([]byte, 1<<16)
	for {
		n, _, err := syscall.Recvfrom(fd, buf, 0)
		if err != nil {
			return nil, fmt.Errorf("sock_diag: %w", err)
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return nil, fmt.Errorf("sock_diag: %w", err)
		}
		for _, m := range msgs {
			switch m.Header.Type {
			case syscall.NLMSG_DONE:
				return out, nil
			case syscall.NLMSG_ERROR:
				return nil, errors.New("sock_diag: error reply")
			}
			d := m.Data // inet_diag_msg: family, state, timer, retrans, then inet_diag_sockid
			if len(d) < 12 {
				continue
			}
			port := binary.BigEndian.Uint16(d[4:6])
			out[fmt.Sprintf("%d.%d.%d.%d:%d", d[8], d[9], d[10], d[11], port)] = true
		}
	}
}

// socketInode returns the inode of the TCP socket of this host whose local
// address is local and whose peer is remote (IPv4), through sock_diag's
// exact lookup; 0 when there is none.
func socketInode(local, remote *net.TCPAddr) (uint32, error) {
	l4, r4 := local.IP.To4(), remote.IP.To4()
	if l4 == nil || r4 == nil {
		return 0, errors.New("sock_diag: not IPv4")
	}
	fd, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, netlinkSockDiag)
	if err != nil {
		return 0, fmt.Errorf("sock_diag: %w", err)
	}
	defer syscall.Close(fd)
	req := make([]byte, 16+56)
	ne := binary.NativeEndian
	ne.PutUint32(req[0:], uint32(len(req)))
	ne.PutUint16(req[4:], sockDiagByFamily)
	ne.PutUint16(req[6:], syscall.NLM_F_REQUEST)
	ne.PutUint32(req[8:], 1) // seq
	r := req[16:]
	r[0] = syscall.AF_INET
	r[1] = syscall.IPPROTO_TCP
	ne.PutUint32(r[4:], 0xffffffff) // every state
	binary.BigEndian.PutUint16(r[8:], uint16(local.Port))
	binary.BigEndian.PutUint16(r[10:], uint16(remote.Port))
	copy(r[12:16], l4)
	copy(r[28:32], r4)
	ne.PutUint32(r[48:], 0xffffffff) // INET_DIAG_NOCOOKIE
	ne.PutUint32(r[52:], 0xffffffff)
	if err := syscall.Sendto(fd, req, 0, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK}); err != nil {
		return 0, fmt.Errorf("sock_diag: %w", err)
	}
	buf := make([]byte, 1<<12)
	n, _, err := syscall.Recvfrom(fd, buf, 0)
	if err != nil {
		return 0, fmt.Errorf("sock_diag: %w", err)
	}
	msgs, err := syscall.ParseNetlinkMessage(buf[:n])
	if err != nil {
		return 0, fmt.Errorf("sock_diag: %w", err)
	}
	for _, m := range msgs {
		if m.Header.Type == syscall.NLMSG_ERROR {
			return 0, nil // ENOENT: no such socket (any more)
		}
		if m.Header.Type == sockDiagByFamily && len(m.Data) >= 72 {
			return ne.Uint32(m.Data[68:72]), nil // inet_diag_msg.idiag_inode
		}
	}
	return 0, nil
}

// Linux constants for sock_diag.
const (
	netlinkSockDiag  = 4  // NETLINK_SOCK_DIAG
	sockDiagByFamily = 20 // SOCK_DIAG_BY_FAMILY
	tcpListen        = 10 // TCP_LISTEN
)

// upstreamListens reports whether addr ("127.0.0.1:port") has a listener.
func upstreamListens(ls map[string]bool, addr string) bool {
	if ls[addr] {
		return true
	}
	port := addr[strings.LastIndexByte(addr, ':')+1:]
	return ls["0.0.0.0:"+port]
}

// socketReads numbers readings of the listening sockets: a reading taken
// later has a higher number.
var socketReads atomic.Uint64

// readListening reads the listening sockets and returns them with the
// reading's number, taken just before reading.
func readListening() (map[string]bool, uint64, error) {
	seq := socketReads.Add(1)
	ls, err := listeningSockets()
	return ls, seq, err
}

// syncListening starts or stops the link's proxies to match their
// upstreams, unless the link is cut. It applies ls whatever its age (the
// docker watch orders its readings itself); see syncListeningAt.
func (l *Link) syncListening(ls map[string]bool) { l.syncListeningAt(ls, 0) }

// syncListeningAt is syncListening for the reading numbered seq
// (readListening): a reading older than one the link already followed is
// ignored. Without that, a watch round that read the sockets just before a
// server listened, and was slow to apply them (a loaded machine), would
// stop the proxies that a newer reading had started — closing connections
// clients had just opened through them (a fresh cluster's first request
// failed with EOF). seq 0 is always applied and orders nothing.
func (l *Link) syncListeningAt(ls map[string]bool, seq uint64) {
	if !l.watch || l.IsCut() {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if seq != 0 {
		if seq < l.synced {
			return
		}
		l.synced = seq
	}
	for i, p := range l.proxies {
		want := upstreamListens(ls, l.upstreams[i])
		if want == l.up[i] {
			continue
		}
		if want {
			if err := p.Start(); err != nil {
				continue // retried next round
			}
		} else {
			p.Stop()
		}
		l.up[i] = want
	}
}

// syncListening brings every link up to date at once (after a node
// operation, so callers need not wait for the next round).
func (c *Cluster) syncListening() {
	if c.prov.SyncListening() {
		return
	}
	if c.watchStop == nil {
		return
	}
	if ls, seq, err := readListening(); err == nil {
		c.applyListening(ls, seq)
	}
}

// applyListening makes every link and peer demultiplexer follow the
// reading ls numbered seq.
func (c *Cluster) applyListening(ls map[string]bool, seq uint64) {
	for _, l := range c.AllLinks() {
		l.syncListeningAt(ls, seq)
	}
	for _, d := range c.peerDemuxes() {
		d.syncListening(ls, seq)
	}
}

// watchListeners runs until stop is closed.
func (c *Cluster) watchListeners(stop <-chan struct{}) {
	t := time.NewTicker(watchEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		ls, seq, err := readListening()
		if err != nil {
			// Without it proxies keep listening all the time, which works
			// but answers EOF where a server would refuse.
			c.log.Warn("cluster: proxies cannot follow their servers' listening state", "err", err)
			c.stopWatching()
			return
		}
		c.applyListening(ls, seq)
	}
}

// stopWatching makes every link's proxies listen for good.
func (c *Cluster) stopWatching() {
	for _, l := range c.AllLinks() {
		l.mu.Lock()
		l.watch = false
		for i, p := range l.proxies {
			if !l.up[i] && p.Start() == nil {
				l.up[i] = true
			}
		}
		l.mu.Unlock()
	}
	for _, d := range c.peerDemuxes() {
		d.SetListening(true, ^uint64(0))
	}
}
