// Package workload drives locklab's clients: each client loops acquire ->
// enter the shared resource -> read the counter -> hold the critical
// section -> write counter+1 -> exit -> release, on its own connections, and
// records latencies in HDR histograms (never raw samples), errors by kind,
// and a 100 ms timeline.
//
// Run drives every client in this process. RunClient is one client's loop,
// used both by Run and by a client running in its own OS process, whose
// Recorder snapshot is merged back into the harness's with Merge.
package workload
