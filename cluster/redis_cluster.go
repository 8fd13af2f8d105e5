package cluster

// Redis Cluster mode (RedisSpec.Mode RedisCluster), provider local.
//
// Every server runs with cluster-enabled yes. The harness forms the
// cluster over RESP: CLUSTER MEET from redis-0 to every other server, the
// 16384 hash slots split evenly over the primaries in order (redis-0 holds
// slots 0..16384/P-1, SlotRange), CLUSTER REPLICATE for each replica; it
// is ready once every node says cluster_state:ok with every slot served,
// and every replica's link to its primary is up.
//
// Addresses. A Redis Cluster tells clients where a slot lives (CLUSTER
// SLOTS, MOVED and ASK redirects) by the address each node announces.
// Every node announces the address the rest of the topology uses for it:
// its peer address with replicas (redispeers.go), else its real one; a
// client maps it to its own proxied link through Endpoints.Redirect (the
// lock's dialer, redislock.ConnectUniversal), so client faults act on every
// connection a cluster client opens, as on a Sentinel-discovered primary.
// A replica replicates from the address its primary announces, its peer
// address, so replication goes through "redis-0-r0->redis-0" as with
// Sentinel, and a failover swaps the roles over the same links.
//
// The cluster bus (gossip, failure reports, failover votes) runs on a
// second port per node. Every node announces (cluster-announce-bus-port) a
// second demultiplexer in front of it, which names each connection's
// sender like the peer demultiplexer does and forwards it through the link
// of that directed pair: in a Redis Cluster every ordered pair of servers
// has a link ("redis-1->redis-0", "redis-0-r0->redis-0"), each with two
// proxies, one to the node's port (commands, replication) and one to its
// bus (clusterProxyLabels). A partition or a link fault thus reaches the
// bus as it reaches replication: isolating a primary from the other
// servers makes the cluster fail it over.

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Redis Cluster timing: a node is suspected after clusterNodeTimeout of
// silence on the bus (then marked failed by a majority of primaries), and
// a replica of a failed primary is elected about a second later; a
// replica's data age never disqualifies it (validity factor 0), so a
// replica whose replication link a fault delayed is still promoted.
const clusterNodeTimeout = 1000 * time.Millisecond

// clusterSlots is the number of hash slots of a Redis Cluster.
const clusterSlots = 16384

// SlotRange returns the hash slots [first, last] that primary i of
// primaries holds when the cluster forms: an even split in order.
func SlotRange(i, primaries int) (first, last int) {
	return i * clusterSlots / primaries, (i+1)*clusterSlots/primaries - 1
}

// clusterProxyLabels name the two proxies of every link between Redis
// Cluster servers: commands and replication to the node's port, and its
// cluster bus.
var clusterProxyLabels = []string{"data", "bus"}

// pickBusPorts picks a free port for the cluster bus of each node.
func pickBusPorts(nodes []*Node) (map[*Node]string, error) {
	ports, err := pickPorts(len(nodes))
	if err != nil {
		return nil, err
	}
	bus := map[*Node]string{}
	for i, n := range nodes {
		bus[n] = hostPort(ports[i])
	}
	return bus, nil
}

// buildRedisCluster sets up the servers of rn as one Redis Cluster: peer
// is each node's peer address, bus its real bus address (the links
// between servers have a second proxy to it, clusterProxyLabels), demux
// the peer demultiplexers (in the order of rn.all), rebind moves a node to
// a new port.
func (c *Cluster) buildRedisCluster(b backend, rn redisNodes, peer, bus map[*Node]string, demux []*PeerDemux, rs RedisSpec,
	rebind func(*Node) func() error) (backend, error) {
	// A second demultiplexer per node fronts its bus: the address every
	// node announces for its bus, forwarding through the pair links' bus
	// proxies.
	busPeer := map[*Node]string{}
	for i, d := range demux {
		to := rn.all[i]
		bd := d.through(1, "bus")
		if err := bd.listen("127.0.0.1:0"); err != nil {
			return b, fmt.Errorf("cluster: redis cluster bus listener for %s: %w", to.Name, err)
		}
		c.addPeerDemux(bd)
		busPeer[to] = bd.addr
	}
	for _, n := range rn.servers {
		n.cmd = func() (Command, error) {
			return localRedis(n, rs.Persistence, clusterArgs(n, peer[n], bus[n], busPeer[n])), nil
		}
		n.probe = redisProbe(n)
		n.rebind = func() error {
			p, err := pickPorts(1)
			if err != nil {
				return err
			}
			bus[n] = hostPort(p[0])
			return rebind(n)() // its links' bus proxies follow bus[n] too
		}
		n.role = func(ctx context.Context) (string, error) { return redisRole(ctx, n.Addr()) }
	}
	b.start = func(ctx context.Context) error {
		if err := startNodes(ctx, rn.servers, nil); err != nil {
			return err
		}
		return formCluster(ctx, rn, peer, busPeer)
	}
	b.version = func(ctx context.Context) string { return redisVersion(ctx, rn.primaries[0]) }
	return b, nil
}

