package cluster

// Which node leads: a member that says it leads, a group's primary.

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

// Primary returns the node now serving as the primary of group (a
// primary's node name, "redis-0"): after a failover, the promoted replica's
// node, as its backend's row finds it (Redis: the primary Sentinel
// reports, or in a Redis Cluster the server of the group that says it is
// a primary).
func (c *Cluster) Primary(ctx context.Context, group string) (*Node, error) {
	n, ok := c.Node(group)
	if !ok {
		return nil, fmt.Errorf("cluster: primary of %s: no such node", group)
	}
	c.mu.Lock()
	f := c.primaries[n.backend]
	c.mu.Unlock()
	if f == nil {
		return nil, fmt.Errorf("cluster: primary of %s: %w", group, ErrUnsupported)
	}
	return f(ctx, group)
}
