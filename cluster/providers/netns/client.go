package netns

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

// ClientStarter runs start on a thread inside client's own namespace,
// created and plugged into the bridge the first time
// (cluster.Namespaces).
func (p *netnsProvider) ClientStarter(client int) func(start func() error) error {
	return func(start func() error) error {
		ns, err := p.clientNetns(client)
		if err != nil {
			return fmt.Errorf("cluster: client-%d: %w", client, err)
		}
		return inNetns(ns, start)
	}
}

// HarnessAddr is the harness's address on the cluster's bridge.
func (p *netnsProvider) HarnessAddr() string { return p.client.String() }

// OwnClientAddress reports whether client has a namespace and address
// of its own.
func (p *netnsProvider) OwnClientAddress(client string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.clientIP[client]
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
