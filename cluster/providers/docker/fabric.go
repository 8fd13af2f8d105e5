package docker

// Docker provider: the fabric (fabric.go) and the container of a node.

import (
	"fmt"
	"github.com/locklab/locklab/cluster"
	"net"
	"net/netip"
	"slices"
	"strconv"
)

func (p *dockerProvider) Place(*cluster.Node) error { return nil }

// ListenAddr is n's container address on the run's network.
func (p *dockerProvider) ListenAddr(n *cluster.Node, port int) string {
	return p.containerAddr(n.Name, port)
}

// ClientAddr publishes the container's port on 127.0.0.1 at the same
// number (the port numbers of Build.Ports are free on the host).
func (p *dockerProvider) ClientAddr(n *cluster.Node, port int) string {
	p.publish(n.Name, port)
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}

// PeerLink is the link's proxies on the network's gateway, dialing to's
// container at each address's port.
func (p *dockerProvider) PeerLink(from, to *cluster.Node, addrs, labels []string) ([]string, error) {
	ups := make([]string, len(addrs))
	listens := make([]string, len(addrs))
	for i, addr := range addrs {
		_, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("peer link %s->%s: %w", from.Name, to.Name, err)
		}
		pn, err := strconv.Atoi(port)
		if err != nil {
			return nil, fmt.Errorf("peer link %s->%s: %w", from.Name, to.Name, err)
		}
		ups[i], listens[i] = p.containerAddr(to.Name, pn), p.gatewayListen()
	}
	l, err := p.c.AddLinkAt(from.Name, to.Name, ups, listens, labels)
	if err != nil {
		return nil, err
	}
	return l.Addrs(), nil
}

// publish records that n's container publishes its port on 127.0.0.1 at
// the same number (Build.ClientAddr).
func (p *dockerProvider) publish(node string, port int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.published == nil {
		p.published = map[string][]int{}
	}
	if !slices.Contains(p.published[node], port) {
		p.published[node] = append(p.published[node], port)
	}
}

// Container is the container of node n for cmd: image ("" the
// backend's default, docs/providers.md), n's client port (its Addr) and
// every other port clientAddr published, the command's directory and n's
// data dir mounted at their own paths (so the paths in the command line
// hold inside the container), and the command's user as the host's uid
// and gid, which own those directories (root without one).
func (p *dockerProvider) Container(backend, image string, n *cluster.Node, cmd cluster.Command) (any, error) {
	_, port, _ := net.SplitHostPort(n.Addr())
	pn, err := strconv.Atoi(port)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	pub := slices.Clone(p.published[n.Name])
	p.mu.Unlock()
	spec := &containerSpec{backend: backend, image: image, port: pn, publish: pub, mounts: []string{n.DataDir()}}
	if cmd.Dir != "" && cmd.Dir != n.DataDir() {
		spec.mounts = append(spec.mounts, cmd.Dir)
	}
	// Without a user of its own the server runs as root, whatever user
	// its image names: the host directories it writes are the harness's
	// (an official image may name a user of its own that could not).
	spec.user = "0:0"
	if cmd.User != "" {
		cred, err := cluster.UserCredential(cmd.User)
		if err != nil {
			return nil, err
		}
		spec.user = strconv.Itoa(int(cred.Uid)) + ":" + strconv.Itoa(int(cred.Gid))
	}
	return spec, nil
}

func (p *dockerProvider) Port(picked, _ int) int { return picked }

// FrontPeers: demultiplexers on the network's gateway. Connections come
// straight from the containers over the bridge, so the source address of
// each is its sender's container address (senderByAddr): no header needs
// to be read (f.identify is not used), and every request a node sends
// another one goes through its pair's link.
func (p *dockerProvider) FrontPeers(f cluster.Front) ([]*cluster.PeerDemux, error) {
	byIP := map[netip.Addr]int{}
	for i, n := range f.Nodes {
		byIP[p.assignIP(n.Name)] = i
	}
	byAddr := func([]*cluster.Node) func(net.Conn) ([]byte, int) {
		return func(conn net.Conn) ([]byte, int) { return nil, cluster.SenderByAddr(byIP, conn) }
	}
	return p.c.FrontPeersOn(f, p.gatewayListen(), byAddr, p.watch.addDemux)
}

// RunID is the value of the LabelRun label on the cluster's containers and
// network (Spec.RunID plus a random suffix).
func (p *dockerProvider) RunID() string { return p.run }

// LinkAdded: a link made once the watch follows the containers joins it,
// from its next round on (docker_watch.go).
func (p *dockerProvider) LinkAdded(l *cluster.Link) {
	if p.watch.following() {
		p.watch.linkAdded(l)
		l.FollowListening()
	}
}

// SyncListening runs a round of the watch at once.
func (p *dockerProvider) SyncListening() bool {
	p.watch.sync()
	return true
}
