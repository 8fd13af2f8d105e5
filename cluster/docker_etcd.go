package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"
)

// buildDockerEtcd is buildEtcd for the docker provider: the same nodes and
// peer links, per directed pair ("etcd-1->etcd-0") plus one per destination
// ("etcd-peers->etcd-0", for connections whose sender is unknown, which
// with containers does not happen). Each member advertises a demultiplexer
// on the network's gateway (all members agree on that address); it names
// the sender of each connection by its source address, the sender's fixed
// container address, and forwards the connection through that pair's link,
// whose proxy dials the member's container address (see dockerPeerDemux).
// Clients learn the members' container client addresses from the member
// list, which Endpoints.Redirect maps to their proxies.
func (c *Cluster) buildDockerEtcd(es EtcdSpec) (backend, error) {
	p := c.docker
	b := backend{name: BackendEtcd}
	var nodes []*Node
	for i := 0; i < es.Nodes; i++ {
		n, err := c.addNode("etcd-"+strconv.Itoa(i), KindEtcd, true)
		if err != nil {
			return b, err
		}
		nodes = append(nodes, n)
	}
	ports, err := pickPorts(len(nodes))
	if err != nil {
		return b, err
	}
	peerURL := make([]string, len(nodes))
	for i, n := range nodes {
		n.setAddr(hostPort(ports[i]))
		c.addAlias(n.Name, p.containerAddr(n.Name, dockerEtcdClient))
		peerURL[i] = "http://" + p.containerAddr(n.Name, dockerEtcdPeer)
	}
	if len(nodes) > 1 {
		demux, err := c.buildDockerEtcdPeers(nodes)
		if err != nil {
			return b, err
		}
		for i, d := range demux {
			peerURL[i] = "http://" + d.addr
		}
	}
	var initial []string
	for i, n := range nodes {
		initial = append(initial, n.Name+"="+peerURL[i])
	}
	token := fmt.Sprintf("locklab-%s-%d", p.runID, time.Now().UnixNano())
	for i, n := range nodes {
		spec := &containerSpec{backend: BackendEtcd, image: es.Image, port: dockerEtcdClient}
		client := "http://" + p.containerAddr(n.Name, dockerEtcdClient)
		n.cmd = func() (command, error) {
			return command{path: "etcd", dir: dockerDataDir, container: spec, args: []string{
				"--name", n.Name, "--data-dir", dockerDataDir + "/etcd",
				"--listen-client-urls", "http://0.0.0.0:" + strconv.Itoa(dockerEtcdClient),
				"--advertise-client-urls", client,
				"--listen-peer-urls", "http://0.0.0.0:" + strconv.Itoa(dockerEtcdPeer),
				"--initial-advertise-peer-urls", peerURL[i],
				"--initial-cluster", strings.Join(initial, ","),
				"--initial-cluster-state", "new", "--initial-cluster-token", token,
				"--heartbeat-interval", strconv.FormatInt(etcdHeartbeat.Milliseconds(), 10),
				"--election-timeout", strconv.FormatInt(etcdElectionTimeout.Milliseconds(), 10),
				"--logger", "zap", "--log-level", "warn", "--log-outputs", "stderr",
			}}, nil
		}
		n.probe = func(ctx context.Context) error { return etcdHealth(ctx, n.Addr()) }
		n.role = func(ctx context.Context) (string, error) { return etcdRole(ctx, n.Addr()) }
	}
	b.start = func(ctx context.Context) error {
		if err := p.createAll(ctx, nodes); err != nil {
			return err
		}
		return dockerStartNodes(ctx, nodes, nil)
	}
	b.version = func(ctx context.Context) string {
		var v struct {
			Server string `json:"etcdserver"`
		}
		if err := etcdGet(ctx, nodes[0].Addr(), "/version", &v); err != nil {
			return ""
		}
		return v.Server
	}
	return b, nil
}