// clusterArgs are a cluster node's options: its own node file in its data
// dir, its bus at bus, and the addresses it announces: announce for
// clients and replicas, busAnnounce's port for the bus.
func clusterArgs(n *Node, announce, bus, busAnnounce string) []string {
	host, port := splitHostPort(announce)
	_, busPort := splitHostPort(bus)
	_, busAnnouncePort := splitHostPort(busAnnounce)
	return []string{
		"--cluster-enabled", "yes",
		"--cluster-config-file", filepath.Join(n.dataDir, "nodes.conf"),
		"--cluster-node-timeout", strconv.FormatInt(clusterNodeTimeout.Milliseconds(), 10),
		"--cluster-replica-validity-factor", "0",
		"--cluster-require-full-coverage", "no",
		"--cluster-port", busPort,
		"--cluster-announce-ip", host,
		"--cluster-announce-port", port,
		"--cluster-announce-bus-port", busAnnouncePort,
	}
}

// formCluster joins the servers of rn into one cluster, assigns the slots,
// attaches the replicas and waits until every node reports the cluster
// whole.
func formCluster(ctx context.Context, rn redisNodes, peer, busPeer map[*Node]string) error {
	ids := map[*Node]string{}
	for _, n := range rn.servers {
		id, err := respString(ctx, n.Addr(), "CLUSTER", "MYID")
		if err != nil {
			return fmt.Errorf("cluster: %s: CLUSTER MYID: %w", n.Name, err)
		}
		ids[n] = id
	}
	first := rn.servers[0]
	for _, n := range rn.servers[1:] {
		host, port := splitHostPort(peer[n])
		_, busPort := splitHostPort(busPeer[n])
		if _, err := respDo(ctx, first.Addr(), "CLUSTER", "MEET", host, port, busPort); err != nil {
			return fmt.Errorf("cluster: %s: CLUSTER MEET %s: %w", first.Name, n.Name, err)
		}
	}
	for i, p := range rn.primaries {
		lo, hi := SlotRange(i, len(rn.primaries))
		if _, err := respDo(ctx, p.Addr(), "CLUSTER", "ADDSLOTSRANGE", strconv.Itoa(lo), strconv.Itoa(hi)); err != nil {
			return fmt.Errorf("cluster: %s: CLUSTER ADDSLOTSRANGE %d %d: %w", p.Name, lo, hi, err)
		}
	}
	// A replica can follow its primary once it has met it (gossip spreads
	// the meeting to every node within a few bus round trips).
	err := each(rn.replicas, func(r *Node) error {
		primary := ids[primaryOf(rn.primaries, r)]
		return poll(ctx, r.Name+" replicating", func(ctx context.Context) error {
			_, err := respDo(ctx, r.Addr(), "CLUSTER", "REPLICATE", primary)
			return err
		})
	})
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	err = each(rn.servers, func(n *Node) error {
		return poll(ctx, n.Name+" in a whole cluster", func(ctx context.Context) error {
			return clusterWhole(ctx, n, len(rn.servers))
		})
	})
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	if err := each(rn.replicas, func(r *Node) error {
		return poll(ctx, r.Name+" ready", func(ctx context.Context) error { return replicaLinkUp(ctx, r) })
	}); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	return nil
}

// clusterWhole checks that n sees a healthy cluster of nodes nodes with
// every slot served.
func clusterWhole(ctx context.Context, n *Node, nodes int) error {
	info, err := respString(ctx, n.Addr(), "CLUSTER", "INFO")
	if err != nil {
		return err
	}
	want := map[string]string{
		"cluster_state":          "ok",
		"cluster_slots_assigned": strconv.Itoa(clusterSlots),
		"cluster_slots_ok":       strconv.Itoa(clusterSlots),
		"cluster_known_nodes":    strconv.Itoa(nodes),
	}
	var bad []string
	for k, v := range want {
		if got := infoField(info, k); got != v {
			bad = append(bad, fmt.Sprintf("%s:%s (want %s)", k, got, v))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("CLUSTER INFO %s", strings.Join(bad, " "))
	}
	return nil
}

// KeySlot is the hash slot of key in a Redis Cluster: CRC16 (XMODEM) of
// the key, or of its hash tag (the text between the first "{" and the
// next "}" when that is not empty), modulo 16384.
func KeySlot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for k := 0; k < len(key); k++ {
		crc ^= uint16(key[k]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % clusterSlots
}
