// Package atlas runs every registered lock against every fault family, N
// seeded runs per cell, and writes one atlas: atlas.json (schema
// locklab/atlas/v1), atlas.md, a self-contained atlas.html and atlas.png.
//
// A Family is a time-compressed scenario template: for each lock it writes
// a YAML scenario (kept in the atlas folder, so a reproduction names the
// exact file that ran) whose timings derive from one lease, or says why it
// does not apply. NewPlan lists the cells and their jobs (seeds derive from
// the cell and the run index), Plan.Shard keeps a deterministic slice of
// the jobs, Execute runs jobs through runner (in parallel, skipping
// finished ones), and Build reads the runs back from one folder or from
// the shards of one plan into cells with their verdicts: safe, unsafe,
// unsafe-without-fencing, inconclusive, not-applicable.
//
// It is runner-level: it imports runner, scenarios, report and locks, and
// only cmd/chaos (through cmd/internal/cli) imports it.
// In full, of locklab it imports only checker, cluster, locks,
// locks/external, report, runner and scenarios; it never imports explore,
// cmd/internal/cli or the commands, which sit above it
// (docs/architecture.md).
package atlas
