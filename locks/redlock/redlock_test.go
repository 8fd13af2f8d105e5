package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/redlock"
	"github.com/locklab/locklab/locktest"
	"github.com/locklab/locklab/testenv"
)

// env is a cluster of independent primaries for a test, with a raw client
// to each primary's real address to inspect it.
type env struct {
	cl  *cluster.Cluster
	raw []*redis.Client
}

func newEnv(t *testing.T, primaries, clients int, persistence string) *env {
	t.Helper()
	cl := testenv.Cluster(t, cluster.Spec{
		Redis:   &cluster.RedisSpec{Primaries: primaries, Persistence: persistence},
		Clients: clients,
	})
	e := &env{cl: cl}
	for i := range primaries {
		n, ok := cl.Node(nodeName(i))
		if !ok {
			t.Fatalf("no node %s", nodeName(i))
		}
		raw := redis.NewClient(&redis.Options{Addr: n.Addr(), MaxRetries: -1})
		t.Cleanup(func() { _ = raw.Close() })
		e.raw = append(e.raw, raw)
	}
	return e
}

func nodeName(i int) string { return "redis-" + strconv.Itoa(i) }

// client connects harness client i (its own proxied links) with cfg;
// cfg.Endpoints is filled in.
func (e *env) client(t *testing.T, i int, cfg locks.Config) *redlock.Client {
	t.Helper()
	ep := e.cl.Endpoints(i)
	cfg.Endpoints = locks.Endpoints{Redis: ep.Redis, Sentinels: ep.Sentinels, MasterNames: ep.MasterNames, Redirect: ep.Redirect}
	c, err := redlock.New(locktest.Timeout(t, 10*time.Second), cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// holders names the running primaries on which key exists.
func (e *env) holders(t *testing.T, key string) []string {
	t.Helper()
	var out []string
	for i, raw := range e.raw {
		if !e.node(t, i).Alive() {
			continue
		}
		n, err := raw.Exists(locktest.Timeout(t, 2*time.Second), key).Result()
		if err != nil {
			t.Fatalf("EXISTS on %s: %v", nodeName(i), err)
		}
		if n == 1 {
			out = append(out, nodeName(i))
		}
	}
	return out
}

// links returns the links of a selector, failing the test when none.
func (e *env) links(t *testing.T, sel string) []*cluster.Link {
	t.Helper()
	ls, err := e.cl.Links(sel)
	if err != nil {
		t.Fatal(err)
	}
	return ls
}

// cut partitions client's links to the nodes until the test ends or the
// returned heal is called.
func (e *env) cut(t *testing.T, client int, nodes ...int) (heal func()) {
	t.Helper()
	var ls []*cluster.Link
	for _, n := range nodes {
		ls = append(ls, e.links(t, fmt.Sprintf("client-%d->%s", client, nodeName(n)))...)
	}
	for _, l := range ls {
		if err := l.Cut(); err != nil {
			t.Fatal(err)
		}
	}
	var once sync.Once
	heal = func() {
		once.Do(func() {
			for _, l := range ls {
				_ = l.Heal(context.Background())
			}
		})
	}
	t.Cleanup(heal)
	return heal
}

// slow delays the replies on client's links to the nodes by d.
func (e *env) slow(t *testing.T, d time.Duration, client int, nodes ...int) {
	t.Helper()
	for _, n := range nodes {
		for _, l := range e.links(t, fmt.Sprintf("client-%d->%s", client, nodeName(n))) {
			name, err := l.Latency(d, 0, cluster.StreamDown)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = l.RemoveToxic(context.Background(), name) })
		}
	}
}

func (e *env) node(t *testing.T, i int) *cluster.Node {
	t.Helper()
	n, ok := e.cl.Node(nodeName(i))
	if !ok {
		t.Fatalf("no node %s", nodeName(i))
	}
	return n
}

func key(name string) string { return redlock.DefaultPrefix + name }

// acquire is locktest.AcquireWithin for a Redlock lease.
func acquire(t *testing.T, l locks.Locker, within time.Duration) *redlock.Lease {
	t.Helper()
	return locktest.AcquireWithin(t, l, within).(*redlock.Lease)
}

func names(is ...int) []string {
	var out []string
	for _, i := range is {
		out = append(out, nodeName(i))
	}
	return out
}

