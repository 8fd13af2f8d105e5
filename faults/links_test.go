package faults

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/testenv"
)

func TestLatency(t *testing.T) {
	c := redisCluster(t, cluster.RedisSpec{}, 2)
	ctx := ctxT(t, 60*time.Second)
	const lat = 200 * time.Millisecond
	for _, tc := range []struct {
		name       string
		f          Fault
		slow, fast []int // clients slowed by lat / untouched
	}{
		{"clients->redis-0", Fault{Link: "clients->redis-0"}, []int{0, 1}, nil},
		{"client-1->redis-0", Fault{Link: "client-1->redis-0"}, []int{1}, []int{0}},
		{"node redis-0", Fault{Node: "redis-0"}, []int{0, 1}, nil},
		{"holder->redis-0", Fault{Link: "holder->redis-0"}, []int{0}, []int{1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := testEnv(t, c)
			env.Holder = holderAt(0)
			rcs := []*redis.Client{client(t, c, 0, "redis-0", 2*time.Second), client(t, c, 1, "redis-0", 2*time.Second)}
			base := make([]time.Duration, len(rcs))
			for i, rc := range rcs {
				var err error
				if base[i], err = timed(ctx, rc, 5); err != nil {
					t.Fatal(err)
				}
			}
			f := tc.f
			f.Type, f.Latency = Latency, lat
			_, heal := apply(t, ctx, env, f)
			// Bounds in units of the toxic: a slowed link delays every PING
			// by lat once (not on both streams: below 2 lat); an untouched or
			// healed one has some PING faster than lat.
			for _, i := range tc.slow {
				d, err := timed(ctx, rcs[i], 3)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("client-%d PING %v -> %v with %v latency", i, base[i], d, lat)
				if d < lat || d >= 2*lat {
					t.Errorf("client-%d fastest PING took %v with %v latency, want %v..%v", i, d, lat, lat, 2*lat)
				}
			}
			for _, i := range tc.fast {
				if d, err := timed(ctx, rcs[i], 5); err != nil || d >= lat {
					t.Errorf("untouched client-%d fastest PING %v, %v: delayed by the toxic", i, d, err)
				}
			}
			heal()
			noToxics(t, c)
			for i, rc := range rcs {
				if d, err := timed(ctx, rc, 5); err != nil || d >= lat {
					t.Errorf("client-%d fastest PING after heal %v, %v: still delayed", i, d, err)
				}
			}
		})
	}
}

func TestBandwidth(t *testing.T) {
	c := redisCluster(t, cluster.RedisSpec{}, 1)
	ctx := ctxT(t, 60*time.Second)
	rc := client(t, c, 0, "redis-0", 10*time.Second)
	big := strings.Repeat("x", 512<<10)
	if err := rc.Set(ctx, "big", big, 0).Err(); err != nil {
		t.Fatal(err)
	}
	get := func() time.Duration {
		t.Helper()
		t0 := time.Now()
		v, err := rc.Get(ctx, "big").Result()
		if err != nil || len(v) != len(big) {
			t.Fatalf("GET big: %d bytes, %v", len(v), err)
		}
		return time.Since(t0)
	}
	// fastest of three GETs: a throttle slows every one, a busy machine some.
	fastest := func() time.Duration { return min(get(), get(), get()) }
	before := fastest()
	_, heal := apply(t, ctx, testEnv(t, c), Fault{Type: Bandwidth, Link: "clients->redis-0", RateKbps: 1024})
	during := get()
	heal()
	after := fastest()
	t.Logf("GET of 512 KB: %v, at 1024 KB/s %v, after heal %v", before, during, after)
	// 512 KB at 1024 KB/s is 500 ms, on top of what the GET costs unthrottled;
	// the upper bound only says the limit is not far below the one asked for.
	const throttled = 500 * time.Millisecond
	if during < 4*throttled/5 || during > 4*(throttled+before) {
		t.Errorf("GET at 1024 KB/s took %v, want about %v + %v", during, throttled, before)
	}
	if before >= 4*throttled/5 || after >= 4*throttled/5 {
		t.Errorf("fastest GET without limit took %v / %v: as slow as the throttle", before, after)
	}
}

