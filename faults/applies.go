package faults

import "github.com/locklab/locklab/cluster"

// Applies reports whether f acts on a cluster of plan. Each lock runs on a
// fresh cluster of its own backend only, so in a scenario comparing Redis
// and ZooKeeper locks a fault on zk-0 does not apply to the Redis locks'
// runs: f applies when a server it names (a node, a leader selector, a
// peers selector) is in plan, or when it names no server at all
// (pause-client, client links named by clients, client-N or holder).
func Applies(f Fault, plan cluster.Plan) bool {
	named, present := false, false
	mapNames(f, func(n string) string {
		if _, client := clientIndex(n); n == "" || n == cluster.Clients || n == Holder || client {
			return n
		}
		named = true
		if _, ok := plan.Node(n); ok || plan.Count(selectorKind[n]) > 0 {
			present = true
		}
		return n
	})
	return present || !named
}

// selectorKind maps each selector standing for servers to a kind of the
// servers it stands for.
var selectorKind = map[string]string{
	ZKLeader: cluster.KindZooKeeper, EtcdLeader: cluster.KindEtcd,
	cluster.EtcdPeers: cluster.KindEtcd, cluster.RedisPeers: cluster.KindRedis,
}
