package cluster

import (
	"net"
	"strconv"
)

// The fabric of provider netns (fabric.go): each node in its namespace at
// its own address, on the server's standard port where the backend has
// one. Peers reach each other at those addresses directly (the kernel
// carries every link; faults are rules in the namespaces), so no peer
// proxy or demultiplexer is needed.

func (p *netnsProvider) place(n *Node) error {
	_, err := p.addNode(n.Name)
	return err
}

func (p *netnsProvider) listenAddr(n *Node, port int) string {
	host := "127.0.0.1"
	if ip, ok := p.addrOf(n.Name); ok {
		host = ip.String()
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}

func (p *netnsProvider) clientAddr(n *Node, port int) string { return p.listenAddr(n, port) }

func (p *netnsProvider) peerLink(_, _ *Node, addrs, _ []string) ([]string, error) { return addrs, nil }

func (p *netnsProvider) container(string, string, *Node, command) (*containerSpec, error) {
	return nil, nil
}

func (p *netnsProvider) port(_, standard int) int { return standard }

func (p *netnsProvider) frontPeers(peerFront) ([]*peerDemux, error) { return nil, nil }

func (p *netnsProvider) runID() string       { return "" }
func (p *netnsProvider) linkAdded(*Link)     {}
func (p *netnsProvider) syncListening() bool { return false }
