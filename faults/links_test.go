package faults

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/scenarios"
)

func TestLatency(t *testing.T) {
	c := redisCluster(t, cluster.RedisSpec{}, 2)
	ctx := ctxT(t, 60*time.Second)
	const lat = 200 * time.Millisecond
	for _, tc := range []struct {
		name       string
		f          scenarios.Fault
		slow, fast []int // clients slowed by lat / untouched
	}{
		{"clients->redis-0", scenarios.Fault{Link: "clients->redis-0"}, []int{0, 1}, nil},
		{"client-1->redis-0", scenarios.Fault{Link: "client-1->redis-0"}, []int{1}, []int{0}},
		{"node redis-0", scenarios.Fault{Node: "redis-0"}, []int{0, 1}, nil},
		{"holder->redis-0", scenarios.Fault{Link: "holder->redis-0"}, []int{0}, []int{1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := testEnv(t, c)
			env.Holder = func(context.Context) (int, error) { return 0, nil }
			rcs := []*redis.Client{client(t, c, 0, "redis-0", 2*time.Second), client(t, c, 1, "redis-0", 2*time.Second)}
			base := make([]time.Duration, len(rcs))
			for i, rc := range rcs {
				var err error
				if base[i], err = timed(ctx, rc, 5); err != nil {
					t.Fatal(err)
				}
			}
			f := tc.f
			f.Type, f.Latency = scenarios.FaultLatency, lat
			_, heal := apply(t, ctx, env, f)
			for _, i := range tc.slow {
				d, err := timed(ctx, rcs[i], 3)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("client-%d PING %v -> %v with %v latency", i, base[i], d, lat)
				if d < lat || d > lat+100*time.Millisecond {
					t.Errorf("client-%d PING took %v with %v latency, want %v..%v", i, d, lat, lat, lat+100*time.Millisecond)
				}
			}
			for _, i := range tc.fast {
				if d, err := timed(ctx, rcs[i], 3); err != nil || d > 50*time.Millisecond {
					t.Errorf("untouched client-%d PING %v, %v", i, d, err)
				}
			}
			heal()
			noToxics(t, c)
			for i, rc := range rcs {
				if d, err := timed(ctx, rc, 3); err != nil || d > 50*time.Millisecond {
					t.Errorf("client-%d PING after heal %v, %v", i, d, err)
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
	before := get()
	_, heal := apply(t, ctx, testEnv(t, c), scenarios.Fault{Type: scenarios.FaultBandwidth, Link: "clients->redis-0", RateKbps: 1024})
	during := get()
	heal()
	after := get()
	t.Logf("GET of 512 KB: %v, at 1024 KB/s %v, after heal %v", before, during, after)
	// 512 KB at 1024 KB/s is 500 ms.
	if during < 400*time.Millisecond || during > 2*time.Second {
		t.Errorf("GET at 1024 KB/s took %v, want about 500ms", during)
	}
	if before > 200*time.Millisecond || after > 200*time.Millisecond {
		t.Errorf("GET without limit took %v / %v", before, after)
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
		eff, heal := apply(t, ctx, env, scenarios.Fault{Type: scenarios.FaultPartition,
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
		eventually(t, 5*time.Second, "PING after heal", func() error { return rc.Ping(ctx).Err() })
	})

	t.Run("replication", func(t *testing.T) {
		prim, repl := direct(t, c, "redis-0"), direct(t, c, "redis-0-r0")
		_, heal := apply(t, ctx, env, scenarios.Fault{Type: scenarios.FaultPartition,
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
		eventually(t, 10*time.Second, "write replicated after heal", func() error {
			if n, err := repl.Exists(ctx, "during").Result(); err != nil || n != 1 {
				return errors.New("not yet")
			}
			return nil
		})
	})
}

func TestIsolate(t *testing.T) {
	c := redisCluster(t, cluster.RedisSpec{Replicas: 1}, 2)
	ctx := ctxT(t, 60*time.Second)
	env := testEnv(t, c)

	t.Run("node", func(t *testing.T) {
		rc := client(t, c, 1, "redis-0", 300*time.Millisecond)
		eff, heal := apply(t, ctx, env, scenarios.Fault{Type: scenarios.FaultPartition, Isolate: "redis-0"})
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
		eventually(t, 5*time.Second, "PING after heal", func() error { return rc.Ping(ctx).Err() })
	})

	t.Run("holder", func(t *testing.T) {
		env := env
		env.Holder = func(context.Context) (int, error) { return 1, nil }
		r0, r1 := client(t, c, 0, "redis-0", 300*time.Millisecond), client(t, c, 1, "redis-0", 300*time.Millisecond)
		_, heal := apply(t, ctx, env, scenarios.Fault{Type: scenarios.FaultPartition, Isolate: "holder"})
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
		eventually(t, 5*time.Second, "PING after heal", func() error { return r1.Ping(ctx).Err() })
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
		eff, _ := apply(t, ctx, env, scenarios.Fault{Type: scenarios.FaultReset, Link: "clients->redis-0"})
		if eff.heal != nil {
			t.Error("a reset without for has something to heal")
		}
		// The pooled connection was closed: a command fails on it, or a new
		// connection (with a new id) serves it.
		eventually(t, 5*time.Second, "new connection after reset", func() error {
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
		_, heal := apply(t, ctx, env, scenarios.Fault{Type: scenarios.FaultReset, Link: "clients->redis-0", For: time.Minute})
		for i := range 3 { // the live connection and new ones are reset
			if err := rc.Ping(ctx).Err(); err == nil {
				t.Fatalf("PING %d succeeded while connections are reset", i)
			} else {
				t.Logf("PING %d: %v", i, err)
			}
		}
		heal()
		noToxics(t, c)
		eventually(t, 5*time.Second, "PING after heal", func() error { return rc.Ping(ctx).Err() })
	})
}
