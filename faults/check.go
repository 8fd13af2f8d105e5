package faults

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/locklab/locklab/cluster"
)

// Check reports, before anything starts, the faults of fs that a cluster
// started from spec cannot perform, one *FaultError per fault (joined with
// errors.Join; capability errors wrap ErrUnsupported). processPerClient says
// whether clients run as their own processes (pause-client needs it).
//
// Node names include the leader selectors zk-leader and etcd-leader (the
// member leading when the fault starts, see Run); a fault naming one must
// be possible whichever member leads.
//
// Beyond names that do not exist, it rejects:
//   - a link that does not exist: "etcd-0->etcd-1" where etcd has no pair
//     links (peer traffic is proxied per destination only there,
//     "etcd-peers->etcd-1"), "redis-0->redis-0-r0" without sentinels (the
//     replication link is "redis-0-r0->redis-0"; with sentinels, whose
//     failovers change roles, every server of a master group has a link to
//     every other one), "redis-0->sentinel-0" (servers never dial
//     sentinels: "sentinel-0->redis-0"), server-to-server links with
//     provider external;
//   - a partition that separates etcd members in one direction only
//     (without pair links: a group holding two or more etcd members while
//     another group holds any, since their shared incoming proxy cannot be
//     cut for one sender), or that cuts no link at all;
//   - pause, kill, restart, failover and clock-jump with provider external;
//   - failover of a node that is not a Redis primary, or without a replica
//     of it or without sentinels; clock-jump on a node that is not Redis;
//   - pause-client without processPerClient, or of a client that does not
//     exist.
func Check(spec cluster.Spec, processPerClient bool, fs []Fault) error {
	t := newTopology(spec, processPerClient)
	var errs []error
	for i, f := range fs {
		typ, ok := Lookup(f.Type)
		var err error
		if !ok {
			err = fmt.Errorf("unknown fault type %q (known: %s): %w", f.Type, strings.Join(Types(), ", "), ErrUnsupported)
		} else {
			err = typ.action.check(t, f)
			if err == nil {
				err = checkNetns(t, typ, f)
			}
		}
		if err == nil && f.At < 0 {
			err = fmt.Errorf("at %v is before the workload starts", f.At)
		}
		if err == nil && f.For < 0 {
			err = fmt.Errorf("for %v is negative", f.For)
		}
		if err != nil {
			errs = append(errs, &FaultError{Index: i, Type: f.Type, Err: err})
		}
	}
	return errors.Join(errs...)
}

func unsupported(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), ErrUnsupported)
}

// checkLinkFault checks the target of latency, bandwidth and reset: link
// or node.
func checkLinkFault(t *topology, f Fault) error {
	switch {
	case f.Link == "" && f.Node == "":
		return errors.New("needs link: A->B or node: NAME")
	case f.Link != "" && f.Node != "":
		return errors.New("set link or node, not both")
	case f.Node != "":
		if _, err := t.known(f.Node); err != nil {
			return err
		}
		if len(t.match(f.Node)) == 0 {
			return unsupported("%s has no proxied link", f.Node)
		}
		return nil
	}
	a, b, ok := strings.Cut(f.Link, "->")
	a, b = strings.TrimSpace(a), strings.TrimSpace(b)
	if !ok || a == "" || b == "" || strings.Contains(b, "->") {
		return fmt.Errorf("%q is not a link: write A->B, e.g. clients->redis-0", f.Link)
	}
	ka, kb := "", ""
	if a != cluster.EtcdPeers && a != cluster.RedisPeers {
		var err error
		if ka, err = t.known(a); err != nil {
			return err
		}
	}
	kb, err := t.known(b)
	if err != nil {
		return err
	}
	if _, sel := leaderKinds[a]; sel && a == b {
		return fmt.Errorf("%q is a link from %s to itself", f.Link, a)
	}
	if len(t.match(f.Link)) > 0 {
		return nil
	}
	switch {
	case kb == kindClient:
		return unsupported("no link %s: links from a client are written client->server (connections the client opens), "+
			"e.g. %s->%s", f.Link, b, a)
	case ka == cluster.KindEtcd && kb == cluster.KindEtcd:
		return unsupported("no link %s: with provider %s etcd peer links are proxied per destination only, since all members "+
			"must agree on each member's peer URL; use link: %s->%s (connections from every other member)", f.Link, t.Provider, cluster.EtcdPeers, b)
	case t.Provider == cluster.ProviderExternal:
		return unsupported("no link %s: with provider external only client links exist", f.Link)
	case kb == cluster.KindSentinel && ka != cluster.KindSentinel:
		return unsupported("no link %s: Redis servers never dial sentinels; Sentinel's connections are %s->%s", f.Link, b, a)
	case ka == cluster.KindRedis && kb == cluster.KindReplica:
		return unsupported("no link %s: the replication link is %s->%s (connections the replica opens; the "+
			"primary's stream flows back on them); links between the servers of a master group in both "+
			"directions exist with sentinels only", f.Link, b, a)
	case a == cluster.RedisPeers:
		return unsupported("no link %s: redis-peers links exist to the nodes of a Redis topology with replicas or sentinels", f.Link)
	}
	return unsupported("no link %s (links run from a client to a server, from a replica to its primary, from a "+
		"sentinel to a Redis server or another sentinel, between ZooKeeper members, and between etcd members)", f.Link)
}

