// Package faults performs the faults of a scenario (docs/scenario-file.md) on a
// running cluster, on schedule, and records when each really happened.
//
// It owns the fault table (table.go: every type's fields, targets, doc and
// action) and the Fault type scenarios decode into; it asks cluster.Plan
// which nodes and links exist. It imports cluster only: never scenarios,
// runner, workload or locks.
//
// Files: table.go the table, fault.go the Fault, check.go validation
// before start, topology.go selectors over the plan, run.go the scheduler,
// holder.go and leader.go resolving holder and zk-leader/etcd-leader when
// a fault starts, links.go/nodes.go/client.go/clock.go/failover.go the
// actions, applies.go which faults concern a lock's cluster.
//
// Run applies a list of Fault at their at (counted from the
// workload's start, Env.Base), heals each after its for, or when the run
// ends for faults that last to the end, and returns one Window per fault for
// the result file. Check tells, before anything starts, which faults a
// cluster plan (cluster.PlanOf) and client setup cannot perform, each
// problem a *FieldError naming the fault and field; it is the one
// validator of faults (scenario parsing maps its errors to lines).
//
// Each fault type is a small value behind one interface (check, apply), in
// a map from the type's name; the mechanisms, all through package cluster:
//
//	latency       latency toxic (± jitter) on the downstream (To->From:
//	              replies, replication stream) of each selected link, so a
//	              request/reply round trip is slower by latency once
//	bandwidth     bandwidth toxic of rate_kbps KB/s on both directions
//	partition     Link.Cut on every proxied link between the groups (data is
//	              held, not dropped: requests hang as in a real partition);
//	              isolate: X is X against every other server and the clients
//	reset         Link.Reset closes live connections; with for, a reset_peer
//	              toxic also resets new ones on first data until healed
//	pause         SIGSTOP the server's process group, SIGCONT when healed
//	kill          SIGKILL the server's process group; it stays down
//	restart       kill, wait delay, start again on the same data dir and port
//	failover      kill the group's current primary, poll the sentinels until
//	              one reports a promoted replica (bounded by FailoverTimeout)
//	pause-client  Env.Clients.Pause / Resume of one client process; holder
//	              waits for the client inside the critical section
//	clock-jump    emulated: one Lua script on the node shortens every TTL by
//	              offset and deletes the keys it would expire
//
// "holder" in a link, node, group, isolate or client is resolved when the
// fault starts, through Env.Holder, to the client inside the critical
// section ("client-N"). "zk-leader" and "etcd-leader" in a link, node,
// group or isolate are resolved when the fault starts, through
// cluster.Leader, to the member that leads then; the window's target shows
// both ("zk-leader=zk-2").
package faults
