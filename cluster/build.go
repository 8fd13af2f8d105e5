package cluster

// What a table backend's Build gets: the fabric of the provider (where a
// node listens, how clients and peers reach it, how it is launched) and
// the cluster's services (ports, links, toxics, templates), so that a row
// below cluster/backends builds its servers with this API alone.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Build is one table backend's part of a Start: its settings, the nodes
// of its plan (registered, without address or command yet) and the
// fabric the provider gives them.
type Build struct {
	c        *Cluster
	Backend  TableBackend
	Settings Settings
	Nodes    []*Node
	Log      *slog.Logger
}

// Command is a server's command line for one launch.
type Command struct {
	Path string
	Args []string
	Env  []string // added to the harness's environment
	Dir  string   // working directory; "" is the node's data dir
	// User runs the server as this system user (servers that refuse to
	// run as root: postgres, mariadbd); "" is the harness's own.
	User string
	// Container is how a provider with containers runs the command: what
	// its Fabric.Container made, which only that provider reads. Build
	// sets it; a row leaves it nil.
	Container any
}

// String is the command line, space-separated.
func (c Command) String() string {
	return strings.Join(append([]string{c.Path}, c.Args...), " ")
}

// Setup is how one node of a table backend runs and is asked.
type Setup struct {
	// Addr is the address it serves clients on (Build.ClientAddr); ""
	// keeps the one Build.Serve set.
	Addr string
	// Command is its command line, asked before every launch.
	Command func() (Command, error)
	// Probe checks once whether it serves.
	Probe func(ctx context.Context) error
	// Role asks its role ("primary", "replica", "leader", ...); nil:
	// unsupported.
	Role func(ctx context.Context) (string, error)
	// Rebind, when set, moves the node to new ports after its server
	// exited because one of its ports was taken before it bound it
	// (provider local): Build.Serve and Build.SetUpstreams again, and
	// the next Command uses them.
	Rebind func() error
}

// Configure sets how n runs and is asked.
func (b *Build) Configure(n *Node, s Setup) {
	if s.Addr != "" {
		n.setAddr(s.Addr)
	}
	n.rebind = s.Rebind
	cmd := s.Command
	n.cmd = func() (Command, error) {
		c, err := cmd()
		if err != nil {
			return Command{}, err
		}
		if c.Dir == "" {
			c.Dir = n.dataDir
		}
		c.Container, err = b.c.prov.Container(b.Backend.Name, b.Backend.String(b.Settings, ImageField), n, c)
		return c, err
	}
	n.probe = s.Probe
	n.role = s.Role
}

// Ports returns n free ports for servers.
func (b *Build) Ports(n int) ([]int, error) { return pickPorts(n) }

// Port is the port n's server uses where Ports picked picked: picked, or
// standard under provider netns, where each server has an address of its
// own and keeps its backend's standard port.
func (b *Build) Port(picked, standard int) int { return b.c.prov.Port(picked, standard) }

// Serve makes n's client address its ClientAddr for port, and its
// ListenAddr an alias of it where the two differ (provider docker), so
// that clients that learn the listen address from the servers (a member
// list) dial their own link to n; it returns the client address.
func (b *Build) Serve(n *Node, port int) string {
	b.c.serveAt(n, port)
	return n.Addr()
}

// SetUpstreams points every link into n at its new addresses after a
// rebind: client links at client, peer links' proxies at peer (one per
// address, as the links were made).
func (b *Build) SetUpstreams(n *Node, client string, peer ...string) error {
	return b.c.setUpstreamsTo(n.Name, client, peer...)
}

// RunID names the run (unique per cluster start under provider docker).
func (b *Build) RunID() string { return b.c.RunID() }

// PeerFront is what Build.FrontPeers puts in front of a backend's nodes.
type PeerFront struct {
	// Nodes are the nodes to front, in order; a pair link from->to is
	// made where the plan has one, and a link Fallback->to for senders not
	// named (the row's Fallback).
	Nodes []*Node
	// Up is where a node really listens for its peers: one address, or
	// several (a Redis Cluster node's port and its bus), one proxy per
	// address on each link, named by Labels.
	Up     func(n *Node) []string
	Labels []string
	// Alias makes each front address an alias of its node (Cluster.NodeAt
	// finds the node there; a client's Redirect maps it to its own link):
	// for servers that report their peers' addresses to clients (Sentinel,
	// a Redis Cluster's slot map).
	Alias bool
	// Identify is how provider local names the sender of a connection to
	// a node, given the nodes with a pair link to it (indexed as Nodes,
	// nil where none): what it read of c to do so (forwarded first) and
	// the sender's index, -1 when unknown. Provider docker names senders
	// by their container's address instead.
	Identify func(senders []*Node) func(c net.Conn) ([]byte, int)
}

