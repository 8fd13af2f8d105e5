package cluster

// The registry of a cluster's nodes and links, and each client's view of them (Endpoints).

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
)

func clientName(i int) string { return "client-" + strconv.Itoa(i) }

// addAlias records another address the servers report for node.
func (c *Cluster) addAlias(node, addr string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.aliases[node] = append(c.aliases[node], addr)
}

func (c *Cluster) nodeAliases(node string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.aliases[node]...)
}

// addPlanned registers the plan's nodes of backend, in plan order.
func (c *Cluster) addPlanned(backend string) ([]*Node, error) {
	var out []*Node
	for _, p := range c.plan.NodesOf(backend) {
		n, err := c.addNode(p.Name, p.Kind, true)
		if err != nil {
			return nil, err
		}
		n.backend = backend
		out = append(out, n)
	}
	return out, nil
}

// addNode registers a node and creates its data dir.
func (c *Cluster) addNode(name, kind string, clientFacing bool) (*Node, error) {
	n := &Node{
		Name: name, Kind: kind, c: c, clientFacing: clientFacing,
		dataDir: filepath.Join(c.dataDir, name),
		logPath: filepath.Join(c.dir, "logs", name+".log"),
	}
	if err := os.MkdirAll(n.dataDir, 0o755); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	if c.spec.LossyDisks {
		if err := c.mountDisk(n); err != nil {
			return nil, err
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.nodeByKey[name]; ok {
		return nil, fmt.Errorf("cluster: duplicate node %s", name)
	}
	c.nodes = append(c.nodes, n)
	c.nodeByKey[name] = n
	return n, nil
}

// addLink creates the link from->to with one proxy per upstream, each
// listening on a free 127.0.0.1 port (startProxy). labels name the proxies
// of a multi-proxy link.
func (c *Cluster) addLink(from, to string, upstreams, labels []string) (*Link, error) {
	return c.addLinkAt(from, to, upstreams, nil, labels)
}

// addLinkAt is addLink with the proxies' listen addresses given (nil: a
// free port on 127.0.0.1).
func (c *Cluster) addLinkAt(from, to string, upstreams, listens, labels []string) (*Link, error) {
	name := from + "->" + to
	l := &Link{Name: name, From: from, To: to}
	for i, up := range upstreams {
		pname := name
		if len(upstreams) > 1 {
			pname += "/" + labels[i]
		}
		listen := "127.0.0.1:0"
		if listens != nil {
			listen = listens[i]
		}
		p, err := c.startProxy(pname, listen, up)
		if err != nil {
			l.close()
			return nil, err
		}
		l.proxies = append(l.proxies, p)
		l.addrs = append(l.addrs, p.Listen)
		l.upstreams = append(l.upstreams, up)
		l.up = append(l.up, true)
		if err := l.installGate(p); err != nil {
			l.close()
			return nil, err
		}
	}
	if c.spec.Provider == ProviderLocal {
		// Follow the upstreams' listening state from the start, so no
		// client is accepted by a proxy whose server does not listen yet.
		l.watch = true
		if ls, seq, err := readListening(); err == nil {
			l.syncListeningAt(ls, seq)
		}
	}
	c.prov.LinkAdded(l)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.linkByKey[name]; ok {
		l.close()
		return nil, fmt.Errorf("cluster: duplicate link %s", name)
	}
	c.links = append(c.links, l)
	c.linkByKey[name] = l
	return l, nil
}

// startProxy starts the proxy pname to up on listen, where port 0 means a
// port from freeAddr (never one picked for a server: ports.go). Another
// process may bind that port in the instant between the pick and the
// proxy's bind: then a new one is picked, at most three times.
func (c *Cluster) startProxy(pname, listen, up string) (*toxiproxy.Proxy, error) {
	var err error
	for try := 0; try < 3; try++ {
		addr, ferr := freeAddr(listen)
		if ferr != nil {
			return nil, ferr
		}
		p := toxiproxy.NewProxy(c.tp, pname, addr, up)
		if err = c.tp.Collection.Add(p, true); err == nil {
			return p, nil
		}
		err = fmt.Errorf("cluster: proxy %s on %s: %w", pname, addr, err)
		if addr == listen {
			break // a fixed address: no other to try
		}
	}
	return nil, err
}

// removeLinks closes links and forgets them (a start attempt that failed).
func (c *Cluster) removeLinks(ls []*Link) {
	drop := map[*Link]bool{}
	for _, l := range ls {
		l.close()
		for _, p := range l.proxies {
			_ = c.tp.Collection.Remove(p.Name)
		}
		drop[l] = true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	kept := c.links[:0]
	for _, l := range c.links {
		if drop[l] {
			delete(c.linkByKey, l.Name)
			continue
		}
		kept = append(kept, l)
	}
	c.links = kept
}

// link returns the link called name.
func (c *Cluster) link(name string) (*Link, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l, ok := c.linkByKey[name]
	return l, ok
}

// setUpstream points proxy i of l at addr (after a node moved ports).
func setUpstream(l *Link, i int, addr string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.proxies[i].Update(&toxiproxy.Proxy{Listen: l.addrs[i], Upstream: addr, Enabled: true}); err != nil {
		return err
	}
	l.upstreams[i] = addr
	l.up[i] = true
	return nil
}

// Nodes are every node in start order: Redis primaries, replicas, sentinels,
// then ZooKeeper, then etcd members.
func (c *Cluster) Nodes() []*Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*Node(nil), c.nodes...)
}

// Node returns the node called name.
func (c *Cluster) Node(name string) (*Node, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, ok := c.nodeByKey[name]
	return n, ok
}

// NodeAt returns the node at addr: its real address (Addr), or another
// address its server reports for itself (provider docker: its container
// address, which Sentinel, replication and etcd's member list report).
func (c *Cluster) NodeAt(addr string) (*Node, bool) {
	for _, n := range c.Nodes() {
		if n.Addr() == addr || slices.Contains(c.nodeAliases(n.Name), addr) {
			return n, true
		}
	}
	return nil, false
}

// Endpoints are client's addresses, each through the client's own proxy
// ("client-<client>-><node>") where the plan has one (Spec.ClientProxies),
// else the node's real address; plus Redirect from each address a server
// reports for a node (its real address, its aliases) to the address the
// client uses for it, and the cluster's Credentials. It panics when client
// is not in [0, Clients()).
func (c *Cluster) Endpoints(client int) Endpoints {
	if client < 0 || client >= c.spec.Clients {
		panic(fmt.Sprintf("cluster: client %d of %d", client, c.spec.Clients))
	}
	from := clientName(client)
	e := Endpoints{Redirect: map[string]string{}, Auth: c.Credentials()}
	type part struct {
		nodes []*Node
		addrs []string
	}
	parts := map[string]*part{}
	var order []string
	for _, n := range c.Nodes() {
		if !n.clientFacing {
			continue
		}
		addr := n.Addr() // no client proxy for n (Spec.ClientProxies): direct
		if l, ok := c.link(from + "->" + n.Name); ok {
			addr = l.Addr()
			e.Redirect[n.Addr()] = addr
		}
		for _, a := range c.nodeAliases(n.Name) {
			e.Redirect[a] = addr
		}
		p := parts[n.backend]
		if p == nil {
			p = &part{}
			parts[n.backend] = p
			order = append(order, n.backend)
		}
		p.nodes = append(p.nodes, n)
		p.addrs = append(p.addrs, addr)
	}
	for _, name := range order {
		p := parts[name]
		if b, ok := LookupBackend(name); ok && b.Endpoints != nil {
			b.Endpoints(&e, p.nodes, p.addrs)
		} else if ok {
			if e.Table == nil {
				e.Table = map[string][]string{}
			}
			e.Table[name] = append(e.Table[name], p.addrs...)
		}
	}
	// The primaries are one Redis Cluster's seeds: a client follows the
	// slot map, dialing every address a node announces through Redirect.
	e.RedisCluster = c.plan.RedisCluster && len(e.Redis) > 0
	return e
}

// AllLinks are every link, client links last.
func (c *Cluster) AllLinks() []*Link {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := append([]*Link(nil), c.links...)
	sort.SliceStable(out, func(i, j int) bool { return !isClient(out[i].From) && isClient(out[j].From) })
	return out
}
