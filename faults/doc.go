// Package faults performs the faults of a scenario (docs/scenario-file.md) on a
// running cluster, on schedule, and records when each really happened.
//
// It owns the fault table (table.go: every type's fields, targets, doc and
// action) and the Fault type scenarios decode into; it asks cluster.Plan
// which nodes and links exist. It imports cluster only: never scenarios,
// runner, workload or locks.
//
// Files: table.go the table, values.go the value fields, fault.go the
// Fault, check.go validation before start, topology.go selectors over the
// plan, run.go the scheduler, holder.go and leader.go resolving holder and
// zk-leader/etcd-leader when a fault starts, links.go/drop.go/netns.go/
// nodes.go/client.go/clock.go/clockreal.go/failover.go the actions, narrow.go what of
// a fault concerns a lock's cluster.
//
// Run applies a list of Fault at their at (counted from the
// workload's start, Env.Base), heals each after its for, or when the run
// ends for faults that last to the end, and returns one Window per fault for
// the result file. Check tells, before anything starts, which faults a
// cluster plan (cluster.PlanOf) and client setup cannot perform, each
// problem a *FieldError naming the fault and field; it is the one
// validator of faults (scenario parsing maps its errors to lines).
//
// Each fault type is a row of the table and a small value behind one
// interface (check, apply, observe); what each does is its row's Doc
// (`chaos list`, docs/scenario-file.md), how is its action's doc comment
// and docs/faults.md. A row declares its value fields (Value: kind,
// bounds, hint, doc), which Check, scenario decoding, the reference and
// explore follow: a new fault type is its row, its action and its test.
//
// "holder" in a link, node, group, isolate or client is resolved when the
// fault starts, through Env.Holder, to the client inside the critical
// section ("client-N"), and "waiters" in a partition's groups, with it, to
// every other client. "zk-leader" and "etcd-leader" in a link, node,
// group or isolate are resolved when the fault starts, through
// cluster.Leader, to the member that leads then; the window's target shows
// both ("zk-leader=zk-2").
package faults
