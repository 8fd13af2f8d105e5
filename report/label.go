package report

import (
	"sort"
	"strings"
)

// RunLabel is the one name of a run in tables and plots: its lock label
// followed by its sweep parameters other than clients (which has its own
// column and axis), a fault field shortened to its name unless another
// parameter has the same one: "etcd-recipe for=2s", "redis-cad keys=4".
func RunLabel(run Run) string {
	keys := make([]string, 0, len(run.Params))
	shorts := map[string]int{}
	for k := range run.Params {
		if k != "clients" {
			keys = append(keys, k)
			shorts[shortParam(k)]++
		}
	}
	sort.Strings(keys)
	label := run.Lock
	for _, k := range keys {
		name := k
		if shorts[shortParam(k)] == 1 {
			name = shortParam(k)
		}
		label += " " + name + "=" + run.Params[k]
	}
	return label
}

// shortParam is a parameter's name without its fault path:
// "faults[0].for" is "for".
func shortParam(k string) string {
	if i := strings.LastIndexByte(k, '.'); i >= 0 {
		return k[i+1:]
	}
	return k
}

// seriesKey names a run's series in plots and comparisons: its RunLabel.
func seriesKey(run *Run) string { return RunLabel(*run) }
