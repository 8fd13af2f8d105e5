package netns

import (
	"context"
	"errors"
	"fmt"
	"github.com/locklab/locklab/cluster"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// netnsProvider is the provider of one cluster's namespaces.
type netnsProvider struct {
	c      *cluster.Cluster
	log    *slog.Logger
	id     string // run id in the namespaces' names
	subnet netip.Prefix
	client netip.Addr // the harness's address
	host   string     // the veth link in the harness's namespace

	mu     sync.Mutex
	nodes  int                       // nodes plugged so far
	spaces []string                  // every namespace created, bridge first
	ns     map[string]netns.NsHandle // node -> its namespace
	nsName map[string]string         // node -> its namespace's name
	ip     map[string]netip.Addr     // node -> its address
	// clients started in namespaces of their own (client.go)
	clientNs map[string]netns.NsHandle // "client-N" -> its namespace
	clientIP map[string]netip.Addr     // "client-N" -> its address
	rules    *nftRules
}

// netnsBridge is the name of the bridge in the bridge namespace.
const netnsBridge = "br0"

func init() {
	cluster.RegisterProvider(cluster.ProviderNetns, cluster.Traits{PacketLinks: true, Clock: true, LossyDisks: true}, newNetnsProvider)
}

func newNetnsProvider(ctx context.Context, c *cluster.Cluster) (cluster.Provider, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if !InHarness() {
		return nil, errors.New("cluster: provider netns: the harness runs in the machine's own network " +
			"namespace, where nothing may be added; bench and chaos start themselves again inside a namespace " +
			"of the run (cluster.Run), tests use testenv.Netns")
	}
	p := &netnsProvider{c: c, log: c.Logger(), id: netnsID(), ns: map[string]netns.NsHandle{},
		nsName: map[string]string{}, ip: map[string]netip.Addr{},
		clientNs: map[string]netns.NsHandle{}, clientIP: map[string]netip.Addr{}}
	p.rules = newNftRules(p)
	subnet, err := freeSubnet()
	if err != nil {
		return nil, fmt.Errorf("cluster: provider netns: %w", err)
	}
	p.subnet = subnet
	p.client = subnet.Addr().Next()
	p.host = "ll" + p.id[len(p.id)-8:]
	t0 := time.Now()
	if err := p.setup(); err != nil {
		p.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("cluster: provider netns: %w", err)
	}
	c.Logger().Info("netns bridge ready", "subnet", p.subnet, "harness", p.client, "took", time.Since(t0))
	return p, nil
}

// freeSubnet picks a /24 of 198.18.0.0/15 that no address of the harness's
// namespace is in.
func freeSubnet() (netip.Prefix, error) {
	addrs, err := netlink.AddrList(nil, netlink.FAMILY_V4)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("list addresses: %w", err)
	}
	used := map[[2]byte]bool{}
	for _, a := range addrs {
		ip := a.IP.To4()
		if ip != nil && ip[0] == 198 && (ip[1] == 18 || ip[1] == 19) {
			used[[2]byte{ip[1], ip[2]}] = true
		}
	}
	start := rand.IntN(512)
	for i := range 512 {
		k := (start + i) % 512
		b := [2]byte{byte(18 + k/256), byte(k % 256)}
		if !used[b] {
			return netip.PrefixFrom(netip.AddrFrom4([4]byte{198, b[0], b[1], 0}), 24), nil
		}
	}
	return netip.Prefix{}, errors.New("every /24 of 198.18.0.0/15 is in use in this namespace")
}

// setup creates the bridge namespace and joins the harness's namespace to
// it.
func (p *netnsProvider) setup() error {
	brName := netnsName(p.id, "br")
	br, err := p.newNetns(brName)
	if err != nil {
		return err
	}
	defer br.Close()
	h, err := netlink.NewHandleAt(br)
	if err != nil {
		return fmt.Errorf("netns %s: %w", brName, err)
	}
	defer h.Close()
	bridge := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: netnsBridge}}
	if err := h.LinkAdd(bridge); err != nil {
		return fmt.Errorf("bridge: %w", err)
	}
	if err := h.LinkSetUp(bridge); err != nil {
		return fmt.Errorf("bridge up: %w", err)
	}
	self, err := netns.Get()
	if err != nil {
		return err
	}
	defer self.Close()
	return p.plug(h, "h0", self, p.host, p.client)
}

// newNetns creates a namespace of the run with loopback up.
func (p *netnsProvider) newNetns(name string) (netns.NsHandle, error) {
	ns, err := newNamedNetns(name)
	if err != nil {
		return ns, err
	}
	p.mu.Lock()
	p.spaces = append(p.spaces, name)
	p.mu.Unlock()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		ns.Close()
		return ns, fmt.Errorf("netns %s: %w", name, err)
	}
	defer h.Close()
	lo, err := h.LinkByName("lo")
	if err == nil {
		err = h.LinkSetUp(lo)
	}
	if err != nil {
		ns.Close()
		return ns, fmt.Errorf("netns %s: loopback up: %w", name, err)
	}
	return ns, nil
}

