package faults

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/locklab/locklab/cluster"
)

// Check reports, before anything starts, the faults of fs that a cluster
// built from plan (cluster.PlanOf) cannot perform: one *FieldError per
// problem, joined with errors.Join (capability errors wrap
// ErrUnsupported). processPerClient says whether clients run as their own
// processes (pause-client needs it). It is the one validator of faults:
// scenario parsing maps its errors to file, line and field, and Run checks
// each fault with it again against the running cluster.
//
// Node names include the leader selectors zk-leader and etcd-leader (the
// member leading when the fault starts, see Run); a fault naming one must
// be possible whichever member leads.
//
// Beyond names that do not exist and values out of their declared bounds
// (Value; at and for negative), it rejects:
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
//     cut for one sender), that separates peers whose traffic is not
//     proxied (provider external), or that cuts no link at all;
//   - every fault type the table does not mark External with provider
//     external;
//   - failover of a node that is not a Redis primary, or without a replica
//     of it or without sentinels; a clock fault on an etcd member (a
//     Go program: the clock shim cannot reach it) or with provider docker,
//     and any but a forward clock-jump on a Redis node with provider
//     external (emulated);
//   - pause-client without processPerClient, or of a client that does not
//     exist.
func Check(plan cluster.Plan, processPerClient bool, fs []Fault) error {
	t := &topology{plan, processPerClient}
	var errs []error
	for i, f := range fs {
		for _, err := range t.check(f) {
			fe, ok := err.(*FieldError)
			if !ok {
				fe = &FieldError{Field: targetField(f), Err: err}
			}
			fe.Fault, fe.Type = i, f.Type
			errs = append(errs, fe)
		}
	}
	return errors.Join(errs...)
}

// check applies every rule of the fault table to f: its values, then its
// target through the row's action.
func (t *topology) check(f Fault) []error {
	typ, ok := Lookup(f.Type)
	if !ok {
		return []error{fieldError("type", fmt.Errorf("unknown fault type %q (known: %s): %w", f.Type, strings.Join(Types(), ", "), ErrUnsupported))}
	}
	errs := checkValues(typ, f)
	if t.Provider == cluster.ProviderExternal && !typ.External {
		return append(errs, fieldError("type", unsupported("a %s fault is not possible with provider external, which allows "+
			"only client-side faults (latency, bandwidth, partition and reset on client links; pause-client)", f.Type)))
	}
	if err := checkNetns(t, typ, f); err != nil {
		return append(errs, err)
	}
	if err := checkWaiters(t, f); err != nil {
		return append(errs, err)
	}
	if err := typ.action.check(t, f); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// checkValues checks at, for and the value fields typ declares.
func checkValues(typ Type, f Fault) []error {
	var errs []error
	if f.At < 0 {
		errs = append(errs, fieldError("at", fmt.Errorf("must be >= 0 (got %s): at %s is before the workload starts", f.At, f.At)))
	}
	if f.For < 0 {
		errs = append(errs, fieldError("for", fmt.Errorf("must be > 0 (got %s); leave for out to last until the end", f.For)))
	}
	switch f.When {
	case "", WhenTime, WhenHolderInside:
	default:
		errs = append(errs, fieldError("when", fmt.Errorf("must be %s or %s (got %q)", WhenTime, WhenHolderInside, f.When)))
	}
	if f.AfterEnter < 0 {
		errs = append(errs, fieldError("after_enter", fmt.Errorf("must be >= 0 (got %s)", f.AfterEnter)))
	}
	if f.AfterEnterMax > 0 && f.AfterEnterMax < f.AfterEnter {
		errs = append(errs, fieldError("after_enter_max", fmt.Errorf("must be >= after_enter (%s), got %s", f.AfterEnter, f.AfterEnterMax)))
	}
	if (f.AfterEnter > 0 || f.AfterEnterMax > 0) && !f.Aimed() {
		errs = append(errs, fieldError("after_enter", fmt.Errorf("needs when: %s (the fault fires once a client has been inside its critical section this long)", WhenHolderInside)))
	}
	for _, v := range typ.Values {
		if err := v.check(f.value(v.Name)); err != nil {
			errs = append(errs, fieldError(v.Name, err))
		}
	}
	return errs
}

// checkWaiters refuses waiters anywhere but in a partition's groups (it
// stands for several clients, which one link, node or client cannot be)
// and in a workload of one client (no client waits).
func checkWaiters(t *topology, f Fault) error {
	if !names(f, Waiters) {
		return nil
	}
	if f.Type != Partition || f.Groups == nil || names(Fault{Link: f.Link, Node: f.Node, Isolate: f.Isolate, Client: f.Client}, Waiters) {
		return fieldError(targetField(f), fmt.Errorf("%s stands for every client but the holder, so only a partition's groups may name it", Waiters))
	}
	if t.Clients < 2 {
		return fieldError("groups", fmt.Errorf("%s needs a second client: workload.clients is %d", Waiters, t.Clients))
	}
	return nil
}

// targetField is the field a target error of f is about: the one of
// link, node, groups, isolate and client it sets.
func targetField(f Fault) string {
	for _, c := range []struct{ name, v string }{{"link", f.Link}, {"node", f.Node}, {"isolate", f.Isolate}, {"client", f.Client}} {
		if c.v != "" {
			return c.name
		}
	}
	if f.Groups != nil {
		return "groups"
	}
	return ""
}

func unsupported(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), ErrUnsupported)
}

