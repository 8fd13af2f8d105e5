package faults

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/locklab/locklab/cluster"
)

// HealTimeout bounds healing one fault (removing toxics, SIGCONT, starting a
// restarted node) once the run's ctx has ended.
const HealTimeout = 30 * time.Second

// Run applies fs on schedule until ctx ends and returns one Window per fault
// that started, in the order of fs.
//
// Each fault starts at Env.Base+At (at once when that has passed), in its
// own goroutine, so slow faults (a failover, a holder that takes long to
// show up) delay no other. A fault with For is healed For after it really
// started; one without For that can be undone (latency, partition, pause,
// ...) is healed when ctx ends. Faults whose At comes after ctx ended are
// not started and get no Window.
//
// Before applying, Run checks each fault against the running cluster as
// Check does, and resolves holder (in a link, node, group, isolate or
// client) by waiting on Env.Holder, bounded by ctx; the client found is
// "client-N" in the Window's Target. It then resolves the leader selectors
// zk-leader and etcd-leader to the member leading at that moment
// (cluster.Leader, waited for up to LeaderWait during an election); the
// Window's Target shows both, "zk-leader=zk-2" (see withLeaders for how a
// selector combines with node names in groups). A fault that cannot be applied or
// healed gets Window.Err (and a log line) and the rest of the schedule goes
// on.
//
// Run returns after ctx ended and every fault was healed (each heal bounded
// by HealTimeout): it never leaves a link toxic, a cut, a paused node or a
// paused client behind. What cannot be undone is not: a killed node stays
// down, a failover is not reverted, keys expired by a clock-jump stay gone.
// Run is the only place that coordinates overlapping faults: two partitions
// cutting one link heal it when the later one ends.
func Run(ctx context.Context, env Env, fs []Fault) []Window {
	if env.Logger == nil {
		env.Logger = slog.New(slog.DiscardHandler)
	}
	env.st = newState()
	var topo *topology
	if env.Cluster != nil {
		topo = topologyOf(env.Cluster, env.Clients != nil)
	}
	ws := make([]*Window, len(fs))
	var wg sync.WaitGroup
	for i, f := range fs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ws[i] = runOne(ctx, env, topo, i, f)
		}()
	}
	wg.Wait()
	out := make([]Window, 0, len(fs))
	for _, w := range ws {
		if w != nil {
			out = append(out, *w)
		}
	}
	return out
}

// runOne waits for f's time, applies it, waits for its end and heals it.
func runOne(ctx context.Context, env Env, topo *topology, i int, f Fault) *Window {
	log := env.Logger.With("fault", i, "type", f.Type)
	if !sleepUntil(ctx, env.Base.Add(f.At)) {
		log.Info("fault not started: the run ended first", "at", f.At)
		return nil
	}
	since := func() time.Duration { return time.Since(env.Base) }
	w := &Window{Index: i, Type: f.Type, Target: describeTarget(f)}
	fail := func(err error) *Window {
		w.Err = err.Error()
		if w.End == 0 {
			w.End = since()
		}
		log.Warn("fault failed", "target", w.Target, "err", err)
		return w
	}
	typ, ok := Lookup(f.Type)
	a := typ.action
	if !ok {
		w.Start = since()
		return fail(fmt.Errorf("unknown fault type %q (known: %s): %w", f.Type, strings.Join(Types(), ", "), ErrUnsupported))
	}
	if env.Cluster == nil {
		w.Start = since()
		return fail(errors.New("faults: Env.Cluster is nil"))
	}
	if err := a.check(topo, f); err != nil {
		w.Start = since()
		return fail(err)
	}
	rf, holder, err := resolveHolder(ctx, env, f)
	var leaders leaderChoice
	if err == nil {
		leaders, err = resolveLeaders(ctx, env, rf)
	}
	w.Start = since()
	if holder >= 0 {
		w.Target = describeTarget(rf)
	}
	if len(leaders) > 0 {
		w.Target = describeTarget(withLeaders(rf, leaders, func(sel, node string) string { return sel + "=" + node }))
		rf = withLeaders(rf, leaders, nil)
	}
	if err != nil {
		return fail(err)
	}
	eff, err := a.apply(ctx, env, rf)
	if eff.target != "" && len(leaders) == 0 {
		w.Target = eff.target
	}
	w.Detail, w.Method = eff.detail, eff.method
	if len(leaders) > 0 {
		w.Detail = joinDetail(leaders.String(), w.Detail)
	}
	if holder >= 0 {
		w.Detail = joinDetail(fmt.Sprintf("holder was client-%d", holder), w.Detail)
	}
	if err != nil {
		w.End = since()
		if eff.heal != nil {
			if herr := heal(ctx, eff.heal); herr != nil {
				err = errors.Join(err, fmt.Errorf("heal: %w", herr))
			}
			w.End = since()
		}
		return fail(err)
	}
	log.Info("fault applied", "target", w.Target, "start", w.Start, "detail", w.Detail)

	switch {
	case eff.heal != nil:
		if f.For > 0 {
			sleepUntil(ctx, env.Base.Add(w.Start+f.For))
		} else {
			<-ctx.Done()
		}
		herr := heal(ctx, eff.heal)
		w.End = since()
		if herr != nil {
			return fail(fmt.Errorf("heal: %w", herr))
		}
		log.Info("fault healed", "target", w.Target, "end", w.End)
	case eff.lasting:
		<-ctx.Done()
		w.End = since()
	default:
		w.End = since()
	}
	return w
}

