package explore

import (
	"context"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/locklab/locklab/atlas"
)

// Shrinking keeps a step when it reproduces in Need of Tries runs, and
// measures the minimal scenario with Tries runs.
const (
	Tries = 5
	Need  = 3
)

// shrinkLoop shrinks findings one after another, the next one as
// nextToShrink picks it, while drawing goes on, until ctx ends or drawing
// is over and no finding is left waiting. After each shrinking, the
// findings waiting that its root cause explains are subsumed.
func (x *explorer) shrinkLoop(ctx context.Context) {
	for ctx.Err() == nil {
		x.mu.Lock()
		over := x.drawn // read first: once true, every finding is in
		x.mu.Unlock()
		f, start, ok := x.pickToShrink()
		if !ok {
			if over {
				return
			}
			sleep(ctx, time.Second)
			continue
		}
		if f == nil {
			continue
		}
		x.shrink(ctx, f, start)
		x.mu.Lock()
		x.subsumeWaiting()
		x.e.ElapsedS = x.elapsed()
		if err := writeJSON(x.o.Dir, x.e); err != nil {
			x.progress("%v", err)
		}
		x.mu.Unlock()
	}
}

// backlog counts the findings waiting to be shrunk.
func (x *explorer) backlog() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.pace().Backlog
}

// shrinkers is how many findings shrink at once: one per 2 runs of
// parallel, rounded up. Each shrinking step starts up to Need runs, so
// two shrinkings keep --parallel 3 or 4 busy while one waits for its
// step's last run; the slots bound the runs at once.
func shrinkers(parallel int) int { return max(1, (parallel+1)/2) }

// pickToShrink takes the next finding to shrink and its first run's
// schedule; ok is false when none is left. A subsumed finding is marked
// and f is nil.
func (x *explorer) pickToShrink() (f *Finding, start Schedule, ok bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	f = x.nextToShrink()
	if f == nil {
		return nil, Schedule{}, false
	}
	if by := x.subsumedBy(f); by != nil {
		x.subsume(f, by, "not shrunk, subsumed (its minimal scenario's faults are among this one's) by")
		return nil, Schedule{}, true
	}
	start, err := x.gen.Draw(f.FirstRun)
	if err != nil {
		f.Shrink = "stopped"
		x.progress("%s: %v", f.Signature, err)
		return nil, Schedule{}, true
	}
	f.Shrink = "running"
	return f, start, true
}

// nextToShrink picks the finding to shrink next: one of a (lock, what
// broke) pair with no shrunk finding yet before the others, then the
// fewest fault types, then the most severe breakage, then the first
// found. So a budget that cannot
// shrink every finding shrinks the most different ones.
func (x *explorer) nextToShrink() *Finding {
	var best *Finding
	key := func(f *Finding) [4]float64 {
		covered := 0.0
		for _, g := range x.e.Findings {
			if (g.Shrink == "done" || g.Shrink == "running") && g.Lock == f.Lock && g.Broke == f.Broke {
				covered = 1
			}
		}
		return [4]float64{covered, float64(len(f.FaultTypes)), float64(slices.Index(severity, f.Broke)), f.FirstAtS}
	}
	for _, f := range x.e.Findings {
		if f.Shrink != "" {
			continue
		}
		if best == nil || less(key(f), key(best)) {
			best = f
		}
	}
	return best
}

func less(a, b [4]float64) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// subsume marks f as explained by by, a shrunk finding whose minimal
// scenario's fault types are all among f's (or those f's own shrinking
// came down to: joinRoot): f takes by's minimal scenario and rate, keeps
// its own steps and is not shrunk further. how says which, in the
// progress line. x.mu must be held.
func (x *explorer) subsume(f, by *Finding, how string) {
	f.Shrink = "subsumed"
	f.Minimal, f.MinimalFaults, f.MinimalTypes, f.Repro = by.Minimal, by.MinimalFaults, by.MinimalTypes, by.Repro
	f.Reproduced, f.Tries, f.Rate, f.RateLow, f.RateHigh = by.Reproduced, by.Tries, by.Rate, by.RateLow, by.RateHigh
	x.progress("%s: %s %s", f.Signature, how, by.Signature)
}

