package cluster

// Which node leads: ZooKeeper/etcd leaders, the Redis primary Sentinel reports.

import (
	"context"
	"errors"
	"fmt"
)

// Leader returns the current leader among the nodes of kind (a table
// backend's: "zookeeper", "etcd"), asking every running member its Role at
// once and returning with the first that says it leads: a member the harness cannot reach
// (cut off by a partition under provider netns) must not hold up the
// answer, nor use up the others' time. It fails when no member says it
// leads (during an election, or without quorum).
func (c *Cluster) Leader(ctx context.Context, kind string) (*Node, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type answer struct {
		n    *Node
		role string
		err  error
	}
	// Buffered for every member: an asker never blocks, whether or not
	// anyone still reads (the leader found, or ctx over).
	nodes := c.Nodes()
	answers := make(chan answer, len(nodes))
	asked := 0
	for _, n := range nodes {
		if n.Kind != kind || (n.cmd != nil && !n.Alive()) {
			continue
		}
		asked++
		go func() {
			r, err := n.Role(ctx)
			answers <- answer{n, r, err}
		}()
	}
	var errs []error
	for range asked {
		var a answer
		select {
		case a = <-answers:
		case <-ctx.Done():
			return nil, fmt.Errorf("cluster: no %s leader answered: %w", kind, errors.Join(append(errs, context.Cause(ctx))...))
		}
		if a.err == nil && (a.role == "leader" || a.role == "standalone") {
			return a.n, nil
		}
		if a.err != nil {
			errs = append(errs, a.err)
		}
	}
	return nil, fmt.Errorf("cluster: no %s leader: %w", kind, errors.Join(append(errs, ErrNoLeader)...))
}

// ErrNoLeader means no member reported being the leader.
var ErrNoLeader = errors.New("cluster: no leader")

// Primary returns the node Sentinel currently reports as the primary for
// master (a primary's node name, "redis-0"): after a failover, the promoted
// replica's node. It asks the sentinels in order and returns the first
// answer that names a known node.
//
// In a Redis Cluster (Plan.RedisCluster) there are no sentinels: the
// primary of master group "redis-0" is the running server of that group
// that says it is a primary (INFO replication), redis-0 itself until the
// cluster promotes one of its replicas.
func (c *Cluster) Primary(ctx context.Context, master string) (*Node, error) {
	if c.plan.RedisCluster {
		return c.clusterPrimary(ctx, master)
	}
	var errs []error
	for _, s := range c.Nodes() {
		if s.Kind != KindSentinel || !s.Alive() {
			continue
		}
		v, err := respDo(ctx, s.Addr(), "SENTINEL", "get-master-addr-by-name", master)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.Name, err))
			continue
		}
		a, ok := v.([]any)
		if !ok || len(a) != 2 {
			errs = append(errs, fmt.Errorf("%s: no master %q", s.Name, master))
			continue
		}
		addr := fmt.Sprintf("%v:%v", a[0], a[1])
		if n, ok := c.NodeAt(addr); ok && (n.Kind == KindRedis || n.Kind == KindReplica) {
			return n, nil
		}
		errs = append(errs, fmt.Errorf("%s: master at unknown address %s", s.Name, addr))
	}
	if len(errs) == 0 {
		return nil, fmt.Errorf("cluster: primary of %s: no sentinel running", master)
	}
	return nil, fmt.Errorf("cluster: primary of %s: %w", master, errors.Join(errs...))
}

// clusterPrimary is Primary in a Redis Cluster: the first running server
// of master's group that reports the role primary.
func (c *Cluster) clusterPrimary(ctx context.Context, master string) (*Node, error) {
	var errs []error
	for _, n := range c.Nodes() {
		if (n.Kind != KindRedis && n.Kind != KindReplica) || redisGroup(n.Name) != master || !n.Alive() {
			continue
		}
		role, err := n.Role(ctx)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", n.Name, err))
			continue
		}
		if role == "primary" {
			return n, nil
		}
	}
	errs = append(errs, errors.New("no running server of the group reports the role primary"))
	return nil, fmt.Errorf("cluster: primary of %s: %w", master, errors.Join(errs...))
}
