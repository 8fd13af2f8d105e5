package docker

// Docker provider: the cluster's network and its containers' fixed addresses.

import (
	"context"
	"errors"
	"net/netip"

	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
)

// createNetwork creates the run's bridge network with a pinned subnet.
// Docker gives fixed container addresses only on networks created with an
// explicit subnet, and only it knows which subnets are free: so the network
// is created once to learn a free subnet, removed, and created again with
// that subnet given.
func (p *dockerProvider) createNetwork(ctx context.Context) error {
	opts := client.NetworkCreateOptions{Driver: "bridge", Labels: p.labels}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		res, err := p.cli.NetworkCreate(ctx, p.netName, opts)
		if err != nil {
			return err
		}
		insp, err := p.cli.NetworkInspect(ctx, res.ID, client.NetworkInspectOptions{})
		if err != nil {
			return err
		}
		var cfg network.IPAMConfig
		for _, c := range insp.Network.IPAM.Config {
			if c.Subnet.Addr().Is4() {
				cfg = c
				break
			}
		}
		if _, err := p.cli.NetworkRemove(ctx, res.ID, client.NetworkRemoveOptions{}); err != nil {
			return err
		}
		if !cfg.Subnet.IsValid() {
			return errors.New("docker gave the network no IPv4 subnet")
		}
		if !cfg.Gateway.IsValid() {
			cfg.Gateway = cfg.Subnet.Masked().Addr().Next()
		}
		pinned := opts
		pinned.IPAM = &network.IPAM{Driver: "default", Config: []network.IPAMConfig{{Subnet: cfg.Subnet, Gateway: cfg.Gateway}}}
		res, err = p.cli.NetworkCreate(ctx, p.netName, pinned)
		if err != nil {
			// Another network took the subnet in the meantime.
			lastErr = err
			continue
		}
		p.netID, p.gateway, p.lastIP = res.ID, cfg.Gateway, cfg.Gateway
		return nil
	}
	return lastErr
}

// assignIP gives node its fixed address on the network.
func (p *dockerProvider) assignIP(node string) netip.Addr {
	p.mu.Lock()
	defer p.mu.Unlock()
	if ip, ok := p.ips[node]; ok {
		return ip
	}
	p.lastIP = p.lastIP.Next()
	p.ips[node] = p.lastIP
	return p.lastIP
}

// containerAddr is node's address on the run's network with port.
func (p *dockerProvider) containerAddr(node string, port int) string {
	return netip.AddrPortFrom(p.assignIP(node), uint16(port)).String()
}

// gatewayListen is where peer proxies listen: the gateway, reachable from
// every container of the network.
func (p *dockerProvider) gatewayListen() string {
	return netip.AddrPortFrom(p.gateway, 0).String()
}
