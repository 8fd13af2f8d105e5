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

// Faults as packet rules (provider netns): the links of a netns cluster
// have no proxy; loss, blackhole, reset and partitions are nftables rules
// in the namespace of each link's server end (cluster.PacketRule), and
// each says it bit when its rules' counters show packets they acted on.

// Partition directions (the direction field).
const (
	DirectionBoth = "both" // every packet between the groups (default)
	DirectionOut  = "out"  // packets leaving the first group for the others
	DirectionIn   = "in"   // packets entering the first group from the others
)

// resetWindow is how long a reset without for answers every packet of the
// link with a TCP reset under provider netns: a live connection breaks at
// its next packet (a client's next request, a keepalive, a heartbeat).
const resetWindow = time.Second

// checkNetns checks what a provider whose links are packet paths
// (cluster.Traits.PacketLinks: netns) changes for f: faults acting through
// link proxies are not possible, packet faults need one, and a packet
// fault can single out one client (client-N, holder) only when clients run
// as processes, each in a namespace of its own with its own address:
// clients in the harness's process share its address.
func checkNetns(t *topology, typ Type, f Fault) error {
	packets := t.Traits().PacketLinks
	switch {
	case typ.Proxied && packets:
		return fieldError("type", unsupported("%s acts through a proxy on the link, and links of provider %s have none "+
			"(no traffic-control qdisc either); use provider %s for %s", f.Type, t.Provider,
			providersWhere(func(t cluster.Traits) bool { return !t.PacketLinks }), f.Type))
	case typ.Netns && !packets:
		return fieldError("type", unsupported("%s drops packets in the kernel, which needs provider %s (root); provider %s "+
			"has only proxies", f.Type, providersWhere(packetLinks), t.Provider))
	case f.Type == Partition && (f.Direction == DirectionOut || f.Direction == DirectionIn) && !packets:
		return fieldError("direction", unsupported("a one-way partition (direction: %s) needs provider %s: a proxy holds both "+
			"directions of a connection or neither", f.Direction, providersWhere(packetLinks)))
	}
	if !packets || t.processPerClient {
		return nil
	}
	for _, n := range faultEnds(f) {
		if _, ok := clientIndex(n); ok || n == Waiters || (n == Holder && typ.Target != OnClient) {
			return fieldError(targetField(f), unsupported("with provider "+t.Provider+" clients in the harness's process share its address, "+
				"so a packet fault cannot single out %s: set workload.process_per_client: true (each client process then has a "+
				"namespace and address of its own), or name clients", n))
		}
	}
	return nil
}

func packetLinks(t cluster.Traits) bool { return t.PacketLinks }

// providersWhere names the registered providers with has ("local or
// docker").
func providersWhere(has func(cluster.Traits) bool) string {
	return strings.Join(cluster.ProvidersWith(has), " or ")
}

// SinglesOutClient reports whether a fault of fs acts on the links of one
// client (client-N or holder in its node, isolate, link or groups, waiters
// in its groups): under
// provider netns such a fault needs clients in processes of their own,
// each with its own address.
func SinglesOutClient(fs []Fault) bool {
	for _, f := range fs {
		for _, n := range faultEnds(f) {
			if _, ok := clientIndex(n); ok || n == Holder || n == Waiters {
				return true
			}
		}
	}
	return false
}

// faultEnds are the ends a fault's link selection names.
func faultEnds(f Fault) []string {
	names := []string{f.Node, f.Isolate}
	if a, b, ok := strings.Cut(f.Link, "->"); ok {
		names = append(names, strings.TrimSpace(a), strings.TrimSpace(b))
	}
	for _, g := range f.Groups {
		names = append(names, g...)
	}
	return names
}

// cutWays says which ways of link l a partition with direction cuts: the
// packets From->To (forward) and To->From (backward). group is the group
// of a link end (-1 when in none).
func cutWays(direction string, l *cluster.Link, group func(string) int) (forward, backward bool) {
	gf, gt := group(l.From), group(l.To)
	switch direction {
	case DirectionOut:
		return gf == 0, gt == 0
	case DirectionIn:
		return gt == 0, gf == 0
	}
	return true, true
}

