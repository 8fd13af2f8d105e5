package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
)

// The docker provider runs every server as a container (testcontainers-go)
// on a Docker network of its own, one per cluster, with the same node names,
// links and proxies as the local provider:
//
//   - each container gets a fixed address on the network (the network's
//     subnet is pinned so that addresses can be), kept across restarts, so
//     what Sentinel and etcd report about a node stays true after it was
//     killed and started again;
//   - its client port is published on 127.0.0.1 only, at a port chosen like
//     the local provider's; that is Node.Addr, and the clients' proxies dial
//     it;
//   - peer links (replication, ZooKeeper quorum and election, etcd peers) go
//     through proxies in the harness listening on the network's gateway
//     address, which containers reach, and dial the peer's container
//     address;
//   - Pause is docker pause (the cgroup freezer), Kill is docker kill, Start
//     starts the same container again, whose filesystem keeps the data;
//     Close removes every container (and its anonymous volumes) and the
//     network.
//
// Containers and the network carry the labels LabelLocklab=1 and
// LabelRun=<run id> (plus the node name and the harness's host and pid), so
// DockerCleanup can remove what an interrupted run left behind.

// Labels on the docker provider's containers and networks.
const (
	LabelLocklab = "locklab"           // always "1"
	LabelRun     = "locklab.run"       // the cluster's run id (RunID plus a random suffix)
	LabelNode    = "locklab.node"      // the node name (containers only)
	LabelHost    = "locklab.host"      // hostname of the harness that created it
	LabelPid     = "locklab.pid"       // pid of the harness that created it
	LabelStart   = "locklab.pid.start" // the harness process's start time (with the pid, identifies it)
)

// Default images of the docker provider: the official images. When one is
// not present locally and an image built by `make images` is
// (locklab/redis, locklab/zookeeper, locklab/etcd, any tag), that one is
// used instead and the run log says so. Scenario files choose others with
// cluster.<backend>.image.
const (
	DefaultRedisImage     = "redis:7.2"
	DefaultZooKeeperImage = "zookeeper:3.9"
	DefaultEtcdImage      = "gcr.io/etcd-development/etcd:v3.5.17"
)

// LocalImageRepos are the repositories `make images` (images/build.sh)
// tags, per backend.
var LocalImageRepos = map[string]string{
	BackendRedis:     "locklab/redis",
	BackendZooKeeper: "locklab/zookeeper",
	BackendEtcd:      "locklab/etcd",
}

// containerSpec is what the docker provider needs beyond a command line.
type containerSpec struct {
	backend string // BackendRedis, ...: selects the image
	image   string // the scenario's image; "" = the backend's default
	port    int    // the client port, published on the node's Addr
	files   []containerFile
}

// containerFile is copied into the container when it is created.
type containerFile struct {
	path string
	data []byte
}

// dockerProvider is the provider of one cluster's containers.
type dockerProvider struct {
	c       *Cluster
	log     *slog.Logger
	cli     *testcontainers.DockerClient
	runID   string
	netName string
	netID   string
	gateway netip.Addr // where peer proxies listen
	labels  map[string]string

	imageMu sync.Mutex
	mu      sync.Mutex
	lastIP  netip.Addr
	ips     map[string]netip.Addr       // node -> fixed address on the network
	ctrs    map[string]*dockerContainer // node -> its container
	images  map[string]string           // requested image ("" = default, per backend) -> resolved
	closing bool

	watch *dockerWatch
}

type dockerContainer struct {
	tc   *testcontainers.DockerContainer
	id   string
	name string
	key  string // the command it was created for; another one recreates it
}

// dockerSetup is done once per process: testcontainers' reaper (Ryuk) needs
// its image pulled, which offline machines cannot do, so it is off unless
// the user set TESTCONTAINERS_RYUK_DISABLED; our own labels and Close (and
// `bench cleanup`) do its job. testcontainers' global logger goes to the
// most recent cluster's logger at debug level.
var (
	dockerSetupOnce sync.Once
	dockerLog       atomic.Pointer[slog.Logger]
)

