package docker

// Docker provider: a running container as a process (pause, kill, wait, logs).

import (
	"context"
	"errors"
	"fmt"
	"github.com/locklab/locklab/cluster"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// dockerProcess is one launch of a node's container.
type dockerProcess struct {
	p       *dockerProvider
	n       *cluster.Node
	id      string
	name    string
	hostPid int
	started string
	doneCh  chan struct{}

	// killed is closed by the first kill: from then on wait also polls
	// the container's state, and kills its init from the host when the
	// engine still reports it running (hostKill).
	killed     chan struct{}
	killedOnce sync.Once

	mu  sync.Mutex
	err error
}

// Pid is the host pid of the container's init process (docker-init), 0
// when the engine does not say.
func (pr *dockerProcess) Pid() int { return pr.hostPid }

func opCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}

func (pr *dockerProcess) exited() bool {
	select {
	case <-pr.doneCh:
		return true
	default:
		return false
	}
}

// ignoreStopped drops the errors of acting on a container that is not
// running (any more), as signals to a reaped process are dropped.
func (pr *dockerProcess) ignoreStopped(err error) error {
	if err == nil {
		return nil
	}
	s := strings.ToLower(err.Error())
	if pr.exited() || strings.Contains(s, "is not running") || strings.Contains(s, "not paused") || isNotFound(err) {
		return nil
	}
	return err
}

func (pr *dockerProcess) Pause() error {
	ctx, cancel := opCtx()
	defer cancel()
	_, err := pr.p.cli.ContainerPause(ctx, pr.id, client.ContainerPauseOptions{})
	if err != nil && strings.Contains(strings.ToLower(err.Error()), "already paused") {
		return nil
	}
	return pr.ignoreStopped(err)
}

func (pr *dockerProcess) Resume() error {
	ctx, cancel := opCtx()
	defer cancel()
	_, err := pr.p.cli.ContainerUnpause(ctx, pr.id, client.ContainerUnpauseOptions{})
	return pr.ignoreStopped(err)
}

func (pr *dockerProcess) signal(sig string) error {
	if pr.exited() {
		return nil
	}
	ctx, cancel := opCtx()
	defer cancel()
	_, err := pr.p.cli.ContainerKill(ctx, pr.id, client.ContainerKillOptions{Signal: sig})
	return pr.ignoreStopped(err)
}

// Kill is docker kill. The engine kills a paused container too (SIGKILL
// needs no unfreezing), so a paused server never runs again before it dies.
// An engine's kill that fails leaves the container to wait's fallback.
func (pr *dockerProcess) Kill() error {
	err := pr.signal("SIGKILL")
	pr.killedOnce.Do(func() { close(pr.killed) })
	if err != nil {
		select {
		case <-pr.doneCh:
			return nil
		case <-time.After(2 * hostKillAfter):
		}
	}
	return err
}

func (pr *dockerProcess) Terminate() error {
	if err := pr.signal("SIGTERM"); err != nil {
		return err
	}
	// A frozen server cannot act on SIGTERM.
	return pr.Resume()
}

func (pr *dockerProcess) Shutdown() error { return pr.Kill() }

func (pr *dockerProcess) Done() <-chan struct{} { return pr.doneCh }

func (pr *dockerProcess) ExitErr() error {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return pr.err
}

