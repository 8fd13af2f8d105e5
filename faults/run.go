package faults

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
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
// (cluster.Leader, waited for up to LeaderWait during an election; an
// aimed fault asks before it waits for a holder); the
// Window's Target shows both, "zk-leader=zk-2" (see withLeaders for how a
// selector combines with node names in groups). A fault that cannot be applied or
// healed gets Window.Err (and a log line) and the rest of the schedule goes
// on.
//
// Run returns after ctx ended and every fault was healed (each heal bounded
// by HealTimeout): it never leaves a link toxic, a cut, a paused node or a
// paused client behind. What cannot be undone is not: a killed node stays
// down, a failover is not reverted, keys expired by a clock fault stay gone.
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
	w := &Window{Index: i, Type: f.Type, Target: f.Target()}
	// An aimed fault learns who leads before it waits for a holder: asking
	// every member after the holder was found took 74 ms on a loaded
	// machine, and the aimed kill of a ZooKeeper leader struck after its
	// holder had left (the atlas's kill-leader/zk-lib, 169.7 ms into a
	// 200 ms critical section). Leaders do not change while nothing fails.
	askedEarly := f.Aimed() && env.Cluster != nil
	var early leaderChoice
	var earlyErr error
	if askedEarly {
		early, earlyErr = resolveLeaders(ctx, env, f)
	}
	if f.Aimed() {
		aim, err := aimAt(ctx, env, f)
		if err != nil {
			if ctx.Err() != nil {
				log.Info("aimed fault not started: nobody was inside before the run ended", "at", f.At)
				w.Start, w.End = since(), since()
				w.Err = "never fired: no client was inside its critical section (when: holder-inside) before the run ended"
				return w
			}
			w.Start = since()
			w.Err = err.Error()
			w.End = w.Start
			return w
		}
		w.Aim = &aim
	}
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
	if errs := topo.check(f); len(errs) > 0 {
		w.Start = since()
		return fail(errors.Join(errs...))
	}
	rf, held, err := resolveHolder(ctx, env, f)
	holder := -1
	if held != nil {
		holder = held.Client
		defer held.Release() // on every path; released earlier below
	}
	var leaders leaderChoice
	switch {
	case err != nil:
	case askedEarly:
		leaders, err = early, earlyErr
	default:
		leaders, err = resolveLeaders(ctx, env, rf)
	}
	w.Start = since()
	w.Waiters = f.Type == Partition && names(f, Waiters) && !cutsHolder(f)
	if holder >= 0 {
		w.Target = rf.Target()
		if w.Aim == nil {
			w.Aim = &Aim{Client: holder}
		}
	}
	if len(leaders) > 0 {
		w.Target = withLeaders(rf, leaders, func(sel, node string) string { return sel + "=" + node }).Target()
		rf = withLeaders(rf, leaders, nil)
	}
	if err != nil {
		return fail(err)
	}
	eff, err := a.apply(ctx, env, rf)
	var atApply HolderState
	if held != nil && held.Seen != nil {
		atApply = held.Seen()
	}
	if held != nil && (err != nil || !eff.holdToHeal) {
		held.Release()
	}
	if eff.target != "" && len(leaders) == 0 {
		w.Target = eff.target
	}
	w.Detail, w.Method = eff.detail, eff.method
	if len(leaders) > 0 {
		w.Detail = joinDetail(leaders.String(), w.Detail)
	}
	if holder >= 0 {
		w.Detail = joinDetail("holder was "+ClientName(holder), w.Detail)
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
	// The fault's own effect is looked for once it applied, before a later
	// fault can change what it acts on (a failover killing the node a
	// latency slows); what the holder did and who leads, at its end.
	octx, cancel := observeCtx(ctx)
	own := a.observe(octx, env, rf, eff)
	cancel()
	observe := func() {
		octx, cancel := observeCtx(ctx)
		defer cancel()
		ev := own
		if eff.late != nil {
			ev = eff.late()
		}
		if held != nil && held.Seen != nil {
			ev = holderEvidence(f.Type, f.Type != Partition || cutsHolder(f), ev, "holder "+ClientName(holder), atApply, held.Seen())
		}
		if len(leaders) > 0 {
			ev.seen = joinDetail(ev.seen, leadersNow(octx, env, leaders))
		}
		if ev.checked {
			w.Bit = &ev.bit
		}
		if lost := own.lostAt; !lost.IsZero() {
			d := lost.Sub(env.Base)
			w.LostAt = &d
		}
		w.Observed = ev.seen
		log.Info("fault observed", "target", w.Target, "bit", ev.bit, "observed", ev.seen)
	}

	switch {
	case eff.heal != nil:
		if f.For > 0 {
			sleepUntil(ctx, env.Base.Add(w.Start+f.For))
		} else {
			<-ctx.Done()
		}
		observe()
		if held != nil {
			held.Release()
		}
		herr := heal(ctx, eff.heal)
		w.End = since()
		if herr != nil {
			return fail(fmt.Errorf("heal: %w", herr))
		}
		log.Info("fault healed", "target", w.Target, "end", w.End)
	case eff.lasting:
		observe()
		<-ctx.Done()
		w.End = since()
	default:
		// A one-shot fault ends when it was done; looking for its effect
		// is not part of it.
		w.End = since()
		observe()
	}
	return w
}

// aimAt waits, for a fault aimed with when: holder-inside, until a client
// has been inside its critical section for f.AfterEnter.
func aimAt(ctx context.Context, env Env, f Fault) (Aim, error) {
	if env.Inside == nil {
		return Aim{}, fmt.Errorf("when: %s: %w", WhenHolderInside, ErrNoHolder)
	}
	a, err := env.Inside(ctx, f.AfterEnter)
	if err != nil {
		return a, fmt.Errorf("wait for a client inside its critical section: %w", err)
	}
	return a, nil
}

// leadersNow says whether each member chosen for a leader selector still
// leads at the end of the fault.
func leadersNow(ctx context.Context, env Env, chosen leaderChoice) string {
	var parts []string
	for _, sel := range leaderNames() {
		was, ok := chosen[sel]
		if !ok {
			continue
		}
		n, err := env.Cluster.Leader(ctx, leaderKinds()[sel])
		switch {
		case err != nil:
			parts = append(parts, fmt.Sprintf("%s: no leader answered at the end (%v)", sel, err))
		case n.Name == was:
			parts = append(parts, fmt.Sprintf("%s %s still leads at the end", sel, was))
		default:
			parts = append(parts, fmt.Sprintf("%s changed: %s before, %s at the end", sel, was, n.Name))
		}
	}
	return strings.Join(parts, "; ")
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

// Target names what f acts on, as windows, results and logs show it: a
// link or node name, an isolated group, the partition's groups, or the
// client ("client-N", "holder"). A window's Target may later say more
// (the leader that a selector resolved to, the holder's client).
func (f Fault) Target() string {
	switch {
	case f.Link != "":
		return f.Link
	case f.Node != "":
		return f.Node
	case f.Isolate != "":
		return f.Isolate
	case f.Groups != nil:
		return groupsString(f.Groups)
	case f.Client == Holder:
		return Holder
	case f.Client != "":
		return ClientName(f.Client)
	}
	return ""
}

// ClientName is the node name of client c ("3" or 3: "client-3").
func ClientName[T int | string](c T) string { return fmt.Sprintf("client-%v", c) }

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
