// Package runner runs one scenario end to end: for every lock (and every
// sweep point) it starts a fresh cluster, connects the clients through their
// proxied links, runs the workload against the shared resource while the
// scenario's faults are applied, collects the result, and stops every server
// it started — also when the context is cancelled (Ctrl-C), in which case the
// result is written with complete=false. Both cmd/bench and cmd/chaos use it.
// It owns the order of a run (cluster -> workload with faults -> result);
// it never imports cmd or cmd/internal/cli, and nothing below it imports it.
// Of locklab it imports only checker, cluster, faults, internal/suggest,
// internal/version, locks, locks/external, report, scenarios and workload;
// it never imports atlas, explore or calibrate, which drive it
// (docs/architecture.md).
package runner