func TestRegistered(t *testing.T) {
	s, ok := locks.Lookup("redlock")
	if !ok {
		t.Fatal("not registered")
	}
	if s.Backend != locks.Redis || s.Fencing || !s.LeaseBased || s.Broken || s.MinRedis != 3 || s.Summary == "" {
		t.Errorf("spec %+v", s)
	}
	var opts []string
	for _, o := range s.Options {
		opts = append(opts, o.Name)
	}
	if want := []string{"node_timeout", "renew", "nodes"}; !slices.Equal(opts, want) {
		t.Errorf("options %v, want %v", opts, want)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	one := locks.Endpoints{Redis: []string{"127.0.0.1:1"}}
	three := locks.Endpoints{Redis: []string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"}}
	tests := []struct {
		name string
		cfg  locks.Config
	}{
		{"no primaries", locks.Config{}},
		{"unknown option", locks.Config{Endpoints: three, Options: map[string]string{"wait_replicas": "1"}}},
		{"bad node_timeout", locks.Config{Endpoints: three, Options: map[string]string{"node_timeout": "fast"}}},
		{"node_timeout not below ttl", locks.Config{Endpoints: three, TTL: time.Second,
			Options: map[string]string{"node_timeout": "1s"}}},
		{"bad renew", locks.Config{Endpoints: three, Options: map[string]string{"renew": "maybe"}}},
		{"nodes above the primaries", locks.Config{Endpoints: three, Options: map[string]string{"nodes": "5"}}},
		{"negative nodes", locks.Config{Endpoints: three, Options: map[string]string{"nodes": "-1"}}},
		{"ttl below 1ms", locks.Config{Endpoints: three, TTL: time.Microsecond}},
		{"unreachable primary", locks.Config{Endpoints: one}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := redlock.New(locktest.Timeout(t, 2*time.Second), tt.cfg)
			if err == nil {
				_ = c.Close()
				t.Fatal("New accepted it")
			}
			t.Log(err)
		})
	}
}

// TestQuorum: with N = 3 and 5, Acquire succeeds exactly when a majority
// of the nodes is reachable, whether the others are down or partitioned
// from the client; a failed Acquire names the failed nodes and leaves no
// key on the nodes it reached.
func TestQuorum(t *testing.T) {
	for _, n := range []int{3, 5} {
		t.Run(fmt.Sprintf("N=%d", n), func(t *testing.T) {
			e := newEnv(t, n, 1, "")
			for _, mode := range []string{"kill", "partition"} {
				for down := 1; down <= n/2+1; down++ {
					// Take nodes down from both ends so the majority left is
					// not always the first nodes.
					var gone []int
					for j := range down {
						if j%2 == 0 {
							gone = append(gone, n-1-j/2)
						} else {
							gone = append(gone, j/2)
						}
					}
					slices.Sort(gone)
					want := n-down >= n/2+1
					t.Run(fmt.Sprintf("%s %v", mode, names(gone...)), func(t *testing.T) {
						c := e.client(t, 0, locks.Config{TTL: 10 * time.Second,
							Options: map[string]string{"node_timeout": "300ms"}})
						if c.Quorum() != n/2+1 {
							t.Fatalf("quorum %d", c.Quorum())
						}
						switch mode {
						case "kill":
							for _, g := range gone {
								if err := e.node(t, g).Kill(locktest.Timeout(t, 5*time.Second)); err != nil {
									t.Fatal(err)
								}
								t.Cleanup(func() {
									if err := e.node(t, g).Start(locktest.Timeout(t, testenv.ClusterStartTimeout)); err != nil {
										t.Errorf("start %s again: %v", nodeName(g), err)
									}
								})
							}
						case "partition":
							e.cut(t, 0, gone...)
						}
						var up []int
						for i := range n {
							if !slices.Contains(gone, i) {
								up = append(up, i)
							}
						}
						within := 3 * time.Second
						if !want {
							within = time.Second
						}
						lease, err := c.Locker(t.Name()).Acquire(locktest.Timeout(t, within))
						if !want {
							if err == nil {
								t.Fatalf("acquired on %v with %v down", lease.(*redlock.Lease).Nodes(), names(gone...))
							}
							if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, redlock.ErrNoQuorum) {
								t.Errorf("error %v, want DeadlineExceeded and ErrNoQuorum", err)
							}
							var ne *locks.NodeError
							if !errors.As(err, &ne) || !slices.Contains(names(gone...), ne.Node) {
								t.Errorf("error %v names no failed node", err)
							}
							locktest.WaitFor(t, 2*time.Second, "keys deleted after the failed Acquire", func() bool {
								return len(e.holders(t, key(t.Name()))) == 0
							})
							return
						}
						if err != nil {
							t.Fatalf("Acquire with %v down: %v", names(gone...), err)
						}
						l := lease.(*redlock.Lease)
						if got := l.Nodes(); !slices.Equal(got, names(up...)) {
							t.Errorf("lease on %v, want %v", got, names(up...))
						}
						if h := e.holders(t, key(t.Name())); !slices.Equal(h, names(up...)) {
							t.Errorf("key on %v, want %v", h, names(up...))
						}
						if v := l.Validity(); v <= 0 || v > 10*time.Second-redlock.Drift(10*time.Second) {
							t.Errorf("validity %v", v)
						}
						if err := l.Release(locktest.Timeout(t, 2*time.Second)); err != nil {
							t.Errorf("Release with %v down: %v", names(gone...), err)
						}
						if h := e.holders(t, key(t.Name())); len(h) > 0 {
							t.Errorf("key left on %v after Release", h)
						}
					})
				}
			}
		})
	}
}