// FrontPeers puts a demultiplexer in front of each node of f where the
// provider proxies peer links (local, docker), for backends whose members
// must agree on one address per peer (etcd's peer URLs): it tells the
// senders of connections apart and forwards each through its pair's link.
// It returns the address each node's peers dial (front[i] for f.Nodes[i]),
// nil where the kernel carries the links (netns: each node's own address).
func (b *Build) FrontPeers(f PeerFront) ([]string, error) {
	all, err := b.FrontPeerPorts(f)
	if err != nil || all == nil {
		return nil, err
	}
	out := make([]string, len(all))
	for i, a := range all {
		out[i] = a[0]
	}
	return out, nil
}

// FrontPeerPorts is FrontPeers for nodes with several peer ports
// (f.Up): for each node the address its peers dial for each port, the
// first the demultiplexer FrontPeers makes, each other one a second
// demultiplexer on 127.0.0.1 that names senders the same way and forwards
// through the links' proxy of that port (provider local only).
func (b *Build) FrontPeerPorts(f PeerFront) ([][]string, error) {
	demux, err := b.c.prov.FrontPeers(Front{Fallback: b.Backend.Fallback, Nodes: f.Nodes,
		Up: f.Up, Labels: f.Labels, Identify: f.Identify})
	if err != nil || demux == nil {
		return nil, err
	}
	out := make([][]string, len(demux))
	for i, d := range demux {
		out[i] = []string{d.addr}
		if f.Alias {
			b.c.addAlias(f.Nodes[i].Name, d.addr)
		}
		for j := 1; j < len(f.Labels); j++ {
			if b.c.Traits().Containers {
				return nil, fmt.Errorf("%s: a second peer port is fronted under provider %s only", b.Backend.Name, ProviderLocal)
			}
			t := d.through(j, f.Labels[j])
			if err := t.listen("127.0.0.1:0"); err != nil {
				return nil, fmt.Errorf("%s listener for %s: %w", f.Labels[j], f.Nodes[i].Name, err)
			}
			b.c.addPeerDemux(t)
			out[i] = append(out[i], t.addr)
		}
	}
	return out, nil
}

// Provider is the cluster's provider (ProviderLocal, ...).
func (b *Build) Provider() string { return b.c.spec.Provider }

// NodeAt returns the node at addr, its address or an alias of it
// (Cluster.NodeAt).
func (b *Build) NodeAt(addr string) (*Node, bool) { return b.c.NodeAt(addr) }

// SenderBySocket names the node whose process opened c (c's remote end a
// socket of this host): its index in nodes, -1 when none did or the
// socket is gone. nil entries are skipped. For PeerFront.Identify.
func SenderBySocket(nodes []*Node, c net.Conn) int { return senderBySocket(nodes, c) }

// ListenAddr is the address n's server listens on for port: 127.0.0.1
// under provider local, n's own address in its network namespace under
// netns, its container's address on the run's network under docker.
func (b *Build) ListenAddr(n *Node, port int) string { return b.c.prov.ListenAddr(n, port) }

// ClientAddr is the address the harness (probes, role queries) and the
// clients dial for n's port: its ListenAddr under providers local and
// netns; under docker 127.0.0.1:port, where the container's port is
// published (the port numbers of Ports are free on the host). Peers dial
// the address PeerLink returns.
func (b *Build) ClientAddr(n *Node, port int) string { return b.c.prov.ClientAddr(n, port) }

// PeerLink is the address from dials to reach to's client port: under
// provider local the proxy of the plan's link from->to, which it creates;
// under netns to's own address (the kernel carries the link); under docker
// the link's proxy on the network's gateway, dialing to's container.
func (b *Build) PeerLink(from, to *Node) (string, error) {
	return b.PeerLinkTo(from, to, to.Addr())
}

// PeerLinkTo is PeerLink to addr, a port of to other than the one it
// serves clients on (a cluster or route port).
func (b *Build) PeerLinkTo(from, to *Node, addr string) (string, error) {
	addrs, err := b.c.prov.PeerLink(from, to, []string{addr}, nil)
	if err != nil {
		return "", err
	}
	return addrs[0], nil
}

// PeerLinks is PeerLinkTo for a link with one proxy per address, labels
// naming them in logs (a ZooKeeper link's quorum and election ports): the
// address from dials for each.
func (b *Build) PeerLinks(from, to *Node, addrs, labels []string) ([]string, error) {
	return b.c.prov.PeerLink(from, to, addrs, labels)
}

// AddToxic puts a toxic of type typ (registered with toxiproxy's
// toxics.Register by the backend) with attributes attrs on proxy i of the
// link from->to, acting on what from sends: a rewrite of what the sender
// writes (ZooKeeper's announced election address). It reports false when
// that link has no such proxy (provider netns: the kernel carries links).
func (b *Build) AddToxic(from, to *Node, i int, typ string, attrs any) (bool, error) {
	l, ok := b.c.link(from.Name + "->" + to.Name)
	if !ok || i >= len(l.proxies) {
		return false, nil
	}
	body, err := json.Marshal(map[string]any{"name": "locklab-" + typ, "type": typ, "stream": "upstream",
		"toxicity": 1, "attributes": attrs})
	if err != nil {
		return false, err
	}
	if _, err := l.proxies[i].Toxics.AddToxicJson(bytes.NewReader(body)); err != nil {
		return false, fmt.Errorf("link %s: %w", l.Name, err)
	}
	return true, nil
}

