package calibrate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/go-zookeeper/zk"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/memcachedlock"
	"github.com/locklab/locklab/locks/mysqllock"
	"github.com/locklab/locklab/locks/natslock"
	"github.com/locklab/locklab/locks/pglock"
	"github.com/locklab/locklab/workload"
)

// CommitFigures are a table backend's raw costs through a client proxy,
// sent by its own Go client, and its built-in lock's hand-off in those
// units. Like the Redis rates they are measured in interleaved rounds (raw
// costs, then hand-off), so a slow spell of the machine falls on a round's
// commit and hand-off alike: each figure is the median over the rounds,
// and each ratio the median of the ratios taken within a round.
type CommitFigures struct {
	// Nodes is the number of servers.
	Nodes int `json:"nodes"`
	// WriteMs is the p50 of what the lock does to be granted, without
	// waiting: ZooKeeper: create of an ephemeral node, one commit; etcd:
	// put with a lease, one commit; PostgreSQL: pg_try_advisory_lock and
	// MariaDB: GET_LOCK(name, 0), a grant in the server's memory and no
	// consensus write; NATS: KV create on a deleted key, three requests to
	// a stream of one replica (bareNATS). DeleteMs is the p50 of the
	// release that follows it (delete, pg_advisory_unlock, RELEASE_LOCK,
	// KV delete); ReadMs the p50 of a read served without consensus (an
	// idle round trip: ZooKeeper exists, etcd serializable get, SELECT 1,
	// KV get).
	WriteMs  float64       `json:"write_p50_ms"`
	DeleteMs float64       `json:"delete_p50_ms"`
	ReadMs   float64       `json:"read_p50_ms"`
	Handoff  Handoff       `json:"handoff"`
	Rounds   []CommitRound `json:"rounds"`
}

// CommitRound is one round of a table backend's figures, measured one
// after the other in the order of the fields.
type CommitRound struct {
	WriteMs   float64 `json:"write_p50_ms"`
	DeleteMs  float64 `json:"delete_p50_ms"`
	ReadMs    float64 `json:"read_p50_ms"`
	HandoffMs float64 `json:"handoff_p50_ms"`
	Handoffs  int64   `json:"handoffs"`
}

// summarize sets c's figures from its rounds (lock names the recipe).
func (c *CommitFigures) summarize(lock string) {
	each := func(v func(r CommitRound) float64) float64 { return medianOf(c.Rounds, v) }
	c.WriteMs = each(func(r CommitRound) float64 { return r.WriteMs })
	c.DeleteMs = each(func(r CommitRound) float64 { return r.DeleteMs })
	c.ReadMs = each(func(r CommitRound) float64 { return r.ReadMs })
	h := Handoff{Lock: lock}
	h.P50Ms = each(func(r CommitRound) float64 { return r.HandoffMs })
	for _, r := range c.Rounds {
		h.Count += r.Handoffs
	}
	h.RoundTrips = each(func(r CommitRound) float64 { return ratio(r.HandoffMs, r.ReadMs) })
	h.Commits = each(func(r CommitRound) float64 { return ratio(r.HandoffMs, r.WriteMs) })
	h.Beyond = each(func(r CommitRound) float64 { return ratio(r.HandoffMs-r.WriteMs, r.ReadMs) })
	c.Handoff = h
}

// commitOps are the raw operations timed on a table backend: the lock's
// write and the delete of what it wrote, and a read served without
// consensus.
type commitOps struct {
	write, del, read func() error
}

// retryOnce runs op again, once, after an error transient says is a
// dropped connection (a loaded machine can stall a client past its
// server's read timeout; the client reconnects on its own): a sample
// lost to it is taken again, not a calibration failed. after, when the
// first try may have acted before the connection dropped, maps the
// retry's error ("already exists", "no such node") to nil.
func retryOnce(op func() error, transient, after func(error) bool) func() error {
	return func() error {
		err := op()
		if err == nil || !transient(err) {
			return err
		}
		time.Sleep(500 * time.Millisecond)
		if err = op(); err != nil && after != nil && after(err) {
			return nil
		}
		return err
	}
}