// run copies this launch's output to the node's log and waits for the
// container to stop; done is closed after the last line was written.
func (pr *dockerProcess) run(f *os.File, since time.Time) {
	logsDone := make(chan struct{})
	go func() {
		defer close(logsDone)
		rc, err := pr.p.cli.ContainerLogs(context.Background(), pr.id, client.ContainerLogsOptions{
			ShowStdout: true, ShowStderr: true, Follow: true,
			Since: strconv.FormatInt(since.Unix(), 10),
		})
		if err != nil {
			fmt.Fprintf(f, "=== locklab: cannot follow the container's output: %v\n", err)
			return
		}
		defer rc.Close()
		if _, err := stdcopy.StdCopy(f, f, rc); err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, context.Canceled) {
			fmt.Fprintf(f, "=== locklab: container output: %v\n", err)
		}
	}()
	code, err := pr.wait()
	// The log stream ends when the container stops; do not wait for ever
	// on an engine that keeps it open.
	select {
	case <-logsDone:
	case <-time.After(3 * time.Second):
	}
	if err == nil && code != 0 {
		err = fmt.Errorf("container exited with status %d", code)
	}
	pr.mu.Lock()
	pr.err = err
	pr.mu.Unlock()
	fmt.Fprintf(f, "=== locklab %s: exited: %v\n", time.Now().Format(time.RFC3339Nano), exitString(err))
	f.Close()
	pr.p.watch.exited(pr)
	close(pr.doneCh)
}

// wait returns when the container is not running any more (or was
// removed), with its exit status. The engine's wait is the answer; once
// the container was killed, its state is polled too, since an engine
// under load was seen to leave both its kill and its wait hanging for
// minutes (a CI run: a ZooKeeper container killed, no exit in 118 s).
func (pr *dockerProcess) wait() (int64, error) {
	res := pr.p.cli.ContainerWait(context.Background(), pr.id, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	killed := pr.killed
	var poll <-chan time.Time
	var killedAt time.Time
	for {
		select {
		case r := <-res.Result:
			if r.Error != nil && r.Error.Message != "" {
				return r.StatusCode, errors.New(r.Error.Message)
			}
			return r.StatusCode, nil
		case err := <-res.Error:
			if isNotFound(err) {
				return -1, errors.New("container removed")
			}
			// The wait connection broke: poll instead.
			res.Error, killed = nil, nil
			t := time.NewTicker(100 * time.Millisecond)
			defer t.Stop()
			poll = t.C
		case <-killed:
			killed, killedAt = nil, time.Now()
			t := time.NewTicker(time.Second)
			defer t.Stop()
			poll = t.C
		case <-poll:
			if code, stopped, err := pr.inspectExit(); stopped {
				return code, err
			}
			if !killedAt.IsZero() && time.Since(killedAt) > hostKillAfter {
				killedAt = time.Time{}
				pr.hostKill()
			}
		}
	}
}

// hostKillAfter is how long wait trusts the engine with a killed
// container before it kills the container's init itself.
const hostKillAfter = 5 * time.Second

// inspectExit asks the engine whether the container stopped, and with
// what status; stopped is false when it runs or the engine did not say.
func (pr *dockerProcess) inspectExit() (code int64, stopped bool, err error) {
	ctx, cancel := opCtx()
	defer cancel()
	insp, err := pr.p.cli.ContainerInspect(ctx, pr.id, client.ContainerInspectOptions{})
	if err != nil {
		if isNotFound(err) {
			return -1, true, errors.New("container removed")
		}
		return 0, false, nil
	}
	if st := insp.Container.State; st != nil && !st.Running {
		return int64(st.ExitCode), true, nil
	}
	return 0, false, nil
}

// hostKill kills the container's init process from the host, when the
// engine runs on this machine and that pid is still this container's
// (its cgroup names the container's id): the kernel then ends every
// process of the container, whatever the engine is waiting for.
func (pr *dockerProcess) hostKill() {
	if pr.hostPid <= 0 {
		return
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pr.hostPid))
	if err != nil || !strings.Contains(string(b), pr.id) {
		return
	}
	if err := syscall.Kill(pr.hostPid, syscall.SIGKILL); err == nil && pr.n != nil {
		pr.p.log.Warn("docker: the engine did not report a killed container's exit in time: killed its init from the host", "node", pr.n.Name, "pid", pr.hostPid)
	}
}

// exitString is how a launch's end is logged.
func exitString(err error) string {
	if err == nil {
		return "status 0"
	}
	return err.Error()
}
