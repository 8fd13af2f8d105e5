package faults

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/testenv"
)

func within(d, want, tol time.Duration) bool { return d >= want-tol && d <= want+tol }

func TestRunSchedule(t *testing.T) {
	c := redisCluster(t, cluster.RedisSpec{}, 2)
	ctx := ctxT(t, 60*time.Second)
	env := testEnv(t, c)
	const (
		tol    = 100 * time.Millisecond
		runFor = 1500 * time.Millisecond
	)
	fs := []Fault{
		{Type: Latency, Link: "client-0->redis-0", Latency: 50 * time.Millisecond, At: 200 * time.Millisecond, For: 400 * time.Millisecond},
		{Type: Bandwidth, Node: "redis-0", RateKbps: 100, At: 300 * time.Millisecond, For: 300 * time.Millisecond},
		{Type: Latency, Node: "redis-9", Latency: time.Second, At: 100 * time.Millisecond}, // no such node
		{Type: Latency, Link: "clients->redis-0", Latency: time.Second, At: time.Minute},   // after the run
		{Type: Reset, Link: "client-1->redis-0", At: 500 * time.Millisecond},               // one-shot
		{Type: Partition, Isolate: "client-1", At: 700 * time.Millisecond},                 // to the end
		{Type: Pause, Node: "redis-0", At: 0, For: 100 * time.Millisecond},
	}
	rctx, cancel := context.WithDeadline(ctx, env.Base.Add(runFor))
	defer cancel()
	// While the run goes on, the latency toxic is on client-0's link
	// exactly during its window.
	var seen []time.Duration
	probe := make(chan struct{})
	go func() {
		defer close(probe)
		l := mustLink(t, c, "client-0->redis-0")
		for rctx.Err() == nil {
			for _, n := range l.Toxics() {
				if strings.HasPrefix(n, "latency") {
					seen = append(seen, time.Since(env.Base))
				}
			}
			time.Sleep(10 * time.Millisecond) // sampling interval
		}
	}()
	ws := Run(rctx, env, fs)
	<-probe
	ended := time.Since(env.Base)
	noToxics(t, c)
	if ended > runFor+500*time.Millisecond {
		t.Errorf("Run returned %v after Base, the run ended at %v", ended, runFor)
	}

	byIndex := map[int]Window{}
	for _, w := range ws {
		t.Logf("%+v", w)
		byIndex[w.Index] = w
	}
	if len(ws) != 6 {
		t.Fatalf("%d windows, want 6 (one per fault but the one after the run)", len(ws))
	}
	if _, ok := byIndex[3]; ok {
		t.Error("a fault due after the run has a window")
	}
	for i, w := range ws {
		if i > 0 && ws[i-1].Index >= w.Index {
			t.Errorf("windows not in fault order: %d after %d", w.Index, ws[i-1].Index)
		}
	}
	for _, i := range []int{0, 1, 2, 4, 5, 6} {
		w := byIndex[i]
		f := fs[i]
		if w.Type != f.Type {
			t.Errorf("window %d type %q", i, w.Type)
		}
		if !within(w.Start, f.At, tol) {
			t.Errorf("fault %d started at %v, want %v±%v", i, w.Start, f.At, tol)
		}
		if (w.Err != "") != (i == 2) {
			t.Errorf("fault %d err %q", i, w.Err)
		}
		wantEnd := f.At + f.For
		switch {
		case i == 2 || i == 4:
			// A one-shot action's window ends when the action has
			// finished: a reset reads /proc/net/tcp and closes every
			// connection, which took up to 170 ms under -race on a
			// loaded 2-core machine. It must end soon after its start,
			// not at the run's end.
			if w.End < w.Start || w.End > w.Start+time.Second {
				t.Errorf("one-shot fault %d window %v-%v, want it to end within 1s of its start", i, w.Start, w.End)
			}
			continue
		case f.For == 0:
			wantEnd = runFor
		}
		if !within(w.End, wantEnd, tol) {
			t.Errorf("fault %d ended at %v, want %v±%v", i, w.End, wantEnd, tol)
		}
	}
	if w := byIndex[2]; !strings.Contains(w.Err, `no node "redis-9"`) {
		t.Errorf("error of the fault on a missing node: %q", w.Err)
	}
	if w := byIndex[0]; w.Target != "client-0->redis-0" || !strings.Contains(w.Detail, "50ms") {
		t.Errorf("latency window %+v", w)
	}
	if len(seen) == 0 || !within(seen[0], fs[0].At, tol) || !within(seen[len(seen)-1], fs[0].At+fs[0].For, tol) {
		t.Errorf("latency toxic seen from %v to %v, want %v to %v", first(seen), last(seen), fs[0].At, fs[0].At+fs[0].For)
	}
}