// buildDockerEtcdPeers creates, for each member i, the links
// etcd-peers->etcd-i and etcd-j->etcd-i (every other member j), all with
// upstream i's container peer address, and the demultiplexer in front of
// them on the gateway.
func (c *Cluster) buildDockerEtcdPeers(nodes []*Node) ([]*dockerPeerDemux, error) {
	p := c.docker
	byIP := map[netip.Addr]int{}
	for i, n := range nodes {
		byIP[p.assignIP(n.Name)] = i
	}
	var out []*dockerPeerDemux
	for i, n := range nodes {
		up := p.containerAddr(n.Name, dockerEtcdPeer)
		d := &dockerPeerDemux{log: c.log, to: i, upstream: up, byIP: byIP,
			pairs: make([]*Link, len(nodes)), conns: map[net.Conn]struct{}{}}
		l, err := c.addLink(EtcdPeers, n.Name, []string{up}, nil)
		if err != nil {
			return nil, err
		}
		d.fallback = l
		for j, from := range nodes {
			if j == i {
				continue
			}
			if d.pairs[j], err = c.addLink(from.Name, n.Name, []string{up}, nil); err != nil {
				return nil, err
			}
		}
		ln, err := net.Listen("tcp", p.listenAddr())
		if err != nil {
			return nil, fmt.Errorf("cluster: etcd peer listener: %w", err)
		}
		d.addr = ln.Addr().String()
		d.serve(ln)
		p.watch.addDemux(d)
		out = append(out, d)
	}
	return out, nil
}

// dockerPeerDemux fronts member to's peer port at addr (on the gateway),
// its advertised peer address. Connections come straight from the
// containers over the bridge, so the source address of each is its
// sender's container address: no header needs to be read (unlike the local
// provider's demultiplexer, etcdpeers.go), and every request a member sends
// another one, raft messages, lease renewals or member-list queries alike,
// goes through its pair's link.
type dockerPeerDemux struct {
	log      *slog.Logger
	to       int
	addr     string
	upstream string // the member's container peer address
	byIP     map[netip.Addr]int
	fallback *Link
	pairs    []*Link

	mu     sync.Mutex
	ln     net.Listener // nil while not listening
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

func (d *dockerPeerDemux) serve(ln net.Listener) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ln = ln
	d.wg.Add(1)
	go d.accept(ln)
}

// cut reports whether one of d's links is cut: then d keeps listening
// whatever its member does, so nothing about it leaks through the
// partition.
func (d *dockerPeerDemux) cut() bool {
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

// setListening makes d refuse connections while its member does not listen
// (as the proxies do, docker_watch.go).
func (d *dockerPeerDemux) setListening(want bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case d.closed:
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

func (d *dockerPeerDemux) accept(ln net.Listener) {
	defer d.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
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

func (d *dockerPeerDemux) track(c net.Conn) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return false
	}
	d.conns[c] = struct{}{}
	return true
}

func (d *dockerPeerDemux) untrack(cs ...net.Conn) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range cs {
		delete(d.conns, c)
		c.Close()
	}
}

// forward splices c with a connection through its sender's link.
func (d *dockerPeerDemux) forward(c net.Conn) {
	l := d.fallback
	if ap, err := netip.ParseAddrPort(c.RemoteAddr().String()); err == nil {
		if j, ok := d.byIP[ap.Addr().Unmap()]; ok && j != d.to {
			l = d.pairs[j]
		} else {
			d.log.Debug("etcd peer connection from an unknown address", "to", d.fallback.To, "from", ap)
		}
	}
	up, err := net.DialTimeout("tcp", l.Addr(), 2*time.Second)
	if err != nil {
		d.untrack(c) // the link's proxy refuses: its member does not listen
		return
	}
	if !d.track(up) {
		d.untrack(c, up)
		return
	}
	defer d.untrack(c, up)
	splice(c, up)
}

func (d *dockerPeerDemux) close() {
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