// subsumeRest marks every finding the budget left unshrunk that a shrunk
// one subsumes (subsumedBy): it costs no run, so a budget that ran out
// still groups those findings under the root cause that explains them.
func (x *explorer) subsumeRest() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.subsumeWaiting()
}

// subsumeWaiting marks every finding waiting (or whose shrinking was
// stopped) that a shrunk one subsumes. x.mu must be held.
func (x *explorer) subsumeWaiting() {
	for _, f := range x.e.Findings {
		if f.Shrink != "" && f.Shrink != "stopped" {
			continue
		}
		if by := x.subsumedBy(f); by != nil {
			x.subsume(f, by, "subsumed (its minimal scenario's faults are among this one's) by")
		}
	}
}

// subsumedBy returns a shrunk finding of the same lock and breakage
// whose minimal scenario's fault types are all among f's: f's run is
// explained by it, and shrinking f would most likely find it again.
func (x *explorer) subsumedBy(f *Finding) *Finding {
	return x.shrunkRoot(f, func(types []string) bool {
		return !slices.ContainsFunc(types, func(t string) bool { return !slices.Contains(f.FaultTypes, t) })
	})
}

// shrunkRoot returns a finding other than self, of self's lock and
// breakage, shrunk already, whose minimal scenario's fault types fit; nil
// when there is none. x.mu must be held.
func (x *explorer) shrunkRoot(self *Finding, fits func(minimalTypes []string) bool) *Finding {
	for _, g := range x.e.Findings {
		if g != self && g.Shrink == "done" && g.Lock == self.Lock && g.Broke == self.Broke && fits(g.MinimalTypes) {
			return g
		}
	}
	return nil
}

