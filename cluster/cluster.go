package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// Backend names: keys of Info.Versions and Info.Startup.
const (
	BackendRedis     = "redis"
	BackendZooKeeper = "zookeeper"
	BackendEtcd      = "etcd"
)

// Cluster is a started set of servers with a proxy on every client link and
// on the peer links the backends allow. Start returns it ready; Close stops
// everything. Methods are safe for concurrent use.
type Cluster struct {
	spec    Spec
	plan    Plan // what start builds (PlanOf(spec))
	log     *slog.Logger
	dir     string
	dataDir string
	prov    provider
	docker  *dockerProvider // the provider when it is docker
	tp      *toxiproxy.ApiServer
	closed  atomic.Bool

	mu        sync.Mutex
	nodes     []*Node
	nodeByKey map[string]*Node
	links     []*Link
	linkByKey map[string]*Link
	info      Info
	// aliases are the other addresses servers report for a node (docker:
	// its container address), redirected like its Addr.
	aliases map[string][]string
	creds   Credentials // provider external: from the environment

	watchStop chan struct{} // closed by Close: stops watchListeners
	watchDone chan struct{}

	demux []*peerDemux // local peer demultiplexers (peers.go); guarded by mu

	closeOnce sync.Once
	closeErr  error
}

// backend is one backend's part of Start: its nodes and links are created
// by the builder; start launches them and waits until they are ready.
type backend struct {
	name    string
	start   func(ctx context.Context) error
	version func(ctx context.Context) string
}

