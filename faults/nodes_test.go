package faults

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/testenv"
)

func TestPause(t *testing.T) {
	c := redisCluster(t, cluster.RedisSpec{}, 1)
	ctx := ctxT(t, 60*time.Second)
	n := mustNode(t, c, "redis-0")
	rc := client(t, c, 0, "redis-0", 200*time.Millisecond)
	if err := rc.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	_, heal := apply(t, ctx, testEnv(t, c), Fault{Type: Pause, Node: "redis-0"})
	waitState(t, n.Pid(), "T", false) // signals are delivered asynchronously
	if err := rc.Ping(ctx).Err(); !isTimeout(err) {
		t.Errorf("PING a paused server: %v, want a timeout", err)
	}
	heal()
	waitState(t, n.Pid(), "T", true)
	testenv.Eventually(t, 5*time.Second, "PING after SIGCONT", func() error { return rc.Ping(ctx).Err() })
}

func TestKill(t *testing.T) {
	c := redisCluster(t, cluster.RedisSpec{}, 1)
	ctx := ctxT(t, 60*time.Second)
	n := mustNode(t, c, "redis-0")
	rc := client(t, c, 0, "redis-0", time.Second)
	eff, _ := apply(t, ctx, testEnv(t, c), Fault{Type: Kill, Node: "redis-0"})
	if !eff.lasting || eff.heal != nil {
		t.Errorf("kill effect %+v: want lasting, nothing to heal", eff)
	}
	if n.Alive() {
		t.Fatal("node alive after kill")
	}
	if _, err := net.DialTimeout("tcp", n.Addr(), time.Second); err == nil {
		t.Error("killed server still accepts connections")
	}
	if err := rc.Ping(ctx).Err(); err == nil {
		t.Error("killed server answered PING")
	}
}

func TestRestart(t *testing.T) {
	for _, tc := range []struct {
		persistence string
		kept        bool
	}{
		{cluster.PersistAlways, true},
		{cluster.PersistNone, false},
	} {
		t.Run(tc.persistence, func(t *testing.T) {
			c := redisCluster(t, cluster.RedisSpec{Persistence: tc.persistence}, 1)
			ctx := ctxT(t, 60*time.Second)
			n := mustNode(t, c, "redis-0")
			pid := n.Pid()
			rc := client(t, c, 0, "redis-0", 2*time.Second)
			if err := rc.Set(ctx, "k", "v", 0).Err(); err != nil {
				t.Fatal(err)
			}
			t0 := time.Now()
			eff, _ := apply(t, ctx, testEnv(t, c), Fault{Type: Restart, Node: "redis-0", Delay: 300 * time.Millisecond})
			if took := time.Since(t0); took < 300*time.Millisecond {
				t.Errorf("restart took %v, less than its delay", took)
			}
			if !n.Alive() || n.Pid() == pid {
				t.Fatalf("after restart alive=%v pid %d (was %d)", n.Alive(), n.Pid(), pid)
			}
			var got string
			testenv.Eventually(t, 5*time.Second, "GET after restart", func() (err error) {
				got, err = rc.Get(ctx, "k").Result()
				if errors.Is(err, redis.Nil) {
					return nil
				}
				return err
			})
			if kept := got == "v"; kept != tc.kept {
				t.Errorf("key kept = %v, want %v (persistence %s)", kept, tc.kept, tc.persistence)
			}
			if eff.heal != nil || eff.lasting {
				t.Errorf("restart effect %+v: want neither heal nor lasting", eff)
			}
		})
	}
}

func TestFailover(t *testing.T) {
	c := redisCluster(t, cluster.RedisSpec{Replicas: 1, Sentinels: 3}, 1)
	ctx := ctxT(t, 90*time.Second)
	ep := c.Endpoints(0)
	var d net.Dialer
	fc := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName: "redis-0", SentinelAddrs: ep.Sentinels,
		// Sentinels report real addresses; the client must go through its
		// own proxies, like the lock clients do.
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if r, ok := ep.Redirect[addr]; ok {
				addr = r
			}
			return d.DialContext(ctx, network, addr)
		},
		DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second,
		ContextTimeoutEnabled: true, MaxRetries: -1,
	})
	t.Cleanup(func() { fc.Close() })
	if err := fc.Set(ctx, "before", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}

	t0 := time.Now()
	eff, _ := apply(t, ctx, testEnv(t, c), Fault{Type: Failover, Node: "redis-0"})
	took := time.Since(t0)
	if !strings.Contains(eff.detail, "killed redis-0") || !strings.Contains(eff.detail, "redis-0-r0") {
		t.Errorf("detail %q", eff.detail)
	}
	if mustNode(t, c, "redis-0").Alive() {
		t.Error("old primary alive")
	}
	t.Logf("failover took %v", took)

	// The promoted replica is a primary and the failover client writes to it.
	repl := direct(t, c, "redis-0-r0")
	if role, err := repl.Do(ctx, "ROLE").Slice(); err != nil || role[0] != "master" {
		t.Fatalf("ROLE of redis-0-r0: %v, %v", role, err)
	}
	testenv.Eventually(t, 30*time.Second, "write through the failover client", func() error {
		return fc.Set(ctx, "after", "2", 0).Err()
	})
	if v, err := repl.Get(ctx, "after").Result(); err != nil || v != "2" {
		t.Errorf("new primary has after=%q, %v", v, err)
	}
	if v, err := repl.Get(ctx, "before").Result(); err != nil || v != "1" {
		t.Errorf("new primary has before=%q, %v (replicated before the kill)", v, err)
	}
	if !strings.Contains(eff.seen.seen, "all on the new primary with the same values: lock key survived") {
		t.Errorf("evidence %q, want the replicated key found with its value", eff.seen.seen)
	}

	// A second failover of the group finds no replica left to promote: it
	// kills the current primary and times out waiting, bounded by ctx.
	sctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	_, err := failoverAction{}.apply(sctx, testEnv(t, c), Fault{Type: Failover, Node: "redis-0"})
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "no replica of redis-0 promoted") {
		t.Errorf("second failover: %v", err)
	}
}