// measureCommits runs opts.Rounds rounds of the raw costs of ops
// (Samples/Rounds each) and lock's hand-off with its options
// (Duration/Rounds each) on nodes servers.
func measureCommits(ctx context.Context, opts Options, nodes int, lock string, options map[string]string, ops commitOps, ep func(int) locks.Endpoints) (*CommitFigures, error) {
	f := &CommitFigures{Nodes: nodes}
	samples := max(1, opts.Samples/opts.Rounds)
	d := opts.Duration / time.Duration(opts.Rounds)
	for n := range opts.Rounds {
		var r CommitRound
		var err error
		if r.WriteMs, r.DeleteMs, err = pair(ctx, samples, ops.write, ops.del); err != nil {
			return nil, fmt.Errorf("round %d, write+delete: %w", n+1, err)
		}
		if r.ReadMs, err = p50(samples, ops.read); err != nil {
			return nil, fmt.Errorf("round %d, read: %w", n+1, err)
		}
		h, err := handoff(ctx, lock, options, ep, d)
		if err != nil {
			return nil, fmt.Errorf("round %d: %w", n+1, err)
		}
		r.HandoffMs, r.Handoffs = h.P50Ms, h.Count
		f.Rounds = append(f.Rounds, r)
	}
	f.summarize(lock)
	return f, nil
}

// tableCalibration is how one table backend is calibrated: its cluster,
// its built-in lock, its own Go client's raw operations, its section of
// the figures and how WriteText names them.
type tableCalibration struct {
	backend string // the cluster's backend name, its Endpoints.Table key and Run's name for it
	// sized says the cluster has Options.Nodes servers (its "nodes"
	// setting); without it the row's defaults start one server.
	sized   bool
	lock    string            // the lock whose hand-off is measured
	options map[string]string // the lock's options, the bare client's too
	// bare connects the backend's own client as cfg says (client 0's
	// proxied endpoints, the calibration's TTL, options) and returns its
	// raw operations and what closes it.
	bare func(ctx context.Context, cfg locks.Config) (commitOps, func(), error)
	// figures is the backend's section of the figures.
	figures func(*Figures) **CommitFigures
	text    tableText
}

// tableText is how WriteText names a table backend's figures: title the
// backend; write, del and read the raw operations; kind what the write
// is; unit the write in the hand-off's terms.
type tableText struct {
	title, write, del, read, kind, unit string
}

// tables are the table backends' calibrations in the order of Backends
// and of WriteText.
var tables = []tableCalibration{
	{backend: "zookeeper", sized: true, lock: "zk-recipe", bare: bareZooKeeper,
		figures: func(f *Figures) **CommitFigures { return &f.ZooKeeper },
		text:    tableText{"ZooKeeper", "create ephemeral", "delete", "read", "one commit", "commit"}},
	{backend: "etcd", sized: true, lock: "etcd-recipe", bare: bareEtcd,
		figures: func(f *Figures) **CommitFigures { return &f.Etcd },
		text:    tableText{"etcd", "put with lease", "delete", "read", "one commit", "commit"}},
	{backend: "postgres", lock: pglock.NameSession, bare: barePostgres,
		figures: func(f *Figures) **CommitFigures { return &f.Postgres },
		text:    tableText{"PostgreSQL", "pg_try_advisory_lock", "pg_advisory_unlock", "SELECT 1", "a grant in server memory, not a consensus write", "grant"}},
	{backend: "mariadb", lock: mysqllock.Name, bare: bareMariaDB,
		figures: func(f *Figures) **CommitFigures { return &f.MariaDB },
		text: tableText{"MariaDB", "GET_LOCK(name, 0)", "RELEASE_LOCK", "SELECT 1",
			"a grant in server memory, not a consensus write; prepared: two round trips", "grant"}},
	{backend: "nats", sized: true, lock: natslock.Name, bare: bareNATS,
		options: map[string]string{"replicas": strconv.Itoa(natsReplicas)},
		figures: func(f *Figures) **CommitFigures { return &f.NATS },
		text: tableText{"NATS JetStream KV", "KV create", "conditional delete", "get",
			"on a deleted key: rejected write + get + write, to a stream of one replica", "create"}},
	{backend: "memcached", lock: memcachedlock.Name, bare: bareMemcached,
		figures: func(f *Figures) **CommitFigures { return &f.Memcached },
		text: tableText{"memcached", "add", "gets + cas to expired", "version",
			"an item in server memory, not a consensus write; the release is two round trips", "add"}},
}

