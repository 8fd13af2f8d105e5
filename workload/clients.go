package workload

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/external"
)

// Clients are the clients of one run, running the way their lock runs
// (StartClients picks it): in this process, one worker process per client
// (this binary in worker mode), or one client program per client
// (locks/external: library clients in other languages, exec).
type Clients interface {
	// Control pauses clients for pause-client faults (it is a
	// faults.ClientControl, and a faults.ClientPids); nil when the clients
	// share this process.
	Control() Control
	// Drive runs the workload until its duration or ops are done, or ctx
	// ends.
	Drive(ctx context.Context, cfg Config, res *checker.Shared, rec *Recorder) error
	// Finish collects what the clients measured and their lock counters.
	Finish(cfg Config, rec *Recorder) (map[string]int64, error)
	// Libraries are what client programs said they run ("redis-py
	// 4.3.4"); nil for other clients.
	Libraries() []string
	Close()
}

// Control pauses and resumes one client's process (SIGSTOP, SIGCONT)
// and tells its process id.
type Control interface {
	Pause(client int) error
	Resume(client int) error
	Pid(client int) int
}

// Host is where client processes run; *cluster.Cluster is one.
type Host interface {
	// HarnessAddr is the address client processes reach this process at.
	HarnessAddr() string
	// ClientStarter starts client i's process where the cluster wants it
	// (under provider netns in a namespace of its own); nil: as a plain
	// child.
	ClientStarter(client int) func(start func() error) error
}

// loopback is the Host of client processes started as plain children.
type loopback struct{}

func (loopback) HarnessAddr() string                              { return "127.0.0.1" }
func (loopback) ClientStarter(int) func(start func() error) error { return nil }

// Setup is what StartClients needs besides the workload's Config.
type Setup struct {
	// Spec is the lock's registry entry (for exec, with the entry's
	// backend).
	Spec locks.Spec
	// Options are the lock entry's options, as client programs read them.
	Options map[string]string
	// ProcessPerClient runs each client of an in-harness lock as a worker
	// process of its own.
	ProcessPerClient bool
	// LockConfig is client i's lock configuration.
	LockConfig func(client int) locks.Config
	// Host places client processes; nil: this machine's loopback, as
	// plain children.
	Host Host
	// LogDir receives client processes' logs.
	LogDir string
}

// StartClients starts cfg.Clients clients of s.Spec and returns once each
// is connected (client processes and programs: ready): client programs
// when the lock is one (external.IsProgram), worker processes with
// s.ProcessPerClient (each serving the resource res through a
// checker.Server on the host's harness address), else clients in this
// process.
func StartClients(ctx context.Context, cfg Config, s Setup, res *checker.Shared) (Clients, error) {
	if s.Host == nil {
		s.Host = loopback{}
	}
	switch {
	case external.IsProgram(s.Spec.Name):
		return startPrograms(ctx, cfg, s)
	case s.ProcessPerClient:
		return startWorkers(ctx, cfg, s, res)
	}
	cs, err := Connect(ctx, cfg.Clients, func(ctx context.Context, i int) (locks.Client, error) {
		return s.Spec.New(ctx, s.LockConfig(i))
	})
	if err != nil {
		return nil, err
	}
	return inProcess(cs), nil
}

// inProcess are clients in this process.
type inProcess []locks.Client

func (inProcess) Control() Control    { return nil }
func (inProcess) Libraries() []string { return nil }

func (p inProcess) Drive(ctx context.Context, cfg Config, res *checker.Shared, rec *Recorder) error {
	Drive(ctx, cfg, p, res, rec)
	return nil
}

// Finish sums the clients' lock counters (locks.Stats).
func (p inProcess) Finish(Config, *Recorder) (map[string]int64, error) {
	var out map[string]int64
	for _, c := range p {
		st, ok := c.(locks.Stats)
		if !ok {
			continue
		}
		if out == nil {
			out = map[string]int64{}
		}
		for k, v := range st.Counters() {
			out[k] += v
		}
	}
	return out, nil
}

func (p inProcess) Close() {
	for _, c := range p {
		c.Close()
	}
}

// workers are one worker process per client.
type workers struct {
	ps  *Processes
	srv *checker.Server
}

// startupTimeout bounds the start of client processes and programs.
const startupTimeout = 60 * time.Second