// TestFailoverRedisCluster: in a Redis Cluster the failover waits for the
// cluster's own promotion of the killed primary's replica, and its
// evidence compares the keys of the old and the new primary.
func TestFailoverRedisCluster(t *testing.T) {
	c := redisCluster(t, cluster.RedisSpec{Mode: cluster.RedisCluster, Primaries: 3, Replicas: 1}, 1)
	ctx := ctxT(t, 90*time.Second)
	primary := direct(t, c, "redis-0")
	// Slot 3300 ("b") is redis-0's (0-5460).
	if err := primary.Set(ctx, "b", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	repl := direct(t, c, "redis-0-r0")
	testenv.Eventually(t, 10*time.Second, "replication of b", func() error {
		if n, err := repl.DBSize(ctx).Result(); err != nil || n != 1 {
			return fmt.Errorf("DBSIZE of redis-0-r0: %d, %v", n, err)
		}
		return nil
	})
	t0 := time.Now()
	eff, _ := apply(t, ctx, testEnv(t, c), Fault{Type: Failover, Node: "redis-0"})
	t.Logf("failover took %v: %s", time.Since(t0), eff.detail)
	if !strings.Contains(eff.detail, "killed redis-0") || !strings.Contains(eff.detail, "the cluster promoted redis-0-r0") {
		t.Errorf("detail %q", eff.detail)
	}
	if mustNode(t, c, "redis-0").Alive() {
		t.Error("old primary alive")
	}
	if role, err := repl.Do(ctx, "ROLE").Slice(); err != nil || role[0] != "master" {
		t.Fatalf("ROLE of redis-0-r0: %v, %v", role, err)
	}
	if !strings.Contains(eff.seen.seen, "redis-0-r0 promoted") || !strings.Contains(eff.seen.seen, "lock key survived") {
		t.Errorf("evidence %q", eff.seen.seen)
	}
}

func TestPauseClient(t *testing.T) {
	c := redisCluster(t, cluster.RedisSpec{}, 2)
	ctx := ctxT(t, 30*time.Second)
	ps := startProcs(t, 2)
	env := testEnv(t, c)
	env.Clients = ps
	entered := make(chan int, 1)
	env.Holder = func(ctx context.Context) (HeldClient, error) {
		select {
		case i := <-entered:
			return HeldClient{Client: i}, nil
		case <-ctx.Done():
			return HeldClient{}, ctx.Err()
		}
	}
	const pauseFor = 400 * time.Millisecond
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan []Window)
	go func() {
		done <- Run(rctx, env, []Fault{{Type: PauseClient, Client: Holder, For: pauseFor}})
	}()
	for _, pid := range ps.pids {
		if s, _ := procState(pid); s == "T" {
			t.Fatal("a client was paused before any entered the critical section")
		}
	}
	entered <- 1 // client-1 enters the critical section
	waitState(t, ps.pids[1], "T", false)
	if s, _ := procState(ps.pids[0]); s == "T" {
		t.Error("client-0 paused too")
	}
	waitState(t, ps.pids[1], "T", true)
	stop()
	ws := <-done
	if len(ws) != 1 {
		t.Fatalf("windows %+v", ws)
	}
	w := ws[0]
	t.Logf("window %+v", w)
	if w.Target != "client-1" || w.Err != "" || !strings.Contains(w.Detail, "holder was client-1") {
		t.Errorf("window %+v", w)
	}
	if d := w.End - w.Start; d < pauseFor || d > pauseFor+100*time.Millisecond {
		t.Errorf("client paused for %v, want %v", d, pauseFor)
	}
}

