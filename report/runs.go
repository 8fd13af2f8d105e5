package report

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/locklab/locklab/checker"
)

// RunsSummary sums up repeated runs of one scenario (`run --runs N`): per
// lock (and sweep point), the median and range of throughput and acquire
// latency, and the safety figures summed over the runs. It is written as
// runs.json and runs.md beside the run-1, run-2, ... folders.
type RunsSummary struct {
	Scenario string     `json:"scenario"`
	Runs     int        `json:"runs"`
	Version  string     `json:"version,omitempty"`
	Locks    []LockRuns `json:"locks"`
}

// Spread is the median, least and greatest of one figure over the runs.
type Spread struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

// LockRuns is one lock's (at one sweep point's) figures over the runs.
// Runs counts the runs that measured it; Failed those that ended with an
// error, whose figures are left out of the spreads.
type LockRuns struct {
	Lock   string            `json:"lock"`
	Params map[string]string `json:"params,omitempty"`
	Runs   int               `json:"runs"`
	Failed int               `json:"failed"`

	Throughput   Spread `json:"throughput"`
	AcquireP50Ms Spread `json:"acquire_p50_ms"`
	AcquireP99Ms Spread `json:"acquire_p99_ms"`

	// Ops, errors and the safety figures, summed over every run.
	Ops    int64 `json:"ops"`
	Errors int64 `json:"errors"`
	checker.SafetyFigures

	// LostLeases sums the runs' lost leases (nil when no run measured
	// them); ZombieMsP50 is the median of the medians of the runs that
	// lost one, ZombieMsMax the longest zombie time of any run (both nil
	// when none lost one: docs/verdicts.md, "Zombie time").
	LostLeases  *int     `json:"lost_leases,omitempty"`
	ZombieMsP50 *float64 `json:"zombie_ms_p50,omitempty"`
	ZombieMsMax *float64 `json:"zombie_ms_max,omitempty"`
}

// SummarizeRuns sums up results, repeated runs of one scenario, per lock
// and sweep point, in the order they first appear.
func SummarizeRuns(results []*Result) *RunsSummary {
	s := &RunsSummary{Runs: len(results), Locks: []LockRuns{}}
	type acc struct {
		lr           *LockRuns
		tp, p50, p99 []float64
		zombieP50    []float64
	}
	var order []string
	accs := map[string]*acc{}
	for _, r := range results {
		if s.Scenario == "" {
			s.Scenario, s.Version = r.Scenario, r.Version
		}
		for _, run := range r.Runs {
			key := run.Lock + " " + paramString(run.Params)
			a := accs[key]
			if a == nil {
				a = &acc{lr: &LockRuns{Lock: run.Lock, Params: run.Params}}
				accs[key] = a
				order = append(order, key)
			}
			lr := a.lr
			lr.Runs++
			if run.Error != "" {
				lr.Failed++
			} else {
				a.tp = append(a.tp, run.Throughput)
				a.p50 = append(a.p50, run.Acquire.P50Ms)
				a.p99 = append(a.p99, run.Acquire.P99Ms)
			}
			lr.Ops += run.Ops
			for _, n := range run.Errors {
				lr.Errors += n
			}
			lr.SafetyFigures.Add(run.SafetyFigures)
			if run.LostLeases != nil {
				lr.LostLeases = ptr(deref(lr.LostLeases) + *run.LostLeases)
			}
			if run.ZombieMsP50 != nil {
				a.zombieP50 = append(a.zombieP50, *run.ZombieMsP50)
			}
			if run.ZombieMsMax != nil && (lr.ZombieMsMax == nil || *run.ZombieMsMax > *lr.ZombieMsMax) {
				lr.ZombieMsMax = ptr(*run.ZombieMsMax)
			}
		}
	}
	for _, k := range order {
		a := accs[k]
		a.lr.Throughput, a.lr.AcquireP50Ms, a.lr.AcquireP99Ms = spread(a.tp), spread(a.p50), spread(a.p99)
		if len(a.zombieP50) > 0 {
			a.lr.ZombieMsP50 = ptr(spread(a.zombieP50).Median)
		}
		s.Locks = append(s.Locks, *a.lr)
	}
	return s
}