func TestPartition(t *testing.T) {
	c := redisCluster(t, cluster.RedisSpec{Replicas: 1}, 1)
	ctx := ctxT(t, 60*time.Second)
	env := testEnv(t, c)

	t.Run("clients|redis-0", func(t *testing.T) {
		rc := client(t, c, 0, "redis-0", 300*time.Millisecond)
		if err := rc.Ping(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		eff, heal := apply(t, ctx, env, Fault{Type: Partition,
			Groups: [][]string{{"clients"}, {"redis-0"}}})
		if !strings.Contains(eff.detail, "client-0->redis-0") || strings.Contains(eff.detail, "redis-0-r0->") {
			t.Errorf("detail %q", eff.detail)
		}
		t0 := time.Now()
		if err := rc.Ping(ctx).Err(); !isTimeout(err) {
			t.Fatalf("PING across the partition: %v, want a timeout", err)
		}
		t.Logf("PING across the partition timed out after %v", time.Since(t0))
		// The replica's side is untouched.
		if err := client(t, c, 0, "redis-0-r0", time.Second).Ping(ctx).Err(); err != nil {
			t.Errorf("PING redis-0-r0: %v", err)
		}
		heal()
		noToxics(t, c)
		testenv.Eventually(t, 5*time.Second, "PING after heal", func() error { return rc.Ping(ctx).Err() })
	})

	t.Run("replication", func(t *testing.T) {
		prim, repl := direct(t, c, "redis-0"), direct(t, c, "redis-0-r0")
		_, heal := apply(t, ctx, env, Fault{Type: Partition,
			Groups: [][]string{{"redis-0"}, {"redis-0-r0"}}})
		if !mustLink(t, c, "redis-0-r0->redis-0").IsCut() || mustLink(t, c, "client-0->redis-0").IsCut() {
			t.Fatal("wrong links cut")
		}
		if err := prim.Set(ctx, "during", "1", 0).Err(); err != nil {
			t.Fatal(err)
		}
		// A negative check needs some time to pass: the key must not arrive
		// over the cut link (replication on loopback takes well under 1 ms).
		deadline := time.Now().Add(300 * time.Millisecond)
		for time.Now().Before(deadline) {
			if n, _ := repl.Exists(ctx, "during").Result(); n != 0 {
				t.Fatal("write reached the replica across the partition")
			}
			time.Sleep(20 * time.Millisecond) // poll interval
		}
		heal()
		testenv.Eventually(t, 10*time.Second, "write replicated after heal", func() error {
			if n, err := repl.Exists(ctx, "during").Result(); err != nil || n != 1 {
				return errors.New("not yet")
			}
			return nil
		})
	})
}

// TestPartitionSentinels: the classic Sentinel split: the primary is cut
// off from every sentinel, its replica and the clients. The sentinels'
// connections to it go through their own links, so they stop hearing from
// it, agree it is down (+odown) and promote the replica, while the old
// primary, alive and unaware on its side, still takes writes. After the
// heal Sentinel turns it into a replica of the new primary.
func TestPartitionSentinels(t *testing.T) {
	spec := cluster.RedisSpec{Replicas: 1, Sentinels: 3}
	groups := [][]string{{"redis-0"}, {"sentinel-0", "sentinel-1", "sentinel-2", "redis-0-r0", "clients"}}
	f := Fault{Type: Partition, Groups: groups}
	if err := Check(cluster.PlanOf(cluster.Spec{Redis: &spec, Clients: 1}), false, []Fault{f}); err != nil {
		t.Fatalf("Check: %v", err)
	}
	c := redisCluster(t, spec, 1)
	ctx := ctxT(t, 90*time.Second)
	env := testEnv(t, c)
	old := direct(t, c, "redis-0") // the harness's own view of the old primary, around the proxies

	t0 := time.Now()
	_, heal := apply(t, ctx, env, f)
	want := map[string]bool{
		"sentinel-0->redis-0": true, "sentinel-1->redis-0": true, "sentinel-2->redis-0": true,
		"redis-0-r0->redis-0": true, "redis-0->redis-0-r0": true, "redis-peers->redis-0": true,
		"client-0->redis-0": true,
	}
	for _, l := range c.AllLinks() {
		if l.IsCut() != want[l.Name] {
			t.Errorf("%s cut %v, want %v", l.Name, l.IsCut(), want[l.Name])
		}
	}

	// Every sentinel loses the primary (its own link is cut) and they
	// agree it is down.
	testenv.Eventually(t, 30*time.Second, "sentinels promote redis-0-r0", func() error {
		p, err := c.Primary(ctx, "redis-0")
		if err != nil {
			return err
		}
		if p.Name != "redis-0-r0" {
			return fmt.Errorf("primary %s", p.Name)
		}
		return nil
	})
	t.Logf("redis-0-r0 promoted %v after the partition", time.Since(t0).Round(time.Millisecond))
	odown := 0
	for _, n := range c.Nodes() {
		if n.Kind != cluster.KindSentinel {
			continue
		}
		b, err := os.ReadFile(n.LogPath())
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "+sdown master redis-0") {
			t.Errorf("%s did not deem redis-0 down:\n%s", n.Name, b)
		}
		if strings.Contains(string(b), "+odown master redis-0") {
			odown++
		}
	}
	if odown == 0 {
		t.Error("no sentinel logged +odown for redis-0")
	}
	// Split brain: the old primary is alive and still a primary, and
	// takes writes from whoever reaches it.
	if role, err := old.Do(ctx, "ROLE").Slice(); err != nil || role[0] != "master" {
		t.Errorf("old primary's role during the partition: %v, %v", role, err)
	}
	if err := old.Set(ctx, "split", "lost", 0).Err(); err != nil {
		t.Errorf("write to the old primary: %v", err)
	}

	heal()
	testenv.Eventually(t, testenv.SentinelDemoteWithin, "old primary demoted after heal", func() error {
		role, err := old.Do(ctx, "ROLE").Slice()
		if err != nil {
			return err
		}
		if role[0] != "slave" {
			return fmt.Errorf("role %v", role[0])
		}
		return nil
	})
	// Its write during the partition is gone: it resynchronised from the
	// new primary.
	testenv.Eventually(t, 10*time.Second, "old primary resynchronised", func() error {
		if n, err := old.Exists(ctx, "split").Result(); err != nil || n != 0 {
			return fmt.Errorf("split exists %d, %v", n, err)
		}
		return nil
	})
}

