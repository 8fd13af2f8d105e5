package runner

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/external"
	"github.com/locklab/locklab/workload"
)

// driver runs the clients of one point: in this process, or one OS process
// per client.
type driver interface {
	// control pauses clients for pause-client faults; nil when impossible.
	control() faults.ClientControl
	// drive runs the workload until its duration or ops are done, or ctx ends.
	drive(ctx context.Context, cfg workload.Config, res *checker.Shared, rec *workload.Recorder) error
	// finish collects what the clients measured and their lock counters.
	finish(cfg workload.Config, rec *workload.Recorder) (map[string]int64, error)
	close()
}

type inProcess struct {
	clients []locks.Client
}

func connectInProcess(ctx context.Context, spec locks.Spec, cfg workload.Config, lcfg func(int) locks.Config) (*inProcess, error) {
	cs, err := workload.Connect(ctx, cfg.Clients, func(ctx context.Context, i int) (locks.Client, error) {
		return spec.New(ctx, lcfg(i))
	})
	if err != nil {
		return nil, err
	}
	return &inProcess{clients: cs}, nil
}

func (p *inProcess) control() faults.ClientControl { return nil }

func (p *inProcess) drive(ctx context.Context, cfg workload.Config, res *checker.Shared, rec *workload.Recorder) error {
	workload.Drive(ctx, cfg, p.clients, res, rec)
	return nil
}

func (p *inProcess) finish(workload.Config, *workload.Recorder) (map[string]int64, error) {
	return sumCounters(p.clients), nil
}

func (p *inProcess) close() {
	for _, c := range p.clients {
		c.Close()
	}
}

type processes struct {
	ps  *workload.Processes
	srv *checker.Server
}

// startProcesses serves the resource on the harness's address for the
// clients (loopback, or its bridge address under provider netns) and
// starts one client process per client, running this very binary in
// worker mode, each where cl starts clients (under provider netns in a
// namespace of its own).
func startProcesses(ctx context.Context, cl *cluster.Cluster, lock string, cfg workload.Config, lcfg func(int) locks.Config, res *checker.Shared, logDir string) (*processes, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("client processes: %w", err)
	}
	srv, err := checker.Serve(res, net.JoinHostPort(cl.HarnessAddr(), "0"))
	if err != nil {
		return nil, err
	}
	specs := make([]workload.WorkerSpec, cfg.Clients)
	for i := range specs {
		lc := lcfg(i)
		wc := cfg
		wc.Clients = 1
		if cfg.Ops > 0 {
			wc.Ops = cfg.Ops / cfg.Clients
			if i < cfg.Ops%cfg.Clients {
				wc.Ops++
			}
			if wc.Ops == 0 {
				wc.Ops = -1 // nothing to do; -1 keeps it from meaning "unlimited"
			}
		}
		wc.Rate = cfg.Rate / float64(cfg.Clients)
		wc.Duration = 0 // the harness stops workers by closing their stdin
		specs[i] = workload.WorkerSpec{
			Client: i, Lock: lock, Endpoints: lc.Endpoints, TTL: lc.TTL, Retry: lc.Retry,
			Prefix: lc.Prefix, Options: lc.Options, Seed: lc.Seed, Workload: wc, ResourceAddr: srv.Addr(),
			Start: cl.ClientStarter(i),
		}
	}
	sctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	ps, err := workload.StartProcesses(sctx, exe, specs, logDir)
	if err != nil {
		srv.Close()
		return nil, fmt.Errorf("client processes: %w", err)
	}
	return &processes{ps: ps, srv: srv}, nil
}

func (p *processes) control() faults.ClientControl { return p.ps }

func (p *processes) drive(ctx context.Context, cfg workload.Config, res *checker.Shared, rec *workload.Recorder) error {
	if _, err := p.ps.Start(cfg.Base); err != nil {
		return err
	}
	if cfg.Ops > 0 {
		return ignoreCancel(p.ps.Wait(ctx))
	}
	t := time.NewTimer(cfg.Duration)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
	return nil
}

