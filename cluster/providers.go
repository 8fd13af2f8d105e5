package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
)

// Providers other than local and external (which are the core's own) live
// in packages of their own below cluster/providers and register here: the
// core knows them only by name, through the Provider and Fabric they
// return.

// OpenProvider makes the provider of cluster c, which Start is building:
// it may read c's spec, logger and directories, and make what the
// provider needs for the whole cluster (a network, namespaces). Start
// calls it once, before any node is built.
type OpenProvider func(ctx context.Context, c *Cluster) (Provider, error)

// Traits are what a provider can do that the plan, the faults and the
// scenario checks must know before a cluster starts: they read these,
// never a provider's name. A provider registers them with its
// constructor; local's and external's are the core's own.
type Traits struct {
	// PacketLinks: servers reach each other and the clients over kernel
	// paths the provider filters packet by packet (PacketFilter), not
	// through the harness's proxies. The plan has no proxies, faults that
	// act through a proxy cannot act, packet faults can, and a fault
	// singling out one client needs each client in a process of its own.
	PacketLinks bool
	// Containers: servers run in containers of an engine, from images. A
	// node's pid is not a process the harness can read in /proc, and a
	// server's command runs inside the container (Build.InContainer).
	Containers bool
	// Clock: servers run with the clock shim preloaded, so clock faults
	// give one process its own wall clock (NoClock says why not).
	Clock   bool
	NoClock string
	// LossyDisks: a node's data dir can sit on the harness's lossy
	// filesystem, which a power cut empties of what was never fsynced
	// (NoLossyDisks says why not).
	LossyDisks   bool
	NoLossyDisks string
}

var providers struct {
	mu     sync.Mutex
	open   map[string]OpenProvider
	traits map[string]Traits
}

// The core's own providers: local starts child processes on this host;
// external starts nothing.
func init() {
	providers.traits = map[string]Traits{
		ProviderLocal: {Clock: true, LossyDisks: true},
		ProviderExternal: {
			NoClock:      "the servers' processes are out of reach: only a forward clock-jump on a Redis node is possible, emulated",
			NoLossyDisks: "the harness does not own the servers' disks",
		},
	}
}

// RegisterProvider adds provider name (a Spec.Provider value), with its
// traits, to those Start knows. Its package calls it from init; a second
// registration of a name panics.
func RegisterProvider(name string, traits Traits, open OpenProvider) {
	providers.mu.Lock()
	defer providers.mu.Unlock()
	if providers.open == nil {
		providers.open = map[string]OpenProvider{}
	}
	if _, dup := providers.traits[name]; dup {
		panic("cluster: duplicate provider " + name)
	}
	providers.open[name] = open
	providers.traits[name] = traits
}

// TraitsOf are the traits of provider ("": local); ok is false for a
// provider no package registered (its traits are then all false).
func TraitsOf(provider string) (t Traits, ok bool) {
	if provider == "" {
		provider = ProviderLocal
	}
	providers.mu.Lock()
	defer providers.mu.Unlock()
	t, ok = providers.traits[provider]
	return t, ok
}

// Traits are the traits of p's provider (TraitsOf).
func (p Plan) Traits() Traits { t, _ := TraitsOf(p.Provider); return t }

// Traits are the traits of c's provider (TraitsOf).
func (c *Cluster) Traits() Traits { t, _ := TraitsOf(c.spec.Provider); return t }

