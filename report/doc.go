// Package report holds locklab's result model (result.json, a versioned
// schema whose fields listed in docs/results.md are a contract), writes it
// atomically, and renders results as tables, plots and Markdown/HTML
// reports. It reads results only, never live servers: it never imports
// cluster, faults, runner, workload, locks or scenarios. RunLabel
// (label.go) is the one name of a run in tables and plots.
// Of locklab it imports only checker, for the safety figures a result
// carries (docs/architecture.md).
package report