// addPacketRules installs rules(l) for every link and returns a heal
// removing them; on error those already added are removed.
func addPacketRules(env Env, ls []*cluster.Link, rules func(*cluster.Link) []cluster.PacketRule) (func(context.Context) error, []cluster.PacketFilter, error) {
	var added []cluster.PacketFilter
	remove := func(context.Context) error {
		var errs []error
		for _, f := range added {
			if err := f.Remove(); err != nil {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	}
	seen := map[cluster.PacketRule]bool{}
	for _, l := range ls {
		for _, r := range rules(l) {
			r.From, r.To = sharedEnd(env.Cluster, r.From), sharedEnd(env.Cluster, r.To)
			if seen[r] {
				continue // client-0->X and client-1->X are one address pair
			}
			seen[r] = true
			f, err := env.Cluster.AddPacketRule(r)
			if err != nil {
				return nil, nil, errors.Join(err, remove(context.Background()))
			}
			added = append(added, f)
		}
	}
	return remove, added, nil
}

// sharedEnd is end as a packet rule sees it: a client without an address
// of its own (in the harness's process) is "clients" (one address).
func sharedEnd(c *cluster.Cluster, end string) string {
	if _, ok := clientIndex(end); ok && !c.OwnClientAddress(end) {
		return cluster.Clients
	}
	return end
}

// bothWays are the rules acting on the packets of link l in both
// directions.
func bothWays(l *cluster.Link, a cluster.PacketAction, percent int) []cluster.PacketRule {
	return []cluster.PacketRule{{From: l.From, To: l.To, Action: a, Percent: percent},
		{From: l.To, To: l.From, Action: a, Percent: percent}}
}

// matched is the evidence of packet rules: bit when they acted on a
// packet.
func matched(fs []cluster.PacketFilter, what string) evidence {
	var n uint64
	var errs []string
	for _, f := range fs {
		m, err := f.Matched()
		if err != nil {
			errs = append(errs, err.Error())
		}
		n += m
	}
	if len(fs) == 0 {
		return seen(false, "no packet rule installed")
	}
	s := fmt.Sprintf("%d packets %s by %s", n, what, plural(len(fs), "nftables rule"))
	if len(errs) > 0 {
		s += " (" + strings.Join(errs, "; ") + ")"
	}
	return seen(n > 0, "%s", s)
}

// lossAction drops percent of the packets of the selected links, both
// ways, at random (nftables numgen random).
type lossAction struct{}

func (lossAction) check(t *topology, f Fault) error { return checkLinkFault(t, f) }

func (lossAction) apply(_ context.Context, env Env, f Fault) (effect, error) {
	return applyPacketRules(env, f, func(l *cluster.Link) []cluster.PacketRule {
		return bothWays(l, cluster.PacketDrop, f.Percent)
	}, fmt.Sprintf("%d%% of packets dropped both ways on", f.Percent), "dropped")
}

// applyPacketRules installs the packet rules of every link f selects
// (provider netns): what says what they do, for the detail ("... on 2
// links: a, b"), counted what their counters count, for the evidence read
// at the fault's end.
func applyPacketRules(env Env, f Fault, rules func(*cluster.Link) []cluster.PacketRule, what, counted string) (effect, error) {
	ls, sel, err := selectLinks(env, f)
	if err != nil {
		return effect{target: sel}, err
	}
	h, fs, err := addPacketRules(env, ls, rules)
	if err != nil {
		return effect{target: sel}, err
	}
	return effect{target: sel, detail: fmt.Sprintf("%s %s: %s", what, plural(len(ls), "link"), linkNames(ls)),
		heal: h, links: ls, filters: fs, late: func() evidence { return matched(fs, counted) }}, nil
}

func (lossAction) observe(_ context.Context, _ Env, _ Fault, eff effect) evidence {
	return matched(eff.filters, "dropped")
}

// blackholeAction drops the connection requests (TCP SYN) From->To of the
// selected links: connections that exist carry on, new ones time out.
type blackholeAction struct{}

func (blackholeAction) check(t *topology, f Fault) error { return checkLinkFault(t, f) }

func (blackholeAction) apply(_ context.Context, env Env, f Fault) (effect, error) {
	return applyPacketRules(env, f, func(l *cluster.Link) []cluster.PacketRule {
		return []cluster.PacketRule{{From: l.From, To: l.To, Action: cluster.PacketDropSYN}}
	}, "new connections dropped (SYN) on", "connection requests dropped")
}

func (blackholeAction) observe(_ context.Context, _ Env, _ Fault, eff effect) evidence {
	return matched(eff.filters, "connection requests dropped")
}

// applyNetnsReset is reset under provider netns: every TCP packet of the
// selected links, both ways, is answered with a reset, until healed (with
// for) or for resetWindow.
func applyNetnsReset(ctx context.Context, env Env, f Fault) (effect, error) {
	eff, err := applyPacketRules(env, f, func(l *cluster.Link) []cluster.PacketRule {
		return bothWays(l, cluster.PacketReset, 0)
	}, "TCP packets answered with a reset both ways on", "answered with a reset")
	if err != nil {
		return eff, err
	}
	h, fs := eff.heal, eff.filters
	if f.For <= 0 {
		t := time.NewTimer(resetWindow)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
		eff.seen = matched(fs, "answered with a reset")
		eff.detail += fmt.Sprintf(" for %v", resetWindow)
		eff.heal, eff.late = nil, nil
		return eff, h(context.WithoutCancel(ctx))
	}
	return eff, nil
}

// netnsCutEvidence is how many packets the rules of cut links dropped,
// and whether any of them is a kernel link (provider netns).
func netnsCutEvidence(ls []*cluster.Link) (uint64, bool) {
	kernel := slices.ContainsFunc(ls, (*cluster.Link).Kernel)
	var n uint64
	for _, l := range ls {
		n += l.Dropped()
	}
	return n, kernel
}
