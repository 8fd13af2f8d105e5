package runner

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/locks"
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

// startProcesses serves the resource on loopback and starts one client
// process per client, running this very binary in worker mode.
func startProcesses(ctx context.Context, lock string, cfg workload.Config, lcfg func(int) locks.Config, res *checker.Shared, logDir string) (*processes, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("client processes: %w", err)
	}
	srv, err := checker.Serve(res, "127.0.0.1:0")
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
	if err := p.ps.Start(0); err != nil {
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
