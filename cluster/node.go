package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/locklab/locklab/clockshim"
	"github.com/locklab/locklab/internal/lossyfs"
)

// Errors of node operations; compare with errors.Is.
var (
	// ErrClosed means the Cluster was closed.
	ErrClosed = errors.New("cluster: closed")
	// ErrNotRunning means the operation needs a running server and the node's
	// server is not running (killed, stopped, exited).
	ErrNotRunning = errors.New("cluster: node not running")
	// ErrRunning means Start found the node's server still running.
	ErrRunning = errors.New("cluster: node already running")
	// ErrUnsupported means the provider or backend cannot do this (a node of
	// the external provider cannot be killed; etcd peer links cannot be cut
	// per directed pair).
	ErrUnsupported = errors.New("cluster: unsupported")
)

// DefaultStopGrace is how long Stop waits after SIGTERM before SIGKILL.
const DefaultStopGrace = 10 * time.Second

// Node is one server of the cluster: a Redis primary or replica, a Sentinel,
// a ZooKeeper or etcd member. Its name is contract (docs/faults.md). Methods are
// safe for concurrent use; operations that change the server's state
// (Start, Stop, Kill, Restart) are serialised per node.
type Node struct {
	Name string // redis-0, redis-0-r0, sentinel-0, zk-0, etcd-0
	Kind string // KindRedis, KindReplica, KindSentinel, or a table backend's ("zookeeper", "etcd", ...)

	c       *Cluster
	backend string      // the backend it belongs to (PlanNode.Backend)
	dataDir string      // removed by Close
	disk    *lossyfs.FS // the data dir's lossy filesystem (Spec.LossyDisks), or nil
	logPath string      // kept after Close
	// clientFacing nodes get a proxied link from every client.
	clientFacing bool

	// Set by the topology builder.
	cmd func() (Command, error) // command line for the next launch
	// probe checks once whether the server serves (PING, srvr, /health);
	// nil means it does.
	probe func(ctx context.Context) error
	// role asks the server its role (see Role); nil: unsupported.
	role func(ctx context.Context) (string, error)
	// rebind picks new ports after the server could not bind its own (a
	// port taken between choosing and binding it); nil when not possible.
	rebind func() error

	opMu sync.Mutex // serialises Start/Stop/Kill/Restart

	mu       sync.Mutex
	addr     string // real client address
	proc     Process
	logStart int64 // log size at the last launch, to read that launch's output
	// clock is the node's clock file (clock.go); clockErr why it has none.
	clock    *clockshim.File
	clockErr error
}

// Addr is the server's real address (host:port) — what the server itself and
// its peers report. Clients must not dial it: they use Endpoints, whose
// addresses go through their proxies.
func (n *Node) Addr() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.addr
}

func (n *Node) setAddr(a string) {
	n.mu.Lock()
	n.addr = a
	n.mu.Unlock()
}

// LogPath is the node's log file (Dir/logs/<node>.log), kept after Close.
// Every start appends to it.
func (n *Node) LogPath() string { return n.logPath }

// Pid is the process id of the node's server (the process group id of the
// local provider), 0 when none was started.
func (n *Node) Pid() int {
	p := n.process()
	if p == nil {
		return 0
	}
	return p.Pid()
}

// Alive reports whether the node's server process is running (a paused
// server is alive).
func (n *Node) Alive() bool {
	p := n.process()
	if p == nil {
		return false
	}
	select {
	case <-p.Done():
		return false
	default:
		return true
	}
}

func (n *Node) process() Process {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.proc
}

func (n *Node) running() (Process, error) {
	if n.c.isClosed() {
		return nil, ErrClosed
	}
	if n.cmd == nil {
		return nil, fmt.Errorf("%s: %w", n.Name, ErrUnsupported)
	}
	p := n.process()
	if p == nil {
		return nil, fmt.Errorf("%s: %w", n.Name, ErrNotRunning)
	}
	select {
	case <-p.Done():
		return nil, fmt.Errorf("%s: %w", n.Name, ErrNotRunning)
	default:
		return p, nil
	}
}