// shrink reduces cur, f's first run, to a minimal scenario: it tries each
// simplification in turn (drop one fault, halve a fault, shorten the
// run, fewer clients, simpler parameters) and keeps one when it
// reproduces in Need of Tries runs, then measures the result.
func (x *explorer) shrink(ctx context.Context, shared *Finding, cur Schedule) {
	// f is this goroutine's copy; publish copies it into the exploration
	// under its lock, so explore.json is written from a consistent value.
	x.mu.Lock()
	w := *shared
	x.mu.Unlock()
	f := &w
	publish := func() {
		x.mu.Lock()
		defer x.mu.Unlock()
		g := *f
		g.Steps = slices.Clone(f.Steps)
		g.MinimalTypes = slices.Clone(f.MinimalTypes)
		*shared = g
	}
	defer publish()
	dir := filepath.Join(x.o.Dir, "findings", f.Signature)
	os.RemoveAll(filepath.Join(dir, "steps"))
	if err := os.MkdirAll(filepath.Join(dir, "steps"), 0o755); err != nil {
		f.Shrink = "stopped"
		return
	}
	// "running" while under way (the pace counts it so), "stopped" if it
	// returns before an end.
	f.Steps, f.Shrink, f.ShrinkRuns = nil, "running", 0
	began := time.Now()
	defer func() { // before publish
		f.ShrinkS = time.Since(began).Seconds()
		if f.Shrink == "running" {
			f.Shrink = "stopped"
		}
	}()
	cur.Name = "finding-" + sanitize(f.Signature)
	cur.Expect = fmt.Sprintf("{%s: \">0\"}", brokenFields[f.Broke])
	cur.Description = fmt.Sprintf("explore finding %s (%s), shrunk from run %d of seed %d: chaos run exits 0 when it reproduces.",
		f.Signature, f.Classification, f.FirstRun, x.e.Plan.Seed)
	x.saveMinimal(f, cur)
	x.progress("shrinking %s (run %d, %d faults)", f.Signature, f.FirstRun, len(cur.Faults))
	step := 0
	try := func(what string, cand Schedule) bool {
		if ctx.Err() != nil {
			return false
		}
		cand.Duration = runLength(cand)
		st := Step{What: what}
		if _, err := cand.Parse(); err != nil {
			st.Refused = firstLine(err.Error())
			f.Steps = append(f.Steps, st)
			return false
		}
		step++
		st.Reproduced, st.Tries = x.repeat(ctx, cand, f, fmt.Sprintf("step-%02d", step), true)
		if ctx.Err() != nil {
			return false
		}
		st.Kept = st.Reproduced >= Need
		f.Steps = append(f.Steps, st)
		publish()
		x.progress("shrink %s step %d: %s: %d/%d %s", f.Signature, step, what, st.Reproduced, st.Tries, map[bool]string{true: "kept", false: "dropped"}[st.Kept])
		return st.Kept
	}
	// Passes over every kind of step while one moves a fault (at most
	// three): a fault shortened or started earlier can make dropping
	// another one reproduce.
	for pass, changed := 1, true; changed && pass <= 3 && ctx.Err() == nil; pass++ {
		changed = false
		// First a few faults at once: those of a root cause already
		// shrunk, or one alone (see reductions); the first kept ends it.
		if pass == 1 && len(f.FaultTypes) > 0 {
			for _, keep := range x.reductions(f, cur) {
				c := cur.Clone()
				c.Faults = nil
				var what []string
				for _, i := range keep {
					c.Faults = append(c.Faults, cur.Faults[i])
					what = append(what, fmt.Sprintf("%d (%s %s)", i, cur.Faults[i].Type, cur.Faults[i].Target()))
				}
				if try("keep only fault "+strings.Join(what, ", "), c) {
					cur = c
					x.saveMinimal(f, cur)
					break
				}
			}
		}
		// Drop faults one at a time, the last first; never the last one of
		// a finding whose faults bit (without faults it would be another).
		for i := len(cur.Faults) - 1; i >= 0; i-- {
			if len(cur.Faults) == 1 && len(f.FaultTypes) > 0 {
				break
			}
			c := cur.Clone()
			c.Faults = slices.Delete(c.Faults, i, i+1)
			if try(fmt.Sprintf("drop fault %d (%s %s)", i, cur.Faults[i].Type, cur.Faults[i].Target()), c) {
				cur = c
				x.saveMinimal(f, cur)
			}
		}
		// Its fault types now name its root cause: when a finding shrunk
		// already has that root cause, this one joins it, without the
		// remaining steps or the measurement.
		if pass == 1 && ctx.Err() == nil && x.joinRoot(f, shared, cur) {
			return
		}
		// Shorten each fault (its length, its restart delay), then start it
		// earlier.
		for i := range cur.Faults {
			if cur.Faults[i].For > cur.TTL/4 {
				c := cur.Clone()
				c.Faults[i].For = (c.Faults[i].For / 2).Round(time.Millisecond)
				if try(fmt.Sprintf("halve fault %d's for to %s", i, c.Faults[i].For), c) {
					cur = c
					x.saveMinimal(f, cur)
					changed = true
				}
			}
			if cur.Faults[i].At > cur.TTL {
				c := cur.Clone()
				shift := c.Faults[i].At - cur.TTL
				for j := range c.Faults {
					c.Faults[j].At = max(0, c.Faults[j].At-shift)
				}
				if try(fmt.Sprintf("start fault %d at %s, the others as much earlier", i, c.Faults[i].At), c) {
					cur = c
					x.saveMinimal(f, cur)
					changed = true
				}
			}
		}
		// Fewer clients, down to two.
		for cur.Clients > 2 {
			c := cur.Clone()
			c.Clients--
			if !try(fmt.Sprintf("%d clients", c.Clients), c) {
				break
			}
			cur = c
			x.saveMinimal(f, cur)
		}
		// Simpler parameters.
		for _, simplify := range simplifications(cur) {
			c := cur.Clone()
			what := simplify(&c)
			if try(what, c) {
				cur = c
				x.saveMinimal(f, cur)
			}
		}
	}
	if ctx.Err() != nil {
		return
	}
	f.Reproduced, f.Tries = x.repeat(ctx, cur, f, "minimal", false)
	if ctx.Err() != nil {
		return
	}
	f.Rate = float64(f.Reproduced) / float64(f.Tries)
	f.RateLow, f.RateHigh = atlas.Wilson(f.Reproduced, f.Tries)
	f.Shrink = "done"
	if f.Reproduced < Need {
		// The first run was a rare event (or its fault did not bite in
		// the measured runs): no step was kept for want of 3 of 5.
		f.Shrink = "rare"
	}
	x.progress("shrunk %s to %d faults: reproduces %d/%d (%s, %s)", f.Signature, len(cur.Faults), f.Reproduced, f.Tries, f.Shrink, f.Minimal)
}

