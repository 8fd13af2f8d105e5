package cluster

import (
	"fmt"
	"net/netip"
	"strconv"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// Clients of their own address (provider netns). When clients run as
// processes of their own (workload.process_per_client, library programs),
// each is started in a namespace of its own ("<id>-client-N"), plugged
// into the cluster's bridge like a server, with an address counted down
// from .254 of the cluster's /24 (client-0 is .254). A packet rule naming
// client-N then matches that address in the servers' namespaces, so a
// fault can single one client out (a partition of the holder). Clients in
// the harness's process share its address (.1).

// ClientStarter returns, under provider netns, a function that runs start
// (an exec.Cmd's Start) on a thread inside client's own namespace, which
// it creates and plugs into the bridge the first time: the process is
// born there and so is everything it starts. Other providers: nil (start
// the process as usual).
func (c *Cluster) ClientStarter(client int) func(start func() error) error {
	if c.netns == nil {
		return nil
	}
	return func(start func() error) error {
		ns, err := c.netns.clientNetns(client)
		if err != nil {
			return fmt.Errorf("cluster: client-%d: %w", client, err)
		}
		return inNetns(ns, start)
	}
}

// HarnessAddr is the address at which processes of the clients reach a
// socket of the harness: 127.0.0.1, or under provider netns the harness's
// address on the cluster's bridge (a client in a namespace of its own has
// a loopback of its own).
func (c *Cluster) HarnessAddr() string {
	if c.netns == nil {
		return "127.0.0.1"
	}
	return c.netns.client.String()
}

// OwnClientAddress reports whether client (a name "client-N") has an
// address of its own, that packet rules can tell from the other clients'.
func (c *Cluster) OwnClientAddress(client string) bool {
	if c.netns == nil {
		return false
	}
	c.netns.mu.Lock()
	defer c.netns.mu.Unlock()
	_, ok := c.netns.clientIP[client]
	return ok
}

// clientNetns is client's namespace, created and plugged into the bridge
// on first use.
func (p *netnsProvider) clientNetns(client int) (netns.NsHandle, error) {
	name := "client-" + strconv.Itoa(client)
	p.mu.Lock()
	ns, ok := p.clientNs[name]
	nodes := p.nodes
	p.mu.Unlock()
	if ok {
		return ns, nil
	}
	a := p.subnet.Addr().As4()
	last := 254 - client
	if client < 0 || last <= 1+nodes {
		return -1, fmt.Errorf("no address left in %s for %d nodes and client %d", p.subnet, nodes, client)
	}
	a[3] = byte(last)
	addr := netip.AddrFrom4(a)
	ns, err := p.newNetns(netnsName(p.id, name))
	if err != nil {
		return -1, err
	}
	br, err := netns.GetFromName(netnsName(p.id, "br"))
	if err != nil {
		ns.Close()
		return -1, err
	}
	defer br.Close()
	h, err := netlink.NewHandleAt(br)
	if err != nil {
		ns.Close()
		return -1, err
	}
	defer h.Close()
	if err := p.plug(h, "c"+strconv.Itoa(client), ns, "eth0", addr); err != nil {
		ns.Close()
		return -1, err
	}
	p.mu.Lock()
	p.clientNs[name], p.clientIP[name] = ns, addr
	p.mu.Unlock()
	p.log.Info("netns: client namespace", "client", name, "addr", addr)
	return ns, nil
}
