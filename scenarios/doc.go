// Package scenarios loads and validates scenario files (docs/scenario-file.md) and
// embeds the built-in ones. Every error names the file, the line and the
// field, and says what is allowed; a scenario that loads is ready to run.
//
// It owns the YAML contract and its line-accurate validation; the fault
// table belongs to package faults (it decodes faults into faults.Fault) and
// the model of nodes and links to cluster.PlanOf. It imports faults,
// cluster, locks (the registry), checker (for SafetyFigures, what
// expectations are checked against; checker imports nothing) and
// internal/suggest (its "did you mean" hints) only: never runner, workload
// or report (docs/architecture.md).
//
// Files: parse.go the top level and workload, cluster.go, locks.go,
// faults.go (fault parsing), faults_check.go (faults.Check's errors mapped
// to lines), sweep.go, expect.go and
// condition.go, one per section; yamlnode.go YAML helpers.
//
// # Entry points
//
// Parse(file, data) and Load(path) read one file; Resolve(arg) takes what a
// user typed (a path, or a built-in name such as "redis-baseline");
// Builtin and BuiltinNames list the embedded scenarios/*.yaml. Lock names
// are checked against the locks registry, so import the lock packages
// (locks/all) before parsing.
//
// A bad file gives an *Error listing every Problem found, sorted by line:
//
//	scenarios/x.yaml:12: workload.clients: must be >= 1 (got -3)
//	scenarios/x.yaml:14: workload.durration: unknown field (allowed: clients, duration, ops, ...)
//	scenarios/x.yaml:21: locks[2]: unknown lock "redis-foo" (known: redis-cad, ...)
//
// Unknown fields are errors at every level. YAML anchors, aliases and merge
// keys (<<: *base) work; a file holds exactly one YAML document.
//
// # Defaults
//
// Parse applies these, so a Scenario has no unset fields:
//
//	seed                      1
//	cluster.provider          local
//	cluster.redis             primaries: the most any lock needs (Spec.MinRedis, at least 1);
//	                          replicas 0, sentinels 0, persistence none
//	cluster.zookeeper/etcd    nodes: 1
//	workload.clients          1
//	workload.duration         10s, unless ops is set (duration and ops exclude each other)
//	workload.ttl              10s; each lock's TTL defaults to it
//	workload.critical_section 0
//	workload.keys             1
//	workload.mode             closed (open needs rate > 0; rate is only for open)
//	workload.process_per_client  false; true when a pause-client fault needs it
//	workload.key_per_client   false; true: client i always uses key i (keys >= clients)
//	workload.acquire_timeout  max(2 × the longest ttl, 10s)
//	resource.fencing          off
//	locks[i].label            the lock name; when the same lock appears more
//	                          than once, the name plus " k=v" of the ttl,
//	                          retry, key and options the entry sets, sorted
//
// A backend section the locks need but the file leaves out is added with
// one node (Redis: as many primaries as the locks need), so
// "locks: [zk-recipe]" alone runs against a single ZooKeeper server. A
// section that is written must be big enough: redlock with
// cluster.redis.primaries: 1 is an error. Provider external cannot be
// defaulted: cluster.external must list the servers of every backend the
// locks use.
//
// # Locks
//
// A locks entry is a name or a mapping {name, ttl, retry, key, label,
// <option>: value}; any key besides the five is a backend option
// (Spec.Options) checked with Spec.CheckOptions and kept as a string. The
// same lock may appear twice with different options; labels must be
// unique, "default" is reserved, and a label may not be another entry's
// lock name.
//
// # Faults
//
// Package faults owns the fault table (faults.Lookup: each type's fields,
// targets and doc; `chaos list` prints it). at is required everywhere, for
// only where the fault heals; pause-client sets process_per_client;
// failover needs sentinels >= 1 and replicas >= 1; restart restarts on the
// same data dir, so what survives follows cluster.redis.persistence.
//
// Node names must exist in the scenario's cluster: redis-0..redis-{P-1},
// redis-N-r0.., sentinel-N, zk-N, etcd-N, and the clients: clients,
// client-N (N below the fewest clients of any run, sweeps included), holder.
// zk-leader and etcd-leader stand for the member that leads when the fault
// starts (package faults asks the cluster then; the result's fault target
// reads "zk-leader=zk-2"); they are accepted wherever a member of their
// backend is (node, isolate, groups, link ends), and the fault must be
// possible whichever member leads. In groups the selector places the
// leader: a member it names is dropped from every other place the groups
// name it, so [[zk-leader], [zk-0, zk-1, zk-2, clients]] isolates the
// leader, and [[zk-leader, zk-0], [zk-1, zk-2, zk-3, zk-4, clients]] cuts
// off the leader with zk-0 (zk-0 alone when it leads).
// A link A->B must be one the cluster proxies (cluster.PlanOf, the model
// package faults acts on): from a client (clients, client-N, holder) to any server, from a
// replica to its primary (redis-0-r0->redis-0), from a sentinel to a Redis
// server or another sentinel (sentinel-1->redis-0, sentinel-1->sentinel-0),
// with sentinels from any server of a master group to another
// (redis-0->redis-0-r0: replication once a failover swapped the roles),
// from redis-peers to a Redis node (every peer connection into it), from
// one ZooKeeper member to another, from one etcd member to another
// (etcd-1->etcd-0), or from etcd-peers to an etcd member (every other
// member's connections). Redis peer links exist where every Redis node has
// a peer address: with replicas or sentinels (see package cluster). So a
// bare sentinel-N names Sentinel's own traffic too, and a partition may
// separate sentinels from Redis servers and from each other (the primary
// cut off from the sentinels, its replica and the clients:
// [[redis-0], [sentinel-0, sentinel-1, sentinel-2, redis-0-r0, clients]]).
// A partition's groups must cut at least one proxied link. With provider
// external only client links exist, so only client-side faults are
// possible: latency, bandwidth, reset and partition on client links, and
// pause-client. These rules are package faults' (faults.Check, against the
// cluster's plan); this package reports what it finds with lines.
//
// # Sweeps
//
// sweep: runs the scenario once per value (bench). Keys are "clients" and
// "faults[N].FIELD" for any scalar field of fault N except type:
//
//	sweep:
//	  clients: [1, 4, 16]
//	  faults[0].for: [1s, 5s]      # quote the key in flow style:
//	                               # sweep: {clients: [1, 4], "faults[0].for": [1s, 5s]}
//
// The runs are every combination, clients outermost, at most MaxSweepRuns
// per lock. A swept field need not
// be written in the fault itself; each value is validated as if it were
// (errors point at the value, as sweep.faults[0].for[1]). Expand returns
// the runs as scenarios with the values applied.
//
// # Expectations
//
// expect: maps a lock name, a label or "default" to conditions on the
// run's counts and performance figures. A lock's conditions are its
// label's entry, then its name's, then default's, field by field
// (Scenario.ExpectFor); Expect.Evaluate judges them, the one evaluator.
// Quote conditions that start with > or <: YAML reads a bare > as a
// folded block.
//
// Counts take whole numbers: 0, N, ">0", ">=N", "<N", "<=N", "==N" (a bare
// N means ==N). They are violations, stale_tokens, stale_rejected,
// stale_accepted, lost_updates, errors, incidents, lock_faults,
// client_faults, duplicate_tokens, token_regressions and zero_tokens.
//
// Performance gates take real numbers, written N or N.M with the same
// operators (">=5000", "<=20", ">0.5", "==0"), and gate CI on performance:
//
//	throughput                 completed operations per second over the run
//	acquire_p50_ms             median Acquire latency, ms
//	acquire_p99_ms             99th percentile Acquire latency, ms
//	handoff_p50_ms             median hand-off (previous holder's exit to the
//	                           waiting next holder's entry), ms
//	availability_during_fault  0..1, see below; only in a scenario with faults
//
// A gate not met fails the run, with the figure in the reason
// ("throughput 3120.5 ops/s, want >=5000"); so does a figure the run did not
// measure (no acquisition, no hand-off, no fault window). Gates are never
// inconclusive: they need no fault.
//
// availability_during_fault is the completion rate inside the union of the
// fault windows (each from the fault's start to its heal, or to the run's
// end when it lasts to it) divided by the completion rate before the first
// fault, from the run's timeline of 100 ms buckets (a bucket cut by a
// window's edge counts its share of completions). Faults that did not apply
// are left out. It is not measured (nil in the result) when no fault
// applied, or nothing completed before the first fault (a fault at 0s
// included). 1 means as fast as before the fault; it can exceed 1.
//
// # Evidence
//
// A safety count that came out 0 ("violations: 0") is a claim, and a claim
// needs evidence: the fault must have been exercised while clients
// contended for the lock. min_visits (default DefaultMinVisits, 3) sets how
// much. A run's safety claims are inconclusive, not met, when
//
//   - a fault did not apply (an error, never started, not applicable for
//     the lock);
//   - for any fault, fewer than min_visits visits overlapped its evidence
//     window, or fewer than 2 distinct clients contended in it (1 when
//     min_visits is 1): nobody but the holder wanted the lock while the
//     fault could do harm. A client contends in the window when it visited
//     there, or when an acquire of it that granted nothing was in progress
//     there while another client was inside the lock's resource: refused
//     by the lock (not_obtained), timed out, or still waiting at the run's
//     end (the history's attempt lines; an acquire that failed on the
//     backend shows no contention). A lock that keeps its holder and
//     refuses everyone else under a fault shows its contention by those
//     waiters, and its visits may all be the holder's. The window runs from the fault's
//     start to one lease (the run's ttl) after its heal, within the run: a
//     fault's harm shows within a lease of its heal or never (a holder
//     paused for less than its lease writes at the heal; a key a restart
//     took is granted again while its holder's lease runs), and a window
//     of the fault alone would hold only the holder's visit for every
//     correct lock. A visit overlaps it when it entered no later than the
//     window's end and left no earlier than its start (a visit still
//     inside at the end counts). Visits that began a lease or more after
//     the heal are not evidence. The reason gives the numbers: "2 visits,
//     1 contender in the window of fault 0 (pause-client holder
//     2.0s-5.0s, to a lease after its heal), min_visits 3, >= 2
//     contenders" ("3 contenders (2 waiting)" when some only waited);
//   - a run without faults made fewer than min_visits visits;
//   - a resource call failed, so visits went unchecked.
//
// Visits are counted at 100 ms resolution and never beyond: a visit counts
// in a window when its entry bucket ends by the window's end and its exit
// bucket begins after the bucket of the window's start, so a window
// shorter than a bucket (a restart, a clock jump) counts the visits that
// spanned it whole. A wait counts in a 100 ms bucket it covered whole,
// lying whole inside the window, in which another client was inside. A
// non-zero safety count is evidence by itself and is judged as usual. The
// result records the union of the windows as visits_in_window,
// contenders_in_window and waiting_in_window; each fault's visits_after
// still counts the visits that began after its start.
package scenarios
