package redis

// Redis Cluster mode (cluster.RedisSpec.Mode RedisCluster), provider local.
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
// its peer address (peers.go), else its real one; a
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
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/locklab/locklab/cluster"
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

// buildCluster sets up the servers as one Redis Cluster: each node has a
// bus port beside its port, and the links between servers a second proxy
// to it (clusterProxyLabels); a second demultiplexer per node fronts its
// bus, the address every node announces for its bus.
func (t *topology) buildCluster() (cluster.Started, error) {
	var st cluster.Started
	ports, err := t.b.Ports(len(t.all))
	if err != nil {
		return st, err
	}
	bus := map[*cluster.Node]string{} // each node's real bus address
	for i, n := range t.all {
		bus[n] = hostPort(ports[i])
	}
	up := func(n *cluster.Node) []string { return []string{n.Addr(), bus[n]} }
	fronts, err := t.b.FrontPeerPorts(t.front(up, clusterProxyLabels))
	if err != nil {
		return st, err
	}
	busPeer := map[*cluster.Node]string{}
	for i, f := range fronts {
		t.peer[t.all[i]], busPeer[t.all[i]] = f[0], f[1]
	}
	for _, n := range t.servers {
		moveBus := func() error {
			p, err := t.b.Ports(1)
			if err != nil {
				return err
			}
			bus[n] = hostPort(p[0])
			return t.rebind(n, up)() // its links' bus proxies follow bus[n] too
		}
		t.configure(n, func() (cluster.Command, error) {
			_, port := splitHostPort(n.Addr())
			return serverCommand(port, "127.0.0.1", n.DataDir(), t.spec.Persistence,
				clusterArgs(n, t.peer[n], bus[n], busPeer[n])), nil
		}, moveBus)
	}
	st.Start = func(ctx context.Context) error {
		if err := t.b.StartNodes(ctx, t.servers, nil); err != nil {
			return err
		}
		return t.form(ctx, busPeer)
	}
	st.Version = func(ctx context.Context) string { return version(ctx, t.primaries[0]) }
	st.Primary = t.clusterPrimary
	return st, nil
}

// hostPort is port on 127.0.0.1.
func hostPort(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

// clusterArgs are a cluster node's options: its own node file in its data
// dir, its bus at bus, and the addresses it announces: announce for
// clients and replicas, busAnnounce's port for the bus.
func clusterArgs(n *cluster.Node, announce, bus, busAnnounce string) []string {
	host, port := splitHostPort(announce)
	_, busPort := splitHostPort(bus)
	_, busAnnouncePort := splitHostPort(busAnnounce)
	return []string{
		"--cluster-enabled", "yes",
		"--cluster-config-file", filepath.Join(n.DataDir(), "nodes.conf"),
		"--cluster-node-timeout", strconv.FormatInt(clusterNodeTimeout.Milliseconds(), 10),
		"--cluster-replica-validity-factor", "0",
		"--cluster-require-full-coverage", "no",
		"--cluster-port", busPort,
		"--cluster-announce-ip", host,
		"--cluster-announce-port", port,
		"--cluster-announce-bus-port", busAnnouncePort,
	}
}

// form joins the servers into one cluster, assigns the slots, attaches
// the replicas and waits until every node reports the cluster whole.
func (t *topology) form(ctx context.Context, busPeer map[*cluster.Node]string) error {
	ids := map[*cluster.Node]string{}
	for _, n := range t.servers {
		id, err := respString(ctx, n.Addr(), "CLUSTER", "MYID")
		if err != nil {
			return fmt.Errorf("cluster: %s: CLUSTER MYID: %w", n.Name, err)
		}
		ids[n] = id
	}
	first := t.servers[0]
	for _, n := range t.servers[1:] {
		host, port := splitHostPort(t.peer[n])
		_, busPort := splitHostPort(busPeer[n])
		if _, err := respDo(ctx, first.Addr(), "CLUSTER", "MEET", host, port, busPort); err != nil {
			return fmt.Errorf("cluster: %s: CLUSTER MEET %s: %w", first.Name, n.Name, err)
		}
	}
	for i, p := range t.primaries {
		lo, hi := SlotRange(i, len(t.primaries))
		if _, err := respDo(ctx, p.Addr(), "CLUSTER", "ADDSLOTSRANGE", strconv.Itoa(lo), strconv.Itoa(hi)); err != nil {
			return fmt.Errorf("cluster: %s: CLUSTER ADDSLOTSRANGE %d %d: %w", p.Name, lo, hi, err)
		}
	}
	// A replica can follow its primary once it has met it (gossip spreads
	// the meeting to every node within a few bus round trips).
	err := cluster.Each(t.replicas, func(r *cluster.Node) error {
		primary := ids[primaryOf(t.primaries, r)]
		return cluster.Poll(ctx, r.Name+" replicating", func(ctx context.Context) error {
			_, err := respDo(ctx, r.Addr(), "CLUSTER", "REPLICATE", primary)
			return err
		})
	})
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	err = cluster.Each(t.servers, func(n *cluster.Node) error {
		return cluster.Poll(ctx, n.Name+" in a whole cluster", func(ctx context.Context) error {
			return clusterWhole(ctx, n, len(t.servers))
		})
	})
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	if err := cluster.Each(t.replicas, func(r *cluster.Node) error {
		return cluster.Poll(ctx, r.Name+" ready", func(ctx context.Context) error { return replicaLinkUp(ctx, r) })
	}); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	return nil
}

// clusterPrimary is the primary of master group master in a Redis
// Cluster, which has no sentinels: the first running server of the group
// that says it is a primary (INFO replication), the group's primary
// itself until the cluster promotes one of its replicas.
func (t *topology) clusterPrimary(ctx context.Context, master string) (*cluster.Node, error) {
	var errs []error
	for _, n := range t.servers {
		if group(n.Name) != master || !n.Alive() {
			continue
		}
		r, err := n.Role(ctx)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", n.Name, err))
			continue
		}
		if r == "primary" {
			return n, nil
		}
	}
	errs = append(errs, errors.New("no running server of the group reports the role primary"))
	return nil, fmt.Errorf("cluster: primary of %s: %w", master, errors.Join(errs...))
}

// clusterWhole checks that n sees a healthy cluster of nodes nodes with
// every slot served.
func clusterWhole(ctx context.Context, n *cluster.Node, nodes int) error {
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