// InContainer reports whether the provider runs the servers in containers
// (Traits.Containers): a command may then need another form (the image's
// paths).
func (b *Build) InContainer() bool { return b.c.Traits().Containers }

// WriteFile writes path and fsyncs it, so that a power cut of a node
// whose data dir holds it keeps it (configuration written before a
// launch).
func (b *Build) WriteFile(path string, data []byte) error { return writeDurable(path, data) }

// StartInOrder launches nodes one after another in the order given,
// without waiting for each to serve, then waits until every one serves
// (its Probe). ZooKeeper starts its highest myid first.
func (b *Build) StartInOrder(ctx context.Context, nodes []*Node) error {
	for _, n := range nodes {
		if err := n.spawn(ctx); err != nil {
			return err
		}
	}
	return each(nodes, func(n *Node) error { return n.waitServing(ctx, true) })
}

// StartNodes launches nodes side by side and returns once each serves
// (its Probe) and then, when ready is not nil, ready holds for it. The
// proxies of a node's links listen once it serves, before ready is asked
// (under docker they follow the containers' sockets every watchEvery
// otherwise: a peer dialing at once, as pg_basebackup does, could find
// its proxy not listening yet).
func (b *Build) StartNodes(ctx context.Context, nodes []*Node, ready func(context.Context, *Node) error) error {
	return startNodesThen(ctx, nodes, b.c.syncListening, ready)
}

// Each runs f for every element of xs side by side and joins their
// errors.
func Each[T any](xs []T, f func(T) error) error { return each(xs, f) }

// Poll calls f every pollEvery until it returns nil or ctx ends.
func Poll(ctx context.Context, what string, f func(context.Context) error) error {
	return poll(ctx, what, f)
}

// DataDir is n's data dir, removed by Close.
func (n *Node) DataDir() string { return n.dataDir }

// Backend is the backend n belongs to ("redis", "postgres", ...).
func (n *Node) Backend() string { return n.backend }

// Template returns a directory made once by create and kept under the
// temporary directory (locklab-templates-<uid>/<name>), so that a server's initial data dir
// (initdb, mariadb-install-db: seconds each) is copied, not rebuilt, for
// every cluster. name must say what the content depends on (the server's
// version). Concurrent callers race to create it; one wins, atomically.
func (b *Build) Template(ctx context.Context, name string, create func(ctx context.Context, dir string) error) (string, error) {
	// Not the user's cache dir: servers run as their own users, who
	// cannot enter root's home.
	cache := filepath.Join(os.TempDir(), "locklab-templates-"+strconv.Itoa(os.Getuid()))
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", err
	}
	if st, err := os.Lstat(cache); err != nil || !st.IsDir() || st.Sys().(*syscall.Stat_t).Uid != uint32(os.Getuid()) {
		return "", fmt.Errorf("template dir %s: not a directory of this user's", cache)
	}
	dst := filepath.Join(cache, name)
	if _, err := os.Stat(filepath.Join(dst, ".complete")); err == nil {
		return dst, nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dst), name+".tmp-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", err
	}
	if err := create(ctx, tmp); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(tmp, ".complete"), nil, 0o644); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, dst); err != nil {
		if _, serr := os.Stat(filepath.Join(dst, ".complete")); serr == nil {
			return dst, nil // another caller won
		}
		return "", err
	}
	return dst, nil
}

// CopyDir copies the tree src into dst (which must not exist), keeping
// modes and owners.
func CopyDir(ctx context.Context, src, dst string) error {
	out, err := exec.CommandContext(ctx, "cp", "-a", src, dst).CombinedOutput()
	if err != nil {
		return fmt.Errorf("copy %s: %w: %s", src, err, strings.TrimSpace(string(out)))
	}
	if err := os.Remove(filepath.Join(dst, ".complete")); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}

// startNodesThen launches nodes side by side, waits until each serves and
// calls served (when not nil) as each does, then waits until ready (when
// not nil) holds for each. A local server that exited because its port was
// taken meanwhile starts again on new ports (its rebind; docker publishes
// ports itself).
func startNodesThen(ctx context.Context, nodes []*Node, served func(), ready func(context.Context, *Node) error) error {
	return each(nodes, func(n *Node) error {
		if err := n.spawn(ctx); err != nil {
			return err
		}
		if err := n.waitServing(ctx, true); err != nil {
			return err
		}
		if served != nil {
			served()
		}
		if ready == nil {
			return nil
		}
		return poll(ctx, n.Name+" ready", func(ctx context.Context) error { return ready(ctx, n) })
	})
}

// poll calls f every pollEvery until it returns nil or ctx ends; the error
// then says what was awaited and f's last error.
func poll(ctx context.Context, what string, f func(context.Context) error) error {
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		err := f(pctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for %s (last: %v): %w", what, err, ctx.Err())
		case <-tick.C:
		}
	}
}