func TestIsolate(t *testing.T) {
	c := redisCluster(t, cluster.RedisSpec{Replicas: 1}, 2)
	ctx := ctxT(t, 60*time.Second)
	env := testEnv(t, c)

	t.Run("node", func(t *testing.T) {
		rc := client(t, c, 1, "redis-0", 300*time.Millisecond)
		eff, heal := apply(t, ctx, env, Fault{Type: Partition, Isolate: "redis-0"})
		for _, l := range c.AllLinks() {
			if want := l.To == "redis-0"; l.IsCut() != want {
				t.Errorf("%s cut %v, want %v", l.Name, l.IsCut(), want)
			}
		}
		if eff.target != "redis-0" {
			t.Errorf("target %q", eff.target)
		}
		if err := rc.Ping(ctx).Err(); !isTimeout(err) {
			t.Errorf("PING an isolated node: %v, want a timeout", err)
		}
		heal()
		noToxics(t, c)
		testenv.Eventually(t, 5*time.Second, "PING after heal", func() error { return rc.Ping(ctx).Err() })
	})

	t.Run("holder", func(t *testing.T) {
		env := env
		env.Holder = holderAt(1)
		r0, r1 := client(t, c, 0, "redis-0", 300*time.Millisecond), client(t, c, 1, "redis-0", 300*time.Millisecond)
		_, heal := apply(t, ctx, env, Fault{Type: Partition, Isolate: "holder"})
		for _, l := range c.AllLinks() {
			if want := l.From == "client-1"; l.IsCut() != want {
				t.Errorf("%s cut %v, want %v", l.Name, l.IsCut(), want)
			}
		}
		if err := r1.Ping(ctx).Err(); !isTimeout(err) {
			t.Errorf("PING from the isolated client: %v, want a timeout", err)
		}
		if err := r0.Ping(ctx).Err(); err != nil {
			t.Errorf("PING from client-0: %v", err)
		}
		heal()
		testenv.Eventually(t, 5*time.Second, "PING after heal", func() error { return r1.Ping(ctx).Err() })
	})
}

func TestReset(t *testing.T) {
	c := redisCluster(t, cluster.RedisSpec{}, 1)
	ctx := ctxT(t, 60*time.Second)
	env := testEnv(t, c)

	t.Run("once", func(t *testing.T) {
		rc := client(t, c, 0, "redis-0", time.Second)
		id, err := rc.ClientID(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		eff, _ := apply(t, ctx, env, Fault{Type: Reset, Link: "clients->redis-0"})
		if eff.heal != nil {
			t.Error("a reset without for has something to heal")
		}
		// The pooled connection was closed: a command fails on it, or a new
		// connection (with a new id) serves it.
		testenv.Eventually(t, 5*time.Second, "new connection after reset", func() error {
			id2, err := rc.ClientID(ctx).Result()
			if err == nil && id2 == id {
				return errors.New("same connection after reset")
			}
			return err
		})
	})

	t.Run("for", func(t *testing.T) {
		rc := client(t, c, 0, "redis-0", time.Second)
		if err := rc.Ping(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		_, heal := apply(t, ctx, env, Fault{Type: Reset, Link: "clients->redis-0", For: time.Minute})
		for i := range 3 { // the live connection and new ones are reset
			if err := rc.Ping(ctx).Err(); err == nil {
				t.Fatalf("PING %d succeeded while connections are reset", i)
			} else {
				t.Logf("PING %d: %v", i, err)
			}
		}
		heal()
		noToxics(t, c)
		testenv.Eventually(t, 5*time.Second, "PING after heal", func() error { return rc.Ping(ctx).Err() })
	})
}
