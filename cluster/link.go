package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
)

// Stream selects which direction of a link's connections a toxic acts on.
// A link "A->B" carries connections opened by A to B; on each of them
// StreamUp is the data A sends to B (requests), StreamDown the data B sends
// back to A (replies, and for "redis-0-r0->redis-0" the replication stream).
type Stream string

// Stream values.
const (
	StreamBoth Stream = ""     // both directions: one toxic per direction
	StreamUp   Stream = "up"   // From -> To
	StreamDown Stream = "down" // To -> From
)

func (s Stream) toxiproxy() []string {
	switch s {
	case StreamUp:
		return []string{"upstream"}
	case StreamDown:
		return []string{"downstream"}
	default:
		return []string{"upstream", "downstream"}
	}
}

// Toxic is a toxiproxy toxic to add to a link.
type Toxic struct {
	// Name identifies the toxic on the link for RemoveToxic; "" generates
	// one. With StreamBoth the link holds two toxiproxy toxics, Name+"/up"
	// and Name+"/down", removed together by RemoveToxic(Name).
	Name string
	// Type is a toxiproxy toxic type: latency, bandwidth, timeout,
	// reset_peer, slow_close, slicer, limit_data.
	Type   string
	Stream Stream
	// Toxicity is the probability the toxic applies to a connection (decided
	// per connection by toxiproxy's unseeded global rand). 0 means 1.
	Toxicity float32
	// Attributes are the toxic's attributes in toxiproxy's units
	// (milliseconds, KB/s): {"latency": 100, "jitter": 10}.
	Attributes map[string]any
}

// Link is one named, directed link of the cluster: connections opened by From
// to To go through it (docs/faults.md: "client-3->redis-0",
// "redis-0-r0->redis-0", "zk-1->zk-0", "etcd-peers->etcd-0"). Each link is
// one embedded toxiproxy proxy, or for ZooKeeper peer links two (quorum and
// election port). Toxics added to a link apply to every proxy of it.
// Methods are safe for concurrent use.
type Link struct {
	Name string
	From string // "client-3", a node name, or "etcd-peers"
	To   string // a node name

	proxies []*toxiproxy.Proxy
	addrs   []string // the proxies' listen addresses, fixed at creation
	gateID  string
	gate    *gate
	watch   bool // proxies follow their upstreams' listening state (listen.go)
	// kernel replaces the proxies on links of provider netns
	// (kernel_link.go): Cut, Heal and IsCut act on packet rules.
	kernel *kernelLink

	mu        sync.Mutex
	upstreams []string // the proxies' upstreams
	up        []bool   // whether each proxy is listening
	seq       int
	names     map[string][]string // our toxic name -> toxiproxy toxic names
	synced    uint64              // the newest socket reading followed (listen.go)
}

// installGate adds the link's gate toxic (see gate.go) to proxy p, in both
// directions, first in the chain.
func (l *Link) installGate(p *toxiproxy.Proxy) error {
	if l.gate == nil {
		l.gateID, l.gate = newGate()
	}
	for _, dir := range []string{"upstream", "downstream"} {
		body := fmt.Sprintf(`{"name":"locklab-gate-%s","type":%q,"stream":%q,"toxicity":1,"attributes":{"gate":%q}}`,
			dir, gateToxicType, dir, l.gateID)
		if _, err := p.Toxics.AddToxicJson(strings.NewReader(body)); err != nil {
			return fmt.Errorf("link %s: gate: %w", l.Name, err)
		}
	}
	return nil
}

// Proxy is the link's (first) toxiproxy proxy; for ZooKeeper peer links the
// one to the quorum port. See Proxies.
func (l *Link) Proxy() *toxiproxy.Proxy { return l.proxies[0] }

// Proxies are every toxiproxy proxy of the link.
func (l *Link) Proxies() []*toxiproxy.Proxy { return append([]*toxiproxy.Proxy(nil), l.proxies...) }

