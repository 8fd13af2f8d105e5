// Package calibrate measures the harness against each backend's own limit,
// in one run, so a comparison's numbers can be trusted to be the locks'
// and not the harness's:
//
//   - mem: the harness's ceiling, a lock that costs nothing (critical
//     sections per second, wall and CPU time of harness per critical section);
//   - Redis: redis-benchmark's raw rate for the very commands of redis-cad
//     (the scripts redislock exports) against the harness's redis-cad rate,
//     direct and through the client proxies; hand-off in round trips;
//   - ZooKeeper and etcd: the raw cost of one lock-relevant write (create
//     and delete of an ephemeral node; put and delete with a lease) through
//     the client proxies, and zk-recipe's and etcd-recipe's hand-off in
//     units of that commit latency.
//
// Every harness figure comes from runner.Measure, the runner's own
// connect -> drive -> collect path. The package starts its servers with
// cluster and never imports scenarios.
// Of locklab it imports only cluster, internal/resp, locks, locks/all,
// locks/memlock, locks/redislock, report, runner and workload; it never
// imports atlas, cmd/internal/cli or the commands (docs/architecture.md).
package calibrate
