package faults

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/testenv"
)

// runOnly runs fs through Run until each has ended (for: after its heal;
// one-shot faults: when done) and returns the windows.
func runOnly(t *testing.T, env Env, fs []Fault, until time.Duration) []Window {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctxT(t, 60*time.Second), until)
	defer cancel()
	ws := Run(ctx, env, fs)
	if len(ws) != len(fs) {
		t.Fatalf("windows %+v, want %d", ws, len(fs))
	}
	for _, w := range ws {
		t.Logf("window %s %s: bit %v, observed %q, detail %q, err %q", w.Type, w.Target, deref(w.Bit), w.Observed, w.Detail, w.Err)
	}
	return ws
}

func deref(b *bool) any {
	if b == nil {
		return nil
	}
	return *b
}

// wantBit fails unless w was observed with bit want and an observation
// containing every one of says.
func wantBit(t *testing.T, w Window, want bool, says ...string) {
	t.Helper()
	if w.Err != "" {
		t.Fatalf("fault failed: %s", w.Err)
	}
	if w.Bit == nil || *w.Bit != want {
		t.Errorf("bit %v, want %v (observed %q)", deref(w.Bit), want, w.Observed)
	}
	for _, s := range says {
		if !strings.Contains(w.Observed, s) {
			t.Errorf("observed %q, want it to say %q", w.Observed, s)
		}
	}
}

// TestRestartEvidence: a restart of a Redis node without persistence bites
// when it had a key (the lock) and came back without; with persistence the
// key survives (not absent) and the restart bites by the process being
// gone and back; without a key there was nothing to lose.
func TestRestartEvidence(t *testing.T) {
	for _, tc := range []struct {
		name, persistence string
		key, bit          bool
		says              []string
	}{
		{"none with a key", cluster.PersistNone, true, true, []string{"no persistence: 1 key before the kill", "came back empty"}},
		{"always with a key", cluster.PersistAlways, true, true, []string{"appendonly yes: 1 key before the kill, 1 now", "absent after the restart: false"}},
		{"none without a key", cluster.PersistNone, false, false, []string{"0 keys before the kill", "no lock key to lose"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := redisCluster(t, cluster.RedisSpec{Persistence: tc.persistence}, 1)
			ctx := ctxT(t, 30*time.Second)
			if tc.key {
				if err := direct(t, c, "redis-0").Set(ctx, "lock", "me", time.Minute).Err(); err != nil {
					t.Fatal(err)
				}
			}
			ws := runOnly(t, testEnv(t, c), []Fault{{Type: Restart, Node: "redis-0"}}, 30*time.Second)
			wantBit(t, ws[0], tc.bit, tc.says...)
			if !strings.Contains(ws[0].Observed, "serving again") {
				t.Errorf("observed %q: want the new process serving", ws[0].Observed)
			}
		})
	}
}

// TestPauseAndKillEvidence: a paused server is seen stopped, a killed one
// gone.
func TestPauseAndKillEvidence(t *testing.T) {
	c := redisCluster(t, cluster.RedisSpec{Primaries: 2}, 1)
	ws := runOnly(t, testEnv(t, c), []Fault{
		{Type: Pause, Node: "redis-0", For: 200 * time.Millisecond},
		{Type: Kill, Node: "redis-1"},
	}, 2*time.Second)
	wantBit(t, ws[0], true, "stopped (state T")
	wantBit(t, ws[1], true, "gone")
}

// TestLatencyAndResetEvidence: latency shows in a round trip measured
// through the proxy; a reset with for resets a new connection.
func TestLatencyAndResetEvidence(t *testing.T) {
	c := redisCluster(t, cluster.RedisSpec{}, 1)
	ws := runOnly(t, testEnv(t, c), []Fault{
		{Type: Latency, Link: "client-0->redis-0", Latency: 150 * time.Millisecond, For: 300 * time.Millisecond},
	}, 5*time.Second)
	wantBit(t, ws[0], true, "client-0->redis-0: round trip")

	client(t, c, 0, "redis-0", time.Second) // one live connection to reset
	ws = runOnly(t, testEnv(t, c), []Fault{{Type: Reset, Link: "client-0->redis-0", For: 300 * time.Millisecond}}, 5*time.Second)
	wantBit(t, ws[0], true, "1 live connection reset", "failed on its first request")
}

