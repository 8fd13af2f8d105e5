package cluster

// The backend table: servers written once, in a package of their own
// below cluster/ (cluster/backends/...), and registered here. Generic code
// (the plan, Start, Endpoints, scenario sections, fault targets, test
// environments, `bench list`) iterates the table instead of naming them.

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
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/locklab/locklab/locks"
)

// TableBackend is one row of the backend table: everything locklab knows
// about one server kind. Redis predates the table and is not in it yet.
type TableBackend struct {
	// Name is the backend's name everywhere: the scenario section
	// cluster.<Name>, the list cluster.external.<Name>, the locks.Backend
	// value of its locks, the key of Info.Versions and Endpoints.Table.
	Name string
	// Doc is one line for the scenario reference (the section's doc).
	Doc string
	// Fields are the section's fields (cluster.<Name>.<field>).
	Fields []TableField
	// Check validates a section beyond each field's own bounds; it
	// returns the offending field's name and a message, or "", "".
	Check func(Settings) (field, msg string)
	// Kinds are the node kinds of its plan with the pattern of their names
	// for messages ("postgres-N"), in plan order.
	Kinds []TableKind
	// Providers are the providers that start its servers (ProviderLocal,
	// ProviderNetns, ProviderDocker); ProviderExternal is always accepted
	// (cluster.external.<Name>).
	Providers []string
	// Binaries are the programs the local provider runs (absolute paths or
	// names on PATH): what `make deps` installs and tests require.
	Binaries []string
	// Files are other files the local provider needs (ZooKeeper's jar).
	Files []string
	// Packages are the Debian packages holding Binaries and Files.
	Packages []string
	// ClientPort is the port its servers serve clients on by default
	// (etcd 2379), for examples of cluster.external.<Name>.
	ClientPort int
	// Leader, when set, is a selector (a node name in faults: "nats-leader")
	// standing for the node of its first kind whose Role says "leader" when
	// the fault starts.
	Leader string
	// Sessions says its locks are session locks, with no lease: a lock
	// lasts until the server notices its client's session is gone (TCP
	// keepalives, a killed client), so a paused holder keeps it.
	Sessions bool
	// Faults are the server fault types that act on its nodes (pause,
	// kill, restart, failover). Client-link faults act on every backend.
	Faults []string
	// NoClock, when set, says why clock faults cannot act on its nodes,
	// for the message refusing one.
	NoClock string
	// ReadClock, for a backend whose Faults hold clock faults, reads a
	// node's own wall clock, the evidence a clock fault bit; ClockSource
	// says what it asks ("the log timestamp of srvr").
	ReadClock   func(ctx context.Context, n *Node) (ClockReading, error)
	ClockSource string
	// Fallback, when set, is the source of a link into each node
	// (Fallback->node) for peer connections whose sender the provider's
	// demultiplexer cannot name; planned, with more than one node, where
	// peer links are proxies (every provider but netns). etcd-peers.
	Fallback string
	// DefaultImage is the official image provider docker runs when it is
	// present and the section names none; "": the newest locklab/<Name>.
	DefaultImage string
	// SyncsEveryWrite says whether its servers fsync every write before
	// they answer, with these settings: a power-cut's lossy filesystem
	// then goes without the kernel's writeback cache. nil: never.
	SyncsEveryWrite func(Settings) bool
	// Ping is a raw round trip that shows a server answers, for the
	// evidence of link faults (latency, drop); nil: none. NoPeerPing:
	// only on client links (its peer ports speak another protocol).
	Ping       *TablePing
	NoPeerPing bool
	// Plan returns its nodes in start order (Name and Kind) and its
	// proxied peer links for a section's settings.
	Plan func(Settings) ([]PlanNode, []PlanLink)
	// Build configures the nodes of its plan (Build.Nodes) for a start:
	// address, command, readiness probe and role per node, and returns how
	// to start them.
	Build func(b *Build) (Started, error)
}

// ClockReading is a server's own wall clock as one query read it: T, the
// server's clock, at some moment between Sent and Received (the
// harness's clock around the query), give or take Unsure beyond that (a
// timestamp's resolution).
type ClockReading struct {
	T, Sent, Received time.Time
	Unsure            time.Duration
}

// TableKind is one node kind of a table backend.
type TableKind struct {
	Kind    string // "postgres", "postgres-replica"
	Pattern string // "postgres-N", "postgres-N-rM"
}

// TablePing is a raw request and the check of the reply's first bytes.
type TablePing struct {
	Request []byte            // sent on a new connection; nil: the server speaks first
	Reply   int               // how many bytes of the reply to read
	OK      func([]byte) bool // whether they are the server's answer
}

// TableField is one field of a table backend's scenario section.
type TableField struct {
	Name    string
	Kind    string // "int", "bool" or "string"
	Default any    // the value when the field is absent (int, bool, string)
	Min     *int   // the least value of an int field
	Allowed []string
	Example string
	Doc     string
}