// TestValidityShrinks: a slow node in the majority makes the attempt take
// longer, and the validity reported on the Lease shrinks by as much. When
// waiting for the nodes that do not answer takes the whole validity, the
// attempt fails (ErrNoValidity) although a majority took the key, which is
// deleted again.
func TestValidityShrinks(t *testing.T) {
	e := newEnv(t, 5, 3, "")
	const ttl = 3 * time.Second
	drift := redlock.Drift(ttl)
	cfg := locks.Config{TTL: ttl, Options: map[string]string{"node_timeout": "2s"}}

	fast := e.client(t, 0, cfg)
	l := acquire(t, fast.Locker("fast"), 5*time.Second)
	// Loose bound: a loaded machine may take a while to answer.
	if v := l.Validity(); v > ttl-drift || v < ttl-drift-250*time.Millisecond {
		t.Errorf("validity without latency %v, want just under %v", v, ttl-drift)
	}
	_ = l.Release(context.Background())

	// Three of five nodes answer 500ms late: every majority waits for one.
	slow := e.client(t, 1, cfg)
	e.slow(t, 500*time.Millisecond, 1, 0, 2, 4)
	l = acquire(t, slow.Locker("slow"), 5*time.Second)
	if v := l.Validity(); v > ttl-drift-500*time.Millisecond || v <= 0 {
		t.Errorf("validity with 500ms replies %v, want at most %v", v, ttl-drift-500*time.Millisecond)
	}
	if until := time.Until(l.ValidUntil()); until > l.Validity() {
		t.Errorf("ValidUntil %v away, beyond the validity %v", until, l.Validity())
	}
	if err := l.Release(locktest.Timeout(t, 5*time.Second)); err != nil {
		t.Errorf("Release: %v", err)
	}

	t.Run("none left", func(t *testing.T) {
		// Two nodes are cut off and the node timeout is within the drift
		// of the TTL: every attempt waits for them longer than ttl - drift,
		// so the three keys it took come with no validity.
		const ttl = time.Second
		c := e.client(t, 2, locks.Config{TTL: ttl, Options: map[string]string{"node_timeout": "995ms"}})
		e.cut(t, 2, 1, 3)
		_, err := c.Locker("none-left").Acquire(locktest.Timeout(t, 1200*time.Millisecond))
		if !errors.Is(err, redlock.ErrNoValidity) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Acquire: %v, want ErrNoValidity and DeadlineExceeded", err)
		}
		locktest.WaitFor(t, 2*time.Second, "keys deleted after the attempt", func() bool {
			return len(e.holders(t, key("none-left"))) == 0
		})
	})
}

