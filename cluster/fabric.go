package cluster

// The fabric: where a provider puts a backend's node on the network. A
// builder (Redis, ZooKeeper, etcd; a table backend through its Build) asks
// the provider's fabric for addresses, peer links and containers, so each
// provider × backend cell is composed from the two, never written out.

import (
	"fmt"
	"net"
	"slices"
)

// Fabric is the part of a provider that places nodes and wires their
// peers. Every provider implements it.
type Fabric interface {
	// Place prepares n before its addresses are asked (netns: its
	// namespace, plugged into the bridge).
	Place(n *Node) error
	// ListenAddr is the address n's server listens on for port.
	ListenAddr(n *Node, port int) string
	// ClientAddr is the address the harness and clients dial for n's
	// port.
	ClientAddr(n *Node, port int) string
	// PeerLink returns the addresses from dials to reach addrs, ports of
	// to: the proxies of the link from->to (one per address, named by
	// labels when there are several), or addrs themselves where the
	// kernel carries the link.
	PeerLink(from, to *Node, addrs, labels []string) ([]string, error)
	// Container is how n runs cmd in a container of backend's image
	// ("" the newest built locally), which the provider's Launch reads
	// from Command.Container; nil for providers without containers.
	Container(backend, image string, n *Node, cmd Command) (any, error)
	// Port is the port a server listens on: standard, the server's usual
	// one, where each node has an address of its own (netns), else picked
	// (a free port of the host).
	Port(picked, standard int) int
	// FrontPeers puts before each node of f one address every node that
	// dials it uses (a backend whose members must agree on each other's
	// addresses: etcd's peer URLs, Redis's replicaof and Sentinel's
	// monitored addresses): a demultiplexer that names each connection's
	// sender and forwards it through the plan's link sender->node, or
	// through "<fallback>-><node>" when the sender is not named. It
	// returns the demultiplexers in the order of f.Nodes; nil, nil where
	// the kernel carries the links (netns): nodes are dialed at their own
	// addresses.
	FrontPeers(f Front) ([]*PeerDemux, error)
}

// serveAt gives n the client port port: its address is where the harness
// and clients dial it, and the address its server listens on, where that
// differs (a container's), is an alias of it, which Endpoints.Redirect
// maps to a client's proxy (clients learn it from the servers: a member
// list, a Sentinel).
func (c *Cluster) serveAt(n *Node, port int) {
	n.setAddr(c.prov.ClientAddr(n, port))
	if own := c.prov.ListenAddr(n, port); own != n.Addr() {
		c.addAlias(n.Name, own)
	}
}

// Provider local: every server on 127.0.0.1, peers through proxies.

func (localProvider) Place(*Node) error                   { return nil }
func (localProvider) ListenAddr(_ *Node, port int) string { return hostPort(port) }
func (localProvider) ClientAddr(_ *Node, port int) string { return hostPort(port) }

func (p localProvider) PeerLink(from, to *Node, addrs, labels []string) ([]string, error) {
	l, err := p.c.addLink(from.Name, to.Name, addrs, labels)
	if err != nil {
		return nil, err
	}
	return slices.Clone(l.addrs), nil
}

func (localProvider) Container(string, string, *Node, Command) (any, error) {
	return nil, nil
}

func (localProvider) Port(picked, _ int) int { return picked }

// FrontPeers: demultiplexers on 127.0.0.1 that name senders f.identify's
// way (every connection comes from 127.0.0.1).
func (p localProvider) FrontPeers(f Front) ([]*PeerDemux, error) {
	return p.c.frontPeersOn(f, "127.0.0.1:0", f.Identify, p.c.addPeerDemux)
}

// Front is what a backend asks of Fabric.FrontPeers.
type Front struct {
	// Fallback begins the name of the link for senders not named
	// ("etcd-peers": etcd-peers->etcd-0).
	Fallback string
	// Nodes are the nodes to front, in order; a pair link from->to is made
	// where the plan has one.
	Nodes []*Node
	// Up is where a node really listens for its peers: one proxy per
	// address, named by labels when there are several.
	Up     func(n *Node) []string
	Labels []string
	// Identify is how provider local names the sender of a connection to
	// a node, given the nodes with a pair link to it (indexed as nodes,
	// nil where none); provider docker names senders by their container's
	// address instead.
	Identify func(senders []*Node) func(net.Conn) ([]byte, int)
}

// frontPeersOn makes f's links and demultiplexers, listening on listen
// (port 0: a free one) and naming senders sender's way; register makes
// each follow its node's listening state and be closed with the cluster,
// once all of them listen. On error what was made is removed.
func (c *Cluster) frontPeersOn(f Front, listen string, sender func([]*Node) func(net.Conn) ([]byte, int), register func(*PeerDemux)) ([]*PeerDemux, error) {
	var out []*PeerDemux
	var links []*Link
	fail := func(err error) ([]*PeerDemux, error) {
		for _, d := range out {
			d.Close()
		}
		c.removeLinks(links)
		return nil, err
	}
	for _, to := range f.Nodes {
		senders := make([]*Node, len(f.Nodes))
		pairs := make([]*Link, len(f.Nodes))
		for j, from := range f.Nodes {
			if !c.plan.HasLink(from.Name, to.Name) {
				continue
			}
			l, err := c.addLink(from.Name, to.Name, f.Up(to), f.Labels)
			if err != nil {
				return fail(err)
			}
			links = append(links, l)
			senders[j], pairs[j] = from, l
		}
		fallback, err := c.addLink(f.Fallback, to.Name, f.Up(to), f.Labels)
		if err != nil {
			return fail(err)
		}
		links = append(links, fallback)
		d := newPeerDemux(c.log, to.Name, fallback, len(f.Nodes))
		d.pairs = pairs
		d.sender = sender(senders)
		out = append(out, d)
		if err := d.listen(listen); err != nil {
			return fail(fmt.Errorf("cluster: %s listener for %s: %w", f.Fallback, to.Name, err))
		}
	}
	for _, d := range out {
		register(d)
	}
	return out, nil
}
