package faults

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/testenv"
)

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

func TestMain(m *testing.M) {
	redis.SetLogger(quietLogger{}) // pool dial errors are expected while faults act
	// toxiproxy's toxics log through zerolog's global logger (trace level
	// by default), whatever logger the cluster gave its server.
	zerolog.SetGlobalLevel(zerolog.Disabled)
	os.Exit(m.Run())
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// testEnv is an Env on c with Base now, logging warnings to t.
func testEnv(t *testing.T, c *cluster.Cluster) Env {
	return Env{Cluster: c, Base: time.Now(),
		Logger: slog.New(slog.NewTextHandler(tLog{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))}
}

type tLog struct{ t *testing.T }

func (w tLog) Write(p []byte) (int, error) { w.t.Log(strings.TrimSpace(string(p))); return len(p), nil }

// rclient is a go-redis client with no retries and timeouts that honour
// ctx, closed with the test.
func rclient(t *testing.T, addr string, timeout time.Duration) *redis.Client {
	t.Helper()
	rc := redis.NewClient(&redis.Options{
		Addr: addr, MaxRetries: -1, DialTimeout: timeout, ReadTimeout: timeout,
		WriteTimeout: timeout, ContextTimeoutEnabled: true, PoolSize: 1,
	})
	t.Cleanup(func() { rc.Close() })
	return rc
}

// client is client i's go-redis client to node, through its proxy. It
// checks once that the node answers through the proxy, and says why not.
func client(t *testing.T, c *cluster.Cluster, i int, node string, timeout time.Duration) *redis.Client {
	t.Helper()
	l := mustLink(t, c, fmt.Sprintf("client-%d->%s", i, node))
	rc := rclient(t, l.Addr(), timeout)
	if err := rc.Ping(context.Background()).Err(); err != nil {
		n := mustNode(t, c, node)
		t.Fatalf("PING %s through %s (%s, upstream %s): %v; node alive %v at %s, direct PING: %v",
			node, l.Name, l.Addr(), l.Proxy().Upstream, err, n.Alive(), n.Addr(),
			rclient(t, n.Addr(), time.Second).Ping(context.Background()).Err())
	}
	return rc
}

// direct is a client to a node's real address (around every proxy).
func direct(t *testing.T, c *cluster.Cluster, name string) *redis.Client {
	t.Helper()
	return rclient(t, mustNode(t, c, name).Addr(), 2*time.Second)
}

func mustNode(t *testing.T, c *cluster.Cluster, name string) *cluster.Node {
	t.Helper()
	n, ok := c.Node(name)
	if !ok {
		t.Fatalf("no node %s", name)
	}
	return n
}

func mustLink(t *testing.T, c *cluster.Cluster, name string) *cluster.Link {
	t.Helper()
	ls, err := c.Links(name)
	if err != nil || len(ls) != 1 {
		t.Fatalf("link %s: %v (%d links)", name, err, len(ls))
	}
	return ls[0]
}

// apply checks and applies f as Run would (holder resolved through env)
// and heals it when the test ends, if the test did not.
func apply(t *testing.T, ctx context.Context, env Env, f Fault) (effect, func()) {
	t.Helper()
	typ, _ := Lookup(f.Type)
	a := typ.action
	if err := a.check(topologyOf(env.Cluster, env.Clients != nil), f); err != nil {
		t.Fatalf("check %+v: %v", f, err)
	}
	rf, _, err := resolveHolder(ctx, env, f)
	if err != nil {
		t.Fatal(err)
	}
	eff, err := a.apply(ctx, env, rf)
	if err != nil {
		if eff.heal != nil {
			eff.heal(context.Background())
		}
		t.Fatalf("apply %+v: %v", f, err)
	}
	t.Logf("%s on %s: %s", f.Type, eff.target, eff.detail)
	healed := false
	h := func() {
		t.Helper()
		if healed || eff.heal == nil {
			return
		}
		healed = true
		if err := eff.heal(context.Background()); err != nil {
			t.Errorf("heal %s: %v", f.Type, err)
		}
	}
	t.Cleanup(h)
	return eff, h
}

// timed returns how long one PING takes (the median of n).
// timed is the fastest of n PINGs: a toxic delays every one of them while a
// loaded machine delays only some, so the minimum tells a fault's latency
// from scheduling noise.
func timed(ctx context.Context, rc *redis.Client, n int) (time.Duration, error) {
	best := time.Duration(-1)
	for range n {
		t0 := time.Now()
		if err := rc.Ping(ctx).Err(); err != nil {
			return 0, err
		}
		if d := time.Since(t0); best < 0 || d < best {
			best = d
		}
	}
	return best, nil
}

func isTimeout(err error) bool {
	var ne interface{ Timeout() bool }
	return err != nil && (errors.As(err, &ne) && ne.Timeout() || errors.Is(err, context.DeadlineExceeded))
}

// waitState polls until pid's state is (or, with not, is no longer) want.
func waitState(t *testing.T, pid int, want string, not bool) {
	t.Helper()
	testenv.Eventually(t, 5*time.Second, fmt.Sprintf("pid %d state %s (not=%v)", pid, want, not), func() error {
		s, err := procState(pid)
		if err != nil {
			return err
		}
		if (s == want) == not {
			return fmt.Errorf("state %s", s)
		}
		return nil
	})
}

// procs is a ClientControl over real child processes (sleep 60), one per
// client, as the runner's process-per-client driver does.
type procs struct{ pids []int }

func (p *procs) Pause(i int) error  { return syscall.Kill(p.pids[i], syscall.SIGSTOP) }
func (p *procs) Resume(i int) error { return syscall.Kill(p.pids[i], syscall.SIGCONT) }
func (p *procs) Pid(i int) int      { return p.pids[i] }

// holderAt is an Env.Holder that names client i at once, holding nothing
// (no resource here to hold a visit in).
func holderAt(i int) func(context.Context) (HeldClient, error) {
	return func(context.Context) (HeldClient, error) { return HeldClient{Client: i}, nil }
}

func startProcs(t *testing.T, n int) *procs {
	t.Helper()
	p := &procs{}
	for range n {
		cmd := exec.Command("sleep", "60")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }() // always reap
		t.Cleanup(func() {
			syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
			<-done
		})
		p.pids = append(p.pids, cmd.Process.Pid)
	}
	return p
}

// redisCluster starts a Redis cluster for the test; when the test fails,
// the nodes' logs are added to its output.
func redisCluster(t *testing.T, rs cluster.RedisSpec, clients int) *cluster.Cluster {
	t.Helper()
	c := testenv.Cluster(t, cluster.Spec{Redis: &rs, Clients: clients})
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		logs, _ := filepath.Glob(filepath.Join(c.Dir(), "logs", "*.log"))
		for _, p := range logs {
			b, _ := os.ReadFile(p)
			if len(b) > 4000 {
				b = b[len(b)-4000:]
			}
			t.Logf("%s:\n%s", p, b)
		}
	})
	return c
}

// noToxics fails when any link still has a toxic or is cut.
func noToxics(t *testing.T, c *cluster.Cluster) {
	t.Helper()
	for _, l := range c.AllLinks() {
		if ts := l.Toxics(); len(ts) > 0 || l.IsCut() {
			t.Errorf("link %s: toxics %v, cut %v", l.Name, ts, l.IsCut())
		}
	}
}
