package etcd

import (
	"bufio"
	"bytes"
	"context"
	"log/slog"
	"net"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/locklab/locklab/cluster"
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
// also names every pair link into etcd-0 (cluster.Cluster.Links), so
// scenarios written for per-destination links keep their meaning.
//
// The demultiplexer itself, shared with Redis and the docker provider, is
// cluster's (Build.FrontPeers); it follows its member's listening state
// like the proxies do.

// Limits on reading a request head before forwarding a connection. etcd
// writes the head at once after connecting; a sender that does not
// (paused mid-request) is identified by its socket instead.
const (
	peerHeadMax     = 16 << 10
	peerHeadTimeout = 2 * time.Second
)

// etcdPeers names the senders of the peer connections of one etcd
// cluster of 2 or more members, for the demultiplexers in front of them
// (Build.FrontPeers): front[i] is the address of the one in front of
// member i.
type etcdPeers struct {
	log   *slog.Logger
	nodes []*cluster.Node
	front []string

	mu  sync.Mutex
	ids map[string]int // member id as in X-Server-From (hex) -> member index
}

// setFront records the addresses of the demultiplexers in front of the
// members, front[i] in front of member i.
func (ps *etcdPeers) setFront(front []string) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.front = front
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

// identify reads c's request head (at most peerHeadMax bytes, for at most
// peerHeadTimeout) and returns what it read and the sender's member index,
// -1 when unknown.
func (ps *etcdPeers) identify(c net.Conn) ([]byte, int) {
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
		from = ps.senderByHeader(buf[:end])
	}
	if from < 0 {
		from = cluster.SenderBySocket(ps.nodes, c)
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
	ps.mu.Lock()
	defer ps.mu.Unlock()
	byURL := -1
	for _, u := range strings.Split(h.Get("X-PeerURLs"), ",") {
		pu, err := url.Parse(strings.TrimSpace(u))
		if err != nil {
			continue
		}
		for j, addr := range ps.front {
			if addr == pu.Host {
				byURL = j
			}
		}
	}
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
