package faults

import (
	"context"
	"fmt"
	"strconv"
)

// pauseClientAction stops a harness client's whole process
// (Env.Clients.Pause: SIGSTOP) and continues it (Resume: SIGCONT) when
// healed, like a long GC or VM pause of a lock holder: its lease keeps
// running out while it cannot notice. With client: holder, Run first waits
// (bounded by the run's ctx) for a client to be inside the critical
// section; Target is then that client, "client-N".
type pauseClientAction struct{}

func (pauseClientAction) check(t *topology, f Fault) error { return checkClient(t, f) }

func (pauseClientAction) apply(ctx context.Context, env Env, f Fault) (effect, error) {
	eff := effect{target: ClientName(f.Client)}
	if env.Clients == nil {
		return eff, unsupported("pause-client: clients run in the harness's process (Env.Clients is nil)")
	}
	i, err := strconv.Atoi(f.Client)
	if err != nil {
		return eff, fmt.Errorf("client %q: want an index", f.Client)
	}
	st := env.state()
	if err := st.acquire(clientKey{i}, func() error { return env.Clients.Pause(i) }); err != nil {
		return eff, fmt.Errorf("pause %s: %w", eff.target, err)
	}
	eff.detail = "SIGSTOP"
	if pc, ok := env.Clients.(ClientPids); ok {
		eff.pids = []int{pc.Pid(i)}
	}
	eff.heal = func(ctx context.Context) error {
		return st.release(clientKey{i}, func() error {
			if err := env.Clients.Resume(i); err != nil {
				return fmt.Errorf("resume %s: %w", eff.target, err)
			}
			return nil
		})
	}
	eff.holdToHeal = true
	return eff, nil
}

func (pauseClientAction) observe(ctx context.Context, _ Env, _ Fault, eff effect) evidence {
	if len(eff.pids) == 0 || eff.pids[0] == 0 {
		return unchecked("%s's process id unknown: state not checked", eff.target)
	}
	pid := eff.pids[0]
	switch st := stoppedState(ctx, pid); st {
	case "T", "t":
		return seen(true, "%s process %d stopped (state %s)", eff.target, pid, st)
	case "":
		return seen(false, "%s process %d gone", eff.target, pid)
	default:
		return seen(false, "%s process %d in state %s, not stopped", eff.target, pid, st)
	}
}
