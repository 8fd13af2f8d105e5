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
//     units of that commit latency;
//   - PostgreSQL, MariaDB and NATS JetStream KV: likewise, with what their
//     locks do to be granted and to release (pg_try_advisory_lock and
//     pg_advisory_unlock; GET_LOCK(name, 0) and RELEASE_LOCK; a KV create
//     and a conditional delete) sent by pgx, go-sql-driver/mysql and
//     nats.go, and the hand-offs of pg-advisory, mariadb-get-lock and
//     nats-kv in those units. The databases' grants are no consensus
//     writes, and NATS's bucket has one replica: a replicated one grants
//     twice on NATS before 2.9.21 (Debian's is 2.9.10);
//   - memcached: memcached-add's add, and its release (gets, then cas to
//     an expired item), sent on one connection speaking the text protocol
//     (the lock speaks it itself: there is no other client), and its
//     hand-off in those units and in version round trips.
//
// Every harness figure comes from runner.Measure, the runner's own
// connect -> drive -> collect path. The package starts its servers with
// cluster and never imports scenarios.
// Of locklab it imports only cluster, internal/resp, locks, locks/all,
// locks/memcachedlock, locks/memlock, locks/mysqllock, locks/natslock,
// locks/pglock, locks/redislock, report, runner and workload; it never
// imports atlas, cmd/internal/cli or the commands (docs/architecture.md).
package calibrate
