// Package workload drives locklab's clients: each client loops acquire ->
// enter the shared resource -> read the counter -> hold the critical
// section -> write counter+1 -> exit -> release, on its own connections, and
// records latencies in HDR histograms (never raw samples), errors by kind,
// and a 100 ms timeline.
//
// StartClients owns how a run's clients run: in this process, one worker
// process per client (this binary in worker mode, Processes) or one client
// program per client (locks/external, Programs); the runner asks it for
// the clients and drives them through Clients.
//
// Run drives every client in this process. RunClient is one client's loop,
// used both by Run and by a client running in its own OS process, whose
// Recorder snapshot is merged back into the harness's with Merge.
//
// Files: workload.go the loop, clients.go StartClients, process.go worker
// processes, spawn.go what workers and programs share, protocol_*.go the
// client protocol's harness side (a program, the run's programs, one
// client's conversation, message decoding), recorder.go the measurements.
//
// Of locklab it imports only checker, locks and locks/external; it never
// imports cluster, faults, scenarios or runner (docs/architecture.md).
package workload