// Settings are a table backend's section as parsed: each field's value
// (int, bool or string) by name. A field absent from Settings has its
// default.
type Settings map[string]any

// BoolOr is the bool field name of s, def when absent (for a row's funcs
// that cannot reach the row's defaults).
func (s Settings) BoolOr(name string, def bool) bool {
	if v, ok := s[name].(bool); ok {
		return v
	}
	return def
}

// IntOr is the int field name of s, def when absent.
func (s Settings) IntOr(name string, def int) int {
	if v, ok := s[name].(int); ok {
		return v
	}
	return def
}

// Members is the plan of a backend whose nodes are alike members
// prefix0 .. prefix<n-1> of kind (at least one), with a link for every
// directed pair, grouped by destination (zk-1->zk-0, zk-2->zk-0, ...).
func Members(prefix, kind string, n int) ([]PlanNode, []PlanLink) {
	var nodes []PlanNode
	for i := range max(n, 1) {
		nodes = append(nodes, PlanNode{Name: prefix + strconv.Itoa(i), Kind: kind})
	}
	var links []PlanLink
	for _, to := range nodes {
		for _, from := range nodes {
			if from != to {
				links = append(links, PlanLink{From: from.Name, To: to.Name})
			}
		}
	}
	return nodes, links
}

// Started is what a table backend's Build returns.
type Started struct {
	// Start launches its nodes (Build.StartNodes) in its order and
	// returns once they all serve.
	Start func(ctx context.Context) error
	// Version asks a started server its version; "" when it does not say.
	Version func(ctx context.Context) string
	// Failover, when the backend has one, promotes a replica of group (a
	// primary's node name): it kills the group's current primary, makes a
	// replica the primary and returns what it did.
	Failover func(ctx context.Context, group string) (string, error)
	// Close releases what Build made outside the node data dirs; called
	// by Cluster.Close after every server ended.
	Close func() error
}

var table = struct {
	sync.RWMutex
	rows map[string]TableBackend
}{rows: map[string]TableBackend{}}

// RegisterBackend adds a row to the backend table; backend packages call
// it from init. It panics on a duplicate or incomplete row.
func RegisterBackend(b TableBackend) {
	if b.Name == BackendRedis {
		panic("cluster: duplicate backend " + b.Name)
	}
	registerRow(b)
}

// registerRow adds a row to the backend table.
func registerRow(b TableBackend) {
	table.Lock()
	defer table.Unlock()
	if b.Name == "" || b.Plan == nil || b.Build == nil || len(b.Kinds) == 0 {
		panic("cluster: RegisterBackend needs a name, kinds, a plan and a build")
	}
	if _, dup := table.rows[b.Name]; dup {
		panic("cluster: duplicate backend " + b.Name)
	}
	if slices.Contains(b.Providers, ProviderDocker) && !slices.ContainsFunc(b.Fields, func(f TableField) bool { return f.Name == ImageField }) {
		b.Fields = append(slices.Clone(b.Fields), TableField{Name: ImageField, Kind: "string", Default: "",
			Example: "locklab/" + b.Name + ":latest",
			Doc:     "provider docker only: the image of its servers (default: the newest locklab/" + b.Name + " tag `make images` built)"})
	}
	table.rows[b.Name] = b
	LocalImageRepos[b.Name] = "locklab/" + b.Name
	locks.RegisterTableBackend(locks.Backend(b.Name))
}

// ImageField is the field every table backend that runs under provider
// docker gains (cluster.<name>.image): the image of its servers, "" for
// the newest locklab/<name> image built locally.
const ImageField = "image"

// PingOf returns the raw round trip that shows a server of kind answers,
// for the evidence of link faults: a table backend's Ping, or PING for
// Redis and Sentinel; nil for a kind without one.
func PingOf(kind string) *TablePing {
	switch kind {
	case KindRedis, KindReplica, KindSentinel:
		return redisRawPing
	}
	if b, ok := BackendOfKind(kind); ok {
		return b.Ping
	}
	return nil
}

// replyIs is a TablePing.OK for a reply that starts with want (Reply
// len(want) bytes).
func replyIs(want string) func([]byte) bool {
	return func(b []byte) bool { return string(b) == want }
}

