package faults

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/backends/zookeeper"
	"github.com/locklab/locklab/testenv"
)

// clockOf reads node's own clock against the harness's, failing the test
// when it cannot.
func clockOf(t *testing.T, ctx context.Context, c *cluster.Cluster, node string) skew {
	t.Helper()
	k, err := readClock(ctx, mustNode(t, c, node))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func wantSkew(t *testing.T, what string, k skew, want time.Duration) {
	t.Helper()
	if !k.near(want) {
		t.Errorf("%s: clock %s (± %v), want %s", what, k, k.unsure, signed(want))
	}
}

// TestClockJumpForward jumps one of two Redis servers' clock forward by
// 120 s: a 60 s lock key held there expires (PTTL -2) and a second SET NX
// takes it, while the other server's copy keeps its TTL; TIME shows the
// offset until the heal gives the real clock back.
func TestClockJumpForward(t *testing.T) {
	c := redisCluster(t, cluster.RedisSpec{Primaries: 2}, 1)
	ctx := ctxT(t, 60*time.Second)
	r0, r1 := direct(t, c, "redis-0"), direct(t, c, "redis-1")
	for _, rc := range []*redis.Client{r0, r1} {
		if err := rc.Set(ctx, "lock", "me", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	wantSkew(t, "redis-0 before", clockOf(t, ctx, c, "redis-0"), 0)
	eff, heal := apply(t, ctx, testEnv(t, c), Fault{Type: ClockJump, Node: "redis-0", Offset: 120 * time.Second})
	if eff.method != MethodReal || !eff.seen.bit || !strings.Contains(eff.seen.seen, "TIME on redis-0") {
		t.Errorf("method %q, evidence %+v", eff.method, eff.seen)
	}
	wantSkew(t, "redis-0 jumped", clockOf(t, ctx, c, "redis-0"), 120*time.Second)
	wantSkew(t, "redis-1 untouched", clockOf(t, ctx, c, "redis-1"), 0)
	if ttl, err := r0.PTTL(ctx, "lock").Result(); err != nil || ttl != -2 {
		t.Errorf("redis-0 lock PTTL %v, %v: want -2 (expired by the jump)", ttl, err)
	}
	if ok, err := r0.SetNX(ctx, "lock", "other", time.Minute).Result(); err != nil || !ok {
		t.Errorf("second SET NX on redis-0: %v, %v: want granted", ok, err)
	}
	if ttl, err := r1.PTTL(ctx, "lock").Result(); err != nil || ttl < 50*time.Second {
		t.Errorf("redis-1 lock PTTL %v, %v: want most of 60s (its clock kept time)", ttl, err)
	}
	heal()
	wantSkew(t, "redis-0 healed", clockOf(t, ctx, c, "redis-0"), 0)
	// The key set on the jumped clock expires at jumped+60s: back on the
	// real clock it has about 180 s to live.
	if ttl, err := r0.PTTL(ctx, "lock").Result(); err != nil || ttl < 170*time.Second {
		t.Errorf("redis-0 PTTL after the heal %v, %v: want about 180s", ttl, err)
	}
}

// TestClockJumpBack: a key set with PX 2000 before its server's clock
// jumps back 5 s is still there 2.5 s later (its expiry is now 7 s away on
// the server's clock), while the same key on an untouched server expired.
func TestClockJumpBack(t *testing.T) {
	c := redisCluster(t, cluster.RedisSpec{Primaries: 2}, 1)
	ctx := ctxT(t, 60*time.Second)
	r0, r1 := direct(t, c, "redis-0"), direct(t, c, "redis-1")
	for _, rc := range []*redis.Client{r0, r1} {
		if err := rc.Set(ctx, "lock", "me", 2*time.Second).Err(); err != nil {
			t.Fatal(err)
		}
	}
	apply(t, ctx, testEnv(t, c), Fault{Type: ClockJump, Node: "redis-0", Offset: -5 * time.Second})
	wantSkew(t, "redis-0 back", clockOf(t, ctx, c, "redis-0"), -5*time.Second)
	time.Sleep(2500 * time.Millisecond)
	if ttl, err := r0.PTTL(ctx, "lock").Result(); err != nil || ttl < 3*time.Second {
		t.Errorf("redis-0 lock PTTL %v, %v after 2.5s: want about 4.5s (lives longer)", ttl, err)
	}
	if n, err := r1.Exists(ctx, "lock").Result(); err != nil || n != 0 {
		t.Errorf("redis-1 lock exists=%d, %v after 2.5s: want expired", n, err)
	}
}

// TestClockDrift: at rate 1.5 the server's TIME advances 1.5 s per real
// second; the fault's evidence at its end says so.
func TestClockDrift(t *testing.T) {
	c := redisCluster(t, cluster.RedisSpec{}, 1)
	ctx := ctxT(t, 60*time.Second)
	ws := runOnly(t, testEnv(t, c), []Fault{
		{Type: ClockDrift, Node: "redis-0", For: 2 * time.Second, Values: map[string]any{"rate": 1.5}},
	}, 5*time.Second)
	wantBit(t, ws[0], true, "TIME on redis-0", "at the end")
	if ws[0].Method != MethodReal {
		t.Errorf("method %q", ws[0].Method)
	}
	wantSkew(t, "healed", clockOf(t, ctx, c, "redis-0"), 0)

	// Measured directly: 2 s of real time are 3 s of the server's.
	n := mustNode(t, c, "redis-0")
	_, heal := apply(t, ctx, testEnv(t, c), Fault{Type: ClockDrift, Node: "redis-0", Values: map[string]any{"rate": 1.5}})
	a := clockOf(t, ctx, c, "redis-0")
	time.Sleep(2 * time.Second)
	b := clockOf(t, ctx, c, "redis-0")
	real := b.at.Sub(a.at)
	wantSkew(t, "gained over "+real.String(), b.sub(a), real/2)
	heal()
	if s, ok := n.Clock(); !ok || !s.Real() {
		t.Errorf("clock file after heal: %v, %v", s, ok)
	}
}

// TestClockStrobe: with offset 10 s and period 500 ms the server's clock
// is seen both at +10 s and at the real time.
func TestClockStrobe(t *testing.T) {
	c := redisCluster(t, cluster.RedisSpec{}, 1)
	ctx := ctxT(t, 60*time.Second)
	_, heal := apply(t, ctx, testEnv(t, c), Fault{Type: ClockStrobe, Node: "redis-0", Offset: 10 * time.Second,
		Values: map[string]any{"period": 500 * time.Millisecond}})
	var ahead, real int
	for range 30 {
		k := clockOf(t, ctx, c, "redis-0")
		switch {
		case k.near(10 * time.Second):
			ahead++
		case k.near(0):
			real++
		default:
			t.Errorf("clock %s: neither +10s nor real", k)
		}
		time.Sleep(70 * time.Millisecond)
	}
	t.Logf("%d readings at +10s, %d at real time", ahead, real)
	if ahead < 5 || real < 5 {
		t.Errorf("%d readings at +10s, %d at real time: want both", ahead, real)
	}
	heal()
	wantSkew(t, "healed", clockOf(t, ctx, c, "redis-0"), 0)
}

// TestClockJumpZooKeeperLeader jumps the ZooKeeper leader's clock 120 s
// forward, far past a 2 s session's timeout: its log's timestamps jump,
// but sessions are timed on the monotonic clock, so an ephemeral node's
// session survives.
func TestClockJumpZooKeeperLeader(t *testing.T) {
	c := testenv.Cluster(t, cluster.Spec{Backends: map[string]cluster.Settings{"zookeeper": {"nodes": 3}}, Clients: 1})
	ctx := ctxT(t, 90*time.Second)
	var addrs []string
	for _, n := range c.Nodes() {
		addrs = append(addrs, n.Addr())
	}
	conn, _, err := zk.Connect(addrs, 2*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Create("/held", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	session := conn.SessionID()
	ws := runOnly(t, testEnv(t, c), []Fault{{Type: ClockJump, Node: zookeeper.LeaderSelector, Offset: 120 * time.Second, For: 5 * time.Second}}, 8*time.Second)
	wantBit(t, ws[0], true, "the log timestamp of srvr on zk-")
	if !strings.HasPrefix(ws[0].Target, "zk-leader=zk-") || ws[0].Method != MethodReal {
		t.Errorf("window %+v", ws[0])
	}
	leader := strings.TrimPrefix(ws[0].Target, "zk-leader=")
	wantSkew(t, leader+" healed", clockOf(t, ctx, c, leader), 0)
	ok, _, err := conn.Exists("/held")
	if err != nil || !ok || conn.SessionID() != session {
		t.Errorf("ephemeral node exists=%v, %v, session %x (was %x): want the session to survive", ok, err, conn.SessionID(), session)
	}
}

// TestClockInterrupted cancels runs of clock faults at random moments:
// each leaves every node on the real clock, and closing the cluster leaves
// no server running.
func TestClockInterrupted(t *testing.T) {
	const runs = 20
	for i := range runs {
		c, err := cluster.Start(ctxT(t, 30*time.Second), cluster.Spec{Redis: &cluster.RedisSpec{Primaries: 2}, Clients: 1, Dir: t.TempDir()})
		if err != nil {
			testenv.Unavailable(t, "start redis: %v", err)
		}
		var pids []int
		for _, n := range c.Nodes() {
			pids = append(pids, n.Pid())
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rand.IntN(800))*time.Millisecond)
		Run(ctx, testEnv(t, c), []Fault{
			{Type: ClockJump, Node: "redis-0", Offset: time.Hour, At: time.Duration(rand.IntN(400)) * time.Millisecond},
			{Type: ClockDrift, Node: "redis-1", Values: map[string]any{"rate": 3.0}, At: time.Duration(rand.IntN(400)) * time.Millisecond},
			{Type: ClockStrobe, Node: "redis-1", Offset: -time.Hour, Values: map[string]any{"period": 50 * time.Millisecond},
				At: time.Duration(rand.IntN(400)) * time.Millisecond, For: time.Duration(1+rand.IntN(400)) * time.Millisecond},
		})
		cancel()
		for _, n := range c.Nodes() {
			if s, ok := n.Clock(); !ok || !s.Real() {
				t.Errorf("run %d: %s's clock after the run: %v (has one: %v)", i, n.Name, s, ok)
			}
			if k, err := readClock(context.Background(), n); err != nil || !k.near(0) {
				t.Errorf("run %d: %s reads %v, %v", i, n.Name, k, err)
			}
		}
		if err := c.Close(); err != nil {
			t.Errorf("run %d: close: %v", i, err)
		}
		for _, pid := range pids {
			if liveState(pid) != "" {
				t.Errorf("run %d: process %d still running after Close", i, pid)
			}
		}
	}
}

// TestClockJumpNetns: provider netns launches its servers with the clock
// shim too: a forward jump on redis-0 shows in its TIME and expires its
// lock key, while zk-0 beside it keeps time.
func TestClockJumpNetns(t *testing.T) {
	if !testenv.Netns(t) {
		return
	}
	c := testenv.Cluster(t, cluster.Spec{Provider: cluster.ProviderNetns, Redis: &cluster.RedisSpec{},
		Backends: map[string]cluster.Settings{"zookeeper": {"nodes": 1}}, Clients: 1})
	ctx := ctxT(t, 60*time.Second)
	r0 := direct(t, c, "redis-0")
	if err := r0.Set(ctx, "lock", "me", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	eff, _ := apply(t, ctx, testEnv(t, c), Fault{Type: ClockJump, Node: "redis-0", Offset: 120 * time.Second})
	if eff.method != MethodReal || !eff.seen.bit {
		t.Errorf("method %q, evidence %+v", eff.method, eff.seen)
	}
	wantSkew(t, "redis-0 jumped", clockOf(t, ctx, c, "redis-0"), 120*time.Second)
	wantSkew(t, "zk-0 untouched", clockOf(t, ctx, c, "zk-0"), 0)
	if ttl, err := r0.PTTL(ctx, "lock").Result(); err != nil || ttl != -2 {
		t.Errorf("redis-0 lock PTTL %v, %v: want -2 (expired by the jump)", ttl, err)
	}
}

// TestClockJumpSentinel: a Sentinel's clock moves too, read from its INFO
// server; the primary it monitors keeps time.
func TestClockJumpSentinel(t *testing.T) {
	c := redisCluster(t, cluster.RedisSpec{Replicas: 1, Sentinels: 1}, 1)
	ctx := ctxT(t, 60*time.Second)
	eff, heal := apply(t, ctx, testEnv(t, c), Fault{Type: ClockJump, Node: "sentinel-0", Offset: -time.Hour})
	if eff.method != MethodReal || !eff.seen.bit || !strings.Contains(eff.seen.seen, "INFO server_time_usec on sentinel-0") {
		t.Errorf("method %q, evidence %+v", eff.method, eff.seen)
	}
	wantSkew(t, "sentinel-0", clockOf(t, ctx, c, "sentinel-0"), -time.Hour)
	wantSkew(t, "redis-0", clockOf(t, ctx, c, "redis-0"), 0)
	heal()
	wantSkew(t, "sentinel-0 healed", clockOf(t, ctx, c, "sentinel-0"), 0)
}
