// Package all registers every lock implementation of locklab; import it for
// its side effect.
//
// Of locklab it imports only the lock packages (locks/adapters,
// locks/etcdlock, locks/external, locks/memcachedlock, locks/memlock,
// locks/mysqllock, locks/natslock, locks/pglock, locks/redislock,
// locks/redlock, locks/zklock); it never imports cluster, checker,
// scenarios, faults, runner or workload (docs/architecture.md).
package all

import (
	_ "github.com/locklab/locklab/locks/adapters"      // redsync, bsm-redislock, etcd-mutex, etcd-rw, zk-lib
	_ "github.com/locklab/locklab/locks/etcdlock"      // etcd-recipe, etcd-semaphore
	_ "github.com/locklab/locklab/locks/external"      // redis-py, kazoo, etcd3-py, tooz-*, curator, exec
	_ "github.com/locklab/locklab/locks/memcachedlock" // memcached-add
	_ "github.com/locklab/locklab/locks/memlock"       // mem (calibration)
	_ "github.com/locklab/locklab/locks/mysqllock"     // mariadb-get-lock
	_ "github.com/locklab/locklab/locks/natslock"      // nats-kv
	_ "github.com/locklab/locklab/locks/pglock"        // pg-advisory, pg-advisory-xact
	_ "github.com/locklab/locklab/locks/redislock"     // redis-* variants
	_ "github.com/locklab/locklab/locks/redlock"       // redlock
	_ "github.com/locklab/locklab/locks/zklock"        // zk-recipe, zk-herd, zk-rw, zk-semaphore
)