// Start starts the servers of spec, puts proxies on their links and returns
// once every server is ready (see the package doc for what ready means per
// backend). On any error, or when ctx ends first, it stops everything it
// started and returns the error; logs stay under spec.Dir/logs.
func Start(ctx context.Context, spec Spec) (*Cluster, error) {
	spec, err := spec.withDefaults()
	if err != nil {
		return nil, err
	}
	c := &Cluster{
		spec:      spec,
		plan:      PlanOf(spec),
		log:       spec.Logger,
		dir:       spec.Dir,
		dataDir:   filepath.Join(spec.Dir, "data"),
		nodeByKey: map[string]*Node{},
		linkByKey: map[string]*Link{},
		aliases:   map[string][]string{},
		info: Info{Provider: spec.Provider, Versions: map[string]string{},
			Startup: map[string]time.Duration{}},
	}
	switch spec.Provider {
	case ProviderLocal:
		c.prov = localProvider{}
	case ProviderExternal:
		c.prov = localProvider{} // no process is started
		creds, err := ExternalCredentialsFromEnv()
		if err != nil {
			return nil, err
		}
		c.creds = creds
		c.log.Info("external servers", "credentials", creds.String())
	case ProviderDocker:
		dp, err := newDockerProvider(ctx, c)
		if err != nil {
			return nil, err
		}
		c.prov, c.docker = dp, dp
	default:
		return nil, fmt.Errorf("cluster: provider %q: %w", spec.Provider, ErrUnsupported)
	}
	c.tp = toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	if spec.Provider == ProviderLocal {
		c.watchStop, c.watchDone = make(chan struct{}), make(chan struct{})
		go func() {
			defer close(c.watchDone)
			c.watchListeners(c.watchStop)
		}()
	}
	if err := c.start(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// sized is s with the defaults that decide its topology (PlanOf): provider
// local, one client, one primary or member per declared backend. It
// copies the backend specs it changes.
func (s Spec) sized() Spec {
	if s.Provider == "" {
		s.Provider = ProviderLocal
	}
	if s.Clients <= 0 {
		s.Clients = 1
	}
	if s.Redis != nil && s.Redis.Primaries <= 0 {
		r := *s.Redis
		r.Primaries = 1
		s.Redis = &r
	}
	if s.ZooKeeper != nil && s.ZooKeeper.Nodes <= 0 {
		z := *s.ZooKeeper
		z.Nodes = 1
		s.ZooKeeper = &z
	}
	if s.Etcd != nil && s.Etcd.Nodes <= 0 {
		e := *s.Etcd
		e.Nodes = 1
		s.Etcd = &e
	}
	return s
}

func (s Spec) withDefaults() (Spec, error) {
	s = s.sized()
	if s.Logger == nil {
		s.Logger = slog.New(slog.DiscardHandler)
	}
	if s.Dir == "" {
		d, err := os.MkdirTemp("", "locklab-cluster-")
		if err != nil {
			return s, fmt.Errorf("cluster: %w", err)
		}
		s.Dir = d
	}
	if s.Provider == ProviderExternal {
		if s.External == nil {
			return s, errors.New("cluster: provider external needs the servers' addresses " +
				"(cluster.external: {redis: [host:port], zookeeper: [...], etcd: [...]} in the scenario file)")
		}
		return s, nil
	}
	if s.Redis != nil {
		r := *s.Redis
		if r.Replicas < 0 || r.Sentinels < 0 {
			return s, errors.New("cluster: redis replicas and sentinels must be >= 0")
		}
		switch r.Persistence {
		case "":
			r.Persistence = PersistNone
		case PersistNone, PersistEverysec, PersistAlways:
		default:
			return s, fmt.Errorf("cluster: redis persistence %q: want %s, %s or %s",
				r.Persistence, PersistNone, PersistEverysec, PersistAlways)
		}
		s.Redis = &r
	}
	if s.ZooKeeper != nil {
		if s.ZooKeeper.Nodes > 255 {
			return s, errors.New("cluster: zookeeper nodes must be <= 255")
		}
	}
	return s, nil
}

func (c *Cluster) start(ctx context.Context) error {
	if err := os.MkdirAll(filepath.Join(c.dir, "logs"), 0o755); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	if err := os.MkdirAll(c.dataDir, 0o755); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	var backends []backend
	var err error
	add := func(b backend, e error) {
		if e != nil && err == nil {
			err = e
		}
		backends = append(backends, b)
	}
	if c.spec.Provider == ProviderExternal {
		add(c.buildExternal(c.spec.External))
	} else if c.docker != nil {
		if c.spec.Redis != nil {
			add(c.buildDockerRedis(*c.spec.Redis))
		}
		if c.spec.ZooKeeper != nil {
			add(c.buildDockerZooKeeper(*c.spec.ZooKeeper))
		}
		if c.spec.Etcd != nil {
			add(c.buildDockerEtcd(*c.spec.Etcd))
		}
	} else {
		if c.spec.Redis != nil {
			add(c.buildRedis(*c.spec.Redis))
		}
		if c.spec.ZooKeeper != nil {
			add(c.buildZooKeeper(*c.spec.ZooKeeper))
		}
		if c.spec.Etcd != nil {
			add(c.buildEtcd(*c.spec.Etcd))
		}
	}
	if err != nil {
		return err
	}

	// Backends are independent: start them side by side.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, len(backends))
	var wg sync.WaitGroup
	for i, b := range backends {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t0 := time.Now()
			if err := b.start(ctx); err != nil {
				errs[i] = fmt.Errorf("cluster: start %s: %w", b.name, err)
				cancel()
				return
			}
			took := time.Since(t0)
			v := ""
			if b.version != nil {
				v = b.version(ctx)
			}
			c.mu.Lock()
			c.info.Startup[b.name] = took
			if v != "" {
				c.info.Versions[b.name] = v
			}
			c.mu.Unlock()
			c.log.Info("backend ready", "backend", b.name, "took", took, "version", v)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		// Report the first real cause, not the cancellations it caused.
		for _, e := range errs {
			if e != nil && !errors.Is(e, context.Canceled) {
				return e
			}
		}
		return err
	}

	// Client links, now that every node has its final address.
	for _, l := range c.plan.Links {
		if !isClient(l.From) {
			continue
		}
		n, _ := c.Node(l.To)
		if _, err := c.addLink(l.From, l.To, []string{n.Addr()}, nil); err != nil {
			return err
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.plan.diff(c.nodes, c.links)
}

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
// listening on a free 127.0.0.1 port chosen by the kernel (no race: the
// proxy binds it directly). labels name the proxies of a multi-proxy link.
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
		p := toxiproxy.NewProxy(c.tp, pname, listen, up)
		if err := c.tp.Collection.Add(p, true); err != nil {
			l.close()
			return nil, fmt.Errorf("cluster: proxy %s on %s: %w", pname, listen, err)
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
	if c.docker != nil && c.docker.watch.following() {
		c.docker.watch.linkAdded(l)
		l.watch = true // docker_watch.go: from its next round on
	}
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

// pickPorts chooses ports for servers; tests replace it to provoke a port
// conflict.
var pickPorts = freePorts

// freePorts returns n distinct free 127.0.0.1 ports. They are free when
// chosen; a server that loses one to another process before binding it
// exits with "address already in use" and Start picks new ports for it.
func freePorts(n int) ([]int, error) {
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("cluster: free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func hostPort(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

func (c *Cluster) isClosed() bool { return c.closed.Load() }

// Dir is the run's directory: logs under Dir/logs survive Close.
func (c *Cluster) Dir() string { return c.dir }

// RunID is the run's id: for the docker provider, the value of the
// LabelRun label on the cluster's containers and network (Spec.RunID plus a
// random suffix); otherwise Spec.RunID.
func (c *Cluster) RunID() string {
	if c.docker != nil {
		return c.docker.runID
	}
	return c.spec.RunID
}

// Plan is the topology the cluster was built from: its nodes and links.
func (c *Cluster) Plan() Plan { return c.plan }

// Clients is the number of clients with their own links (client-0 ..).
func (c *Cluster) Clients() int { return c.spec.Clients }

// Info describes the cluster for the result file: provider, server versions
// and startup time per backend.
func (c *Cluster) Info() Info {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := Info{Provider: c.info.Provider, Versions: map[string]string{},
		Startup: map[string]time.Duration{}}
	for k, v := range c.info.Versions {
		out.Versions[k] = v
	}
	for k, v := range c.info.Startup {
		out.Startup[k] = v
	}
	return out
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

// Endpoints are client's addresses, every one through the client's own
// proxies ("client-<client>-><node>"), plus Redirect from each client-facing
// node's real address to the client's proxied address for it, and the
// cluster's Credentials. It panics when client is not in [0, Clients()).
func (c *Cluster) Endpoints(client int) Endpoints {
	if client < 0 || client >= c.spec.Clients {
		panic(fmt.Sprintf("cluster: client %d of %d", client, c.spec.Clients))
	}
	from := clientName(client)
	e := Endpoints{Redirect: map[string]string{}, Auth: c.Credentials()}
	sentinels := false
	for _, n := range c.Nodes() {
		if !n.clientFacing {
			continue
		}
		l, ok := c.link(from + "->" + n.Name)
		if !ok {
			continue
		}
		e.Redirect[n.Addr()] = l.Addr()
		for _, a := range c.nodeAliases(n.Name) {
			e.Redirect[a] = l.Addr()
		}
		switch n.Kind {
		case KindRedis:
			e.Redis = append(e.Redis, l.Addr())
			e.MasterNames = append(e.MasterNames, n.Name)
		case KindSentinel:
			e.Sentinels = append(e.Sentinels, l.Addr())
			sentinels = true
		case KindZooKeeper:
			e.ZooKeeper = append(e.ZooKeeper, l.Addr())
		case KindEtcd:
			e.Etcd = append(e.Etcd, l.Addr())
		}
	}
	if !sentinels {
		e.MasterNames = nil
	}
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

// Close stops every server (SIGKILL to each process group, or docker kill,
// then waits for each), closes every proxy, removes the data dirs and, for
// provider docker, the containers and the network; logs stay under
// Dir()/logs. It does not depend on the ctx Start was given, so it cleans up
// after an interrupted run too. It is idempotent: later calls return the
// first call's result.
func (c *Cluster) Close() error {
	c.closeOnce.Do(func() { c.closeErr = c.close() })
	return c.closeErr
}

func (c *Cluster) close() error {
	c.closed.Store(true)
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	for _, n := range c.Nodes() {
		p := n.process()
		if p == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.shutdown(); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("kill %s: %w", n.Name, err))
				mu.Unlock()
			}
			t := time.NewTimer(30 * time.Second)
			defer t.Stop()
			select {
			case <-p.done():
			case <-t.C:
				mu.Lock()
				errs = append(errs, fmt.Errorf("kill %s: pid %d did not exit", n.Name, p.pid()))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if c.watchStop != nil {
		close(c.watchStop)
		<-c.watchDone
	}
	for _, d := range c.peerDemuxes() {
		d.close()
	}
	c.mu.Lock()
	links := append([]*Link(nil), c.links...)
	c.mu.Unlock()
	for _, l := range links {
		l.close()
	}
	if err := c.prov.close(context.Background()); err != nil {
		errs = append(errs, err)
	}
	if c.spec.Provider != ProviderExternal {
		if err := os.RemoveAll(c.dataDir); err != nil {
			errs = append(errs, fmt.Errorf("remove data: %w", err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("cluster: close: %w", err)
	}
	c.log.Info("cluster closed", "logs", filepath.Join(c.dir, "logs"))
	return nil
}

// Leader returns the current leader among the nodes of kind (KindZooKeeper
// or KindEtcd), asking each running member its Role. It fails when no
// member says it leads (during an election, or without quorum).
func (c *Cluster) Leader(ctx context.Context, kind string) (*Node, error) {
	var errs []error
	for _, n := range c.Nodes() {
		if n.Kind != kind || (n.cmd != nil && !n.Alive()) {
			continue
		}
		r, err := n.Role(ctx)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if r == "leader" || r == "standalone" {
			return n, nil
		}
	}
	return nil, fmt.Errorf("cluster: no %s leader: %w", kind, errors.Join(append(errs, ErrNoLeader)...))
}

// ErrNoLeader means no member reported being the leader.
var ErrNoLeader = errors.New("cluster: no leader")

// Primary returns the node Sentinel currently reports as the primary for
// master (a primary's node name, "redis-0"): after a failover, the promoted
// replica's node. It asks the sentinels in order and returns the first
// answer that names a known node.
func (c *Cluster) Primary(ctx context.Context, master string) (*Node, error) {
	var errs []error
	for _, s := range c.Nodes() {
		if s.Kind != KindSentinel || !s.Alive() {
			continue
		}
		v, err := respDo(ctx, s.Addr(), "SENTINEL", "get-master-addr-by-name", master)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.Name, err))
			continue
		}
		a, ok := v.([]any)
		if !ok || len(a) != 2 {
			errs = append(errs, fmt.Errorf("%s: no master %q", s.Name, master))
			continue
		}
		addr := fmt.Sprintf("%v:%v", a[0], a[1])
		if n, ok := c.NodeAt(addr); ok && (n.Kind == KindRedis || n.Kind == KindReplica) {
			return n, nil
		}
		errs = append(errs, fmt.Errorf("%s: master at unknown address %s", s.Name, addr))
	}
	if len(errs) == 0 {
		return nil, fmt.Errorf("cluster: primary of %s: no sentinel running", master)
	}
	return nil, fmt.Errorf("cluster: primary of %s: %w", master, errors.Join(errs...))
}
