package faults

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/locklab/locklab/cluster"
)

// leaderKinds maps each leader selector to the kind of node it names: the
// table backends' (cluster.TableBackend.Leader).
func leaderKinds() map[string]string {
	out := map[string]string{}
	for _, b := range cluster.Backends() {
		if b.Leader != "" {
			out[b.Leader] = b.Kinds[0].Kind
		}
	}
	return out
}

// leaderNames are the leader selectors in the order of the table
// backends' names (etcd-leader, nats-leader, zk-leader).
func leaderNames() []string {
	var out []string
	for _, b := range cluster.Backends() {
		if b.Leader != "" {
			out = append(out, b.Leader)
		}
	}
	return out
}

// LeaderNames returns the leader selectors (the table backends', by
// backend name: etcd-leader, nats-leader, zk-leader), for callers outside
// the package that draw faults.
func LeaderNames() []string { return leaderNames() }

// LeaderKind returns the kind of node the leader selector sel names, ""
// for a name that is no selector.
func LeaderKind(sel string) string { return leaderKinds()[sel] }

// LeaderWait bounds how long a fault naming a leader selector waits for a
// leader (an election in progress) before it fails.
const LeaderWait = 15 * time.Second

// leaderChoice maps leader selectors to the members they stand for.
type leaderChoice map[string]string

func (a leaderChoice) String() string {
	var parts []string
	for _, sel := range leaderNames() {
		if n, ok := a[sel]; ok {
			parts = append(parts, sel+" was "+n)
		}
	}
	return strings.Join(parts, ", ")
}

// leads says which members lead in a, for messages: "zk-0 leads".
func (a leaderChoice) leads() string {
	var parts []string
	for _, sel := range leaderNames() {
		if n, ok := a[sel]; ok {
			parts = append(parts, n)
		}
	}
	if len(parts) == 1 {
		return parts[0] + " leads"
	}
	return strings.Join(parts, " and ") + " lead"
}

// leaderSelectors lists the leader selectors f names.
func leaderSelectors(f Fault) []string {
	found := map[string]bool{}
	mapNames(f, func(s string) string {
		if _, ok := leaderKinds()[s]; ok {
			found[s] = true
		}
		return s
	})
	var out []string
	for _, sel := range leaderNames() {
		if found[sel] {
			out = append(out, sel)
		}
	}
	return out
}

// leaderChoices lists every way the selectors can resolve on t: each
// selector to each member of its kind.
func (t *topology) leaderChoices(sels []string) []leaderChoice {
	out := []leaderChoice{{}}
	for _, sel := range sels {
		var next []leaderChoice
		for _, a := range out {
			for _, n := range t.names() {
				if t.Kind(n) != leaderKinds()[sel] {
					continue
				}
				b := leaderChoice{sel: n}
				for k, v := range a {
					b[k] = v
				}
				next = append(next, b)
			}
		}
		out = next
	}
	return out
}

// withLeaders returns f with each leader selector of a replaced by
// name(selector, member), or by the member when name is nil.
//
// In groups the selector decides where the leader goes: a member a
// selector names is dropped from wherever else the groups name it, so
// groups: [[zk-leader], [zk-0, zk-1, zk-2, clients]] puts the leader alone
// whichever member it is, and [[zk-leader, zk-0], [zk-1, .., clients]]
// makes a group of the leader and zk-0 — of zk-0 alone when zk-0 leads.
func withLeaders(f Fault, a leaderChoice, name func(sel, node string) string) Fault {
	label := func(s string) string {
		n, ok := a[s]
		switch {
		case !ok:
			return s
		case name != nil:
			return name(s, n)
		}
		return n
	}
	groups := f.Groups
	f.Groups = nil
	f = mapNames(f, label)
	if groups == nil {
		return f
	}
	placed := map[string]bool{} // members a selector in the groups names
	for _, g := range groups {
		for _, m := range g {
			if n, ok := a[m]; ok {
				placed[n] = true
			}
		}
	}
	f.Groups = make([][]string, len(groups))
	for i, g := range groups {
		seen := map[string]bool{}
		out := []string{}
		for _, m := range g {
			n, isSel := a[m]
			switch {
			case isSel && !seen[n]:
				seen[n] = true
				out = append(out, label(m))
			case !isSel && !placed[m] && !seen[m]:
				seen[m] = true
				out = append(out, m)
			}
		}
		f.Groups[i] = out
	}
	return f
}

// resolveLeaders finds the member each leader selector of f stands for,
// asking the cluster (cluster.Leader) until one leads, for at most
// LeaderWait.
func resolveLeaders(ctx context.Context, env Env, f Fault) (leaderChoice, error) {
	sels := leaderSelectors(f)
	if len(sels) == 0 {
		return nil, nil
	}
	wctx, cancel := context.WithTimeout(ctx, LeaderWait)
	defer cancel()
	a := leaderChoice{}
	for _, sel := range sels {
		for {
			qctx, qcancel := context.WithTimeout(wctx, 2*time.Second)
			n, err := env.Cluster.Leader(qctx, leaderKinds()[sel])
			qcancel()
			if err == nil {
				a[sel] = n.Name
				break
			}
			t := time.NewTimer(50 * time.Millisecond) // poll interval during an election
			select {
			case <-wctx.Done():
				t.Stop()
				return nil, fmt.Errorf("%s: %w", sel, err)
			case <-t.C:
			}
		}
	}
	return a, nil
}
