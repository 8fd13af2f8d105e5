package calibrate

import (
	"context"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/workload"
)

// CommitFigures are a consensus backend's raw costs through a client
// proxy and its recipe's hand-off in those units.
type CommitFigures struct {
	Nodes int `json:"nodes"`
	// WriteMs is the p50 of one lock-relevant write (ZooKeeper: create of
	// an ephemeral node; etcd: put with a lease): one commit. DeleteMs is
	// the p50 of the delete that follows it; ReadMs the p50 of a read
	// served without consensus (an idle round trip).
	WriteMs  float64 `json:"write_p50_ms"`
	DeleteMs float64 `json:"delete_p50_ms"`
	ReadMs   float64 `json:"read_p50_ms"`
	Handoff  Handoff `json:"handoff"`
}

// in expresses h in commits and round trips of c.
func (c *CommitFigures) in(h Handoff) Handoff {
	if c.ReadMs > 0 {
		h.RoundTrips = h.P50Ms / c.ReadMs
		h.Beyond = (h.P50Ms - c.WriteMs) / c.ReadMs
	}
	if c.WriteMs > 0 {
		h.Commits = h.P50Ms / c.WriteMs
	}
	return h
}

func measureZooKeeper(ctx context.Context, opts Options) (*CommitFigures, error) {
	dir, cleanup, err := tempDir("zookeeper")
	if err != nil {
		return nil, err
	}
	defer cleanup()
	cl, err := cluster.Start(ctx, cluster.Spec{ZooKeeper: &cluster.ZooKeeperSpec{Nodes: opts.Nodes}, Clients: 4, Dir: dir, RunID: "calibrate", Logger: opts.Logger})
	if err != nil {
		return nil, fmt.Errorf("start zookeeper: %w", err)
	}
	defer cl.Close()
	conn, _, err := zk.Connect(cl.Endpoints(0).ZooKeeper, 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(nopLogger{}))
	if err != nil {
		return nil, fmt.Errorf("connect zookeeper: %w", err)
	}
	defer conn.Close()
	f := &CommitFigures{Nodes: opts.Nodes}
	// The first request waits for the session: keep it out of the samples.
	if _, _, err := conn.Exists("/"); err != nil {
		return nil, fmt.Errorf("zookeeper session: %w", err)
	}
	const path = "/locklab-calibrate"
	acl := zk.WorldACL(zk.PermAll)
	f.WriteMs, f.DeleteMs, err = pair(ctx, opts.Samples,
		func() error { _, err := conn.Create(path, nil, zk.FlagEphemeral, acl); return err },
		func() error { return conn.Delete(path, -1) })
	if err != nil {
		return nil, fmt.Errorf("zookeeper create+delete: %w", err)
	}
	if f.ReadMs, err = p50(opts.Samples, func() error { _, _, err := conn.Exists(path); return err }); err != nil {
		return nil, fmt.Errorf("zookeeper exists: %w", err)
	}
	h, err := handoff(ctx, "zk-recipe", proxiedEndpoints(cl), opts.Duration)
	if err != nil {
		return nil, err
	}
	f.Handoff = f.in(h)
	return f, nil
}

func measureEtcd(ctx context.Context, opts Options) (*CommitFigures, error) {
	dir, cleanup, err := tempDir("etcd")
	if err != nil {
		return nil, err
	}
	defer cleanup()
	cl, err := cluster.Start(ctx, cluster.Spec{Etcd: &cluster.EtcdSpec{Nodes: opts.Nodes}, Clients: 4, Dir: dir, RunID: "calibrate", Logger: opts.Logger})
	if err != nil {
		return nil, fmt.Errorf("start etcd: %w", err)
	}
	defer cl.Close()
	cli, err := clientv3.New(clientv3.Config{Endpoints: cl.Endpoints(0).Etcd[:1], DialTimeout: 10 * time.Second, Logger: nopZap()})
	if err != nil {
		return nil, fmt.Errorf("etcd client: %w", err)
	}
	defer cli.Close()
	f := &CommitFigures{Nodes: opts.Nodes}
	lease, err := cli.Grant(ctx, 60)
	if err != nil {
		return nil, fmt.Errorf("etcd lease: %w", err)
	}
	const key = "locklab-calibrate"
	f.WriteMs, f.DeleteMs, err = pair(ctx, opts.Samples,
		func() error { _, err := cli.Put(ctx, key, "x", clientv3.WithLease(lease.ID)); return err },
		func() error { _, err := cli.Delete(ctx, key); return err })
	if err != nil {
		return nil, fmt.Errorf("etcd put+delete: %w", err)
	}
	if f.ReadMs, err = p50(opts.Samples, func() error { _, err := cli.Get(ctx, key, clientv3.WithSerializable()); return err }); err != nil {
		return nil, fmt.Errorf("etcd get: %w", err)
	}
	h, err := handoff(ctx, "etcd-recipe", proxiedEndpoints(cl), opts.Duration)
	if err != nil {
		return nil, err
	}
	f.Handoff = f.in(h)
	return f, nil
}

// pair times n rounds of write then del and returns each one's p50 in ms.
func pair(ctx context.Context, n int, write, del func() error) (writeMs, delMs float64, err error) {
	hw, hd := workload.NewHistogram(), workload.NewHistogram()
	for i := 0; i < n && ctx.Err() == nil; i++ {
		start := time.Now()
		if err := write(); err != nil {
			return 0, 0, err
		}
		mid := time.Now()
		if err := del(); err != nil {
			return 0, 0, err
		}
		workload.RecordDuration(hw, mid.Sub(start))
		workload.RecordDuration(hd, time.Since(mid))
	}
	if err := ctx.Err(); err != nil {
		return 0, 0, err
	}
	return float64(hw.ValueAtQuantile(50)) / 1000, float64(hd.ValueAtQuantile(50)) / 1000, nil
}

// p50 times n calls of op and returns their p50 in ms.
func p50(n int, op func() error) (float64, error) {
	h := workload.NewHistogram()
	for i := 0; i < n; i++ {
		start := time.Now()
		if err := op(); err != nil {
			return 0, err
		}
		workload.RecordDuration(h, time.Since(start))
	}
	return float64(h.ValueAtQuantile(50)) / 1000, nil
}