// TestReleaseEveryNode: Release and a failed attempt delete the key from
// every node, also from those that did not answer in time.
func TestReleaseEveryNode(t *testing.T) {
	e := newEnv(t, 5, 2, "")

	t.Run("partitioned during acquire", func(t *testing.T) {
		// The first attempt must take the lock: a later one would open a new
		// connection to redis-4, whose handshake the cut holds, so its SET
		// would never be sent. A loaded machine can make the first attempt
		// miss the node timeout; the scenario is then tried again on a
		// fresh lock name (at most 5 times), never skipped.
		var (
			l    *redlock.Lease
			name string
			heal func()
		)
		for try := 1; ; try++ {
			attempts := &countHandler{}
			c := e.client(t, 0, locks.Config{TTL: 10 * time.Second, Logger: slog.New(attempts),
				Options: map[string]string{"node_timeout": "1s"}})
			// A lock taken and given back leaves a pooled connection to
			// every node, so the SET to redis-4 is sent, and held by the
			// cut, rather than stuck in a new connection's handshake.
			warm := acquire(t, c.Locker(fmt.Sprintf("warm-up-%d", try)), 5*time.Second)
			_ = warm.Release(context.Background())
			name = fmt.Sprintf("cut-%d", try)
			heal = e.cut(t, 0, 4)
			l = acquire(t, c.Locker(name), 5*time.Second)
			if n := attempts.failed.Load(); n == 0 {
				break
			} else if try == 5 {
				t.Fatalf("%d tries: every first attempt missed the node timeout (%d attempts failed in the last)", try, n)
			} else {
				t.Logf("try %d: %d attempts failed before the lock was taken; trying again", try, n)
			}
			heal()
			_ = l.Release(locktest.Timeout(t, 2*time.Second))
		}
		if got := l.Nodes(); !slices.Equal(got, names(0, 1, 2, 3)) {
			t.Fatalf("lease on %v", got)
		}
		heal()
		// The SET held by the partition arrives after the heal, as a
		// retransmitted request would: redis-4 holds our key too.
		locktest.WaitFor(t, 3*time.Second, "held SET delivered to redis-4", func() bool {
			return slices.Contains(e.holders(t, key(name)), "redis-4")
		})
		if err := l.Release(locktest.Timeout(t, 2*time.Second)); err != nil {
			t.Fatalf("Release: %v", err)
		}
		if h := e.holders(t, key(name)); len(h) > 0 {
			t.Errorf("key left on %v after Release", h)
		}
	})

	t.Run("failed attempt", func(t *testing.T) {
		// Replies from three nodes come after the node timeout: their SETs
		// are executed, the client cannot know, and must delete them.
		c := e.client(t, 1, locks.Config{TTL: 10 * time.Second, Options: map[string]string{"node_timeout": "50ms"}})
		e.slow(t, 300*time.Millisecond, 1, 2, 3, 4)
		_, err := c.Locker("timed-out").Acquire(locktest.Timeout(t, 400*time.Millisecond))
		if !errors.Is(err, redlock.ErrNoQuorum) {
			t.Fatalf("Acquire: %v, want ErrNoQuorum", err)
		}
		var ne *locks.NodeError
		if !errors.As(err, &ne) || !errors.Is(ne, context.DeadlineExceeded) {
			t.Errorf("error %v: want a node's DeadlineExceeded", err)
		}
		locktest.WaitFor(t, 2*time.Second, "keys deleted from every node", func() bool {
			return len(e.holders(t, key("timed-out"))) == 0
		})
	})
}

// TestMutualExclusion: 8 clients on 5 primaries, as many 1ms critical
// sections as fit in 3s, never overlap.
func TestMutualExclusion(t *testing.T) {
	const clients = 8
	e := newEnv(t, 5, clients, "")
	r := locktest.Contend(t, locktest.Contenders{
		Connect: func(i int) locks.Client {
			return e.client(t, i, locks.Config{TTL: 5 * time.Second, Seed: int64(i),
				Options: map[string]string{"node_timeout": "500ms"}})
		},
		Clients: clients, For: 3 * time.Second, Hold: time.Millisecond,
	})
	if r.Ops < 10 {
		t.Errorf("only %d critical sections in 3s", r.Ops)
	}
}