// Role asks the server for its current role: "primary" or "replica" for a
// Redis server (after a failover a replica node may be the primary),
// "sentinel", "leader", "follower" or "standalone" for ZooKeeper (from the
// srvr command), "leader" or "follower" for etcd. A server that is down or
// not serving (a ZooKeeper member without quorum) returns an error.
func (n *Node) Role(ctx context.Context) (string, error) {
	if _, err := n.running(); err != nil && n.cmd != nil {
		return "", err
	}
	if n.role == nil {
		return "", fmt.Errorf("role of %s: %w", n.Name, ErrUnsupported)
	}
	r, err := n.role(ctx)
	if err != nil {
		return "", fmt.Errorf("role of %s: %w", n.Name, err)
	}
	return r, nil
}

// Pause freezes the server (SIGSTOP to its process group and its other
// descendants; docker: docker pause): it keeps its sockets but answers
// nothing, like a long GC or VM pause. Resume undoes it.
func (n *Node) Pause(ctx context.Context) error { return n.signal("pause", Process.Pause) }

// Resume lets a paused server run again (SIGCONT).
func (n *Node) Resume(ctx context.Context) error { return n.signal("resume", Process.Resume) }

// signal runs op (what: "pause" or "resume") on the running server.
func (n *Node) signal(what string, op func(Process) error) error {
	p, err := n.running()
	if err != nil {
		return err
	}
	if err := op(p); err != nil {
		return fmt.Errorf("%s %s: %w", what, n.Name, err)
	}
	n.c.log.Info("node "+what+"d", "node", n.Name)
	return nil
}

// Kill ends the server at once (SIGKILL to its process group, so a paused
// server dies too) and returns once it was reaped. Killing a node that is not
// running is not an error.
func (n *Node) Kill(ctx context.Context) error {
	n.opMu.Lock()
	defer n.opMu.Unlock()
	return n.kill(ctx)
}

func (n *Node) kill(ctx context.Context) error {
	if n.c.isClosed() {
		return ErrClosed
	}
	if n.cmd == nil {
		return fmt.Errorf("kill %s: %w", n.Name, ErrUnsupported)
	}
	p := n.process()
	if p == nil {
		return nil
	}
	if err := p.Kill(); err != nil {
		return fmt.Errorf("kill %s: %w", n.Name, err)
	}
	select {
	case <-p.Done():
		n.c.syncListening()
		n.c.log.Info("node killed", "node", n.Name)
		return nil
	case <-ctx.Done():
		return fmt.Errorf("kill %s: %w", n.Name, ctx.Err())
	}
}

// Stop asks the server to exit (SIGTERM, which also lets Redis write its
// configured persistence) and kills it when it has not exited after
// DefaultStopGrace or when ctx ends, whichever comes first. It returns once
// the server was reaped.
func (n *Node) Stop(ctx context.Context) error {
	n.opMu.Lock()
	defer n.opMu.Unlock()
	if n.c.isClosed() {
		return ErrClosed
	}
	if n.cmd == nil {
		return fmt.Errorf("stop %s: %w", n.Name, ErrUnsupported)
	}
	p := n.process()
	if p == nil {
		return nil
	}
	defer n.c.syncListening()
	if err := p.Terminate(); err != nil {
		return fmt.Errorf("stop %s: %w", n.Name, err)
	}
	t := time.NewTimer(DefaultStopGrace)
	defer t.Stop()
	select {
	case <-p.Done():
		n.c.log.Info("node stopped", "node", n.Name)
		return nil
	case <-t.C:
	case <-ctx.Done():
	}
	_ = p.Kill()
	<-p.Done() // SIGKILL cannot be ignored; the wait goroutine reaps it
	n.c.log.Info("node stopped (killed after grace)", "node", n.Name)
	return ctx.Err()
}

// Start starts the node's server again on the same data dir, port and
// configuration, and waits until it serves: Redis and Sentinel answer PING,
// a ZooKeeper member is leader or follower (so it needs a quorum), an etcd
// member reports health (a leader). It fails with ErrRunning when the server
// is still running.
func (n *Node) Start(ctx context.Context) error {
	n.opMu.Lock()
	defer n.opMu.Unlock()
	return n.start(ctx)
}

