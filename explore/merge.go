package explore

import (
	"fmt"
	"path/filepath"
	"slices"
)

// Merge joins the explore folders of shards of one plan into one
// exploration written to out (which may be one of dirs): the runs of
// every shard, findings grouped by signature again (first found: the
// earliest; shrinking: a finished one, else the one that went furthest).
// Paths are rewritten relative to out. Shards of different plans (seed,
// locks, fault types) are refused.
func Merge(dirs []string, out string) (*Explore, error) {
	if len(dirs) == 0 {
		return nil, fmt.Errorf("explore merge: no folder given")
	}
	var all []*Explore
	for _, d := range dirs {
		e, err := Read(d)
		if err != nil {
			return nil, fmt.Errorf("explore merge: %w", err)
		}
		if len(all) > 0 && !all[0].Plan.Same(e.Plan) {
			return nil, fmt.Errorf("explore merge: %s and %s hold explorations of different plans (seed %d vs %d, locks or fault types differ): only shards of one plan merge",
				dirs[0], d, all[0].Plan.Seed, e.Plan.Seed)
		}
		all = append(all, e)
	}
	m := &Explore{Schema: Schema, Plan: all[0].Plan, Started: all[0].Started, Complete: true, Merged: dirs}
	rel := func(d, p string) string {
		if p == "" {
			return ""
		}
		r, err := filepath.Rel(out, filepath.Join(d, p))
		if err != nil {
			return filepath.Join(d, p)
		}
		return r
	}
	seen := map[int]bool{}
	for i, e := range all {
		d := dirs[i]
		m.ElapsedS += e.ElapsedS
		m.ExploreS += e.ExploreS
		m.Parallel += e.Parallel
		m.Complete = m.Complete && e.Complete
		if e.Started.Before(m.Started) {
			m.Started = e.Started
		}
		for _, r := range e.Runs {
			if seen[r.Index] {
				continue
			}
			seen[r.Index] = true
			r.Scenario, r.Dir = rel(d, r.Scenario), rel(d, r.Dir)
			m.Runs = append(m.Runs, r)
		}
		for _, f := range e.Findings {
			g := *f
			g.Minimal = rel(d, g.Minimal)
			if g.Minimal != "" {
				g.Repro = "chaos run --runs 5 " + filepath.Join(out, g.Minimal)
			}
			k := slices.IndexFunc(m.Findings, func(x *Finding) bool { return x.Signature == g.Signature })
			if k < 0 {
				m.Findings = append(m.Findings, &g)
				continue
			}
			h := m.Findings[k]
			runs := append(slices.Clone(h.Runs), g.Runs...)
			if g.FirstAtS < h.FirstAtS {
				h.FirstRun, h.FirstAtS = g.FirstRun, g.FirstAtS
			}
			if better(&g, h) {
				first, at := h.FirstRun, h.FirstAtS
				*h = g
				h.FirstRun, h.FirstAtS = first, at
			}
			slices.Sort(runs)
			h.Runs = slices.Compact(runs)
		}
	}
	slices.SortFunc(m.Runs, func(a, b RunRecord) int { return a.Index - b.Index })
	slices.SortStableFunc(m.Findings, func(a, b *Finding) int {
		switch {
		case a.FirstAtS < b.FirstAtS:
			return -1
		case a.FirstAtS > b.FirstAtS:
			return 1
		}
		return 0
	})
	if err := Write(out, m); err != nil {
		return m, err
	}
	return m, nil
}

// better reports whether f's shrinking is worth more than g's: finished,
// else more steps.
func better(f, g *Finding) bool {
	if (f.Shrink == "done") != (g.Shrink == "done") {
		return f.Shrink == "done"
	}
	return len(f.Steps) > len(g.Steps)
}
