package faults

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/locklab/locklab/cluster"
)

// Faults on links: latency, bandwidth, reset and partition. Each acts on
// the embedded toxiproxy proxies of the links its selector names (link: A->B,
// or node: N for every link touching N), through cluster.Link.

// selectLinks returns the links of a latency, bandwidth or reset fault and
// the selector it used.
func selectLinks(env Env, f Fault) ([]*cluster.Link, string, error) {
	sel := f.Link
	if sel == "" {
		sel = f.Node
	}
	ls, err := env.Cluster.Links(sel)
	return ls, sel, err
}

// addToxics adds one toxic per link with add and returns a heal that removes
// them; on error the toxics already added are removed.
func addToxics(ctx context.Context, ls []*cluster.Link, add func(*cluster.Link) (string, error)) (func(context.Context) error, error) {
	type added struct {
		l    *cluster.Link
		name string
	}
	var done []added
	remove := func(ctx context.Context) error {
		var errs []error
		for _, a := range done {
			if err := a.l.RemoveToxic(ctx, a.name); err != nil {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	}
	for _, l := range ls {
		name, err := add(l)
		if err != nil {
			return nil, errors.Join(err, remove(ctx))
		}
		done = append(done, added{l, name})
	}
	return remove, nil
}

// linkNames lists links for a Detail, at most 8 of them.
func linkNames(ls []*cluster.Link) string {
	const most = 8
	var names []string
	for i, l := range ls {
		if i == most {
			names = append(names, fmt.Sprintf("and %d more", len(ls)-most))
			break
		}
		names = append(names, l.Name)
	}
	return strings.Join(names, ", ")
}

func plural(n int, one string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %ss", n, one)
}

// latencyAction adds latency to the reply direction of each link.
//
// The toxic sits on the downstream (To -> From) of each selected link: on a
// client link that is the server's replies, so each request/reply round
// trip takes latency (± jitter) longer — once, not twice as a toxic on both
// directions would give; on "redis-0-r0->redis-0" it is the primary's
// replication stream, which then reaches the replica latency late; on
// "sentinel-1->redis-0" the server's replies to Sentinel (so, past
// Sentinel's down-after of 1 s, sentinel-1 deems redis-0 down); on
// "etcd-peers->etcd-0" it is what etcd-0 sends on connections its peers
// opened (its raft stream messages). toxiproxy delays each chunk by
// latency from the time it was read, so throughput is not limited.
type latencyAction struct{}

func (latencyAction) check(t *topology, f Fault) error { return checkLinkFault(t, f) }

func (latencyAction) apply(ctx context.Context, env Env, f Fault) (effect, error) {
	return applyToxic(ctx, env, f, true, func(l *cluster.Link) (string, error) {
		return l.Latency(f.Latency, f.Jitter, cluster.StreamDown)
	}, fmt.Sprintf("latency %v±%v on the downstream (replies) of", f.Latency, f.Jitter))
}

// applyToxic adds a toxic with add to every link f selects, the round
// trips through them measured first when probe (for observe); what says
// what was done to the links, for the detail: "... of 2 links: a, b".
func applyToxic(ctx context.Context, env Env, f Fault, probe bool, add func(*cluster.Link) (string, error), what string) (effect, error) {
	ls, sel, err := selectLinks(env, f)
	if err != nil {
		return effect{target: sel}, err
	}
	var rtt map[*cluster.Link]time.Duration
	if probe {
		rtt = roundTrips(ctx, env, ls, 0)
	}
	h, err := addToxics(ctx, ls, add)
	if err != nil {
		return effect{target: sel}, err
	}
	d := fmt.Sprintf("%s %s: %s", what, plural(len(ls), "link"), linkNames(ls))
	return effect{target: sel, detail: d, heal: h, rtt: rtt, links: ls}, nil
}

// probedLinks is how many links of a fault a round-trip probe measures.
const probedLinks = 2

// noPeerPing reports whether a server of kind answers its Ping on client
// links only (a ZooKeeper peer port speaks no four-letter word).
func noPeerPing(kind string) bool {
	b, ok := cluster.BackendOfKind(kind)
	return ok && b.NoPeerPing
}

// roundTrips measures the round trip through up to probedLinks of ls
// whose server it can ask (roundTrip), waiting up to wait longer than a
// plain probe.
func roundTrips(ctx context.Context, env Env, ls []*cluster.Link, wait time.Duration) map[*cluster.Link]time.Duration {
	out := map[*cluster.Link]time.Duration{}
	for _, l := range ls {
		if len(out) == probedLinks {
			break
		}
		n, ok := env.Cluster.Node(l.To)
		if !ok || (noPeerPing(n.Kind) && !strings.HasPrefix(l.From, "client")) {
			continue
		}
		if d, answered, _, _ := fastestRoundTrip(ctx, l.Addr(), n.Kind, wait); answered {
			out[l] = d
		}
	}
	return out
}

func (latencyAction) observe(ctx context.Context, env Env, f Fault, eff effect) evidence {
	if len(eff.rtt) == 0 {
		return toxicsPresent(eff.links, "no link's round trip could be measured")
	}
	var parts []string
	rose := 0
	for _, l := range eff.links {
		before, ok := eff.rtt[l]
		if !ok {
			continue
		}
		n, _ := env.Cluster.Node(l.To)
		// The fastest of a few probes on each side: a stall of the machine
		// slows one probe, never all of them, and no probe through the toxic
		// can beat its latency. No reply while: the round trip was longer
		// than the wait, which counts when that wait already shows the rise.
		d, answered, _, err := fastestRoundTrip(ctx, l.Addr(), n.Kind, f.Latency+f.Jitter)
		if d-before >= f.Latency/2 {
			rose++
		}
		if !answered {
			parts = append(parts, fmt.Sprintf("%s: round trip %v before, no reply within %v while (%v)", l.Name,
				before.Round(time.Microsecond), d.Round(time.Millisecond), err))
			continue
		}
		parts = append(parts, fmt.Sprintf("%s: round trip %v before, %v while (fastest of %d)", l.Name,
			before.Round(time.Microsecond), d.Round(time.Microsecond), probes))
	}
	return seen(rose > 0, "%s", strings.Join(parts, "; "))
}

// toxicsPresent is the evidence of a toxic fault seen in the proxies'
// state only: every link still carries a toxic.
func toxicsPresent(ls []*cluster.Link, why string) evidence {
	with := 0
	for _, l := range ls {
		if len(l.Toxics()) > 0 {
			with++
		}
	}
	return seen(with == len(ls) && with > 0, "%s; toxics in place on %d of %s", why, with, plural(len(ls), "link"))
}

// bandwidthAction limits each selected link to rate_kbps in each direction
// (a symmetric link: a large reply and a large request are both slowed).
type bandwidthAction struct{}

func (bandwidthAction) check(t *topology, f Fault) error { return checkLinkFault(t, f) }

func (bandwidthAction) apply(ctx context.Context, env Env, f Fault) (effect, error) {
	return applyToxic(ctx, env, f, false, func(l *cluster.Link) (string, error) {
		return l.Bandwidth(int64(f.RateKbps), cluster.StreamBoth)
	}, fmt.Sprintf("%d KB/s each way on", f.RateKbps))
}

func (bandwidthAction) observe(_ context.Context, _ Env, _ Fault, eff effect) evidence {
	return toxicsPresent(eff.links, "throughput not measured")
}

// resetAction closes every live connection on the selected links
// (cluster.Link.Reset: the proxy drops them and listens again at once).
// Without for that is all: clients reconnect at once. With for, a
// reset_peer toxic on both directions also resets every connection as soon
// as data flows on it (TCP RST), until healed, so no connection survives
// for that long.
type resetAction struct{}

func (resetAction) check(t *topology, f Fault) error { return checkLinkFault(t, f) }

func (resetAction) apply(ctx context.Context, env Env, f Fault) (effect, error) {
	if env.Cluster.Traits().PacketLinks {
		return applyNetnsReset(ctx, env, f)
	}
	ls, sel, err := selectLinks(env, f)
	if err != nil {
		return effect{target: sel}, err
	}
	eff := effect{target: sel}
	if f.For > 0 {
		h, err := addToxics(ctx, ls, func(l *cluster.Link) (string, error) {
			return l.ResetPeer(0, cluster.StreamBoth)
		})
		if err != nil {
			return eff, err
		}
		eff.heal = h
	}
	// Counted before: the proxies' restart closes every live connection
	// before it returns (toxiproxy's Stop), so counting again after it
	// would only read /proc/net/tcp once more.
	live := linkConns(ls)
	var errs []error
	for _, l := range ls {
		if err := l.Reset(); err != nil {
			errs = append(errs, err)
		}
	}
	eff.detail = fmt.Sprintf("closed live connections on %s: %s", plural(len(ls), "link"), linkNames(ls))
	if f.For > 0 {
		eff.detail += "; new connections reset on first data until healed"
	}
	eff.links = ls
	eff.seen = seen(len(live) > 0 && len(errs) == 0, "%s reset", plural(len(live), "live connection"))
	if len(live) == 0 {
		eff.seen = seen(false, "no live connection to reset")
	}
	return eff, errors.Join(errs...)
}

// observe: the live connections closed at apply; with for, also a new
// connection through the first link whose server a probe can ask, which
// the reset_peer toxic must reset on its first data.
func (resetAction) observe(ctx context.Context, env Env, f Fault, eff effect) evidence {
	if eff.filters != nil {
		if f.For <= 0 {
			return eff.seen
		}
		return matched(eff.filters, "answered with a reset")
	}
	if f.For <= 0 {
		return eff.seen
	}
	for _, l := range eff.links {
		n, ok := env.Cluster.Node(l.To)
		if !ok || (noPeerPing(n.Kind) && !strings.HasPrefix(l.From, "client")) {
			continue
		}
		_, ok, err := roundTrip(ctx, l.Addr(), n.Kind, 0)
		if !ok {
			continue
		}
		if err != nil {
			return seen(true, "%s; a new connection on %s failed on its first request (%v)", eff.seen.seen, l.Name, err)
		}
		return seen(eff.seen.bit, "%s; a new connection on %s was answered (not reset)", eff.seen.seen, l.Name)
	}
	return eff.seen
}

// partitionAction cuts every proxied link between the groups
// (cluster.Cluster.Partition, then cluster.Link.Cut on each): no byte passes
// either way, and data in flight is held, not dropped, as TCP retransmission
// across a real partition does, so requests hang rather than fail. Heal
// delivers what was held. isolate: X is groups [[X], [every other server,
// clients]].
type partitionAction struct{}

func (partitionAction) check(t *topology, f Fault) error {
	_, err := partitionGroups(t, f)
	return err
}

func (partitionAction) apply(ctx context.Context, env Env, f Fault) (effect, error) {
	groups, err := partitionGroups(topologyOf(env.Cluster, env.Clients != nil), f)
	eff := effect{target: f.Isolate}
	if eff.target == "" {
		eff.target = groupsString(f.Groups)
	}
	if err != nil {
		return eff, err
	}
	ls, err := env.Cluster.Partition(groups)
	if err != nil {
		return eff, err
	}
	st := env.state()
	var cut []*cluster.Link
	eff.heal = func(ctx context.Context) error {
		var errs []error
		for _, l := range cut {
			if err := st.release(cutKey{l}, func() error { return l.Heal(ctx) }); err != nil {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	}
	group := func(end string) int {
		for gi, g := range groups {
			if slices.ContainsFunc(g, func(m string) bool { return matchEnd(m, end) }) {
				return gi
			}
		}
		return -1
	}
	for _, l := range ls {
		fwd, back := cutWays(f.Direction, l, group)
		if !fwd && !back {
			continue
		}
		if err := st.acquire(cutKey{l}, func() error { return l.CutWays(fwd, back) }); err != nil {
			return eff, err
		}
		cut = append(cut, l)
	}
	ls = cut
	eff.detail = fmt.Sprintf("cut %s between %s: %s", plural(len(ls), "link"), groupsString(groups), linkNames(ls))
	if f.Direction == DirectionOut || f.Direction == DirectionIn {
		eff.detail = fmt.Sprintf("cut one way (%s of the first group) %s between %s: %s", f.Direction,
			plural(len(ls), "link"), groupsString(groups), linkNames(ls))
	}
	eff.links = ls
	if _, kernel := netnsCutEvidence(ls); kernel {
		eff.late = func() evidence { return partitionAction{}.observe(context.Background(), env, f, eff) }
	}
	return eff, nil
}

// observe: every cut link's proxy still holds its traffic (its gate is
// closed). Whether a leader changed and what the holder did are added by
// Run.
func (partitionAction) observe(_ context.Context, _ Env, _ Fault, eff effect) evidence {
	cut := 0
	for _, l := range eff.links {
		if l.IsCut() {
			cut++
		}
	}
	if len(eff.links) == 0 {
		return seen(false, "no link between the groups to cut")
	}
	if dropped, kernel := netnsCutEvidence(eff.links); kernel {
		return seen(cut == len(eff.links) && dropped > 0, "%d of %s cut; their nftables rules dropped %d packets",
			cut, plural(len(eff.links), "link"), dropped)
	}
	return seen(cut == len(eff.links), "%d of %s cut (proxy holds their traffic)", cut, plural(len(eff.links), "link"))
}

// elapsed is the time since t0, rounded for Details.
func elapsed(t0 time.Time) time.Duration { return time.Since(t0).Round(time.Millisecond) }