func dockerSetup(log *slog.Logger) {
	dockerLog.Store(log)
	dockerSetupOnce.Do(func() {
		if _, ok := os.LookupEnv("TESTCONTAINERS_RYUK_DISABLED"); !ok {
			os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
		}
		tclog.SetDefault(tcLogger{})
	})
}

// tcLogger forwards testcontainers' log lines to slog at debug level.
type tcLogger struct{ log *slog.Logger }

func (l tcLogger) Printf(format string, v ...any) {
	log := l.log
	if log == nil {
		log = dockerLog.Load()
	}
	if log != nil {
		log.Debug(strings.TrimSpace(fmt.Sprintf(format, v...)), "from", "testcontainers")
	}
}

// dockerClient connects to the Docker engine the way testcontainers does
// (DOCKER_HOST, ~/.testcontainers.properties, the default socket).
func dockerClient(ctx context.Context, log *slog.Logger) (*testcontainers.DockerClient, error) {
	dockerSetup(log)
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return nil, fmt.Errorf("docker: %w (is a Docker engine running? try `docker version`)", err)
	}
	if _, err := cli.Ping(ctx, client.PingOptions{}); err != nil {
		cli.Close()
		return nil, fmt.Errorf("docker: %w (is a Docker engine running? try `docker version`)", err)
	}
	return cli, nil
}