// ProvidersWith are the registered providers whose traits have, sorted:
// for messages naming where something can run.
func ProvidersWith(has func(Traits) bool) []string {
	providers.mu.Lock()
	defer providers.mu.Unlock()
	var names []string
	for name, t := range providers.traits {
		if has(t) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// openProvider makes the registered provider name for c.
func openProvider(ctx context.Context, c *Cluster, name string) (Provider, error) {
	providers.mu.Lock()
	open := providers.open[name]
	known := make([]string, 0, len(providers.open))
	for n := range providers.open {
		known = append(known, n)
	}
	providers.mu.Unlock()
	if open == nil {
		slices.Sort(known)
		return nil, fmt.Errorf("cluster: provider %q is not registered (registered: %s; import its package, cluster/providers/...): %w",
			name, strings.Join(known, ", "), ErrUnsupported)
	}
	return open(ctx, c)
}

var runIDChars = regexp.MustCompile(`[^a-z0-9-]+`)

// NewRunID is a name for what a provider makes for one cluster: base (the
// run's id) made safe for container and namespace names, plus a random
// suffix so that clusters of the same run (one per lock) and parallel
// runs never collide.
func NewRunID(base string) string {
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

// What a provider package uses of the core beyond Node's and Link's
// public methods.

// Spec is the spec the cluster was started with, defaults filled in.
func (c *Cluster) Spec() Spec { return c.spec }

// Logger is the cluster's logger.
func (c *Cluster) Logger() *slog.Logger { return c.log }

// AddLinkAt makes the link from->to with one proxy per upstream, each
// listening on the matching listens address (":0"-style for a free
// port), named by labels when there are several.
func (c *Cluster) AddLinkAt(from, to string, upstreams, listens, labels []string) (*Link, error) {
	return c.addLinkAt(from, to, upstreams, listens, labels)
}

// FrontPeersOn makes f's links and demultiplexers, listening on listen
// and naming each connection's sender sender's way; register makes each
// follow its node's listening state and be closed with the cluster. It is
// Fabric.FrontPeers for a provider whose peer links are proxies.
func (c *Cluster) FrontPeersOn(f Front, listen string, sender func([]*Node) func(net.Conn) ([]byte, int), register func(*PeerDemux)) ([]*PeerDemux, error) {
	return c.frontPeersOn(f, listen, sender, register)
}

// MoveToFreePort gives n a free port of the host as its address and
// points every link's proxy that dialed the old address at the new one:
// what a provider does when another process took n's port before its
// server bound it. It returns the old address.
func (c *Cluster) MoveToFreePort(n *Node) (string, error) {
	old := n.Addr()
	ports, err := pickPorts(1)
	if err != nil {
		return old, err
	}
	n.setAddr(hostPort(ports[0]))
	for _, l := range c.AllLinks() {
		for i, up := range l.Upstreams() {
			if up == old {
				if err := setUpstream(l, i, n.Addr()); err != nil {
					return old, err
				}
			}
		}
	}
	return old, nil
}

// StopWatching makes every link's proxies listen for good: for a provider
// that can no longer read its servers' listening state.
func (c *Cluster) StopWatching() { c.stopWatching() }

// WatchEvery is how often proxies follow their upstreams' listening
// state; a provider that reads that state itself does so as often.
const WatchEvery = watchEvery

// SenderByAddr names the sender of c by its source address: byIP maps
// each possible sender's fixed address to its index; -1 for any other.
// For a provider whose nodes have addresses of their own.
func SenderByAddr(byIP map[netip.Addr]int, c net.Conn) int { return senderByAddr(byIP, c) }

// UserCredential is the uid and gid of the system user name, for servers
// that refuse to run as root.
func UserCredential(name string) (*syscall.Credential, error) { return credentialOf(name) }

// Upstreams are the addresses l's proxies dial, one per proxy.
func (l *Link) Upstreams() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.upstreams)
}

// Addrs are the addresses l's proxies listen on, one per proxy.
func (l *Link) Addrs() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.addrs)
}

// FollowListening makes l's proxies follow their upstreams' listening
// state from now on (SyncListening), as every link's do under provider
// local.
func (l *Link) FollowListening() {
	l.mu.Lock()
	l.watch = true
	l.mu.Unlock()
}

// SyncListening starts or stops l's proxies to match their upstreams in
// ls (addresses that listen), unless l is cut or does not follow
// (FollowListening).
func (l *Link) SyncListening(ls map[string]bool) { l.syncListening(ls) }

// Listening says which of l's proxies listen, one character per proxy
// ("10": the first one).
func (l *Link) Listening() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := make([]byte, len(l.up))
	for i, up := range l.up {
		b[i] = '0'
		if up {
			b[i] = '1'
		}
	}
	return string(b)
}

// Process is n's server as its provider launched it last (nil before the
// first launch).
func (n *Node) Process() Process { return n.process() }

// LaunchLocal starts cmd for n as a child process of the harness, as
// provider local does (in its own process group, dying with the
// harness): for a provider that runs servers on this host in a context of
// its own (a namespace entered around the call).
func LaunchLocal(ctx context.Context, n *Node, cmd Command) (Process, error) {
	return localProvider{}.Launch(ctx, n, cmd)
}

// IsClient reports whether end names one client ("client-N").
func IsClient(end string) bool { return isClient(end) }