// TestEmulatedClockJump runs the emulation provider external gets (every
// TTL shortened by the offset) on local servers.
func TestEmulatedClockJump(t *testing.T) {
	t.Run("primary", func(t *testing.T) {
		c := redisCluster(t, cluster.RedisSpec{Primaries: 2}, 1)
		ctx := ctxT(t, 60*time.Second)
		r0, r1 := direct(t, c, "redis-0"), direct(t, c, "redis-1")
		for _, rc := range []*redis.Client{r0, r1} {
			if err := rc.Set(ctx, "lock", "me", 10*time.Second).Err(); err != nil {
				t.Fatal(err)
			}
		}
		if err := r0.Set(ctx, "long", "x", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		if err := r0.Set(ctx, "forever", "x", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if err := r0.Do(ctx, "SELECT", 3).Err(); err != nil { // one connection: PoolSize 1
			t.Fatal(err)
		}
		if err := r0.Set(ctx, "db3", "x", 5*time.Second).Err(); err != nil {
			t.Fatal(err)
		}
		if err := r0.Do(ctx, "SELECT", 0).Err(); err != nil {
			t.Fatal(err)
		}
		eff, err := emulateJump(ctx, mustNode(t, c, "redis-0"), Fault{Type: ClockJump, Node: "redis-0", Offset: 9900 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if eff.method != MethodEmulated {
			t.Errorf("method %q", eff.method)
		}
		// db3 (5s) expires at once, long (60s) is shortened, and so is lock
		// (10s) unless 100ms passed since it was set.
		if !strings.Contains(eff.detail, "1 key without TTL untouched") ||
			!strings.Contains(eff.detail, "1 key expired, 2 TTLs shortened") && !strings.Contains(eff.detail, "2 keys expired, 1 TTL shortened") {
			t.Errorf("detail %q", eff.detail)
		}
		if err := r0.Do(ctx, "SELECT", 3).Err(); err != nil {
			t.Fatal(err)
		}
		if n, err := r0.Exists(ctx, "db3").Result(); err != nil || n != 0 {
			t.Errorf("db3 exists=%d, %v: want expired by the jump (every database)", n, err)
		}
		if err := r0.Do(ctx, "SELECT", 0).Err(); err != nil {
			t.Fatal(err)
		}
		// The 10s lock had less than 100ms left after the 9.9s jump.
		if ttl, err := r0.PTTL(ctx, "lock").Result(); err != nil || ttl > 100*time.Millisecond {
			t.Errorf("redis-0 lock PTTL %v, %v: want < 100ms", ttl, err)
		}
		testenv.Eventually(t, time.Second, "lock expired on redis-0", func() error {
			if n, err := r0.Exists(ctx, "lock").Result(); err != nil || n != 0 {
				return fmt.Errorf("exists %d, %v", n, err)
			}
			return nil
		})
		if ttl, err := r0.PTTL(ctx, "long").Result(); err != nil || ttl > 50100*time.Millisecond || ttl < 45*time.Second {
			t.Errorf("redis-0 long PTTL %v, %v: want about 50.1s", ttl, err)
		}
		if ttl, err := r0.PTTL(ctx, "forever").Result(); err != nil || ttl != -1 {
			t.Errorf("redis-0 forever PTTL %v, %v: want no TTL", ttl, err)
		}
		// Untouched, it keeps most of its 10s; jumped, it would have < 100ms.
		if ttl, err := r1.PTTL(ctx, "lock").Result(); err != nil || ttl < 5*time.Second {
			t.Errorf("redis-1 lock PTTL %v, %v: want most of 10s left (other nodes untouched)", ttl, err)
		}
	})

	t.Run("replica", func(t *testing.T) {
		c := redisCluster(t, cluster.RedisSpec{Replicas: 1}, 1)
		ctx := ctxT(t, 60*time.Second)
		prim, repl := direct(t, c, "redis-0"), direct(t, c, "redis-0-r0")
		if err := prim.Set(ctx, "lock", "me", 10*time.Second).Err(); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, 5*time.Second, "replicated", func() error {
			if n, err := repl.Exists(ctx, "lock").Result(); err != nil || n != 1 {
				return fmt.Errorf("exists %d, %v", n, err)
			}
			return nil
		})
		if _, err := emulateJump(ctx, mustNode(t, c, "redis-0-r0"), Fault{Type: ClockJump, Node: "redis-0-r0", Offset: 9900 * time.Millisecond}); err != nil {
			t.Fatal(err)
		}
		// A replica does not expire keys itself, but reads treat them as gone.
		testenv.Eventually(t, time.Second, "lock expired on the replica", func() error {
			if n, err := repl.Exists(ctx, "lock").Result(); err != nil || n != 0 {
				return fmt.Errorf("exists %d, %v", n, err)
			}
			return nil
		})
		if ttl, err := prim.PTTL(ctx, "lock").Result(); err != nil || ttl < 5*time.Second {
			t.Errorf("primary lock PTTL %v, %v: want most of 10s left (the jump was the replica's)", ttl, err)
		}
		if v, err := repl.ConfigGet(ctx, "replica-read-only").Result(); err != nil || v["replica-read-only"] != "yes" {
			t.Errorf("replica-read-only %v, %v: want restored to yes", v, err)
		}
	})
}