// DockerAvailable reports whether a Docker engine answers.
func DockerAvailable(ctx context.Context) error {
	cli, err := dockerClient(ctx, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	return cli.Close()
}

var runIDChars = regexp.MustCompile(`[^a-z0-9-]+`)

// newRunID is the cluster's label and name: the run's id made safe for
// container names, plus a random suffix so that clusters of the same run
// (one per lock) and parallel runs never collide.
func newRunID(base string) string {
	b := make([]byte, 4)
	rand.Read(b)
	base = strings.Trim(runIDChars.ReplaceAllString(strings.ToLower(base), "-"), "-")
	if len(base) > 40 {
		base = base[:40]
	}
	if base == "" {
		return hex.EncodeToString(b)
	}
	return base + "-" + hex.EncodeToString(b)
}

func newDockerProvider(ctx context.Context, c *Cluster) (*dockerProvider, error) {
	t0 := time.Now()
	cli, err := dockerClient(ctx, c.log)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	p := &dockerProvider{
		c: c, log: c.log, cli: cli, runID: newRunID(c.spec.RunID),
		ips: map[string]netip.Addr{}, ctrs: map[string]*dockerContainer{}, images: map[string]string{},
	}
	host, _ := os.Hostname()
	p.labels = map[string]string{
		LabelLocklab: "1", LabelRun: p.runID, LabelHost: host, LabelPid: strconv.Itoa(os.Getpid()),
		LabelStart: procStart(os.Getpid()),
	}
	p.netName = "locklab-" + p.runID
	if err := p.createNetwork(ctx); err != nil {
		p.close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("cluster: docker network %s: %w", p.netName, err)
	}
	p.watch = newDockerWatch(p)
	c.log.Info("docker network ready", "network", p.netName, "gateway", p.gateway, "took", time.Since(t0))
	return p, nil
}

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

// listenAddr is where peer proxies listen: the gateway, reachable from
// every container of the network.
func (p *dockerProvider) listenAddr() string {
	return netip.AddrPortFrom(p.gateway, 0).String()
}

// image returns the image to run for spec, resolving the default once per
// cluster (see DefaultRedisImage).
func (p *dockerProvider) image(ctx context.Context, spec *containerSpec) (string, error) {
	key := spec.backend + "|" + spec.image
	p.imageMu.Lock() // one resolution (and one log line) per image
	defer p.imageMu.Unlock()
	p.mu.Lock()
	img, ok := p.images[key]
	p.mu.Unlock()
	if ok {
		return img, nil
	}
	img, err := resolveImage(ctx, p.cli, p.log, spec.backend, spec.image)
	if err != nil {
		return "", err
	}
	p.mu.Lock()
	p.images[key] = img
	p.mu.Unlock()
	return img, nil
}

func defaultImage(backend string) string {
	switch backend {
	case BackendRedis:
		return DefaultRedisImage
	case BackendZooKeeper:
		return DefaultZooKeeperImage
	case BackendEtcd:
		return DefaultEtcdImage
	}
	return ""
}

// resolveImage picks the image for a backend: the requested one, or the
// default official image when present locally, or else the newest
// locklab/<backend> image `make images` built. An image that is not
// present locally is pulled by testcontainers when the container is
// created (and only then).
func resolveImage(ctx context.Context, cli *testcontainers.DockerClient, log *slog.Logger, backend, requested string) (string, error) {
	if requested != "" {
		return requested, nil
	}
	def := defaultImage(backend)
	if _, err := cli.ImageInspect(ctx, def); err == nil {
		return def, nil
	}
	repo := LocalImageRepos[backend]
	res, err := cli.ImageList(ctx, client.ImageListOptions{Filters: make(client.Filters).Add("reference", repo)})
	if err != nil {
		return "", fmt.Errorf("list images: %w", err)
	}
	best, bestV := "", []int(nil)
	for _, im := range res.Items {
		for _, tag := range im.RepoTags {
			v := parseVersion(strings.TrimPrefix(tag, repo+":"))
			if v != nil && (best == "" || versionLess(bestV, v) || (!versionLess(v, bestV) && len(tag) < len(best))) {
				best, bestV = tag, v
			}
		}
	}
	if best == "" {
		return def, nil // testcontainers pulls it; launch explains a failure
	}
	log.Warn("docker: default image not present locally: using the one built by `make images`",
		"backend", backend, "default", def, "image", best)
	return best, nil
}

// parseVersion reads "7.0" or "7.0.15" (nil for other tags).
func parseVersion(s string) []int {
	var out []int
	for _, part := range strings.Split(s, ".") {
		n, err := strconv.Atoi(part)
		if err != nil {
			return nil
		}
		out = append(out, n)
	}
	return out
}

func versionLess(a, b []int) bool {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return len(a) < len(b)
}

// containerName is the container's name: unique per run and node.
func (p *dockerProvider) containerName(n *Node) string {
	return "locklab-" + p.runID + "-" + n.Name
}

func commandKey(img string, hostPort string, c command) string {
	return img + "\x00" + hostPort + "\x00" + c.String() + "\x00" + strings.Join(c.env, "\x00")
}

// ensure returns n's container for cmd, creating it (or recreating it when
// the command changed) without starting it.
func (p *dockerProvider) ensure(ctx context.Context, n *Node, cmd command) (*dockerContainer, error) {
	spec := cmd.container
	if spec == nil {
		return nil, fmt.Errorf("docker: node %s has no container spec", n.Name)
	}
	img, err := p.image(ctx, spec)
	if err != nil {
		return nil, err
	}
	_, hp := splitHostPort(n.Addr())
	key := commandKey(img, hp, cmd)
	p.mu.Lock()
	old := p.ctrs[n.Name]
	closing := p.closing
	p.mu.Unlock()
	if closing {
		return nil, ErrClosed
	}
	if old != nil {
		if old.key == key {
			return old, nil
		}
		if err := p.remove(ctx, old.id); err != nil {
			return nil, err
		}
	}
	dc, err := p.create(ctx, n, cmd, img, hp, key)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.ctrs[n.Name] = dc
	p.mu.Unlock()
	return dc, nil
}

func (p *dockerProvider) create(ctx context.Context, n *Node, cmd command, img, hostPort, key string) (*dockerContainer, error) {
	spec := cmd.container
	port := network.MustParsePort(strconv.Itoa(spec.port) + "/tcp")
	env := map[string]string{}
	for _, kv := range cmd.env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	labels := map[string]string{LabelNode: n.Name}
	for k, v := range p.labels {
		labels[k] = v
	}
	var files []testcontainers.ContainerFile
	for _, f := range spec.files {
		files = append(files, testcontainers.ContainerFile{
			Reader: strings.NewReader(string(f.data)), ContainerFilePath: f.path, FileMode: 0o644,
		})
	}
	ip := p.assignIP(n.Name)
	name := p.containerName(n)
	req := testcontainers.GenericContainerRequest{
		ContainerRequest: testcontainers.ContainerRequest{
			Image:          img,
			Entrypoint:     []string{cmd.path},
			Cmd:            cmd.args,
			Env:            env,
			Labels:         labels,
			Name:           name,
			ExposedPorts:   []string{port.String()},
			Networks:       []string{p.netName},
			NetworkAliases: map[string][]string{p.netName: {n.Name}},
			Files:          files,
			ConfigModifier: func(c *container.Config) {
				c.Hostname = n.Name
				c.WorkingDir = cmd.dir
			},
			HostConfigModifier: func(h *container.HostConfig) {
				h.NetworkMode = container.NetworkMode(p.netName)
				h.PortBindings = network.PortMap{port: {{HostIP: netip.MustParseAddr("127.0.0.1"), HostPort: hostPort}}}
				init := true
				h.Init = &init // docker-init as PID 1: signals reach the server, forks are reaped
				h.RestartPolicy = container.RestartPolicy{Name: container.RestartPolicyDisabled}
			},
			EndpointSettingsModifier: func(m map[string]*network.EndpointSettings) {
				if es := m[p.netName]; es != nil {
					es.IPAMConfig = &network.EndpointIPAMConfig{IPv4Address: ip}
				}
			},
		},
		Started: false,
		Logger:  tcLogger{log: p.log},
	}
	t0 := time.Now()
	ctr, err := testcontainers.GenericContainer(ctx, req)
	if err != nil {
		// A container created before the error (files failed to copy) is
		// found by its run label at close.
		if _, ierr := p.cli.ImageInspect(ctx, img); ierr != nil {
			return nil, fmt.Errorf("create container %s: image %s is not present locally and could not be pulled "+
				"(without a registry: `make images` builds locklab/* images from Debian packages, used when "+
				"cluster.%s.image is not set): %w", name, img, spec.backend, err)
		}
		return nil, fmt.Errorf("create container %s: %w", name, err)
	}
	dc, ok := ctr.(*testcontainers.DockerContainer)
	if !ok {
		return nil, fmt.Errorf("create container %s: unexpected type %T", name, ctr)
	}
	p.log.Debug("container created", "node", n.Name, "container", name, "image", img, "ip", ip, "took", time.Since(t0))
	return &dockerContainer{tc: dc, id: dc.GetContainerID(), name: name, key: key}, nil
}

// createAll creates the nodes' containers side by side, so that starting
// them later is quick.
func (p *dockerProvider) createAll(ctx context.Context, nodes []*Node) error {
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd, err := n.cmd()
			if err == nil {
				_, err = p.ensure(ctx, n, cmd)
			}
			if err != nil {
				errs[i] = fmt.Errorf("%s: %w", n.Name, err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func isPortConflict(err error) bool {
	s := strings.ToLower(err.Error())
	return strings.Contains(s, "port is already allocated") || strings.Contains(s, "address already in use")
}

func (p *dockerProvider) launch(ctx context.Context, n *Node, cmd command) (process, error) {
	for attempt := 0; ; attempt++ {
		proc, err := p.launchOnce(ctx, n, cmd)
		if err == nil || attempt >= 3 || !isPortConflict(err) {
			return proc, err
		}
		// Another process took the node's host port since it was chosen:
		// move the node (and the proxies that dial it) to a new one.
		old := n.Addr()
		if err := p.c.rebindSimple(n); err != nil {
			return nil, err
		}
		p.log.Warn("docker: host port taken, publishing on a new one", "node", n.Name, "old", old, "new", n.Addr())
		for _, l := range p.c.AllLinks() {
			for i, up := range linkUpstreams(l) {
				if up == old {
					if err := setUpstream(l, i, n.Addr()); err != nil {
						return nil, err
					}
				}
			}
		}
	}
}

func (p *dockerProvider) launchOnce(ctx context.Context, n *Node, cmd command) (process, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	dc, err := p.ensure(ctx, n, cmd)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	img, _ := p.image(ctx, cmd.container)
	fmt.Fprintf(f, "\n=== locklab %s: start container %s (%s, %s): %s\n",
		time.Now().Format(time.RFC3339Nano), dc.name, img, p.containerAddr(n.Name, cmd.container.port), cmd)
	// Docker keeps every launch's output; follow this launch's only. A
	// second of margin for the daemon's clock: its log timestamps and ours
	// come from the same host clock, but the since filter has second
	// granularity in some engine versions.
	since := time.Now().Add(-time.Second)
	if err := dc.tc.Start(ctx); err != nil {
		fmt.Fprintf(f, "=== locklab %s: start failed: %v\n", time.Now().Format(time.RFC3339Nano), err)
		f.Close()
		return nil, fmt.Errorf("start container %s: %w", dc.name, err)
	}
	insp, err := p.cli.ContainerInspect(ctx, dc.id, client.ContainerInspectOptions{})
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("inspect container %s: %w", dc.name, err)
	}
	pr := &dockerProcess{p: p, n: n, id: dc.id, name: dc.name, doneCh: make(chan struct{})}
	if st := insp.Container.State; st != nil {
		pr.hostPid = st.Pid
		pr.started = st.StartedAt
	}
	p.watch.add(n, pr, cmd.container.port)
	go pr.run(f, since)
	return pr, nil
}

// remove removes a container and its anonymous volumes, killing it first.
func (p *dockerProvider) remove(ctx context.Context, id string) error {
	_, err := p.cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && !isNotFound(err) {
		return err
	}
	return nil
}

func isNotFound(err error) bool {
	s := strings.ToLower(err.Error())
	return strings.Contains(s, "no such container") || strings.Contains(s, "not found") ||
		strings.Contains(s, "is already in progress")
}

// close removes every container of the run (found by label, so that one
// created by a request whose answer was lost to a cancelled ctx goes too)
// and the network.
func (p *dockerProvider) close(ctx context.Context) error {
	p.mu.Lock()
	p.closing = true
	p.mu.Unlock()
	if p.watch != nil {
		p.watch.stop()
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	var errs []error
	ids := map[string]bool{}
	p.mu.Lock()
	for _, dc := range p.ctrs {
		ids[dc.id] = true
	}
	p.mu.Unlock()
	res, err := p.cli.ContainerList(ctx, client.ContainerListOptions{All: true,
		Filters: make(client.Filters).Add("label", LabelRun+"="+p.runID)})
	if err != nil {
		errs = append(errs, fmt.Errorf("list containers: %w", err))
	} else {
		for _, c := range res.Items {
			ids[c.ID] = true
		}
	}
	var (
		wg sync.WaitGroup
		mu sync.Mutex
	)
	for id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.remove(ctx, id); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("remove container %.12s: %w", id, err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if p.netID != "" {
		if _, err := p.cli.NetworkRemove(ctx, p.netID, client.NetworkRemoveOptions{}); err != nil && !isNotFound(err) {
			errs = append(errs, fmt.Errorf("remove network %s: %w", p.netName, err))
		}
	}
	p.cli.Close()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("docker: %w (`bench cleanup` removes leftovers)", err)
	}
	p.log.Info("docker: containers and network removed", "run", p.runID, "containers", len(ids))
	return nil
}

// dockerProcess is one launch of a node's container.
type dockerProcess struct {
	p       *dockerProvider
	n       *Node
	id      string
	name    string
	hostPid int
	started string
	doneCh  chan struct{}

	mu  sync.Mutex
	err error
}

// pid is the host pid of the container's init process (docker-init), 0
// when the engine does not say.
func (pr *dockerProcess) pid() int { return pr.hostPid }

func opCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}

func (pr *dockerProcess) exited() bool {
	select {
	case <-pr.doneCh:
		return true
	default:
		return false
	}
}

// ignoreStopped drops the errors of acting on a container that is not
// running (any more), as signals to a reaped process are dropped.
func (pr *dockerProcess) ignoreStopped(err error) error {
	if err == nil {
		return nil
	}
	s := strings.ToLower(err.Error())
	if pr.exited() || strings.Contains(s, "is not running") || strings.Contains(s, "not paused") || isNotFound(err) {
		return nil
	}
	return err
}

func (pr *dockerProcess) pause() error {
	ctx, cancel := opCtx()
	defer cancel()
	_, err := pr.p.cli.ContainerPause(ctx, pr.id, client.ContainerPauseOptions{})
	if err != nil && strings.Contains(strings.ToLower(err.Error()), "already paused") {
		return nil
	}
	return pr.ignoreStopped(err)
}

func (pr *dockerProcess) resume() error {
	ctx, cancel := opCtx()
	defer cancel()
	_, err := pr.p.cli.ContainerUnpause(ctx, pr.id, client.ContainerUnpauseOptions{})
	return pr.ignoreStopped(err)
}

func (pr *dockerProcess) signal(sig string) error {
	if pr.exited() {
		return nil
	}
	ctx, cancel := opCtx()
	defer cancel()
	_, err := pr.p.cli.ContainerKill(ctx, pr.id, client.ContainerKillOptions{Signal: sig})
	return pr.ignoreStopped(err)
}

// kill is docker kill. The engine kills a paused container too (SIGKILL
// needs no unfreezing), so a paused server never runs again before it dies.
func (pr *dockerProcess) kill() error { return pr.signal("SIGKILL") }

func (pr *dockerProcess) terminate() error {
	if err := pr.signal("SIGTERM"); err != nil {
		return err
	}
	// A frozen server cannot act on SIGTERM.
	return pr.resume()
}

func (pr *dockerProcess) shutdown() error { return pr.kill() }

func (pr *dockerProcess) done() <-chan struct{} { return pr.doneCh }

func (pr *dockerProcess) exitErr() error {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return pr.err
}

// run copies this launch's output to the node's log and waits for the
// container to stop; done is closed after the last line was written.
func (pr *dockerProcess) run(f *os.File, since time.Time) {
	logsDone := make(chan struct{})
	go func() {
		defer close(logsDone)
		rc, err := pr.p.cli.ContainerLogs(context.Background(), pr.id, client.ContainerLogsOptions{
			ShowStdout: true, ShowStderr: true, Follow: true,
			Since: strconv.FormatInt(since.Unix(), 10),
		})
		if err != nil {
			fmt.Fprintf(f, "=== locklab: cannot follow the container's output: %v\n", err)
			return
		}
		defer rc.Close()
		if _, err := stdcopy.StdCopy(f, f, rc); err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, context.Canceled) {
			fmt.Fprintf(f, "=== locklab: container output: %v\n", err)
		}
	}()
	code, err := pr.wait()
	// The log stream ends when the container stops; do not wait for ever
	// on an engine that keeps it open.
	select {
	case <-logsDone:
	case <-time.After(3 * time.Second):
	}
	if err == nil && code != 0 {
		err = fmt.Errorf("container exited with status %d", code)
	}
	pr.mu.Lock()
	pr.err = err
	pr.mu.Unlock()
	fmt.Fprintf(f, "=== locklab %s: exited: %v\n", time.Now().Format(time.RFC3339Nano), exitString(err))
	f.Close()
	pr.p.watch.exited(pr)
	close(pr.doneCh)
}

// linkUpstreams are the upstreams of l's proxies.
func linkUpstreams(l *Link) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.upstreams...)
}

// wait returns when the container is not running any more (or was
// removed), with its exit status.
func (pr *dockerProcess) wait() (int64, error) {
	ctx := context.Background()
	res := pr.p.cli.ContainerWait(ctx, pr.id, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	select {
	case r := <-res.Result:
		if r.Error != nil && r.Error.Message != "" {
			return r.StatusCode, errors.New(r.Error.Message)
		}
		return r.StatusCode, nil
	case err := <-res.Error:
		if isNotFound(err) {
			return -1, errors.New("container removed")
		}
		// The wait connection broke: poll instead.
		for {
			insp, ierr := pr.p.cli.ContainerInspect(ctx, pr.id, client.ContainerInspectOptions{})
			if ierr != nil {
				if isNotFound(ierr) {
					return -1, errors.New("container removed")
				}
			} else if st := insp.Container.State; st != nil && !st.Running {
				return int64(st.ExitCode), nil
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}