// checkServer checks the node of pause, kill, restart, failover and
// clock-jump: a server the provider can act on, of one of the kinds its
// row of the fault table accepts.
func checkServer(t *topology, f Fault) error {
	typ, _ := Lookup(f.Type)
	kinds := typ.Kinds
	if f.Node == "" {
		return errors.New("needs node: NAME")
	}
	if t.Provider == cluster.ProviderExternal {
		return unsupported("provider external allows only client-side faults (latency, bandwidth, partition "+
			"and reset on client links; pause-client), not %s", f.Type)
	}
	k, err := t.known(f.Node)
	if err != nil {
		return err
	}
	for _, want := range kinds {
		if k == want {
			return nil
		}
	}
	return fmt.Errorf("%s is a %s node; %s acts on %s nodes", f.Node, k, f.Type, strings.Join(kinds, " or "))
}

// partitionGroups returns the groups of a partition fault (isolate
// expanded) after checking them. A fault naming a leader selector is
// checked for every member that may lead, and its groups are returned as
// written.
func partitionGroups(t *topology, f Fault) ([][]string, error) {
	switch {
	case f.Isolate == "" && f.Groups == nil:
		return nil, errors.New("needs groups: [[A, B], [C]] or isolate: NAME")
	case f.Isolate != "" && f.Groups != nil:
		return nil, errors.New("set groups or isolate, not both")
	}
	sels := leaderSelectors(f)
	if len(sels) == 0 {
		return resolvedGroups(t, f)
	}
	seen := map[string]int{}
	for gi, g := range f.Groups {
		for _, m := range g {
			if _, err := t.known(m); err != nil {
				return nil, err
			}
			if prev, dup := seen[m]; dup {
				return nil, fmt.Errorf("%s is in groups %d and %d", m, prev, gi)
			}
			seen[m] = gi
		}
	}
	if f.Isolate != "" {
		if _, err := t.known(f.Isolate); err != nil {
			return nil, err
		}
	}
	for _, a := range t.leaderChoices(sels) {
		if _, err := resolvedGroups(t, withLeaders(f, a, nil)); err != nil {
			return nil, fmt.Errorf("when %s: %w", a.leads(), err)
		}
	}
	if f.Isolate != "" {
		return t.isolateGroups(f.Isolate), nil
	}
	return f.Groups, nil
}

// resolvedGroups is partitionGroups for a fault without leader selectors.
func resolvedGroups(t *topology, f Fault) ([][]string, error) {
	groups := f.Groups
	if f.Isolate != "" {
		if _, err := t.known(f.Isolate); err != nil {
			return nil, err
		}
		groups = t.isolateGroups(f.Isolate)
	}
	if len(groups) < 2 {
		return nil, fmt.Errorf("needs at least two groups (got %d)", len(groups))
	}
	groupOf := map[string]int{}
	for gi, g := range groups {
		if len(g) == 0 {
			return nil, fmt.Errorf("group %d is empty", gi)
		}
		for _, m := range g {
			if _, err := t.known(m); err != nil {
				return nil, err
			}
			if prev, dup := groupOf[m]; dup {
				return nil, fmt.Errorf("%s is in groups %d and %d", m, prev, gi)
			}
			groupOf[m] = gi
		}
	}
	if gc, ok := groupOf[cluster.Clients]; ok {
		for m, gi := range groupOf {
			if k, _ := t.kind(m); k == kindClient && gi != gc {
				return nil, fmt.Errorf("%s and clients are in different groups, but clients includes every client", m)
			}
		}
	}
	etcdIn := map[int]int{}
	for m, gi := range groupOf {
		if t.Kind(m) == cluster.KindEtcd {
			etcdIn[gi]++
		}
	}
	if msg := t.EtcdSplit(etcdIn); msg != "" {
		return nil, unsupported("%s", msg)
	}
	cuts := 0
	for _, l := range t.Links {
		gf, okf := groupOfEnd(groupOf, l.From)
		gt, okt := groupOfEnd(groupOf, l.To)
		if l.From == cluster.EtcdPeers {
			if okt && len(etcdIn) > 1 {
				cuts++
			}
			continue
		}
		if l.From == cluster.RedisPeers {
			continue // cut only along with the pair links into the same node
		}
		if okf && okt && gf != gt {
			cuts++
		}
	}
	if cuts == 0 {
		return nil, fmt.Errorf("no proxied link runs between the groups %s, so the partition cuts nothing", groupsString(groups))
	}
	return groups, nil
}

func groupOfEnd(groupOf map[string]int, end string) (int, bool) {
	for m, gi := range groupOf {
		if matchEnd(m, end) {
			return gi, true
		}
	}
	return 0, false
}

// checkClient checks pause-client's client.
func checkClient(t *topology, f Fault) error {
	if !t.processPerClient {
		return unsupported("pause-client stops a client's process, so it needs workload.process_per_client: true")
	}
	if f.Client == Holder {
		return nil
	}
	i, err := strconv.Atoi(f.Client)
	if err != nil || i < 0 {
		return fmt.Errorf("client %q: want holder or a client index", f.Client)
	}
	if i >= t.Clients {
		return fmt.Errorf("no client %d (clients are 0..%d)", i, t.Clients-1)
	}
	return nil
}