// table is the calibration of backend; false when it is no table backend.
func table(backend string) (tableCalibration, bool) {
	i := slices.IndexFunc(tables, func(t tableCalibration) bool { return t.backend == backend })
	if i < 0 {
		return tableCalibration{}, false
	}
	return tables[i], true
}

// spec is t's cluster as opts size it: its backend for 4 clients, each
// with its own proxied links.
func (t tableCalibration) spec(opts Options) cluster.Spec {
	settings := cluster.Settings{}
	if t.sized {
		settings["nodes"] = opts.Nodes
	}
	return cluster.Spec{Backends: map[string]cluster.Settings{t.backend: settings}, Clients: 4}
}

// measureTable starts t's servers for 4 clients and measures t's raw
// costs and hand-off on them (measureCommits).
func measureTable(ctx context.Context, opts Options, t tableCalibration) (*CommitFigures, error) {
	cl, stop, err := startCluster(ctx, t.backend, t.spec(opts), opts)
	if err != nil {
		return nil, err
	}
	defer stop()
	cfg := locks.Config{Endpoints: cl.Endpoints(0), TTL: lockTTL, Options: t.options}
	ops, closeBare, err := t.bare(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer closeBare()
	return measureCommits(ctx, opts, len(cfg.Endpoints.Table[t.backend]), t.lock, t.options, ops, proxiedEndpoints(cl))
}

// bareZooKeeper times the create of an ephemeral node (one commit), its
// delete, and an exists of it (a read the server answers alone).
func bareZooKeeper(_ context.Context, cfg locks.Config) (commitOps, func(), error) {
	conn, _, err := zk.Connect(cfg.Endpoints.Table["zookeeper"], 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(nopLogger{}))
	if err != nil {
		return commitOps{}, nil, fmt.Errorf("connect zookeeper: %w", err)
	}
	// The first request waits for the session: keep it out of the samples.
	if _, _, err := conn.Exists("/"); err != nil {
		conn.Close()
		return commitOps{}, nil, fmt.Errorf("zookeeper session: %w", err)
	}
	const path = "/locklab-calibrate"
	acl := zk.WorldACL(zk.PermAll)
	dropped := func(err error) bool { return errors.Is(err, zk.ErrConnectionClosed) }
	is := func(want error) func(error) bool { return func(err error) bool { return errors.Is(err, want) } }
	return commitOps{
		write: retryOnce(func() error { _, err := conn.Create(path, nil, zk.FlagEphemeral, acl); return err }, dropped, is(zk.ErrNodeExists)),
		del:   retryOnce(func() error { return conn.Delete(path, -1) }, dropped, is(zk.ErrNoNode)),
		read:  retryOnce(func() error { _, _, err := conn.Exists(path); return err }, dropped, nil),
	}, conn.Close, nil
}

// bareEtcd times a put with a lease (one commit), its delete, and a
// serializable get (answered by the member without consensus).
func bareEtcd(ctx context.Context, cfg locks.Config) (commitOps, func(), error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: cfg.Endpoints.Table["etcd"][:1], DialTimeout: 10 * time.Second, Logger: nopZap()})
	if err != nil {
		return commitOps{}, nil, fmt.Errorf("etcd client: %w", err)
	}
	lease, err := cli.Grant(ctx, 60)
	if err != nil {
		cli.Close()
		return commitOps{}, nil, fmt.Errorf("etcd lease: %w", err)
	}
	kctx, stop := context.WithCancel(ctx)
	closeAll := func() { stop(); cli.Close() }
	if _, err := cli.KeepAlive(kctx, lease.ID); err != nil {
		closeAll()
		return commitOps{}, nil, fmt.Errorf("etcd lease keep-alive: %w", err)
	}
	const key = "locklab-calibrate"
	return commitOps{
		write: func() error { _, err := cli.Put(ctx, key, "x", clientv3.WithLease(lease.ID)); return err },
		del:   func() error { _, err := cli.Delete(ctx, key); return err },
		read:  func() error { _, err := cli.Get(ctx, key, clientv3.WithSerializable()); return err },
	}, closeAll, nil
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
