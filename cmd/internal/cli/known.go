package cli

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/locklab/locklab/atlas"
	"github.com/locklab/locklab/report"
	"github.com/locklab/locklab/scenarios"
)

// KnownPrefix starts the names of the built-in scenarios that reproduce a
// known failure (the catalogue `chaos run --known` runs).
const KnownPrefix = "known-"

// KnownRuns is how many times `chaos run --known` runs each scenario
// unless --runs says otherwise.
const KnownRuns = 5

// knownNames returns the scenarios `chaos run --known` runs: every
// built-in known-<slug> one, or those of args (each must be one).
func knownNames(args []string) ([]string, error) {
	var all []string
	for _, n := range scenarios.BuiltinNames() {
		if strings.HasPrefix(n, KnownPrefix) {
			all = append(all, n)
		}
	}
	if len(args) == 0 {
		return all, nil
	}
	for _, a := range args {
		if !strings.HasPrefix(a, KnownPrefix) || !contains(all, a) {
			return nil, Usagef("--known: %q is not a known failure (known: %s)", a, strings.Join(all, ", "))
		}
	}
	return args, nil
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// knownEntries turns the results of the known-failure scenarios into the
// catalogue's rows: one per scenario and lock, in the order run.
func knownEntries(scs []*scenarios.Scenario, results []*report.Result, runs int) []report.KnownEntry {
	var out []report.KnownEntry
	for _, sc := range scs {
		byLock := map[string]*report.KnownEntry{}
		var order []string
		for _, r := range results {
			if r.Scenario != sc.Name {
				continue
			}
			for i := range r.Runs {
				run := &r.Runs[i]
				e := byLock[run.Lock]
				if e == nil {
					e = &report.KnownEntry{Scenario: sc.Name, Failure: knownFailure(sc.Description), References: sc.References,
						Lock: run.Lock, Expect: expectText(run.Expectations),
						Command: fmt.Sprintf("chaos run --runs %d %s", runs, sc.Name)}
					byLock[run.Lock] = e
					order = append(order, run.Lock)
				}
				e.Runs++
				if report.RunVerdict(run) == "met" {
					e.Reproduced++
				}
			}
		}
		for _, l := range order {
			e := byLock[l]
			e.Lo, e.Hi = atlas.Wilson(e.Reproduced, e.Runs)
			out = append(out, *e)
		}
	}
	return out
}

// knownFailure is the failure a known-<slug> scenario reproduces: its
// description's first sentence, whole.
func knownFailure(desc string) string {
	s := strings.Join(strings.Fields(desc), " ")
	if i := strings.Index(s, ". "); i >= 0 {
		s = s[:i+1]
	}
	return s
}

// expectText is an expectation as the scenario states it ("violations >0,
// lock_faults >0").
func expectText(es []report.Expectation) string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.Field + " " + e.Want
	}
	return strings.Join(parts, ", ")
}

// writeKnown writes the catalogue into dir and names it on w.
func writeKnown(w io.Writer, dir string, entries []report.KnownEntry) error {
	if err := report.WriteKnown(dir, entries); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nknown failures: %s\n", filepath.Join(dir, "known.md"))
	for _, e := range entries {
		fmt.Fprintf(w, "  %-40s %-28s reproduced %d/%d [%.2f-%.2f]\n", e.Scenario, e.Lock, e.Reproduced, e.Runs, e.Lo, e.Hi)
	}
	return nil
}
