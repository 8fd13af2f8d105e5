package faults

import (
	"strings"

	"github.com/locklab/locklab/cluster"
)

// Narrowed is a fault fitted to one lock's cluster: a scenario may declare
// several backends and a fault may name nodes of any of them, while each
// lock runs on a cluster of its own backend only.
type Narrowed struct {
	// Fault is what acts on the cluster: names of servers the cluster does
	// not have are dropped (from partition groups; a group left empty goes).
	Fault Fault
	// Dropped are the names taken out, in the order written.
	Dropped []string
	// NotApplicable says why nothing of the fault is left to act on this
	// cluster ("" when it applies).
	NotApplicable string
}

// Narrow fits f to plan. A fault naming no server (pause-client, client
// links) applies as written. A single-target fault (node, link, isolate) on
// a server plan lacks is not applicable; a partition keeps the members
// plan has and is not applicable when fewer than two non-empty groups
// remain or none of its members is a server plan has.
func Narrow(f Fault, plan cluster.Plan) Narrowed {
	absent := func(n string) bool {
		if _, client := clientIndex(n); n == "" || n == cluster.Clients || n == Holder || n == Waiters || client {
			return false
		}
		_, ok := plan.Node(n)
		return !ok && plan.Count(selectorKindOf(n)) == 0
	}
	out := Narrowed{Fault: f}
	mapNames(f, func(n string) string {
		if absent(n) {
			out.Dropped = append(out.Dropped, n)
		}
		return n
	})
	if len(out.Dropped) == 0 {
		return out
	}
	why := "names only servers this lock's cluster does not run (" + strings.Join(out.Dropped, ", ") + ")"
	if f.Groups == nil {
		out.NotApplicable = why
		return out
	}
	var gs [][]string
	server := false
	for _, g := range f.Groups {
		var kept []string
		for _, n := range g {
			if !absent(n) {
				kept = append(kept, n)
				server = server || !(n == cluster.Clients || n == Holder || n == Waiters || strings.HasPrefix(n, "client-"))
			}
		}
		if len(kept) > 0 {
			gs = append(gs, kept)
		}
	}
	out.Fault.Groups = gs
	if len(gs) < 2 || !server {
		out.NotApplicable = why
	}
	return out
}

// selectorKindOf maps a selector standing for servers to a kind of the
// servers it stands for: a leader selector's, redis-peers' and each table
// backend's fallback source's ("etcd-peers").
func selectorKindOf(sel string) string {
	for _, b := range cluster.Backends() {
		if b.Fallback != "" && b.Fallback == sel {
			return b.Kinds[0].Kind
		}
	}
	return leaderKinds()[sel]
}
