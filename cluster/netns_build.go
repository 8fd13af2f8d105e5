package cluster

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
)

// Builders of the netns provider: the same nodes as local and docker, each
// in its namespace at its own address on the server's standard port. Peers
// reach each other at those addresses directly (the kernel carries every
// link; faults are rules in the namespaces), so none of the local
// provider's peer proxies, demultiplexers and hosts files is needed.

// Ports the servers listen on in their namespaces.
const (
	netnsZKClient   = 2181
	netnsZKQuorum   = 2888
	netnsZKElection = 3888
)

// netnsAddNodes gives each node its namespace and address:port.
func (c *Cluster) netnsAddNodes(nodes []*Node, port func(*Node) int) (map[*Node]string, error) {
	ips := map[*Node]string{}
	for _, n := range nodes {
		ip, err := c.netns.addNode(n.Name)
		if err != nil {
			return nil, err
		}
		ips[n] = ip.String()
		n.setAddr(net.JoinHostPort(ip.String(), strconv.Itoa(port(n))))
	}
	return ips, nil
}

func (c *Cluster) buildNetnsZooKeeper(zs ZooKeeperSpec) (backend, error) {
	b := backend{name: BackendZooKeeper}
	nodes, err := c.addPlanned(BackendZooKeeper)
	if err != nil {
		return b, err
	}
	ips, err := c.netnsAddNodes(nodes, func(*Node) int { return netnsZKClient })
	if err != nil {
		return b, err
	}
	for i, n := range nodes {
		conf := filepath.Join(n.dataDir, "zoo.cfg")
		if err := writeNetnsZooKeeperFiles(n, zs, i, nodes, ips); err != nil {
			return b, err
		}
		n.cmd = zkCommand(n, conf)
		zkChecks(n)
	}
	b.start = func(ctx context.Context) error { return startNodes(ctx, nodes, nil) }
	b.version = func(ctx context.Context) string {
		_, v, _ := zkSrvr(ctx, nodes[0].Addr())
		return v
	}
	return b, nil
}

// writeNetnsZooKeeperFiles writes member self's myid and zoo.cfg: every
// member at its namespace address, with the timing of the local provider.
func writeNetnsZooKeeperFiles(n *Node, zs ZooKeeperSpec, self int, nodes []*Node, ips map[*Node]string) error {
	data, err := writeMyID(n, self)
	if err != nil {
		return err
	}
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "tickTime=%d\ninitLimit=%d\nsyncLimit=%d\n", zkTickTime.Milliseconds(), zkInitLimit, zkSyncLimit)
	fmt.Fprintf(&cfg, "dataDir=%s\nclientPort=%d\nclientPortAddress=%s\n", data, netnsZKClient, ips[n])
	fmt.Fprintf(&cfg, "minSessionTimeout=%d\nmaxSessionTimeout=%d\n", 2*zkTickTime.Milliseconds(), zkMaxSessionTimeout.Milliseconds())
	cfg.WriteString(zkServerConf(zs))
	if len(nodes) > 1 {
		for j, o := range nodes {
			fmt.Fprintf(&cfg, "server.%d=%s:%d:%d\n", j+1, ips[o], netnsZKQuorum, netnsZKElection)
		}
	}
	return writeDurable(filepath.Join(n.dataDir, "zoo.cfg"), []byte(cfg.String()))
}

// The fabric of provider netns: each node in its own namespace, at its
// own address; the kernel carries the links.

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

func (p *netnsProvider) peerLink(_, _ *Node, addr string) (string, error) { return addr, nil }

func (p *netnsProvider) container(string, string, *Node, command) (*containerSpec, error) {
	return nil, nil
}

func (p *netnsProvider) port(_, standard int) int { return standard }

func (p *netnsProvider) frontPeers(peerFront) ([]*peerDemux, error) { return nil, nil }
