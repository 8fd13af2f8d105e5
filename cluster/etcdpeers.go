package cluster

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/textproto"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// etcd peer links per directed pair (local provider).
//
// Every etcd member must agree on every member's peer URL (the cluster id
// is derived from them, and members dial the URLs of the membership, not
// their own flags), so member i advertises one address that all the others
// dial. To tell the senders apart anyway, a demultiplexer listens on that
// address: it accepts a connection, reads the HTTP request head the sender
// writes first, identifies the sender, and forwards the connection — the
// bytes it read first, then both directions spliced — through the link of
// that directed pair, "etcd-1->etcd-0", a toxiproxy proxy with its gate like
// every other link. A connection carries one member's requests only (a
// member's HTTP transport never shares a connection with another process),
// so identifying it once is enough.
//
// How the sender is found, first match wins:
//
//   - X-PeerURLs, the sender's advertised peer URLs, which etcd's raft
//     transport (rafthttp, 3.4) sets on every stream GET
//     (/raft/stream/msgapp|message/<id>), pipeline POST (/raft) and
//     snapshot POST (/raft/snapshot): an advertised URL is a demultiplexer's
//     address, so it names a member;
//   - X-Server-From, the sender's member id in hex, which rafthttp sets on
//     the same requests: ids come from the member list (read once the
//     cluster is up) and from the pairs of both headers seen so far;
//   - the process that opened the connection: the other requests members
//     send each other carry neither header (lease renewals and TTL queries
//     a follower forwards to the leader, POST /leases and /leases/internal;
//     GET /members at bootstrap, /version, /raft/probing), and lease
//     renewals must not cross a partition either. The connecting socket
//     lives in the harness's network namespace: sock_diag gives its inode,
//     and the member whose /proc/<pid>/fd links to it sent it.
//
// A connection whose sender is still unknown (the socket was gone before it
// could be looked up) goes through "etcd-peers->etcd-0", which as a selector
// also names every pair link into etcd-0 (see Links), so scenarios written
// for per-destination links keep their meaning.
//
// The demultiplexer follows its member's listening state like the proxies
// do (listen.go): it refuses connections while the member does not listen,
// unless one of its links is cut.

// Limits on reading a request head before forwarding a connection. etcd
// writes the head at once after connecting; a sender that does not
// (paused mid-request) is identified by its socket instead.
const (
	peerHeadMax     = 16 << 10
	peerHeadTimeout = 2 * time.Second
	peerDialTimeout = 2 * time.Second
)

// etcdPeers is the peer plumbing of one local etcd cluster of 2 or more
// members: one demultiplexer per member.
type etcdPeers struct {
	log   *slog.Logger
	nodes []*Node
	demux []*peerDemux

	mu  sync.Mutex
	ids map[string]int // member id as in X-Server-From (hex) -> member index
}

// peerDemux fronts member to's peer port at addr, its advertised peer
// address.
type peerDemux struct {
	ps       *etcdPeers
	to       int
	addr     string
	fallback *Link   // etcd-peers->etcd-<to>
	pairs    []*Link // pairs[j] is etcd-j->etcd-<to>; nil at j == to

	mu     sync.Mutex
	ln     net.Listener // nil while not listening
	conns  map[net.Conn]struct{}
	closed bool
	synced uint64 // the newest socket reading applied (listen.go)
	wg     sync.WaitGroup
}

// buildEtcdPeers creates, for each member i, the link etcd-peers->etcd-i,
// the links etcd-j->etcd-i from every other member, all with upstream
// peerAddr[i], and the demultiplexer in front of them. On error what was
// created is removed.
func (c *Cluster) buildEtcdPeers(nodes []*Node, peerAddr []string) (*etcdPeers, error) {
	ps := &etcdPeers{log: c.log, nodes: nodes, ids: map[string]int{}}
	var links []*Link
	fail := func(err error) (*etcdPeers, error) {
		ps.close()
		c.removeLinks(links)
		return nil, err
	}
	for i, n := range nodes {
		d := &peerDemux{ps: ps, to: i, pairs: make([]*Link, len(nodes)), conns: map[net.Conn]struct{}{}}
		l, err := c.addLink(EtcdPeers, n.Name, []string{peerAddr[i]}, nil)
		if err != nil {
			return fail(err)
		}
		links = append(links, l)
		d.fallback = l
		ps.demux = append(ps.demux, d)
	}
	for i, n := range nodes {
		for j, from := range nodes {
			if j == i {
				continue
			}
			l, err := c.addLink(from.Name, n.Name, []string{peerAddr[i]}, nil)
			if err != nil {
				return fail(err)
			}
			links = append(links, l)
			ps.demux[i].pairs[j] = l
		}
	}
	for _, d := range ps.demux {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return fail(fmt.Errorf("cluster: etcd peer listener: %w", err))
		}
		d.addr = ln.Addr().String()
		d.serve(ln)
	}
	return ps, nil
}

// setUpstream points every link into member i at addr (the member moved
// ports).
func (ps *etcdPeers) setUpstream(i int, addr string) error {
	d := ps.demux[i]
	errs := []error{setUpstream(d.fallback, 0, addr)}
	for _, l := range d.pairs {
		if l != nil {
			errs = append(errs, setUpstream(l, 0, addr))
		}
	}
	return errors.Join(errs...)
}

