// Package explore draws random fault schedules from the fault table's
// bounds, runs each as an ordinary scenario through runner, groups the
// unsafe runs into findings by signature (lock, what broke, the fault
// types that bit), shrinks each finding to a minimal scenario that still
// reproduces in at least 3 of 5 runs, and writes explore.json, explore.md
// and explore.html (docs/explore.md).
//
// It is runner-level like atlas, whose Wilson interval it reuses; only
// cmd/chaos imports it.
// Of locklab it imports only atlas, checker, cluster, faults, locks,
// report, runner and scenarios; it never imports cmd/internal/cli or the
// commands (docs/architecture.md).
package explore