// spread is the median (the mean of the middle two for an even count),
// least and greatest of xs; zero for none.
func spread(xs []float64) Spread {
	if len(xs) == 0 {
		return Spread{}
	}
	v := append([]float64(nil), xs...)
	sort.Float64s(v)
	n := len(v)
	med := v[n/2]
	if n%2 == 0 {
		med = (v[n/2-1] + v[n/2]) / 2
	}
	return Spread{Median: med, Min: v[0], Max: v[n-1]}
}

func paramString(p map[string]string) string {
	keys := slices.Sorted(maps.Keys(p))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + p[k]
	}
	return strings.Join(parts, " ")
}

// WriteRuns writes s as runs.json and runs.md into dir.
func WriteRuns(dir string, s *RunsSummary) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "runs.json"), append(data, '\n'), 0o644); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, "runs.md"))
	if err != nil {
		return err
	}
	fmt.Fprintf(f, "# %s: %d runs\n\n", s.Scenario, s.Runs)
	fmt.Fprintln(f, "Median over the runs, with the least and greatest in brackets; safety figures summed over every run. Each run's own report is in its run-N folder.")
	fmt.Fprintln(f)
	fmt.Fprintln(f, "| lock | runs | ops/s | acq p50 ms | acq p99 ms | ops | errors | violations | lost upd | stale | incidents (lock/client) | dup tokens | token regr | zombie ms p50/max (lost leases) |")
	fmt.Fprintln(f, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, l := range s.Locks {
		c := l.cells()
		fmt.Fprintf(f, "| %s |\n", strings.Join(c, " | "))
	}
	return f.Close()
}

// WriteText prints s as an aligned table.
func (s *RunsSummary) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "%s over %d runs: median [min - max]; safety figures summed\n", s.Scenario, s.Runs)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "lock\truns\tops/s\tacq p50 ms\tacq p99 ms\tops\terrors\tviolations\tlost upd\tstale\tincidents (lock/client)\tdup tokens\ttoken regr\tzombie ms p50/max (lost leases)\t")
	for _, l := range s.Locks {
		fmt.Fprintf(tw, "%s\t\n", strings.Join(l.cells(), "\t"))
	}
	return tw.Flush()
}

// cells are one row of the runs table.
func (l LockRuns) cells() []string {
	name := l.Lock
	if p := paramString(l.Params); p != "" {
		name += " " + p
	}
	runs := fmt.Sprint(l.Runs)
	if l.Failed > 0 {
		runs += fmt.Sprintf(" (%d failed)", l.Failed)
	}
	return []string{name, runs,
		l.Throughput.format("%.0f"), l.AcquireP50Ms.format("%.3g"), l.AcquireP99Ms.format("%.3g"),
		fmt.Sprint(l.Ops), fmt.Sprint(l.Errors), fmt.Sprint(l.Violations), fmt.Sprint(l.LostUpdates),
		fmt.Sprint(l.StaleTokens), fmt.Sprintf("%d (%d/%d)", l.Incidents, l.LockFaults, l.ClientFaults),
		fmt.Sprint(l.DuplicateTokens), fmt.Sprint(l.TokenRegressions), l.zombieCell()}
}

// zombieCell is the zombie times and lost leases of a row: "-" when no
// run measured them, "none lost" when none was lost.
func (l LockRuns) zombieCell() string {
	switch {
	case l.LostLeases == nil:
		return "-"
	case l.ZombieMsMax == nil:
		return "none lost"
	}
	return fmt.Sprintf("%.0f/%.0f (%d)", deref(l.ZombieMsP50), *l.ZombieMsMax, *l.LostLeases)
}

func (s Spread) format(verb string) string {
	return fmt.Sprintf(verb+" ["+verb+" - "+verb+"]", s.Median, s.Min, s.Max)
}

// ptr returns a pointer to a copy of v.
func ptr[T any](v T) *T { return &v }

// deref is *p, or the zero value when p is nil.
func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
