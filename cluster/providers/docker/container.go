package docker

// Docker provider: creating and launching a node's container.

import (
	"context"
	"fmt"
	"github.com/locklab/locklab/cluster"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
)

// containerSpec is what the docker provider needs beyond a command line.
type containerSpec struct {
	backend string // BackendRedis, ...: selects the image
	image   string // the scenario's image; "" = the backend's default
	port    int    // the client port, published on the node's Addr
	// publish are other ports of the container published on 127.0.0.1
	// at the same number (a NATS server's monitoring and route ports).
	publish []int
	// mounts are host directories bind-mounted at the same path (the
	// node's data and configuration).
	mounts []string
	// user is "uid:gid" to run the server as (docker_fabric.go: root
	// unless the command names a user).
	user string
}

type dockerContainer struct {
	tc   *testcontainers.DockerContainer
	id   string
	name string
	key  string // the command it was created for; another one recreates it
}

// containerName is the container's name: unique per run and node.
func (p *dockerProvider) containerName(n *cluster.Node) string {
	return "locklab-" + p.run + "-" + n.Name
}

func commandKey(img string, hostPort string, c cluster.Command) string {
	return img + "\x00" + hostPort + "\x00" + c.String() + "\x00" + strings.Join(c.Env, "\x00")
}

// ensure returns n's container for cmd, creating it (or recreating it when
// the command changed) without starting it.
func (p *dockerProvider) ensure(ctx context.Context, n *cluster.Node, cmd cluster.Command) (*dockerContainer, error) {
	spec, ok := cmd.Container.(*containerSpec)
	if !ok || spec == nil {
		return nil, fmt.Errorf("docker: node %s has no container spec", n.Name)
	}
	img, err := p.image(ctx, spec)
	if err != nil {
		return nil, err
	}
	_, hp, _ := net.SplitHostPort(n.Addr())
	key := commandKey(img, hp, cmd)
	p.mu.Lock()
	old := p.ctrs[n.Name]
	closing := p.closing
	p.mu.Unlock()
	if closing {
		return nil, cluster.ErrClosed
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

func (p *dockerProvider) create(ctx context.Context, n *cluster.Node, cmd cluster.Command, img, hostPort, key string) (*dockerContainer, error) {
	spec := cmd.Container.(*containerSpec) // ensure checked it
	port := network.MustParsePort(strconv.Itoa(spec.port) + "/tcp")
	exposed := []string{port.String()}
	bindings := network.PortMap{port: {{HostIP: netip.MustParseAddr("127.0.0.1"), HostPort: hostPort}}}
	for _, pp := range spec.publish {
		if pp == spec.port {
			continue
		}
		extra := network.MustParsePort(strconv.Itoa(pp) + "/tcp")
		exposed = append(exposed, extra.String())
		bindings[extra] = []network.PortBinding{{HostIP: netip.MustParseAddr("127.0.0.1"), HostPort: strconv.Itoa(pp)}}
	}
	var mounts []string
	for _, m := range spec.mounts {
		mounts = append(mounts, m+":"+m)
	}
	env := map[string]string{}
	for _, kv := range cmd.Env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	labels := map[string]string{LabelNode: n.Name}
	for k, v := range p.labels {
		labels[k] = v
	}
	ip := p.assignIP(n.Name)
	name := p.containerName(n)
	req := testcontainers.GenericContainerRequest{
		ContainerRequest: testcontainers.ContainerRequest{
			Image:          img,
			Entrypoint:     []string{cmd.Path},
			Cmd:            cmd.Args,
			Env:            env,
			Labels:         labels,
			Name:           name,
			ExposedPorts:   exposed,
			Networks:       []string{p.netName},
			NetworkAliases: map[string][]string{p.netName: {n.Name}},
			ConfigModifier: func(c *container.Config) {
				c.Hostname = n.Name
				c.WorkingDir = cmd.Dir
				c.User = spec.user
			},
			HostConfigModifier: func(h *container.HostConfig) {
				h.NetworkMode = container.NetworkMode(p.netName)
				h.PortBindings = bindings
				h.Binds = append(h.Binds, mounts...)
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

func isPortConflict(err error) bool {
	s := strings.ToLower(err.Error())
	return strings.Contains(s, "port is already allocated") || strings.Contains(s, "address already in use")
}

func (p *dockerProvider) Launch(ctx context.Context, n *cluster.Node, cmd cluster.Command) (cluster.Process, error) {
	for attempt := 0; ; attempt++ {
		proc, err := p.launchOnce(ctx, n, cmd)
		if err == nil || attempt >= 3 || !isPortConflict(err) {
			return proc, err
		}
		// Another process took the node's host port since it was chosen:
		// move the node (and the proxies that dial it) to a new one.
		old, err := p.c.MoveToFreePort(n)
		if err != nil {
			return nil, err
		}
		p.log.Warn("docker: host port taken, publishing on a new one", "node", n.Name, "old", old, "new", n.Addr())
	}
}

func (p *dockerProvider) launchOnce(ctx context.Context, n *cluster.Node, cmd cluster.Command) (cluster.Process, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	dc, err := p.ensure(ctx, n, cmd)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(n.LogPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	spec := cmd.Container.(*containerSpec) // ensure checked it
	img, _ := p.image(ctx, spec)
	fmt.Fprintf(f, "\n=== locklab %s: start container %s (%s, %s): %s\n",
		time.Now().Format(time.RFC3339Nano), dc.name, img, p.containerAddr(n.Name, spec.port), cmd)
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
	pr := &dockerProcess{p: p, n: n, id: dc.id, name: dc.name, doneCh: make(chan struct{}), killed: make(chan struct{})}
	if st := insp.Container.State; st != nil {
		pr.hostPid = st.Pid
		pr.started = st.StartedAt
	}
	p.watch.add(n, pr, spec.port)
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