// Backends returns every table backend, sorted by name.
func Backends() []TableBackend {
	table.RLock()
	defer table.RUnlock()
	out := make([]TableBackend, 0, len(table.rows))
	for _, b := range table.rows {
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// LookupBackend returns the table backend called name.
func LookupBackend(name string) (TableBackend, bool) {
	table.RLock()
	defer table.RUnlock()
	b, ok := table.rows[name]
	return b, ok
}

// BackendOfKind returns the table backend whose nodes are of kind.
func BackendOfKind(kind string) (TableBackend, bool) {
	for _, b := range Backends() {
		if slices.ContainsFunc(b.Kinds, func(k TableKind) bool { return k.Kind == kind }) {
			return b, true
		}
	}
	return TableBackend{}, false
}

// KindsActedOnBy returns the node kinds of table backends on which the
// server fault type acts.
func KindsActedOnBy(fault string) []string {
	var out []string
	for _, b := range Backends() {
		if slices.Contains(b.Faults, fault) {
			for _, k := range b.Kinds {
				out = append(out, k.Kind)
			}
		}
	}
	return out
}

// Runs reports whether provider starts b's servers, and an error naming
// both when it does not.
func (b TableBackend) Runs(provider string) error {
	if provider == "" {
		provider = ProviderLocal
	}
	if provider == ProviderExternal || slices.Contains(b.Providers, provider) {
		return nil
	}
	return fmt.Errorf("provider %s does not run %s yet (providers for %s: %v, external)", provider, b.Name, b.Name, b.Providers)
}

// Int returns the int field name of s (its default when absent).
func (b TableBackend) Int(s Settings, name string) int {
	v, _ := b.value(s, name).(int)
	return v
}

// String returns the string field name of s (its default when absent).
func (b TableBackend) String(s Settings, name string) string {
	v, _ := b.value(s, name).(string)
	return v
}

// Bool returns the bool field name of s (its default when absent).
func (b TableBackend) Bool(s Settings, name string) bool {
	v, _ := b.value(s, name).(bool)
	return v
}

func (b TableBackend) value(s Settings, name string) any {
	if v, ok := s[name]; ok {
		return v
	}
	for _, f := range b.Fields {
		if f.Name == name {
			return f.Default
		}
	}
	return nil
}

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
	n.cmd = func() (command, error) {
		c, err := cmd()
		if err != nil {
			return command{}, err
		}
		if c.Dir == "" {
			c.Dir = n.dataDir
		}
		out := command{path: c.Path, args: c.Args, env: c.Env, dir: c.Dir, user: c.User}
		out.container, err = b.c.prov.container(b.Backend.Name, b.Backend.String(b.Settings, ImageField), n, out)
		return out, err
	}
	n.probe = s.Probe
	n.role = s.Role
}

// Ports returns n free ports for servers.
func (b *Build) Ports(n int) ([]int, error) { return pickPorts(n) }

// Port is the port n's server uses where Ports picked picked: picked, or
// standard under provider netns, where each server has an address of its
// own and keeps its backend's standard port.
func (b *Build) Port(picked, standard int) int { return b.c.prov.port(picked, standard) }

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
	// Up is where a node really listens for its peers.
	Up func(n *Node) string
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
	demux, err := b.c.prov.frontPeers(peerFront{fallback: b.Backend.Fallback, nodes: f.Nodes,
		up: func(n *Node) []string { return []string{f.Up(n)} }, identify: f.Identify})
	if err != nil || demux == nil {
		return nil, err
	}
	out := make([]string, len(demux))
	for i, d := range demux {
		out[i] = d.addr
	}
	return out, nil
}

// SenderBySocket names the node whose process opened c (c's remote end a
// socket of this host): its index in nodes, -1 when none did or the
// socket is gone. nil entries are skipped. For PeerFront.Identify.
func SenderBySocket(nodes []*Node, c net.Conn) int { return senderBySocket(nodes, c) }

// ListenAddr is the address n's server listens on for port: 127.0.0.1
// under provider local, n's own address in its network namespace under
// netns, its container's address on the run's network under docker.
func (b *Build) ListenAddr(n *Node, port int) string { return b.c.prov.listenAddr(n, port) }

// ClientAddr is the address the harness (probes, role queries) and the
// clients dial for n's port: its ListenAddr under providers local and
// netns; under docker 127.0.0.1:port, where the container's port is
// published (the port numbers of Ports are free on the host). Peers dial
// the address PeerLink returns.
func (b *Build) ClientAddr(n *Node, port int) string { return b.c.prov.clientAddr(n, port) }

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
	addrs, err := b.c.prov.peerLink(from, to, []string{addr}, nil)
	if err != nil {
		return "", err
	}
	return addrs[0], nil
}