// TestPartitionHolderEvidence cuts the holder (a visit of a real checker
// resource, held at its write until the cut applied) from the servers: the
// cut bites when a contender enters while the holder is inside, and does
// not when the holder stays alone inside with a promise outliving the cut.
func TestPartitionHolderEvidence(t *testing.T) {
	for _, tc := range []struct {
		name      string
		contender bool
		bit       bool
		says      string
	}{
		{"contender granted", true, true, "1 contender granted the lock while it was inside"},
		{"no race", false, false, "no contender entered while it was inside"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := redisCluster(t, cluster.RedisSpec{}, 2)
			ctx := ctxT(t, 30*time.Second)
			res := checker.New(checker.FencingOff, time.Now())
			env := testEnv(t, c)
			picked := make(chan struct{})
			env.Holder = func(ctx context.Context) (HeldClient, error) {
				h, err := res.HoldInside(ctx)
				if err != nil {
					return HeldClient{}, err
				}
				close(picked)
				return HeldClient{Client: h.Client(), Release: h.Release, Seen: func() HolderState {
					s := h.Seen()
					return HolderState{Inside: s.Inside, Contenders: s.Contenders, Expired: s.Expired,
						Unbounded: s.Unbounded, ValidUntil: s.ValidUntil}
				}}, nil
			}
			id, err := res.Enter(ctx, checker.Visit{Lock: "L", Client: 1, ValidUntil: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := res.Read(ctx, id); err != nil {
				t.Fatal(err)
			}
			// Without a contender the holder tries to write and leave at
			// once: held, it is still inside when the cut applies. With
			// one, it stays until the contender entered.
			proceed := make(chan struct{})
			if !tc.contender {
				close(proceed)
			}
			left := make(chan error, 1)
			go func() {
				// The holder tries to leave only once the fault picked it:
				// the hold is what keeps it inside, not how fast Run starts.
				<-picked
				<-proceed
				if err := res.Write(ctx, id, 1); err != nil {
					left <- err
					return
				}
				left <- res.Exit(ctx, id)
			}()
			f := Fault{Type: Partition, Isolate: Holder, For: 500 * time.Millisecond}
			done := make(chan []Window, 1)
			go func() { done <- Run(ctx, env, []Fault{f}) }()
			if tc.contender {
				testenv.Eventually(t, 5*time.Second, "client-1 cut off", func() error {
					if !mustLink(t, c, "client-1->redis-0").IsCut() {
						return errors.New("not cut yet")
					}
					return nil
				})
				v, err := res.Enter(ctx, checker.Visit{Lock: "L", Client: 0, ValidUntil: time.Hour})
				if err != nil {
					t.Fatal(err)
				}
				close(proceed)
				defer res.Exit(ctx, v)
			}
			ws := <-done
			if err := <-left; err != nil {
				t.Fatal(err)
			}
			if len(ws) != 1 || ws[0].Target != "client-1" {
				t.Fatalf("windows %+v", ws)
			}
			t.Logf("bit %v observed %q", deref(ws[0].Bit), ws[0].Observed)
			wantBit(t, ws[0], tc.bit, "holder client-1 inside when the fault applied", tc.says)
		})
	}
}

// TestRoundTripEveryKind: the raw round trip that link faults' evidence
// times is answered by a server of every kind the cluster starts here
// (Redis primary, replica and Sentinel, ZooKeeper, etcd).
func TestRoundTripEveryKind(t *testing.T) {
	c := testenv.Cluster(t, cluster.Spec{
		Redis:    &cluster.RedisSpec{Replicas: 1, Sentinels: 1},
		Backends: map[string]cluster.Settings{"zookeeper": {"nodes": 1}, "etcd": {"nodes": 1}},
	})
	ctx := ctxT(t, 30*time.Second)
	for _, name := range []string{"redis-0", "redis-0-r0", "sentinel-0", "zk-0", "etcd-0"} {
		n := mustNode(t, c, name)
		d, answered, ok, err := fastestRoundTrip(ctx, n.Addr(), n.Kind, 0)
		if !ok || !answered || err != nil {
			t.Errorf("%s (%s): round trip %v answered %v asked %v: %v", name, n.Kind, d, answered, ok, err)
		}
	}
}