// heal runs h with a context that outlives ctx by at most HealTimeout.
func heal(ctx context.Context, h func(context.Context) error) error {
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), HealTimeout)
	defer cancel()
	return h(hctx)
}

// sleepUntil waits until t (monotonic when t came from time.Now) and
// reports whether it got there before ctx ended.
func sleepUntil(ctx context.Context, t time.Time) bool {
	if ctx.Err() != nil {
		return false
	}
	d := time.Until(t)
	if d <= 0 {
		return true
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// Holder is the selector for the client inside the critical section when a
// fault starts (contract, DESIGN.md §3).
const Holder = "holder"

// usesHolder reports whether f names holder anywhere.
func usesHolder(f Fault) bool {
	found := false
	mapNames(f, func(s string) string {
		if s == Holder {
			found = true
		}
		return s
	})
	return found
}

// mapNames returns f with every node name it holds (link ends, node,
// isolate, group members; client as a client name) replaced by m(name).
func mapNames(f Fault, m func(string) string) Fault {
	if a, b, ok := strings.Cut(f.Link, "->"); ok {
		f.Link = m(strings.TrimSpace(a)) + "->" + m(strings.TrimSpace(b))
	} else if f.Link != "" {
		f.Link = m(f.Link)
	}
	if f.Node != "" {
		f.Node = m(f.Node)
	}
	if f.Isolate != "" {
		f.Isolate = m(f.Isolate)
	}
	if f.Groups != nil {
		gs := make([][]string, len(f.Groups))
		for i, g := range f.Groups {
			gs[i] = make([]string, len(g))
			for j, n := range g {
				gs[i][j] = m(n)
			}
		}
		f.Groups = gs
	}
	if f.Client != "" {
		c := f.Client
		if c != Holder {
			c = "client-" + c
		}
		f.Client = strings.TrimPrefix(m(c), "client-")
	}
	return f
}

// resolveHolder replaces holder in f by the client inside the critical
// section, waiting for one through env.Holder. holder is that client's
// index, -1 when f does not name holder.
func resolveHolder(ctx context.Context, env Env, f Fault) (Fault, int, error) {
	if !usesHolder(f) {
		return f, -1, nil
	}
	if env.Holder == nil {
		return f, -1, ErrNoHolder
	}
	i, err := env.Holder(ctx)
	if err != nil {
		return f, -1, fmt.Errorf("wait for a client in the critical section: %w", err)
	}
	name := "client-" + strconv.Itoa(i)
	return mapNames(f, func(s string) string {
		if s == Holder {
			return name
		}
		return s
	}), i, nil
}

// Leader selectors (node names, contract): the member of a ZooKeeper
// ensemble or etcd cluster that leads when the fault starts.
const (
	ZKLeader   = "zk-leader"
	EtcdLeader = "etcd-leader"
)

// leaderKinds maps each leader selector to the kind of node it names.
var leaderKinds = map[string]string{ZKLeader: cluster.KindZooKeeper, EtcdLeader: cluster.KindEtcd}

// LeaderWait bounds how long a fault naming a leader selector waits for a
// leader (an election in progress) before it fails.
const LeaderWait = 15 * time.Second

// leaderChoice maps leader selectors to the members they stand for.
type leaderChoice map[string]string

func (a leaderChoice) String() string {
	var parts []string
	for _, sel := range []string{ZKLeader, EtcdLeader} {
		if n, ok := a[sel]; ok {
			parts = append(parts, sel+" was "+n)
		}
	}
	return strings.Join(parts, ", ")
}

// leads says which members lead in a, for messages: "zk-0 leads".
func (a leaderChoice) leads() string {
	var parts []string
	for _, sel := range []string{ZKLeader, EtcdLeader} {
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
		if _, ok := leaderKinds[s]; ok {
			found[s] = true
		}
		return s
	})
	var out []string
	for _, sel := range []string{ZKLeader, EtcdLeader} {
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
				if t.Kind(n) != leaderKinds[sel] {
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
			n, err := env.Cluster.Leader(qctx, leaderKinds[sel])
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

// describeTarget names what f acts on, before apply knows better.
func describeTarget(f Fault) string {
	switch {
	case f.Link != "":
		return f.Link
	case f.Node != "":
		return f.Node
	case f.Isolate != "":
		return f.Isolate
	case f.Groups != nil:
		return groupsString(f.Groups)
	case f.Client != "":
		if f.Client == Holder {
			return Holder
		}
		return "client-" + f.Client
	}
	return ""
}

func groupsString(gs [][]string) string {
	parts := make([]string, len(gs))
	for i, g := range gs {
		parts[i] = "[" + strings.Join(g, " ") + "]"
	}
	return strings.Join(parts, " | ")
}

func joinDetail(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}