func (n *Node) start(ctx context.Context) error {
	if n.c.isClosed() {
		return ErrClosed
	}
	if n.Alive() {
		return fmt.Errorf("start %s: %w", n.Name, ErrRunning)
	}
	t0 := time.Now()
	if err := n.spawn(ctx); err != nil {
		return err
	}
	if err := n.waitServing(ctx, false); err != nil {
		return err
	}
	n.c.syncListening() // the node's proxies listen before Start returns
	n.c.log.Info("node started", "node", n.Name, "took", time.Since(t0))
	return nil
}

// Restart kills the server, waits delay (or until ctx ends) and starts it
// again on the same data dir and port, waiting until it serves (see Start).
func (n *Node) Restart(ctx context.Context, delay time.Duration) error {
	n.opMu.Lock()
	defer n.opMu.Unlock()
	if err := n.kill(ctx); err != nil {
		return err
	}
	if delay > 0 {
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("restart %s: %w", n.Name, ctx.Err())
		}
	}
	return n.start(ctx)
}

// spawn launches the server process without waiting for it to serve.
func (n *Node) spawn(ctx context.Context) error {
	if n.cmd == nil {
		return fmt.Errorf("start %s: %w", n.Name, ErrUnsupported)
	}
	cmd, err := n.cmd()
	if err != nil {
		return fmt.Errorf("start %s: %w", n.Name, err)
	}
	cmd.Env = append(cmd.Env, n.clockEnv()...)
	var size int64
	if st, err := os.Stat(n.logPath); err == nil {
		size = st.Size()
	}
	n.c.log.Debug("node launch", "node", n.Name, "cmd", cmd.String())
	p, err := n.c.prov.Launch(ctx, n, cmd)
	if err != nil {
		return fmt.Errorf("start %s: %w", n.Name, err)
	}
	n.mu.Lock()
	n.proc = p
	n.logStart = size
	n.mu.Unlock()
	return nil
}

// errExited is returned by waitServing when the server exited before it
// served.
var errExited = errors.New("exited before serving")

// pollEvery is how often readiness probes run.
const pollEvery = 25 * time.Millisecond

// waitServing polls probe until it succeeds, the server exits, or ctx ends.
// With rebind allowed, a server that exited because its port was taken in
// the meantime is given new ports and launched again (a few times).
func (n *Node) waitServing(ctx context.Context, rebind bool) error {
	for attempt := 0; ; attempt++ {
		err := n.pollServing(ctx)
		if err == nil {
			return nil
		}
		if rebind && attempt < 3 && n.rebind != nil && errors.Is(err, errExited) && n.bindConflict() {
			n.c.log.Warn("port taken, starting on new ports", "node", n.Name)
			if err := n.rebind(); err != nil {
				return fmt.Errorf("start %s: rebind: %w", n.Name, err)
			}
			if err := n.spawn(ctx); err != nil {
				return err
			}
			continue
		}
		return err
	}
}

func (n *Node) pollServing(ctx context.Context) error {
	p := n.process()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	var last error
	for {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		last = n.probe(pctx)
		cancel()
		if last == nil {
			return nil
		}
		select {
		case <-p.Done():
			return fmt.Errorf("start %s: %w: %v; log %s:\n%s", n.Name, errExited,
				exitString(p.ExitErr()), n.logPath, n.logTail(2000))
		case <-ctx.Done():
			return fmt.Errorf("start %s: not serving (last probe: %v): %w", n.Name, last, ctx.Err())
		case <-tick.C:
		}
	}
}

// logTail returns up to max bytes of what the last launch wrote to the log.
func (n *Node) logTail(max int64) string {
	n.mu.Lock()
	start := n.logStart
	n.mu.Unlock()
	b, err := os.ReadFile(n.logPath)
	if err != nil || int64(len(b)) < start {
		return ""
	}
	b = b[start:]
	if int64(len(b)) > max {
		b = b[int64(len(b))-max:]
	}
	return string(b)
}

func (n *Node) bindConflict() bool {
	return strings.Contains(strings.ToLower(n.logTail(1<<20)), "address already in use")
}