// reductions are the fault subsets (indexes into cur.Faults, in order)
// shrinking tries before dropping faults one at a time, each as one
// step: first, for each root cause of f's lock and breakage already
// shrunk (fewest fault types first), cur's faults of its types; then each
// fault alone, those of a type a shrunk root cause of f's lock needs
// first. When one fault alone breaks the lock, that costs a step or
// two instead of one per fault. Only for 3 faults or more (with two,
// dropping one is keeping the other); subsets that keep every fault or
// none are left out.
func (x *explorer) reductions(f *Finding, cur Schedule) [][]int {
	n := len(cur.Faults)
	if n < 3 {
		return nil
	}
	x.mu.Lock()
	var same, known [][]string
	for _, g := range x.e.Findings {
		if g.Shrink != "done" || g.Lock != f.Lock {
			continue
		}
		known = append(known, g.MinimalTypes)
		if g.Broke == f.Broke {
			same = append(same, g.MinimalTypes)
		}
	}
	x.mu.Unlock()
	slices.SortStableFunc(same, func(a, b []string) int { return len(a) - len(b) })
	var out [][]int
	add := func(keep []int) {
		if len(keep) == 0 || len(keep) == n {
			return
		}
		for _, k := range out {
			if slices.Equal(k, keep) {
				return
			}
		}
		out = append(out, keep)
	}
	for _, types := range same {
		var keep []int
		for i, ft := range cur.Faults {
			if slices.Contains(types, ft.Type) {
				keep = append(keep, i)
			}
		}
		add(keep)
	}
	needed := func(typ string) bool {
		return slices.ContainsFunc(known, func(types []string) bool { return slices.Contains(types, typ) })
	}
	for _, first := range []bool{true, false} {
		for i, ft := range cur.Faults {
			if needed(ft.Type) == first {
				add([]int{i})
			}
		}
	}
	return out
}

// joinRoot ends f's shrinking when cur, its faults dropped, has the fault
// types of a finding of the same lock and breakage shrunk already: f is
// that root cause too, and is marked subsumed by it (its steps kept).
// shared is f's entry in the exploration (not itself a candidate).
func (x *explorer) joinRoot(f, shared *Finding, cur Schedule) bool {
	types := cur.FaultTypes()
	x.mu.Lock()
	defer x.mu.Unlock()
	g := x.shrunkRoot(shared, func(minimal []string) bool { return slices.Equal(minimal, types) })
	if g == nil {
		return false
	}
	x.subsume(f, g, "shrunk to the fault types of a shrunk finding, joins its root cause:")
	return true
}