func (p *processes) finish(cfg workload.Config, rec *workload.Recorder) (map[string]int64, error) {
	grace := cfg.AcquireTimeout + 15*time.Second
	if cfg.AcquireTimeout == 0 {
		grace = 25 * time.Second
	}
	return p.ps.Stop(grace, rec)
}

func (p *processes) close() {
	p.ps.Kill()
	p.srv.Close()
}

func ignoreCancel(err error) error {
	if err == context.Canceled || err == context.DeadlineExceeded {
		return nil
	}
	return err
}

// programs runs each client as an external program speaking the client
// protocol (locks/external: library clients in other languages, exec).
// The harness serves their resource calls and records for them.
type programs struct {
	ps *workload.Programs
}

// startPrograms starts one program per client with the client's own
// (proxied) endpoints, each where cl starts clients (under provider netns
// in a namespace of its own), and waits until each said ready.
func startPrograms(ctx context.Context, cl *cluster.Cluster, lock string, options map[string]string, cfg workload.Config, lcfg func(int) locks.Config, logDir string) (*programs, error) {
	argv, backend, err := external.Command(lock, options)
	if err != nil {
		return nil, err
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	specs := make([]workload.ProgramSpec, cfg.Clients)
	for i := range specs {
		lc := lcfg(i)
		ep := lc.Endpoints
		if lc.Options == nil {
			lc.Options = map[string]string{} // {} on the wire, not null
		}
		specs[i] = workload.ProgramSpec{
			Client: i, Name: lock, Command: argv, Env: external.Env(ep.Auth),
			Config: workload.ProgramConfig{
				Client: i, Lock: lock, Backend: string(backend),
				Endpoints: workload.ProgramEndpoints{Redis: ep.Redis, Sentinels: ep.Sentinels,
					MasterNames: ep.MasterNames, ZooKeeper: ep.ZooKeeper, Etcd: ep.Etcd},
				TTLMs: ms(lc.TTL), RetryMs: ms(lc.Retry), Prefix: lc.Prefix, Options: lc.Options, Seed: lc.Seed,
				CriticalSectionMs: ms(cfg.CriticalSection),
				AcquireTimeoutMs:  ms(cmp.Or(cfg.AcquireTimeout, 10*time.Second)),
				ReleaseTimeoutMs:  ms(cmp.Or(cfg.ReleaseTimeout, 5*time.Second)),
			},
			Start: cl.ClientStarter(i),
		}
	}
	sctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	ps, err := workload.StartPrograms(sctx, specs, logDir)
	if err != nil {
		return nil, fmt.Errorf("client programs: %w", err)
	}
	return &programs{ps: ps}, nil
}

func (p *programs) control() faults.ClientControl { return p.ps }

// versions adds what the programs said they run ("redis-py 4.3.4") to the
// result's versions, keyed by the library's name.
func (p *programs) versions(into map[string]string) {
	for _, lib := range p.ps.Libraries() {
		if name, _, ok := strings.Cut(lib, " "); ok && lib != "" {
			into[name] = lib
		}
	}
}

func (p *programs) drive(ctx context.Context, cfg workload.Config, res *checker.Shared, rec *workload.Recorder) error {
	p.ps.Run(cfg, res, rec)
	var timer <-chan time.Time
	if cfg.Ops <= 0 {
		t := time.NewTimer(cfg.Duration)
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-timer:
	case <-p.ps.Done():
	case <-p.ps.Failed():
		return p.ps.Err()
	case <-ctx.Done():
	}
	return nil
}

func (p *programs) finish(cfg workload.Config, rec *workload.Recorder) (map[string]int64, error) {
	return nil, p.ps.Stop(cfg.CriticalSection + 15*time.Second)
}

func (p *programs) close() { p.ps.Kill() }
