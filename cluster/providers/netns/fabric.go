package netns

import (
	"github.com/locklab/locklab/cluster"
	"net"
	"strconv"
)

// The fabric of provider netns (fabric.go): each node in its namespace at
// its own address, on the server's standard port where the backend has
// one. Peers reach each other at those addresses directly (the kernel
// carries every link; faults are rules in the namespaces), so no peer
// proxy or demultiplexer is needed.

func (p *netnsProvider) Place(n *cluster.Node) error {
	_, err := p.addNode(n.Name)
	return err
}

func (p *netnsProvider) ListenAddr(n *cluster.Node, port int) string {
	host := "127.0.0.1"
	if ip, ok := p.addrOf(n.Name); ok {
		host = ip.String()
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}

func (p *netnsProvider) ClientAddr(n *cluster.Node, port int) string { return p.ListenAddr(n, port) }

func (p *netnsProvider) PeerLink(_, _ *cluster.Node, addrs, _ []string) ([]string, error) {
	return addrs, nil
}

func (p *netnsProvider) Container(string, string, *cluster.Node, cluster.Command) (any, error) {
	return nil, nil
}

func (p *netnsProvider) Port(_, standard int) int { return standard }

func (p *netnsProvider) FrontPeers(cluster.Front) ([]*cluster.PeerDemux, error) { return nil, nil }

func (p *netnsProvider) RunID() string           { return "" }
func (p *netnsProvider) LinkAdded(*cluster.Link) {}
func (p *netnsProvider) SyncListening() bool     { return false }
