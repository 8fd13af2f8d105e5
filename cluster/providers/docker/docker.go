package docker

import (
	"context"
	"errors"
	"fmt"
	"github.com/locklab/locklab/cluster"
	"log/slog"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

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
// Cleanup can remove what an interrupted run left behind.

// Labels on the docker provider's containers and networks.
const (
	LabelLocklab = "locklab"           // always "1"
	LabelRun     = "locklab.run"       // the cluster's run id (RunID plus a random suffix)
	LabelNode    = "locklab.node"      // the node name (containers only)
	LabelHost    = "locklab.host"      // hostname of the harness that created it
	LabelPid     = "locklab.pid"       // pid of the harness that created it
	LabelStart   = "locklab.pid.start" // the harness process's start time (with the pid, identifies it)
)

// dockerProvider is the provider of one cluster's containers.
type dockerProvider struct {
	c       *cluster.Cluster
	log     *slog.Logger
	cli     *testcontainers.DockerClient
	run     string // the LabelRun label of what it made
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
	// published are the ports of a node published on 127.0.0.1 at the
	// same number (clientAddr).
	published map[string][]int
	closing   bool

	watch *dockerWatch
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

// Available reports whether a Docker engine answers.
func Available(ctx context.Context) error {
	cli, err := dockerClient(ctx, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	return cli.Close()
}

func init() {
	cluster.RegisterProvider(cluster.ProviderDocker, cluster.Traits{
		Containers: true,
		NoClock: "the servers' images do not carry the clock shim, the preload library " +
			"that gives a process its own wall clock",
		NoLossyDisks: "the lossy filesystem is a FUSE mount served by the harness, and a container's data dir " +
			"is a directory the Docker daemon binds, which does not go through it",
	}, newDockerProvider)
}

func newDockerProvider(ctx context.Context, c *cluster.Cluster) (cluster.Provider, error) {
	t0 := time.Now()
	cli, err := dockerClient(ctx, c.Logger())
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	p := &dockerProvider{
		c: c, log: c.Logger(), cli: cli, run: cluster.NewRunID(c.Spec().RunID),
		ips: map[string]netip.Addr{}, ctrs: map[string]*dockerContainer{}, images: map[string]string{},
	}
	host, _ := os.Hostname()
	p.labels = map[string]string{
		LabelLocklab: "1", LabelRun: p.run, LabelHost: host, LabelPid: strconv.Itoa(os.Getpid()),
		LabelStart: procStart(os.Getpid()),
	}
	p.netName = "locklab-" + p.run
	if err := p.prepareImages(ctx); err != nil {
		cli.Close()
		return nil, fmt.Errorf("cluster: %w", err)
	}
	if err := p.createNetwork(ctx); err != nil {
		p.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("cluster: docker network %s: %w", p.netName, err)
	}
	p.watch = newDockerWatch(p)
	p.log.Info("docker network ready", "network", p.netName, "gateway", p.gateway, "took", time.Since(t0))
	return p, nil
}

// Close removes every container of the run (found by label, so that one
// created by a request whose answer was lost to a cancelled ctx goes too)
// and the network.
func (p *dockerProvider) Close(ctx context.Context) error {
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
		Filters: make(client.Filters).Add("label", LabelRun+"="+p.run)})
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
	p.log.Info("docker: containers and network removed", "run", p.run, "containers", len(ids))
	return nil
}
