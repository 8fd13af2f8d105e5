package faults

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/cluster"
)

// FailoverTimeout bounds how long failover waits for Sentinel to promote a
// replica after the kill. The cluster's sentinels deem a primary down after
// 1 s of silence and need a few seconds more to elect a leader and promote.
const FailoverTimeout = 60 * time.Second

// failoverPoll is how often failover asks the sentinels for the primary.
const failoverPoll = 50 * time.Millisecond

// failoverAction kills the current primary of a Redis master group and
// waits until Sentinel promotes a replica.
//
// node names the group (the cluster's sentinels monitor each primary under
// its node name, "redis-0"). The node killed is the one the sentinels
// report as the group's primary (at its peer address), so a second
// failover of redis-0 kills the replica promoted by the first. Then every sentinel is asked, directly
// (not through a client proxy) every 50 ms, for SENTINEL
// get-master-addr-by-name until one reports another address — Sentinel
// switches that address only once the promoted replica acknowledged its new
// role — or FailoverTimeout passes. The Window ends there and Detail says
// which sentinel reported which node how long after the kill. The old
// primary stays down. In a Redis Cluster (no sentinels) the cluster
// promotes the replica itself: clusterFailover.
type failoverAction struct{}

func (failoverAction) check(t *topology, f Fault) error {
	if err := checkServer(t, f); err != nil {
		return err
	}
	if n, ok := t.Node(f.Node); ok {
		if n.Backend != cluster.BackendRedis {
			// Another backend fails over by itself (Cluster.Failover):
			// it needs another node to promote. Redis's failover is
			// Sentinel's or the Redis Cluster's, watched here.
			if len(t.NodesOf(n.Backend)) < 2 {
				return unsupported("failover needs a replica of %s to promote: the cluster has none (set cluster.%s.replicas >= 1)", f.Node, n.Backend)
			}
			return nil
		}
	}
	if t.RedisCluster {
		// The Redis Cluster promotes a replica by itself.
		if t.ReplicasOf(f.Node) == 0 {
			return unsupported("failover needs a replica of %s to promote: the cluster has none (set cluster.redis.replicas >= 1)", f.Node)
		}
		return nil
	}
	if t.Count(cluster.KindSentinel) == 0 {
		return unsupported("failover needs Sentinel to promote a replica: the cluster has no sentinels (set cluster.redis.sentinels, e.g. 3)")
	}
	if t.ReplicasOf(f.Node) == 0 {
		return unsupported("failover needs a replica of %s to promote: the cluster has none (set cluster.redis.replicas >= 1)", f.Node)
	}
	return nil
}

func (failoverAction) apply(ctx context.Context, env Env, f Fault) (effect, error) {
	eff := effect{target: f.Node}
	if n, ok := env.Cluster.Node(f.Node); ok {
		if n.Backend() != cluster.BackendRedis {
			detail, err := env.Cluster.Failover(ctx, f.Node)
			if err != nil {
				return eff, err
			}
			eff.detail = detail
			eff.seen = seen(true, "%s", detail)
			return eff, nil
		}
	}
	if env.Cluster.Plan().RedisCluster {
		return clusterFailover(ctx, env, f, eff)
	}
	var sentinels []*cluster.Node
	for _, n := range env.Cluster.Nodes() {
		if n.Kind == cluster.KindSentinel {
			sentinels = append(sentinels, n)
		}
	}
	if len(sentinels) == 0 {
		return eff, unsupported("failover of %s: no sentinels", f.Node)
	}
	before, _, err := primaryOf(ctx, sentinels, f.Node)
	if err != nil {
		return eff, fmt.Errorf("ask sentinels for the primary of %s: %w", f.Node, err)
	}
	victim := nodeAt(env.Cluster, before)
	if victim == nil {
		return eff, fmt.Errorf("sentinels report %s as primary of %s, which is no node of the cluster", before, f.Node)
	}
	return killAndAwait(ctx, env, f, eff, victim, before, func(ctx context.Context) (string, string, string, error) {
		addr, by, err := primaryOf(ctx, sentinels, f.Node)
		switch {
		case err != nil:
			return "", "", "", err
		case addr == before:
			return "", "", "", fmt.Errorf("sentinels still report %s", before)
		}
		name := addr
		if n := nodeAt(env.Cluster, addr); n != nil {
			name = fmt.Sprintf("%s (%s)", n.Name, addr)
		}
		return fmt.Sprintf("%s reports %s as primary of %s", by.Name, name, f.Node), name, addr, nil
	})
}