// Addr is the address the link's (first) proxy listens on.
func (l *Link) Addr() string { return l.addrs[0] }

// AddToxic adds t to every proxy of the link and returns its name.
func (l *Link) AddToxic(t Toxic) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.addToxic(t)
}

func (l *Link) addToxic(t Toxic) (string, error) {
	if l.kernel != nil {
		return "", errNoProxy(l, "toxic "+t.Type)
	}
	if t.Name == "" {
		l.seq++
		t.Name = fmt.Sprintf("%s-%d", t.Type, l.seq)
	}
	if _, ok := l.names[t.Name]; ok {
		return "", fmt.Errorf("link %s: toxic %q exists", l.Name, t.Name)
	}
	if t.Toxicity == 0 {
		t.Toxicity = 1
	}
	attrs := t.Attributes
	if attrs == nil {
		attrs = map[string]any{}
	}
	dirs := t.Stream.toxiproxy()
	var added []string
	for _, dir := range dirs {
		name := t.Name
		if len(dirs) > 1 {
			name += map[string]string{"upstream": "/up", "downstream": "/down"}[dir]
		}
		body, err := json.Marshal(map[string]any{
			"name": name, "type": t.Type, "stream": dir,
			"toxicity": t.Toxicity, "attributes": attrs,
		})
		if err != nil {
			return "", err
		}
		for _, p := range l.proxies {
			if _, err := p.Toxics.AddToxicJson(strings.NewReader(string(body))); err != nil {
				l.removeNames(context.Background(), added)
				return "", fmt.Errorf("link %s: add toxic %s: %w", l.Name, name, err)
			}
		}
		added = append(added, name)
	}
	if l.names == nil {
		l.names = map[string][]string{}
	}
	l.names[t.Name] = added
	return t.Name, nil
}

// RemoveToxic removes the toxic called name (both directions of a StreamBoth
// toxic).
func (l *Link) RemoveToxic(ctx context.Context, name string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.removeToxic(ctx, name)
}

func (l *Link) removeToxic(ctx context.Context, name string) error {
	names, ok := l.names[name]
	if !ok {
		return fmt.Errorf("link %s: no toxic %q", l.Name, name)
	}
	delete(l.names, name)
	return l.removeNames(ctx, names)
}

func (l *Link) removeNames(ctx context.Context, names []string) error {
	var errs []error
	for _, n := range names {
		for _, p := range l.proxies {
			if err := p.Toxics.RemoveToxic(ctx, n); err != nil {
				errs = append(errs, fmt.Errorf("link %s: remove toxic %s: %w", l.Name, n, err))
			}
		}
	}
	return errors.Join(errs...)
}

// Toxics are the names of the toxics added to the link.
func (l *Link) Toxics() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for n := range l.names {
		out = append(out, n)
	}
	return out
}

