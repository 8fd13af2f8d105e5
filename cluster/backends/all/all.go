// Package all registers every backend of the cluster's backend table
// (cluster/backends/...); import it for its side effect.
//
// Of locklab it imports only cluster and the backend packages.
package all

import (
	_ "github.com/locklab/locklab/cluster/backends/etcd"      // etcd-0, ...
	_ "github.com/locklab/locklab/cluster/backends/mariadb"   // mariadb-0
	_ "github.com/locklab/locklab/cluster/backends/memcached" // memcached-0
	_ "github.com/locklab/locklab/cluster/backends/nats"      // nats-0, ...
	_ "github.com/locklab/locklab/cluster/backends/postgres"  // postgres-0, postgres-0-rN
	_ "github.com/locklab/locklab/cluster/backends/redis"     // redis-0, redis-0-rN, sentinel-N
	_ "github.com/locklab/locklab/cluster/backends/zookeeper" // zk-0, ...
)
