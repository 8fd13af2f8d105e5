package redis

import (
	"net"

	"github.com/locklab/locklab/cluster"
)

// Redis peer links per directed pair (local and docker providers).
//
// In a Redis topology with replicas or sentinels, every node — primary,
// replica, sentinel — has one peer address that the whole topology uses
// for it: a replica's replicaof is its primary's peer address, sentinels
// monitor the primaries at theirs, every server announces its own
// (replica-announce-ip/-port, which is what a primary lists in INFO
// replication and so where Sentinel finds replicas) and every sentinel
// too (sentinel announce-ip/-port, what its hellos say and so where the
// other sentinels and SENTINEL SENTINELS find it). Sentinel therefore sees
// one consistent address per node: it never reconfigures a replica to a
// "real" address (+fix-slave-config), and after a failover it points the
// remaining replicas, the old primary when it returns, and clients asking
// get-master-addr-by-name at peer addresses too.
//
// A demultiplexer listens on each peer address (cluster.Build.FrontPeers). Redis sends no
// header that names the sender, so it is named by the process that owns
// the connecting socket (local provider) or by its source address, the
// sender's container address (docker), and the connection goes through the
// link of that pair:
//
//	redis-0-r0->redis-0    replication (the replica's connection to its primary)
//	redis-0->redis-0-r0    replication after a failover made redis-0-r0 the
//	                       primary and redis-0 came back as its replica; with
//	                       sentinels every server of a master group has a link
//	                       to every other one, since roles change
//	sentinel-1->redis-0    Sentinel's monitoring (commands, pub/sub hellos,
//	                       failover reconfiguration), to every server
//	sentinel-1->sentinel-0 Sentinel's own traffic: PING, hellos, votes
//	                       (is-master-down-by-addr)
//	redis-peers->redis-0   connections to redis-0's peer address whose sender
//	                       is none of the above (a client dialing an address
//	                       Sentinel reported without Redirect, a socket gone
//	                       before it was looked up); as a selector source,
//	                       every peer link into redis-0
//
// Without replicas and sentinels (independent primaries, Redlock) nothing
// dials a peer address and none is set up.

// front is what the topology asks of Build.FrontPeers: every node
// fronted, with a link from every node that dials it (the plan's links,
// peerFrom) and redis-peers->n, all with upstreams up(n) (labelled by
// labels when there are several); each front address is an alias of its
// node (Sentinel and the slot map report it). Under provider local
// senders are named by the process that owns the connecting socket.
func (t *topology) front(up func(*cluster.Node) []string, labels []string) cluster.PeerFront {
	return cluster.PeerFront{Nodes: t.all, Up: up, Labels: labels, Alias: true,
		Identify: func(senders []*cluster.Node) func(net.Conn) ([]byte, int) {
			return func(conn net.Conn) ([]byte, int) { return nil, cluster.SenderBySocket(senders, conn) }
		}}
}