// learnIDs reads the member list through addr (a member's client address)
// and records each member's id, so X-Server-From alone names a sender.
func (ps *etcdPeers) learnIDs(ctx context.Context, addr string) error {
	var ml struct {
		Members []struct {
			ID   string `json:"ID"` // uint64 in decimal (grpc-gateway)
			Name string `json:"name"`
		} `json:"members"`
	}
	if err := etcdDo(ctx, "POST", addr, "/v3/cluster/member/list", strings.NewReader("{}"), &ml); err != nil {
		return err
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, m := range ml.Members {
		id, err := strconv.ParseUint(m.ID, 10, 64)
		if err != nil {
			continue
		}
		for i, n := range ps.nodes {
			if n.Name == m.Name {
				ps.ids[strconv.FormatUint(id, 16)] = i
			}
		}
	}
	return nil
}

// close stops every demultiplexer and closes the connections they forward.
func (ps *etcdPeers) close() {
	for _, d := range ps.demux {
		d.close()
	}
}

// cut reports whether any link of d is cut.
func (d *peerDemux) cut() bool {
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

// syncListening makes d listen when its member listens and refuse
// connections when it does not, unless one of d's links is cut (then
// nothing about the member leaks through the partition). seq orders socket
// readings: an older one than already applied is ignored.
func (d *peerDemux) syncListening(ls map[string]bool, seq uint64) {
	if d.cut() {
		return
	}
	d.fallback.mu.Lock()
	up := d.fallback.upstreams[0]
	d.fallback.mu.Unlock()
	d.setListening(upstreamListens(ls, up), seq)
}

func (d *peerDemux) setListening(want bool, seq uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed || seq < d.synced {
		return
	}
	d.synced = seq
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
func (d *peerDemux) serve(ln net.Listener) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ln = ln
	d.wg.Add(1)
	go d.accept(ln)
}

func (d *peerDemux) accept(ln net.Listener) {
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
func (d *peerDemux) track(c net.Conn) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return false
	}
	d.conns[c] = struct{}{}
	return true
}

func (d *peerDemux) untrack(cs ...net.Conn) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range cs {
		delete(d.conns, c)
		c.Close()
	}
}

// forward identifies c's sender and splices c with a connection through
// the sender's link.
func (d *peerDemux) forward(c net.Conn) {
	head, from := d.identify(c)
	l := d.fallback
	if from >= 0 && from != d.to {
		l = d.pairs[from]
	}
	up, err := net.DialTimeout("tcp", l.Addr(), peerDialTimeout)
	if err != nil {
		// The link's proxy refuses: its member does not listen.
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

// identify reads c's request head (at most peerHeadMax bytes, for at most
// peerHeadTimeout) and returns what it read and the sender's member index,
// -1 when unknown.
func (d *peerDemux) identify(c net.Conn) ([]byte, int) {
	buf := make([]byte, 0, 4096)
	_ = c.SetReadDeadline(time.Now().Add(peerHeadTimeout))
	end := -1
	for end < 0 && len(buf) < peerHeadMax {
		if len(buf) == cap(buf) {
			buf = append(buf, make([]byte, len(buf))...)[:len(buf)]
		}
		n, err := c.Read(buf[len(buf):min(cap(buf), peerHeadMax)])
		buf = buf[:len(buf)+n]
		if i := bytes.Index(buf, []byte("\r\n\r\n")); i >= 0 {
			end = i + 4
		}
		if err != nil {
			break
		}
	}
	_ = c.SetReadDeadline(time.Time{})
	from := -1
	if end >= 0 {
		from = d.ps.senderByHeader(buf[:end])
	}
	if from < 0 {
		from = d.ps.senderBySocket(c)
	}
	return buf, from
}

// senderByHeader names the member that sent a request head by its
// X-PeerURLs or X-Server-From header; -1 when neither names one.
func (ps *etcdPeers) senderByHeader(head []byte) int {
	r := textproto.NewReader(bufio.NewReader(bytes.NewReader(head)))
	if _, err := r.ReadLine(); err != nil {
		return -1
	}
	h, err := r.ReadMIMEHeader()
	if err != nil && len(h) == 0 {
		return -1
	}
	from := strings.TrimSpace(h.Get("X-Server-From"))
	byURL := -1
	for _, u := range strings.Split(h.Get("X-PeerURLs"), ",") {
		pu, err := url.Parse(strings.TrimSpace(u))
		if err != nil {
			continue
		}
		for j, d := range ps.demux {
			if d.addr == pu.Host {
				byURL = j
			}
		}
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if byURL >= 0 {
		if from != "" {
			ps.ids[from] = byURL
		}
		return byURL
	}
	if j, ok := ps.ids[from]; ok && from != "" {
		return j
	}
	return -1
}

// senderBySocket names the member whose process opened c (c's remote end
// is a socket of this host); -1 when none did or it cannot be found.
func (ps *etcdPeers) senderBySocket(c net.Conn) int {
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
	for j, n := range ps.nodes {
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

// close stops accepting and closes every live connection.
func (d *peerDemux) close() {
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

// etcdPeerDemux is the cluster's etcd peer plumbing; nil without one.
func (c *Cluster) etcdPeerDemux() *etcdPeers {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.etcdPeers
}