// PeerLinks is PeerLinkTo for a link with one proxy per address, labels
// naming them in logs (a ZooKeeper link's quorum and election ports): the
// address from dials for each.
func (b *Build) PeerLinks(from, to *Node, addrs, labels []string) ([]string, error) {
	return b.c.prov.peerLink(from, to, addrs, labels)
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
// (docker): a command may then need another form (the image's paths).
func (b *Build) InContainer() bool { return b.c.spec.Provider == ProviderDocker }

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

// Poll calls f every pollEvery until it returns nil or ctx ends.
func Poll(ctx context.Context, what string, f func(context.Context) error) error {
	return poll(ctx, what, f)
}

// DataDir is n's data dir, removed by Close.
func (n *Node) DataDir() string { return n.dataDir }

// Backend is the backend n belongs to ("redis", "postgres", ...).
func (n *Node) Backend() string { return n.backend }

// planTable adds the nodes and peer links of every table backend spec
// declares.
func (p *Plan) planTable(s Spec) {
	for _, b := range Backends() {
		set, ok := s.Backends[b.Name]
		if !ok {
			continue
		}
		nodes, links := b.Plan(set)
		for _, n := range nodes {
			n.Backend = b.Name
			p.Nodes = append(p.Nodes, n)
			if b.Fallback != "" && len(nodes) > 1 && s.Provider != ProviderNetns {
				p.Links = append(p.Links, PlanLink{b.Fallback, n.Name})
			}
		}
		p.Links = append(p.Links, links...)
	}
}

// planExternalTable adds the nodes of the table backends' external lists,
// named by the first kind's pattern: zk-0, zk-1, ...; postgres-0, ...
func (p *Plan) planExternalTable(e *ExternalSpec) {
	for _, b := range Backends() {
		p.addNumbered(strings.TrimRight(b.Kinds[0].Pattern, "N0123456789"), b.Kinds[0].Kind, b.Name, len(e.Table[b.Name]))
	}
}

// CheckBackends reports a table backend of s that s's provider does not
// run (Start refuses it too, before starting anything): for callers that
// check a run's plan before any cluster starts.
func (s Spec) CheckBackends() error { return checkTable(s.sized()) }

// checkTable refuses table backends the provider does not run.
func checkTable(s Spec) error {
	for name := range s.Backends {
		b, ok := LookupBackend(name)
		if !ok {
			return fmt.Errorf("cluster: unknown backend %q", name)
		}
		if err := b.Runs(s.Provider); err != nil {
			return fmt.Errorf("cluster: %w", err)
		}
		if b.Check != nil {
			if field, msg := b.Check(s.Backends[name]); msg != "" {
				return fmt.Errorf("cluster: %s %s: %s", name, field, msg)
			}
		}
	}
	return nil
}

// buildTable builds every table backend the spec declares.
func (c *Cluster) buildTable() ([]backend, error) {
	var out []backend
	for _, tb := range Backends() {
		set, ok := c.spec.Backends[tb.Name]
		if !ok {
			continue
		}
		nodes, err := c.addPlanned(tb.Name)
		if err != nil {
			return out, err
		}
		for _, n := range nodes {
			if err := c.prov.place(n); err != nil {
				return out, fmt.Errorf("cluster: build %s: %w", tb.Name, err)
			}
		}
		b := &Build{c: c, Backend: tb, Settings: set, Nodes: nodes, Log: c.log.With("backend", tb.Name)}
		st, err := tb.Build(b)
		if st.Close != nil {
			c.addCloser(st.Close)
		}
		if err != nil {
			return out, fmt.Errorf("cluster: build %s: %w", tb.Name, err)
		}
		if st.Failover != nil {
			c.mu.Lock()
			c.failovers[tb.Name] = st.Failover
			c.mu.Unlock()
		}
		out = append(out, backend{name: tb.Name, start: st.Start, version: st.Version})
	}
	return out, nil
}

func (c *Cluster) addCloser(f func() error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closers = append(c.closers, f)
}

// Failover promotes a replica of group (a primary's node name of a table
// backend with failover, "postgres-0"): the backend kills the group's
// current primary and promotes a replica; the detail says what it did.
func (c *Cluster) Failover(ctx context.Context, group string) (string, error) {
	n, ok := c.Node(group)
	if !ok {
		return "", fmt.Errorf("cluster: failover: no node %s", group)
	}
	c.mu.Lock()
	f := c.failovers[n.backend]
	c.mu.Unlock()
	if f == nil {
		return "", fmt.Errorf("cluster: failover of %s: %w", group, ErrUnsupported)
	}
	return f(ctx, group)
}

// KeepBackend returns s with only the table backend name's section
// (none when name is no table backend): the spec one lock runs on.
func (s Spec) KeepBackend(name string) Spec {
	out := s
	out.Backends = nil
	if set, ok := s.Backends[name]; ok {
		out.Backends = map[string]Settings{name: set}
	}
	return out
}

// TableParts names the table backends of s and their sizes, for logs
// ("postgres x2").
func (s Spec) TableParts() []string {
	var out []string
	for _, b := range Backends() {
		if _, ok := s.Backends[b.Name]; ok {
			nodes, _ := b.Plan(s.Backends[b.Name])
			out = append(out, b.Name+" x"+strconv.Itoa(len(nodes)))
		}
	}
	return out
}

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