// checkLinkFault checks the target of latency, bandwidth and reset: link
// or node.
func checkLinkFault(t *topology, f Fault) error {
	switch {
	case f.Link == "" && f.Node == "":
		return fieldError("", fmt.Errorf("a %s fault needs link: A->B or node: NAME", f.Type))
	case f.Link != "" && f.Node != "":
		return fieldError("node", errors.New("set link or node, not both"))
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
	if !cluster.IsFallback(a) {
		var err error
		if ka, err = t.known(a); err != nil {
			return err
		}
	}
	kb, err := t.known(b)
	if err != nil {
		return err
	}
	if _, sel := leaderKinds()[a]; sel && a == b {
		return fmt.Errorf("%q is a link from %s to itself", f.Link, a)
	}
	if len(t.match(f.Link)) > 0 {
		return nil
	}
	switch {
	case kb == kindClient:
		return unsupported("no link %s: links from a client are written client->server (connections the client opens), "+
			"e.g. %s->%s", f.Link, b, a)
	case t.Provider == cluster.ProviderExternal:
		return unsupported("no link %s: with provider external only client links exist", f.Link)
	case kb == cluster.KindSentinel && ka != cluster.KindSentinel:
		return unsupported("no link %s: Redis servers never dial sentinels; Sentinel's connections are %s->%s", f.Link, b, a)
	case ka == cluster.KindRedis && kb == cluster.KindReplica:
		return unsupported("no link %s: the replication link is %s->%s (connections the replica opens; the "+
			"primary's stream flows back on them); links between the servers of a master group in both "+
			"directions exist with sentinels only", f.Link, b, a)
	case a == cluster.RedisPeers:
		return unsupported("no link %s: redis-peers links exist to the Redis nodes of a topology with replicas or sentinels", f.Link)
	}
	return unsupported("no link %s (links run from a client to a server, from a replica to its primary, from a "+
		"sentinel to a Redis server or another sentinel, and between the servers of a table backend: ZooKeeper's, etcd's, ...)", f.Link)
}

// checkServer checks the node of pause, kill, restart, failover and the
// clock faults (check has refused all but clock-jump with provider
// external): a server of a kind its backend's row says the fault acts
// on.
func checkServer(t *topology, f Fault) error {
	// The backend table's rows say which server faults act on their nodes
	// (those of the plan's backends are named).
	var kinds []string
	for _, k := range cluster.KindsActedOnBy(f.Type) {
		if t.Count(k) > 0 {
			kinds = append(kinds, k)
		}
	}
	if len(kinds) == 0 {
		kinds = cluster.KindsActedOnBy(f.Type) // none planned: name them all
	}
	if f.Node == "" {
		return fieldError("node", fmt.Errorf("a %s fault needs node: NAME (%s)", f.Type, kindPatterns(kinds)))
	}
	k, err := t.known(f.Node)
	if err != nil {
		return err
	}
	if slices.Contains(kinds, k) {
		return nil
	}
	return fmt.Errorf("%q is not one of %s (a %s fault acts on %s nodes)", f.Node, kindPatterns(kinds), f.Type, strings.Join(kinds, " or "))
}

// partitionGroups returns the groups of a partition fault (isolate
// expanded) after checking them. A fault naming a leader selector is
// checked for every member that may lead, and its groups are returned as
// written.
func partitionGroups(t *topology, f Fault) ([][]string, error) {
	switch {
	case f.Isolate == "" && f.Groups == nil:
		return nil, fieldError("", errors.New("a partition needs groups: [[A, B], [C]] or isolate: NAME"))
	case f.Isolate != "" && f.Groups != nil:
		return nil, fieldError("isolate", errors.New("set groups or isolate, not both"))
	}
	sels := leaderSelectors(f)
	if len(sels) == 0 {
		return resolvedGroups(t, f)
	}
	if f.Isolate != "" {
		if _, err := t.known(f.Isolate); err != nil {
			return nil, err
		}
	} else if err := t.members(f.Groups); err != nil {
		return nil, err
	}
	for _, a := range t.leaderChoices(sels) {
		if _, err := resolvedGroups(t, withLeaders(f, a, nil)); err != nil {
			field := targetField(f)
			if fe, ok := err.(*FieldError); ok {
				field, err = fe.Field, fe.Err
			}
			return nil, fieldError(field, fmt.Errorf("when %s: %w", a.leads(), err))
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
		return nil, fmt.Errorf("needs at least two groups to cut apart (got %d)", len(groups))
	}
	for gi, g := range groups {
		if len(g) == 0 {
			return nil, fmt.Errorf("group %d is empty", gi)
		}
	}
	if f.Isolate == "" {
		if err := t.members(groups); err != nil {
			return nil, err
		}
	}
	groupOf := map[string]int{}
	for gi, g := range groups {
		for _, m := range g {
			groupOf[m] = gi
		}
	}
	if t.Provider == cluster.ProviderExternal {
		for a, ga := range groupOf {
			for b, gb := range groupOf {
				if ka, kb := t.Kind(a), t.Kind(b); a < b && ga != gb && ka == kb && peered(ka) {
					return nil, unsupported("%s and %s are in different groups, but with provider external their peer traffic "+
						"is not proxied: only client links can be cut", a, b)
				}
			}
		}
	}
	if gc, ok := groupOf[cluster.Clients]; ok {
		for m, gi := range groupOf {
			if k, _ := t.kind(m); k == kindClient && gi != gc {
				return nil, fmt.Errorf("%s and clients are in different groups, but clients includes every client", m)
			}
		}
	}
	cuts := 0
	for _, l := range t.Links {
		gf, okf := groupOfEnd(groupOf, l.From)
		gt, okt := groupOfEnd(groupOf, l.To)
		if cluster.IsFallback(l.From) {
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

// allServerKinds are every backend's node kinds.
func allServerKinds() []string {
	var out []string
	for _, b := range cluster.Backends() {
		for _, k := range b.Kinds {
			out = append(out, k.Kind)
		}
	}
	return out
}

// peered reports whether servers of kind listed under cluster.external
// talk to each other (ZooKeeper members, etcd members, ...; that traffic
// is not proxied): their row says so for its default section (Redis's:
// independent primaries, which do not).
func peered(kind string) bool {
	b, ok := cluster.BackendOfKind(kind)
	return ok && (b.Peered == nil || b.Peered(b.Settle(nil)))
}

// members checks the names of a partition's groups as written: each a
// node (not a link source such as etcd-peers), in one group only.
func (t *topology) members(groups [][]string) error {
	seen := map[string]int{}
	for gi, g := range groups {
		for j, m := range g {
			field := fmt.Sprintf("groups[%d][%d]", gi, j)
			if cluster.IsFallback(m) {
				return fieldError(field, fmt.Errorf("%q is not one of %s, clients, client-N, holder, waiters: it names the source of links only",
					m, kindPatterns(allServerKinds())))
			}
			if _, err := t.known(m); err != nil {
				return fieldError(field, err)
			}
			if prev, dup := seen[m]; dup {
				return fieldError(field, fmt.Errorf("%s is already in groups[%d]", m, prev))
			}
			seen[m] = gi
		}
	}
	return nil
}

// kindPatterns names the nodes of kinds by pattern, for messages:
// "redis-N, redis-N-rM".
func kindPatterns(kinds []string) string {
	pattern := map[string]string{}
	for _, b := range cluster.Backends() {
		for _, k := range b.Kinds {
			pattern[k.Kind] = k.Pattern
		}
	}
	out := make([]string, len(kinds))
	for i, k := range kinds {
		out[i] = pattern[k]
	}
	return strings.Join(out, ", ")
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