// clusterFailover is failover in a Redis Cluster, which promotes a
// replica by itself: it kills the server of f.Node's group that says it
// is the primary, then asks the group's running servers (Cluster.Primary)
// until one of them reports the primary role: the cluster elected it and
// it took over the slots.
func clusterFailover(ctx context.Context, env Env, f Fault, eff effect) (effect, error) {
	victim, err := env.Cluster.Primary(ctx, f.Node)
	if err != nil {
		return eff, err
	}
	return killAndAwait(ctx, env, f, eff, victim, victim.Addr(), func(ctx context.Context) (string, string, string, error) {
		n, err := env.Cluster.Primary(ctx, f.Node)
		switch {
		case err != nil:
			return "", "", "", err
		case n == victim:
			return "", "", "", fmt.Errorf("%s still reports the primary role", victim.Name)
		}
		return fmt.Sprintf("the cluster promoted %s to primary of %s", n.Name, f.Node), n.Name, n.Addr(), nil
	})
}

// killAndAwait kills victim (the primary of f.Node, at addr as the
// topology names it), then asks promoted every failoverPoll until it says
// who became the primary (said, for the detail; the new primary's name
// and address) or FailoverTimeout passes; the evidence compares the keys
// of the old and the new primary.
func killAndAwait(ctx context.Context, env Env, f Fault, eff effect, victim *cluster.Node, addr string,
	promoted func(context.Context) (said, name, addr string, err error)) (effect, error) {
	keysBefore, kerr := redisValues(ctx, victim.Addr())
	t0 := time.Now()
	if err := victim.Kill(ctx); err != nil {
		return eff, err
	}
	eff.detail = fmt.Sprintf("killed %s (%s)", victim.Name, addr)
	wctx, cancel := context.WithTimeout(ctx, FailoverTimeout)
	defer cancel()
	tick := time.NewTicker(failoverPoll)
	defer tick.Stop()
	var last error
	for {
		said, name, newAddr, err := promoted(wctx)
		if err == nil {
			eff.detail += fmt.Sprintf("; %s %v after the kill", said, elapsed(t0))
			at := time.Now()
			eff.seen = keysAfterPromotion(ctx, env, victim.Name, name, newAddr, keysBefore, kerr)
			if strings.HasSuffix(eff.seen.seen, "lock key lost") {
				eff.seen.lostAt = at
			}
			return eff, nil
		}
		last = err
		select {
		case <-wctx.Done():
			return eff, fmt.Errorf("no replica of %s promoted within %v (last: %v): %w",
				f.Node, elapsed(t0), last, wctx.Err())
		case <-tick.C:
		}
	}
}

func (failoverAction) observe(_ context.Context, _ Env, _ Fault, eff effect) evidence {
	return eff.seen
}

// keysAfterPromotion is a failover's evidence: a replica was promoted
// (bit), and whether the keys the old primary had are on the new one with
// the same values. A key a waiter wrote again on the new primary counts as
// lost: the holder's value is gone, whatever a key count says.
func keysAfterPromotion(ctx context.Context, env Env, old, name, addr string, before map[string]string, berr error) evidence {
	if n := nodeAt(env.Cluster, addr); n != nil {
		addr = n.Addr()
	}
	after, aerr := redisValues(ctx, addr)
	if berr != nil || aerr != nil {
		return seen(true, "%s promoted; keys not compared (%v)", name, errors.Join(berr, aerr))
	}
	if len(before) == 0 {
		return seen(true, "%s promoted; no key on %s before the kill: no lock key to lose", name, old)
	}
	if lost := changedKeys(before, after); len(lost) > 0 {
		return seen(true, "%s promoted; %s on %s before the kill, %d absent or changed on the new primary (%s): lock key lost",
			name, plural(len(before), "key"), old, len(lost), strings.Join(lost, ", "))
	}
	return seen(true, "%s promoted; %s on %s before the kill, all on the new primary with the same values: lock key survived",
		name, plural(len(before), "key"), old)
}

// primaryOf asks the sentinels in turn for the address of master's primary
// and returns the first answer and who gave it.
func primaryOf(ctx context.Context, sentinels []*cluster.Node, master string) (string, *cluster.Node, error) {
	var errs []error
	for _, s := range sentinels {
		addr, err := askSentinel(ctx, s.Addr(), master)
		if err == nil {
			return addr, s, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", s.Name, err))
	}
	return "", nil, errors.Join(errs...)
}

func askSentinel(ctx context.Context, addr, master string) (string, error) {
	sc := redis.NewSentinelClient(&redis.Options{
		Addr: addr, MaxRetries: -1, PoolSize: 1, ContextTimeoutEnabled: true,
		DialTimeout: 500 * time.Millisecond, ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond,
	})
	defer sc.Close()
	r, err := sc.GetMasterAddrByName(ctx, master).Result()
	if err != nil {
		return "", err
	}
	if len(r) != 2 {
		return "", fmt.Errorf("get-master-addr-by-name %s: %v", master, r)
	}
	return net.JoinHostPort(r[0], r[1]), nil
}

// nodeAt is the node at addr, nil when none: Sentinel reports a node's
// peer address (cluster/redispeers.go), which NodeAt knows like its real
// and container addresses.
func nodeAt(c *cluster.Cluster, addr string) *cluster.Node {
	n, _ := c.NodeAt(addr)
	return n
}