// TestRestart: the holder took the key on exactly three of five nodes (two
// were down), then one of them restarts. Without persistence it comes back
// empty, a second client takes a majority, and the holder's renewal finds
// the quorum gone (Lost); with appendfsync always the key survives the
// restart and the second client cannot take the lock.
func TestRestart(t *testing.T) {
	for _, tt := range []struct {
		persistence string
		survives    bool
	}{
		{cluster.PersistNone, false},
		{cluster.PersistAlways, true},
	} {
		t.Run(tt.persistence, func(t *testing.T) {
			e := newEnv(t, 5, 2, tt.persistence)
			cfg := locks.Config{TTL: 3 * time.Second, Options: map[string]string{"renew": "true", "node_timeout": "300ms"}}
			a, b := e.client(t, 0, cfg), e.client(t, 1, cfg)
			for _, i := range []int{3, 4} {
				if err := e.node(t, i).Kill(locktest.Timeout(t, 5*time.Second)); err != nil {
					t.Fatal(err)
				}
			}
			held := acquire(t, a.Locker("restart"), 5*time.Second)
			if got := held.Nodes(); !slices.Equal(got, names(0, 1, 2)) {
				t.Fatalf("holder on %v", got)
			}
			if got := a.Counters(); got["grants"] != 1 || got["bare_grants"] != 1 {
				t.Errorf("counters %v after a grant by 3 of 5: want grants 1, bare_grants 1", got)
			}
			for _, i := range []int{3, 4} {
				if err := e.node(t, i).Start(locktest.Timeout(t, testenv.ClusterStartTimeout)); err != nil {
					t.Fatal(err)
				}
			}
			if err := e.node(t, 2).Restart(locktest.Timeout(t, testenv.ClusterStartTimeout), 0); err != nil {
				t.Fatal(err)
			}
			if got := slices.Contains(e.holders(t, key("restart")), "redis-2"); got != tt.survives {
				t.Fatalf("key on redis-2 after restart: %v, want %v", got, tt.survives)
			}
			second, err := b.Locker("restart").Acquire(locktest.Timeout(t, 2*time.Second))
			if tt.survives {
				if err == nil {
					t.Fatalf("second client acquired on %v while the first holds", second.(*redlock.Lease).Nodes())
				}
				select {
				case <-held.Lost():
					t.Error("holder lost the lock although the key survived")
				default:
				}
				if err := held.Release(locktest.Timeout(t, 2*time.Second)); err != nil {
					t.Errorf("Release: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("second client: %v; want the lock (mutual exclusion broken by the restart)", err)
			}
			if got := second.(*redlock.Lease).Nodes(); !slices.Equal(got, names(2, 3, 4)) {
				t.Errorf("second client on %v", got)
			}
			select {
			case <-held.Lost():
			case <-time.After(3 * time.Second):
				t.Error("holder's Lost not closed although its quorum is gone")
			}
		})
	}
}

// TestLost: without renewal Lost closes when the validity runs out; with
// renewal it stays open while extensions reach a quorum, and closes by
// ValidUntil once they cannot.
func TestLost(t *testing.T) {
	e := newEnv(t, 5, 2, "")
	const ttl = 1500 * time.Millisecond
	opts := func(renew bool) map[string]string {
		return map[string]string{"node_timeout": "300ms", "renew": strconv.FormatBool(renew)}
	}

	t.Run("no renewal", func(t *testing.T) {
		c := e.client(t, 0, locks.Config{TTL: ttl, Options: opts(false)})
		l := acquire(t, c.Locker("plain"), 5*time.Second)
		until := l.ValidUntil()
		<-l.Lost()
		if early := time.Until(until); early > 0 {
			t.Errorf("Lost closed %v before the validity ran out", early)
		}
		if late := time.Since(until); late > time.Second {
			t.Errorf("Lost closed %v after the validity ran out", late)
		}
		if err := l.Release(locktest.Timeout(t, 2*time.Second)); !errors.Is(err, locks.ErrNotHeld) {
			t.Errorf("Release after the validity: %v, want ErrNotHeld", err)
		}
	})

	t.Run("renewal", func(t *testing.T) {
		c := e.client(t, 1, locks.Config{TTL: ttl, Options: opts(true)})
		l := acquire(t, c.Locker("renewed"), 5*time.Second)
		first := l.ValidUntil()
		select {
		case <-l.Lost():
			t.Fatal("Lost closed while renewals succeed")
		case <-time.After(2 * ttl):
		}
		if !l.ValidUntil().After(first.Add(ttl)) {
			t.Errorf("ValidUntil %v not moved by renewals (first %v)", l.ValidUntil(), first)
		}
		if h := e.holders(t, key("renewed")); len(h) != 5 {
			t.Errorf("renewed key on %v", h)
		}
		e.cut(t, 1, 0, 2, 4)
		select {
		case <-l.Lost():
		case <-time.After(ttl + time.Second):
			t.Fatal("Lost not closed with renewals short of a quorum")
		}
		if early := time.Until(l.ValidUntil()); early > 0 {
			t.Errorf("Lost closed %v before ValidUntil", early)
		}
		if err := l.Release(locktest.Timeout(t, 2*time.Second)); !errors.Is(err, locks.ErrNotHeld) {
			t.Errorf("Release after losing the quorum: %v, want ErrNotHeld", err)
		}
	})
}

// countHandler is a slog.Handler counting the failed Acquire attempts the
// client logs.
type countHandler struct{ failed atomic.Int64 }

func (h *countHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *countHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "attempt failed" {
		h.failed.Add(1)
	}
	return nil
}

func (h *countHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *countHandler) WithGroup(string) slog.Handler      { return h }
