package cluster

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
)

// buildDockerEtcd is buildEtcd for the docker provider: the same nodes and
// peer links, per directed pair ("etcd-1->etcd-0") plus one per destination
// ("etcd-peers->etcd-0", for connections whose sender is unknown, which
// with containers does not happen). Each member advertises a demultiplexer
// on the network's gateway (all members agree on that address); it names
// the sender of each connection by its source address, the sender's fixed
// container address, and forwards the connection through that pair's link,
// whose proxy dials the member's container address (see
// buildDockerEtcdPeers).
// Clients learn the members' container client addresses from the member
// list, which Endpoints.Redirect maps to their proxies.
func (c *Cluster) buildDockerEtcd(es EtcdSpec) (backend, error) {
	p := c.docker
	b := backend{name: BackendEtcd}
	nodes, err := c.addPlanned(BackendEtcd)
	if err != nil {
		return b, err
	}
	if err := c.dockerAddrs(nodes, func(*Node) int { return dockerEtcdClient }); err != nil {
		return b, err
	}
	peerURL := make([]string, len(nodes))
	for i, n := range nodes {
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
	membership := etcdMembership(nodes, peerURL, p.runID, es.NoFsync)
	for i, n := range nodes {
		spec := &containerSpec{backend: BackendEtcd, image: es.Image, port: dockerEtcdClient}
		client := "http://" + p.containerAddr(n.Name, dockerEtcdClient)
		n.cmd = func() (command, error) {
			return command{path: "etcd", dir: dockerDataDir, container: spec, args: append([]string{
				"--name", n.Name, "--data-dir", dockerDataDir + "/etcd",
				"--listen-client-urls", "http://0.0.0.0:" + strconv.Itoa(dockerEtcdClient),
				"--advertise-client-urls", client,
				"--listen-peer-urls", "http://0.0.0.0:" + strconv.Itoa(dockerEtcdPeer),
			}, membership(i)...)}, nil
		}
		etcdChecks(n)
	}
	b.start = func(ctx context.Context) error {
		if err := p.createAll(ctx, nodes); err != nil {
			return err
		}
		return startNodes(ctx, nodes, nil)
	}
	b.version = func(ctx context.Context) string { return etcdVersion(ctx, nodes[0].Addr()) }
	return b, nil
}

// buildDockerEtcdPeers creates, for each member i, the links
// etcd-peers->etcd-i and etcd-j->etcd-i (every other member j), all with
// upstream i's container peer address, and the demultiplexer in front of
// them on the gateway. Connections come straight from the containers over
// the bridge, so the source address of each is its sender's container
// address (senderByAddr): no header needs to be read (unlike the local
// provider's demultiplexer, etcdpeers.go), and every request a member sends
// another one, raft messages, lease renewals or member-list queries alike,
// goes through its pair's link.
func (c *Cluster) buildDockerEtcdPeers(nodes []*Node) ([]*peerDemux, error) {
	p := c.docker
	byIP := map[netip.Addr]int{}
	for i, n := range nodes {
		byIP[p.assignIP(n.Name)] = i
	}
	var out []*peerDemux
	for i, n := range nodes {
		up := p.containerAddr(n.Name, dockerEtcdPeer)
		l, err := c.addLink(EtcdPeers, n.Name, []string{up}, nil)
		if err != nil {
			return nil, err
		}
		d := newPeerDemux(c.log, n.Name, l, len(nodes))
		d.sender = func(conn net.Conn) ([]byte, int) { return nil, senderByAddr(byIP, conn) }
		for j, from := range nodes {
			if j == i {
				continue
			}
			if d.pairs[j], err = c.addLink(from.Name, n.Name, []string{up}, nil); err != nil {
				return nil, err
			}
		}
		if err := d.listen(p.listenAddr()); err != nil {
			return nil, fmt.Errorf("cluster: etcd peer listener: %w", err)
		}
		p.watch.addDemux(d)
		out = append(out, d)
	}
	return out, nil
}