// plug creates a veth link between the bridge (port brSide, in the bridge
// namespace whose handle is br) and namespace ns (link name inside), gives
// the inside end addr and brings both up.
func (p *netnsProvider) plug(br *netlink.Handle, brSide string, ns netns.NsHandle, inside string, addr netip.Addr) error {
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: brSide}, PeerName: inside,
		PeerNamespace: netlink.NsFd(int(ns))}
	if err := br.LinkAdd(veth); err != nil {
		return fmt.Errorf("veth %s: %w", brSide, err)
	}
	bridge, err := br.LinkByName(netnsBridge)
	if err != nil {
		return err
	}
	if err := br.LinkSetMaster(veth, bridge); err != nil {
		return fmt.Errorf("veth %s on bridge: %w", brSide, err)
	}
	if err := br.LinkSetUp(veth); err != nil {
		return fmt.Errorf("veth %s up: %w", brSide, err)
	}
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return err
	}
	defer h.Close()
	in, err := h.LinkByName(inside)
	if err != nil {
		return fmt.Errorf("veth %s: %w", inside, err)
	}
	a := &netlink.Addr{IPNet: &net.IPNet{IP: addr.AsSlice(), Mask: net.CIDRMask(p.subnet.Bits(), 32)}}
	if err := h.AddrAdd(in, a); err != nil {
		return fmt.Errorf("address %s: %w", addr, err)
	}
	if err := h.LinkSetUp(in); err != nil {
		return fmt.Errorf("veth %s up: %w", inside, err)
	}
	return nil
}

// addNode creates node's namespace, plugged into the bridge, and returns
// its address (the next of the subnet).
func (p *netnsProvider) addNode(node string) (netip.Addr, error) {
	p.mu.Lock()
	idx := p.nodes
	p.nodes++
	p.mu.Unlock()
	addr := p.client
	for range idx + 1 {
		addr = addr.Next()
	}
	if !p.subnet.Contains(addr) || addr.As4()[3] == 255 {
		return addr, fmt.Errorf("node %s: no address left in %s", node, p.subnet)
	}
	name := netnsName(p.id, node)
	ns, err := p.newNetns(name)
	if err != nil {
		return addr, err
	}
	br, err := netns.GetFromName(netnsName(p.id, "br"))
	if err != nil {
		ns.Close()
		return addr, err
	}
	defer br.Close()
	h, err := netlink.NewHandleAt(br)
	if err != nil {
		ns.Close()
		return addr, err
	}
	defer h.Close()
	if err := p.plug(h, "n"+strconv.Itoa(idx), ns, "eth0", addr); err != nil {
		ns.Close()
		return addr, fmt.Errorf("node %s: %w", node, err)
	}
	p.mu.Lock()
	p.ns[node], p.nsName[node], p.ip[node] = ns, name, addr
	p.mu.Unlock()
	return addr, nil
}

// addrOf is the address of a node, of a client in a namespace of its own,
// or of the clients (the harness) for another client name or "clients".
func (p *netnsProvider) addrOf(end string) (netip.Addr, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if a, ok := p.clientIP[end]; ok {
		return a, true
	}
	if cluster.IsClient(end) || end == cluster.Clients {
		return p.client, true
	}
	a, ok := p.ip[end]
	return a, ok
}

// Launch starts the server from a thread inside the node's namespace, so
// the server is born there; otherwise as the local provider does.
func (p *netnsProvider) Launch(ctx context.Context, n *cluster.Node, c cluster.Command) (cluster.Process, error) {
	p.mu.Lock()
	ns, ok := p.ns[n.Name]
	p.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("node %s has no namespace", n.Name)
	}
	var proc cluster.Process
	err := inNetns(ns, func() error {
		var err error
		proc, err = cluster.LaunchLocal(ctx, n, c)
		return err
	})
	return proc, err
}

// Close removes the rules, the veth link in the harness's namespace and
// every namespace of the cluster, killing what still runs there.
func (p *netnsProvider) Close(context.Context) error {
	var errs []error
	p.rules.closeAll()
	p.mu.Lock()
	spaces := append([]string(nil), p.spaces...)
	for _, ns := range p.ns {
		ns.Close()
	}
	for _, ns := range p.clientNs {
		ns.Close()
	}
	p.ns, p.clientNs = map[string]netns.NsHandle{}, map[string]netns.NsHandle{}
	p.mu.Unlock()
	if l, err := netlink.LinkByName(p.host); err == nil {
		if err := netlink.LinkDel(l); err != nil {
			errs = append(errs, fmt.Errorf("remove veth %s: %w", p.host, err))
		}
	}
	for _, name := range spaces {
		if err := removeNetns(name); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("netns: %w (`bench cleanup` removes leftovers)", err)
	}
	p.log.Info("netns: namespaces removed", "run", p.id, "namespaces", len(spaces))
	return nil
}