func first(ds []time.Duration) any {
	if len(ds) == 0 {
		return "never"
	}
	return ds[0]
}

func last(ds []time.Duration) any {
	if len(ds) == 0 {
		return "never"
	}
	return ds[len(ds)-1]
}

// TestRunHealsOnCancel cancels a run while every healable fault is applied
// and checks that nothing is left: no toxic, no cut, no paused node or
// client.
func TestRunHealsOnCancel(t *testing.T) {
	c := redisCluster(t, cluster.RedisSpec{Replicas: 1}, 3)
	ctx := ctxT(t, 60*time.Second)
	env := testEnv(t, c)
	ps := startProcs(t, 3)
	env.Clients = ps
	env.Holder = holderAt(2)
	long := time.Hour
	fs := []Fault{
		{Type: Latency, Link: "clients->redis-0", Latency: 100 * time.Millisecond, For: long},
		{Type: Latency, Node: "redis-0", Latency: 10 * time.Millisecond}, // to the end, overlapping
		{Type: Bandwidth, Node: "redis-0-r0", RateKbps: 10, For: long},
		{Type: Partition, Groups: [][]string{{"client-1"}, {"redis-0", "redis-0-r0"}}, For: long},
		{Type: Partition, Isolate: "client-1"}, // the same links, overlapping
		{Type: Reset, Link: "client-0->redis-0-r0", For: long},
		{Type: Pause, Node: "redis-0-r0", For: long},
		{Type: PauseClient, Client: "0", For: long},
		{Type: PauseClient, Client: Holder},
		{Type: Pause, Node: "redis-0", At: long}, // never starts
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan []Window)
	go func() { done <- Run(rctx, env, fs) }()

	replica := mustNode(t, c, "redis-0-r0")
	testenv.Eventually(t, 5*time.Second, "every fault applied", func() error {
		if n := len(mustLink(t, c, "client-0->redis-0").Toxics()); n != 2 {
			return fmt.Errorf("client-0->redis-0 has %d toxics", n)
		}
		if !mustLink(t, c, "client-1->redis-0").IsCut() || !mustLink(t, c, "client-1->redis-0-r0").IsCut() {
			return errors.New("client-1 not cut off")
		}
		if len(mustLink(t, c, "client-0->redis-0-r0").Toxics()) != 2 { // bandwidth, reset_peer
			return errors.New("no reset toxic")
		}
		for _, pid := range []int{replica.Pid(), ps.pids[0], ps.pids[2]} {
			if s, _ := procState(pid); s != "T" {
				return fmt.Errorf("pid %d state %s", pid, s)
			}
		}
		return nil
	})
	t0 := time.Now()
	cancel()
	var ws []Window
	select {
	case ws = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10s of the cancel")
	}
	t.Logf("Run returned %v after the cancel", time.Since(t0))
	noToxics(t, c)
	for _, pid := range []int{replica.Pid(), ps.pids[0], ps.pids[1], ps.pids[2]} {
		if s, err := procState(pid); err != nil || s == "T" {
			t.Errorf("pid %d state %s, %v: still paused", pid, s, err)
		}
	}
	if len(ws) != len(fs)-1 {
		t.Errorf("%d windows, want %d", len(ws), len(fs)-1)
	}
	for _, w := range ws {
		if w.Err != "" {
			t.Errorf("window %+v", w)
		}
	}
	if ws[8].Target != "client-2" {
		t.Errorf("holder pause target %q", ws[8].Target)
	}
	testenv.Eventually(t, 5*time.Second, "replica answers", func() error {
		return direct(t, c, "redis-0-r0").Ping(ctx).Err()
	})
}

func TestRunErrors(t *testing.T) {
	c := redisCluster(t, cluster.RedisSpec{}, 1)
	ctx := ctxT(t, 30*time.Second)
	env := testEnv(t, c) // no Holder, no Clients
	rctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	ws := Run(rctx, env, []Fault{
		{Type: "flood", Node: "redis-0"},
		{Type: Latency, Link: "holder->redis-0", Latency: time.Second},
		{Type: PauseClient, Client: "0", For: time.Second},
		{Type: Partition, Groups: [][]string{{"redis-0"}, {"clients"}}, For: 50 * time.Millisecond},
	})
	want := []string{"unknown fault type", "holder needs Env.Holder", "process_per_client", ""}
	if len(ws) != len(want) {
		t.Fatalf("windows %+v", ws)
	}
	for i, w := range ws {
		if want[i] == "" && w.Err != "" || !strings.Contains(w.Err, want[i]) {
			t.Errorf("window %d err %q, want %q", i, w.Err, want[i])
		}
	}
	noToxics(t, c)
}
