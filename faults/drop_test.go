package faults

import (
	"bufio"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
)

// TestDrop: on a dropped link a SET gets no reply and is lost (a partition
// would deliver it at the heal), the other client's link is untouched,
// the fault sees itself bite, and after the heal the link serves again.
func TestDrop(t *testing.T) {
	c := redisCluster(t, cluster.RedisSpec{}, 2)
	ctx := ctxT(t, 60*time.Second)
	env := testEnv(t, c)
	dropped := client(t, c, 0, "redis-0", 300*time.Millisecond)
	other := client(t, c, 1, "redis-0", 2*time.Second)
	eff, heal := apply(t, ctx, env, Fault{Type: Drop, Link: "client-0->redis-0"})
	if ev := (dropAction{}).observe(ctx, env, Fault{}, eff); !ev.bit {
		t.Errorf("drop did not see itself bite: %s", ev.seen)
	}
	if err := dropped.Set(ctx, "k", "during", 0).Err(); !isTimeout(err) {
		t.Errorf("SET through the dropped link: %v, want a timeout", err)
	}
	if err := other.Ping(ctx).Err(); err != nil {
		t.Errorf("PING through the untouched link: %v", err)
	}
	heal()
	noToxics(t, c)
	if err := dropped.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after heal: %v", err)
	}
	// Held data would have reached Redis at the heal; dropped data never.
	time.Sleep(200 * time.Millisecond)
	if v, err := direct(t, c, "redis-0").Get(ctx, "k").Result(); err == nil {
		t.Errorf("the SET sent during the drop reached Redis (k = %q)", v)
	}
}

// TestDropReply: with direction: reply the server acts on a request whose
// answer never arrives: the SET times out on the client and is in Redis.
func TestDropReply(t *testing.T) {
	c := redisCluster(t, cluster.RedisSpec{}, 1)
	ctx := ctxT(t, 60*time.Second)
	env := testEnv(t, c)
	dropped := client(t, c, 0, "redis-0", 300*time.Millisecond)
	f := Fault{Type: Drop, Link: "client-0->redis-0"}
	if err := f.SetValue("direction", DropReply); err != nil {
		t.Fatal(err)
	}
	if err := Check(c.Plan(), false, []Fault{f}); err != nil {
		t.Fatal(err)
	}
	eff, heal := apply(t, ctx, env, f)
	if ev := (dropAction{}).observe(ctx, env, f, eff); !ev.bit {
		t.Errorf("drop did not see itself bite: %s", ev.seen)
	}
	if err := dropped.Set(ctx, "k", "during", 0).Err(); !isTimeout(err) {
		t.Errorf("SET through the link whose replies are dropped: %v, want a timeout", err)
	}
	if v, err := direct(t, c, "redis-0").Get(ctx, "k").Result(); err != nil || v != "during" {
		t.Errorf("the SET whose reply was dropped did not act: k = %q, %v", v, err)
	}
	heal()
	noToxics(t, c)
	if err := dropped.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after heal: %v", err)
	}
}

// TestDropCloseAfter: with close_after (a value field Fault holds in
// Values) a connection that received nothing for that long is closed:
// the client reads EOF, not a timeout.
func TestDropCloseAfter(t *testing.T) {
	c := redisCluster(t, cluster.RedisSpec{}, 1)
	ctx := ctxT(t, 60*time.Second)
	f := Fault{Type: Drop, Link: "client-0->redis-0"}
	if err := f.SetValue("close_after", 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := Check(c.Plan(), false, []Fault{f}); err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", mustLink(t, c, "client-0->redis-0").Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	apply(t, ctx, testEnv(t, c), f)
	t0 := time.Now()
	conn.SetDeadline(t0.Add(5 * time.Second))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	took := time.Since(t0)
	if !errors.Is(err, io.EOF) || line != "" {
		t.Fatalf("read through the dropped link: %q, %v after %v; want EOF", line, err, took)
	}
	if took < 250*time.Millisecond || took > 3*time.Second {
		t.Errorf("connection closed after %v, want about close_after (300ms)", took)
	}
}

// TestDropValues: close_after follows its declaration in the table.
func TestDropValues(t *testing.T) {
	plan := cluster.PlanOf(cluster.Spec{Redis: &cluster.RedisSpec{}, Clients: 1})
	f := Fault{Type: Drop, Node: "redis-0"}
	if err := f.SetValue("close_after", -time.Second); err != nil {
		t.Fatal(err)
	}
	if err := Check(plan, false, []Fault{f}); err == nil || !strings.Contains(err.Error(), "faults[0].close_after (drop): must be >= 0 (got -1s)") {
		t.Errorf("negative close_after: %v", err)
	}
	if err := f.SetValue("close_after", 2); err == nil {
		t.Error("close_after took an int")
	}
	if got := f.Duration("close_after"); got != -time.Second {
		t.Errorf("close_after = %v", got)
	}
	if ft, _ := Lookup(Drop); !strings.Contains(strings.Join(ft.Fields(), " "), "close_after") {
		t.Errorf("drop takes %v", ft.Fields())
	}
	netns := cluster.PlanOf(cluster.Spec{Provider: cluster.ProviderNetns, Redis: &cluster.RedisSpec{}, Clients: 1})
	if err := Check(netns, false, []Fault{{Type: Drop, Node: "redis-0"}}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("drop under netns: %v, want unsupported", err)
	}
}
