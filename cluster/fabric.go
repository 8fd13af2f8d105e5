package cluster

// The fabric: where a provider puts a table backend's node on the network.
// A backend's Build asks its Build for addresses and peer links; the Build
// asks the provider's fabric, so each provider × backend cell is composed
// from the two, never written out.

import (
	"fmt"
	"net"
)

// fabric is the part of a provider that places nodes and wires their
// peers. Every provider implements it.
type fabric interface {
	// place prepares n before its addresses are asked (netns: its
	// namespace, plugged into the bridge).
	place(n *Node) error
	// listenAddr is the address n's server listens on for port.
	listenAddr(n *Node, port int) string
	// clientAddr is the address the harness and clients dial for n's
	// port.
	clientAddr(n *Node, port int) string
	// peerLink is the address from dials to reach addr, a port of to:
	// through the proxy of the link from->to, or addr itself where the
	// kernel carries the link.
	peerLink(from, to *Node, addr string) (string, error)
	// container is how n runs cmd in a container of backend's image
	// ("" the newest built locally); nil for providers without containers.
	container(backend, image string, n *Node, cmd command) (*containerSpec, error)
	// port is the port a server listens on: standard, the server's usual
	// one, where each node has an address of its own (netns), else picked
	// (a free port of the host).
	port(picked, standard int) int
	// frontPeers puts before each member i of nodes one address every
	// other member dials for it (etcd's members must agree on each
	// other's peer URLs): a demultiplexer that names each connection's
	// sender and forwards it through the link sender->member, or through
	// "<fallback>-><member>" when the sender is not named, to upstream[i],
	// the member's own peer address. identify names senders under
	// provider local, where every connection comes from 127.0.0.1; docker
	// names them by their container's address. nil, nil where the kernel
	// carries the links (netns): members advertise their own addresses.
	frontPeers(fallback string, nodes []*Node, upstream []string, identify func(net.Conn) ([]byte, int)) ([]*peerDemux, error)
}

// Provider local: every server on 127.0.0.1, peers through proxies.

func (localProvider) place(*Node) error                   { return nil }
func (localProvider) listenAddr(_ *Node, port int) string { return hostPort(port) }
func (localProvider) clientAddr(_ *Node, port int) string { return hostPort(port) }

func (p localProvider) peerLink(from, to *Node, addr string) (string, error) {
	l, err := p.c.addLink(from.Name, to.Name, []string{addr}, nil)
	if err != nil {
		return "", err
	}
	return l.Addr(), nil
}

func (localProvider) container(string, string, *Node, command) (*containerSpec, error) {
	return nil, nil
}

func (localProvider) port(picked, _ int) int { return picked }

// frontPeers creates, for each member i, the link <fallback>->member-i,
// the links member-j->member-i from every other member, all with upstream
// upstream[i], and the demultiplexer in front of them on 127.0.0.1. On
// error what was created is removed.
func (p localProvider) frontPeers(fallback string, nodes []*Node, upstream []string, identify func(net.Conn) ([]byte, int)) ([]*peerDemux, error) {
	c := p.c
	var links []*Link
	var out []*peerDemux
	fail := func(err error) ([]*peerDemux, error) {
		for _, d := range out {
			d.close()
		}
		c.removeLinks(links)
		return nil, err
	}
	for i, n := range nodes {
		l, err := c.addLink(fallback, n.Name, []string{upstream[i]}, nil)
		if err != nil {
			return fail(err)
		}
		links = append(links, l)
		d := newPeerDemux(c.log, n.Name, l, len(nodes))
		d.sender = identify
		out = append(out, d)
	}
	for i, n := range nodes {
		for j, from := range nodes {
			if j == i {
				continue
			}
			l, err := c.addLink(from.Name, n.Name, []string{upstream[i]}, nil)
			if err != nil {
				return fail(err)
			}
			links = append(links, l)
			out[i].pairs[j] = l
		}
	}
	for _, d := range out {
		if err := d.listen("127.0.0.1:0"); err != nil {
			return fail(fmt.Errorf("cluster: %s peer listener: %w", fallback, err))
		}
	}
	for _, d := range out {
		c.addPeerDemux(d)
	}
	return out, nil
}
