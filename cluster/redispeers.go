package cluster

import (
	"fmt"
	"net"
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
// A demultiplexer listens on each peer address (peers.go). Redis sends no
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

// buildRedisPeers creates the peer plumbing of a Redis topology: for each
// node n (in the order of nodes), a link from every node that dials n
// (the plan's links, redisPeerFrom in plan.go), the link redis-peers->n, all with upstreams up(n)
// (one proxy each, labelled by labels when there are several), and a
// demultiplexer in front of them listening on listen (port 0: a free one).
// sender gives a demultiplexer its way to name senders, from the nodes
// with a pair link to it (indexed as nodes, nil where there is none). It
// returns the demultiplexers in the order of nodes; register makes each
// follow its node's listening state and be closed with the cluster.
func (c *Cluster) buildRedisPeers(nodes []*Node, up func(*Node) []string, labels []string, listen string,
	sender func(senders []*Node) func(net.Conn) ([]byte, int), register func(*peerDemux)) ([]*peerDemux, error) {
	var out []*peerDemux
	for _, to := range nodes {
		senders := make([]*Node, len(nodes))
		pairs := make([]*Link, len(nodes))
		for j, from := range nodes {
			if !c.plan.HasLink(from.Name, to.Name) {
				continue
			}
			l, err := c.addLink(from.Name, to.Name, up(to), labels)
			if err != nil {
				return nil, err
			}
			senders[j], pairs[j] = from, l
		}
		fallback, err := c.addLink(RedisPeers, to.Name, up(to), labels)
		if err != nil {
			return nil, err
		}
		d := newPeerDemux(c.log, to.Name, fallback, len(nodes))
		d.pairs = pairs
		d.sender = sender(senders)
		if err := d.listen(listen); err != nil {
			return nil, fmt.Errorf("cluster: redis peer listener for %s: %w", to.Name, err)
		}
		register(d)
		out = append(out, d)
	}
	return out, nil
}