// simplifications are the parameter steps that apply to s: options off,
// no jitter or restart delay, persistence none, no replica or Sentinel.
func simplifications(s Schedule) []func(*Schedule) string {
	var out []func(*Schedule) string
	keys := make([]string, 0, len(s.Options))
	for k := range s.Options {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		out = append(out, func(c *Schedule) string { delete(c.Options, k); return "without " + k })
	}
	for i, f := range s.Faults {
		if f.Jitter > 0 {
			out = append(out, func(c *Schedule) string { c.Faults[i].Jitter = 0; return fmt.Sprintf("fault %d without jitter", i) })
		}
		if f.Delay > 0 {
			out = append(out, func(c *Schedule) string { c.Faults[i].Delay = 0; return fmt.Sprintf("fault %d restarts at once", i) })
		}
	}
	if s.Persistence != "" && s.Persistence != "none" {
		out = append(out, func(c *Schedule) string { c.Persistence = "none"; return "persistence none" })
	}
	if s.Sentinels > 0 {
		out = append(out, func(c *Schedule) string {
			c.Replicas, c.Sentinels = 0, 0
			delete(c.Options, "wait_replicas")
			return "no replica, no Sentinel"
		})
	}
	return out
}

// saveMinimal writes cur as f's minimal scenario.
func (x *explorer) saveMinimal(f *Finding, cur Schedule) {
	cur.Duration = runLength(cur)
	rel := filepath.Join("findings", f.Signature, "minimal.yaml")
	if err := os.WriteFile(filepath.Join(x.o.Dir, rel), []byte(cur.YAML()), 0o644); err != nil {
		x.progress("%v", err)
		return
	}
	f.Minimal, f.MinimalFaults, f.MinimalTypes = rel, len(cur.Faults), cur.FaultTypes()
	f.Repro = "chaos run --runs 5 " + filepath.Join(x.o.Dir, rel)
}

// repeat runs s up to Tries times, at most Need at once, and returns
// how many reproduced f and how many ran. With early it starts a run only
// while the answer is open (fewer than Need reproduced, fewer than
// Tries-Need+1 did not, counting the runs in flight either way), so a
// step that reproduces 3 times in a row costs 3 runs.
func (x *explorer) repeat(ctx context.Context, s Schedule, f *Finding, name string, early bool) (reproduced, ran int) {
	yaml := filepath.Join(x.o.Dir, "findings", f.Signature, "steps", name+".yaml")
	os.WriteFile(yaml, []byte(s.YAML()), 0o644)
	conc := max(1, min(x.o.Parallel, Need))
	results := make(chan bool)
	failed, inflight, launched := 0, 0, 0
	open := func() bool {
		return !early || (reproduced+inflight < Need && failed+inflight < Tries-Need+1)
	}
	for {
		for launched < Tries && inflight < conc && ctx.Err() == nil && open() {
			launched++
			inflight++
			dir := filepath.Join(x.o.Dir, "findings", f.Signature, "steps", fmt.Sprintf("%s-rep-%d", name, launched))
			go func(rep int) {
				if !x.slots.acquire(ctx, true) {
					results <- false
					return
				}
				r, err := x.timedRun(ctx, s, dir, seedOf(f.Signature, name, rep))
				x.slots.release()
				results <- err == nil && Reproduces(*r, f.Broke)
			}(launched)
		}
		if inflight == 0 {
			f.ShrinkRuns += ran
			return reproduced, ran
		}
		ok := <-results
		inflight--
		if ctx.Err() != nil {
			continue // interrupted: not counted
		}
		ran++
		if ok {
			reproduced++
		} else {
			failed++
		}
	}
}

// seedOf derives a repetition's seed from the finding, step and
// repetition, the same on every machine.
func seedOf(sig, step string, rep int) int64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s#%s#%d", sig, step, rep)
	return int64(h.Sum64() >> 1)
}

// sanitize keeps a signature's characters a scenario name allows.
func sanitize(sig string) string {
	b := []byte(sig)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			b[i] = '-'
		}
	}
	return string(b)
}

func firstLine(s string) string {
	for i, c := range s {
		if c == '\n' {
			return s[:i]
		}
	}
	return s
}