// ResetToxics removes every toxic added to the link and heals a Cut.
// (Do not call the proxies' own ResetToxics: it would also remove the gate
// that Cut works with.)
func (l *Link) ResetToxics(ctx context.Context) error {
	if l.kernel != nil {
		return l.kernel.heal(ctx)
	}
	l.gate.set(false)
	l.mu.Lock()
	defer l.mu.Unlock()
	var errs []error
	for name := range l.names {
		if err := l.removeToxic(ctx, name); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func ms(d time.Duration) int64 { return d.Milliseconds() }

// Latency delays the data on s by latency ± jitter (uniform). With
// StreamBoth each direction is delayed, so a request/reply round trip takes
// 2×latency longer; use StreamDown (replies, replication stream) or StreamUp
// to add latency once per round trip.
func (l *Link) Latency(latency, jitter time.Duration, s Stream) (string, error) {
	return l.AddToxic(Toxic{Type: "latency", Stream: s,
		Attributes: map[string]any{"latency": ms(latency), "jitter": ms(jitter)}})
}

// Bandwidth limits the data rate on s to rateKBps kilobytes per second.
func (l *Link) Bandwidth(rateKBps int64, s Stream) (string, error) {
	return l.AddToxic(Toxic{Type: "bandwidth", Stream: s,
		Attributes: map[string]any{"rate": rateKBps}})
}

// Timeout drops all data on s and closes the connection after d; d = 0
// drops data and never closes (a blackhole). Removing a timeout toxic closes
// the connections it saw, because their byte streams lost data.
func (l *Link) Timeout(d time.Duration, s Stream) (string, error) {
	return l.AddToxic(Toxic{Type: "timeout", Stream: s,
		Attributes: map[string]any{"timeout": ms(d)}})
}

// Blackhole drops all data on s without closing connections: Timeout(0, s).
func (l *Link) Blackhole(s Stream) (string, error) { return l.Timeout(0, s) }

// ResetPeer makes each connection be reset (TCP RST) d after data next
// arrives on s.
func (l *Link) ResetPeer(d time.Duration, s Stream) (string, error) {
	return l.AddToxic(Toxic{Type: "reset_peer", Stream: s,
		Attributes: map[string]any{"timeout": ms(d)}})
}

// Cut partitions the link until Heal: no byte passes in either direction on
// live or new connections.
//
// What it imitates: packets between From and To are lost while the network
// is partitioned, and TCP retransmits them. So the data is held, not
// dropped: a sender's writes succeed until the buffers fill (16 MB per
// connection and direction), then block; a reader waits; nobody sees a
// reset or EOF caused by the cut itself. An endpoint that gives up (its
// read timeout, ZooKeeper's syncLimit, etcd's election timeout) closes its
// side, and the peer learns of it only after Heal — as with real TCP. Heal
// delivers the held data at once, in order, as retransmission after a
// partition does, so a request sent during the cut can still be executed
// after the client gave up on it (a real hazard for locks). New connections
// are accepted by the proxy (it is a listening socket: the kernel completes
// the handshake) but no byte passes, so a client sees a read timeout where a
// real partition would give a connect timeout; refusing them instead
// (connection refused) would tell the client at once that the peer is
// unreachable, which no partition does. For the other kind of failure —
// data lost, connections broken — use Blackhole or Timeout, or Reset.
//
// Cut and Heal act at once and take no toxiproxy lock (see gate.go).
func (l *Link) Cut() error {
	if l.kernel != nil {
		return l.CutWays(true, true)
	}
	l.gate.set(true)
	return nil
}

// Heal ends a Cut and delivers the data held during it. Healing a link that
// is not cut does nothing. The error is always nil today; ctx is for
// providers where healing is a remote call.
func (l *Link) Heal(ctx context.Context) error {
	if l.kernel != nil {
		return l.kernel.heal(ctx)
	}
	l.gate.set(false)
	return nil
}

// IsCut reports whether the link is cut.
func (l *Link) IsCut() bool {
	if l.kernel != nil {
		return l.kernel.isCut()
	}
	cut, _ := l.gate.state()
	return cut
}

// Reset closes every live connection on the link (both ends see the
// connection closed) and accepts new ones again at once on the same address;
// toxics stay. During the instant between the two, a new connection is
// refused.
func (l *Link) Reset() error {
	if l.kernel != nil {
		return errNoProxy(l, "reset")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var errs []error
	for i, p := range l.proxies {
		if !l.up[i] {
			continue // not listening: no connections
		}
		p.Stop()
		if err := p.Start(); err != nil {
			errs = append(errs, fmt.Errorf("link %s: restart proxy: %w", l.Name, err))
		}
	}
	return errors.Join(errs...)
}

// close stops the link's proxies for good.
func (l *Link) close() {
	if l.gate != nil {
		l.gate.close(l.gateID)
	}
	for _, p := range l.proxies {
		p.Stop()
	}
}
