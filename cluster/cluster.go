package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// BackendRedis is Redis's backend name, a key of Info.Versions and
// Info.Startup as each table backend's name is.
const BackendRedis = "redis"

// Cluster is a started set of servers with a proxy on every client link and
// on the peer links the backends allow. Start returns it ready; Close stops
// everything. Methods are safe for concurrent use.
type Cluster struct {
	spec    Spec
	plan    Plan // what start builds (PlanOf(spec), or StartPlan's)
	log     *slog.Logger
	dir     string
	dataDir string
	prov    Provider
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

	demux []*PeerDemux // local peer demultiplexers (peers.go); guarded by mu

	// Table backends' failovers by backend, and what their builds made
	// outside the data dirs (table.go); guarded by mu.
	failovers map[string]func(context.Context, string) (string, error)
	primaries map[string]func(context.Context, string) (*Node, error)
	closers   []func() error

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
	return StartPlan(ctx, spec, PlanOf(spec))
}

// StartPlan is Start with the plan of spec its caller already computed:
// PlanOf(spec), its client links possibly narrowed by
// Plan.WithClientProxies (spec.ClientProxies is not read). One plan then
// decides a run's proxies, the checks of its faults and what Start
// builds; Plan returns it. A plan of another spec is the caller's error.
func StartPlan(ctx context.Context, spec Spec, plan Plan) (*Cluster, error) {
	spec, err := spec.withDefaults()
	if err != nil {
		return nil, err
	}
	c := &Cluster{
		spec:      spec,
		plan:      plan,
		log:       spec.Logger,
		dir:       spec.Dir,
		dataDir:   filepath.Join(spec.Dir, "data"),
		nodeByKey: map[string]*Node{},
		linkByKey: map[string]*Link{},
		aliases:   map[string][]string{},
		failovers: map[string]func(context.Context, string) (string, error){},
		primaries: map[string]func(context.Context, string) (*Node, error){},
		info: Info{Provider: spec.Provider, Versions: map[string]string{},
			Startup: map[string]time.Duration{}},
	}
	switch spec.Provider {
	case ProviderLocal:
		c.prov = localProvider{c: c}
	case ProviderExternal:
		c.prov = localProvider{c: c} // no process is started
		creds, err := ExternalCredentialsFromEnv()
		if err != nil {
			return nil, err
		}
		c.creds = creds
		c.log.Info("external servers", "credentials", creds.String())
	default:
		p, err := openProvider(ctx, c, spec.Provider)
		if err != nil {
			return nil, err
		}
		c.prov = p
	}
	c.tp = toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	if spec.Provider == ProviderLocal {
		c.watchStop, c.watchDone = make(chan struct{}), make(chan struct{})
		go func() {
			defer close(c.watchDone)
			c.watchListeners(c.watchStop)
		}()
	}
	// A start never waits forever (a node that died after answering once,
	// a readiness that never comes): without a deadline of the caller's it
	// ends after DefaultStartTimeout with what it waited for.
	sctx := ctx
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		sctx, cancel = context.WithTimeout(ctx, DefaultStartTimeout)
		defer cancel()
	}
	if err := c.start(sctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// DefaultStartTimeout bounds Start when its context has no deadline: far
// above the slowest topology's start on a loaded 2-core machine (a 5-node
// ZooKeeper ensemble in containers takes about 20 s).
const DefaultStartTimeout = 3 * time.Minute

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
	if s.Redis != nil {
		r := RedisSpecOf(s.Redis.settings()) // zero values at their defaults
		s.Redis = &r
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
	if s.LossyDisks {
		if err := LossyDisksWith(s.Provider); err != nil {
			return s, fmt.Errorf("cluster: %w: %w", err, ErrUnsupported)
		}
	}
	if err := checkTable(s); err != nil {
		return s, err
	}
	if s.Provider == ProviderExternal && s.External == nil {
		return s, errors.New("cluster: provider external needs the servers' addresses " +
			"(cluster.external: {redis: [host:port], zookeeper: [...], etcd: [...]} in the scenario file)")
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
	// Each row's builder serves every provider, through its fabric
	// (fabric.go).
	if c.spec.Provider == ProviderExternal {
		add(c.buildExternal(c.spec.External))
	} else {
		rows, rerr := c.buildRows()
		backends = append(backends, rows...)
		if err == nil {
			err = rerr
		}
	}
	if err != nil {
		return err
	}

	// Backends are independent: start them side by side.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := each(backends, func(b backend) error {
		t0 := time.Now()
		if err := b.start(ctx); err != nil {
			cancel()
			return fmt.Errorf("cluster: start %s: %w", b.name, err)
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
		return nil
	}); err != nil {
		// Report the first real cause, not the cancellations it caused.
		for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
			if !errors.Is(e, context.Canceled) {
				return e
			}
		}
		return err
	}

	// Provider netns: every link is the kernel's, with packet rules for
	// faults (kernel_link.go).
	if c.namespaces() != nil {
		for _, l := range c.plan.Links {
			if err := c.addKernelLink(l.From, l.To); err != nil {
				return err
			}
		}
	}
	// Client links, now that every node has its final address.
	for _, l := range c.plan.Links {
		if c.namespaces() != nil {
			break
		}
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

func (c *Cluster) isClosed() bool { return c.closed.Load() }

// Dir is the run's directory: logs under Dir/logs survive Close.
func (c *Cluster) Dir() string { return c.dir }

// RunID is the run's id: for the docker provider, the value of the
// LabelRun label on the cluster's containers and network (Spec.RunID plus a
// random suffix); otherwise Spec.RunID.
func (c *Cluster) RunID() string {
	if id := c.prov.RunID(); id != "" {
		return id
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
			if err := p.Shutdown(); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("kill %s: %w", n.Name, err))
				mu.Unlock()
			}
			t := time.NewTimer(30 * time.Second)
			defer t.Stop()
			select {
			case <-p.Done():
			case <-t.C:
				mu.Lock()
				errs = append(errs, fmt.Errorf("kill %s: pid %d did not exit", n.Name, p.Pid()))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err := c.unmountDisks(); err != nil {
		errs = append(errs, err)
	}
	for _, n := range c.Nodes() {
		if err := n.closeClock(); err != nil {
			errs = append(errs, fmt.Errorf("clock of %s: %w", n.Name, err))
		}
	}
	if c.watchStop != nil {
		close(c.watchStop)
		<-c.watchDone
	}
	for _, d := range c.peerDemuxes() {
		d.Close()
	}
	c.mu.Lock()
	links := append([]*Link(nil), c.links...)
	c.mu.Unlock()
	for _, l := range links {
		l.close()
	}
	if err := c.prov.Close(context.Background()); err != nil {
		errs = append(errs, err)
	}
	c.mu.Lock()
	closers := c.closers
	c.mu.Unlock()
	for _, f := range closers {
		if err := f(); err != nil {
			errs = append(errs, err)
		}
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

// each runs f for every element of xs side by side and joins their errors.
func each[T any](xs []T, f func(T) error) error {
	errs := make([]error, len(xs))
	var wg sync.WaitGroup
	for i, x := range xs {
		wg.Go(func() { errs[i] = f(x) })
	}
	wg.Wait()
	return errors.Join(errs...)
}
