package faults

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/locklab/locklab/cluster"
)

// Holder is the selector for the client inside the critical section when a
// fault starts (a contract name: docs/faults.md).
const Holder = "holder"

// Waiters is the selector, in a partition's groups only, for every client
// but the holder when the fault starts: the clients waiting for the lock
// (or between visits) while the holder is inside (a contract name:
// docs/faults.md). It is resolved with holder.
const Waiters = "waiters"

// usesHolder reports whether f names holder or waiters anywhere.
func usesHolder(f Fault) bool {
	found := false
	mapNames(f, func(s string) string {
		if s == Holder || s == Waiters {
			found = true
		}
		return s
	})
	return found
}

// names reports whether f names sel anywhere.
func names(f Fault, sel string) bool {
	found := false
	mapNames(f, func(s string) string {
		found = found || s == sel
		return s
	})
	return found
}

// cutsHolder reports whether partition f, as written, cuts the holder from
// a server: isolate: holder, or holder (or clients) in a group and some
// server in another. A partition of the waiters alone does not.
func cutsHolder(f Fault) bool {
	if f.Isolate == Holder {
		return true
	}
	isClient := func(m string) bool {
		return m == cluster.Clients || m == Holder || m == Waiters || strings.HasPrefix(m, "client-")
	}
	for gi, g := range f.Groups {
		if !slices.Contains(g, Holder) && !slices.Contains(g, cluster.Clients) {
			continue
		}
		for gj, other := range f.Groups {
			if gj != gi && slices.ContainsFunc(other, func(m string) bool { return !isClient(m) }) {
				return true
			}
		}
	}
	return false
}

// resolveHolder replaces holder in f by the client inside the critical
// section, waiting for one through env.Holder, which holds it there until
// its Release (the caller's to call), and waiters by every other client
// the groups do not name already. held is nil when f names neither.
func resolveHolder(ctx context.Context, env Env, f Fault) (Fault, *HeldClient, error) {
	if !usesHolder(f) {
		return f, nil, nil
	}
	if env.Holder == nil {
		return f, nil, ErrNoHolder
	}
	h, err := env.Holder(ctx)
	if err != nil {
		return f, nil, fmt.Errorf("wait for a client in the critical section: %w", err)
	}
	if h.Release == nil {
		h.Release = func() {}
	}
	name := ClientName(h.Client)
	rf := mapNames(f, func(s string) string {
		if s == Holder {
			return name
		}
		return s
	})
	if rf.Groups != nil && names(rf, Waiters) {
		clients := 0
		if env.Cluster != nil {
			clients = env.Cluster.Plan().Clients
		}
		rf.Groups = expandWaiters(rf.Groups, h.Client, clients)
	}
	return rf, &h, nil
}

// expandWaiters replaces waiters in groups by client-i for every i below
// clients but holder that no group names already (written names win).
func expandWaiters(groups [][]string, holder, clients int) [][]string {
	named := map[string]bool{}
	for _, g := range groups {
		for _, m := range g {
			named[m] = true
		}
	}
	out := make([][]string, len(groups))
	for gi, g := range groups {
		for _, m := range g {
			if m != Waiters {
				out[gi] = append(out[gi], m)
				continue
			}
			for i := 0; i < clients; i++ {
				if c := ClientName(i); i != holder && !named[c] && !slices.Contains(out[gi], c) {
					out[gi] = append(out[gi], c)
				}
			}
		}
	}
	return out
}
