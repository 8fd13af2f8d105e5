package report

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
)

// WriteJSON writes r as indented JSON.
func WriteJSON(w io.Writer, r *Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

var benchName = regexp.MustCompile(`[^A-Za-z0-9._=+-]+`)

// Benchstat writes one Go benchmark line per run so `benchstat` can compare
// saved outputs of two runs:
//
//	BenchmarkLock/<scenario>/<lock>/clients=N  <ops>  <ns/op> ns/op  <p50> acq-p50-ms  <p99> acq-p99-ms ...
//
// ns/op is the mean time per completed critical section across all clients
// (1e9 / throughput), so lower is better as benchstat assumes.
func Benchstat(w io.Writer, r *Result) error {
	fmt.Fprintf(w, "goos: %s\ngoarch: %s\npkg: locklab/%s\n", r.Host.OS, r.Host.Arch, r.Scenario)
	for _, run := range r.Runs {
		if run.Ops == 0 || run.Throughput == 0 {
			continue
		}
		name := "BenchmarkLock/" + benchName.ReplaceAllString(r.Scenario, "_") + "/" + benchName.ReplaceAllString(run.Lock, "_")
		keys := make([]string, 0, len(run.Params))
		for k := range run.Params {
			if k != "clients" {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			name += "/" + benchName.ReplaceAllString(strings.ReplaceAll(k, ".", "_")+"="+run.Params[k], "_")
		}
		name += fmt.Sprintf("/clients=%d", run.Clients)
		if r.Host.CPUs > 0 {
			name += fmt.Sprintf("-%d", r.Host.CPUs)
		}
		fmt.Fprintf(w, "%s\t%d\t%.0f ns/op\t%.4f acq-p50-ms\t%.4f acq-p99-ms\t%.4f handoff-p50-ms\t%d violations\n",
			name, run.Ops, 1e9/run.Throughput, run.Acquire.P50Ms, run.Acquire.P99Ms, run.Handoff.P50Ms, run.Violations)
	}
	return nil
}