// startWorkers serves the resource on the host's harness address for the
// clients (loopback, or its bridge address under provider netns) and
// starts one client process per client, running this very binary in
// worker mode, each where the host starts clients.
func startWorkers(ctx context.Context, cfg Config, s Setup, res *checker.Shared) (*workers, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("client processes: %w", err)
	}
	srv, err := checker.Serve(res, net.JoinHostPort(s.Host.HarnessAddr(), "0"))
	if err != nil {
		return nil, err
	}
	specs := make([]WorkerSpec, cfg.Clients)
	for i := range specs {
		lc := s.LockConfig(i)
		specs[i] = WorkerSpec{
			Client: i, Lock: s.Spec.Name, Endpoints: lc.Endpoints, TTL: lc.TTL, Retry: lc.Retry,
			Prefix: lc.Prefix, Options: lc.Options, Seed: lc.Seed, Workload: cfg.share(i), ResourceAddr: srv.Addr(),
			Start: s.Host.ClientStarter(i),
		}
	}
	sctx, cancel := context.WithTimeout(ctx, startupTimeout)
	defer cancel()
	ps, err := StartProcesses(sctx, exe, specs, s.LogDir)
	if err != nil {
		srv.Close()
		return nil, fmt.Errorf("client processes: %w", err)
	}
	return &workers{ps: ps, srv: srv}, nil
}

// share is client i's part of cfg when each client runs alone in a worker
// process: one client, its share of the ops and of the rate, and no
// duration (the harness stops workers by closing their stdin).
func (cfg Config) share(i int) Config {
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
	wc.Duration = 0
	return wc
}

func (p *workers) Control() Control    { return p.ps }
func (p *workers) Libraries() []string { return nil }

func (p *workers) Drive(ctx context.Context, cfg Config, _ *checker.Shared, _ *Recorder) error {
	if _, err := p.ps.Start(cfg.Base); err != nil {
		return err
	}
	if cfg.Ops > 0 {
		if err := p.ps.Wait(ctx); err != context.Canceled && err != context.DeadlineExceeded {
			return err
		}
		return nil
	}
	t := time.NewTimer(cfg.Duration)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
	return nil
}

func (p *workers) Finish(cfg Config, rec *Recorder) (map[string]int64, error) {
	return p.ps.Stop(cmp.Or(cfg.AcquireTimeout, 10*time.Second)+15*time.Second, rec)
}

func (p *workers) Close() {
	p.ps.Kill()
	p.srv.Close()
}

// programs are one client program per client, speaking the client
// protocol; the harness serves their resource calls and records for them.
type programs struct {
	ps *Programs
}

// startPrograms starts one program per client with the client's own
// (proxied) endpoints, each where the host starts clients, and waits until
// each said ready.
func startPrograms(ctx context.Context, cfg Config, s Setup) (*programs, error) {
	lock := s.Spec.Name
	argv, backend, err := external.Command(lock, s.Options)
	if err != nil {
		return nil, err
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	specs := make([]ProgramSpec, cfg.Clients)
	for i := range specs {
		lc := s.LockConfig(i)
		ep := lc.Endpoints
		if lc.Options == nil {
			lc.Options = map[string]string{} // {} on the wire, not null
		}
		specs[i] = ProgramSpec{
			Client: i, Name: lock, Command: argv, Env: append(external.Env(ep.Auth), external.LoginEnv(backend)...),
			Config: ProgramConfig{
				Client: i, Lock: lock, Backend: string(backend),
				Endpoints: ProgramEndpointsOf(ep),
				TTLMs:     ms(lc.TTL), RetryMs: ms(lc.Retry), Prefix: lc.Prefix, Options: lc.Options, Seed: lc.Seed,
				CriticalSectionMs: ms(cfg.CriticalSection),
				AcquireTimeoutMs:  ms(cmp.Or(cfg.AcquireTimeout, 10*time.Second)),
				ReleaseTimeoutMs:  ms(cmp.Or(cfg.ReleaseTimeout, 5*time.Second)),
			},
			Start: s.Host.ClientStarter(i),
		}
	}
	sctx, cancel := context.WithTimeout(ctx, startupTimeout)
	defer cancel()
	ps, err := StartPrograms(sctx, specs, s.LogDir)
	if err != nil {
		return nil, fmt.Errorf("client programs: %w", err)
	}
	return &programs{ps: ps}, nil
}

func (p *programs) Control() Control    { return p.ps }
func (p *programs) Libraries() []string { return p.ps.Libraries() }

func (p *programs) Drive(ctx context.Context, cfg Config, res *checker.Shared, rec *Recorder) error {
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

func (p *programs) Finish(cfg Config, _ *Recorder) (map[string]int64, error) {
	return nil, p.ps.Stop(cfg.CriticalSection + 15*time.Second)
}

func (p *programs) Close() { p.ps.Kill() }
