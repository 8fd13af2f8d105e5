package testenv

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	natsserver "github.com/locklab/locklab/cluster/backends/nats"
)

// NATSServers is a NATS cluster a test started: node i is natsserver's
// NodeName(i), reached by clients at Clients[i] and monitored at
// Monitors[i].
type NATSServers struct {
	Clients  []string
	Monitors []string
	stop     []func()
}

// Kill SIGKILLs node i and waits until it is gone.
func (s *NATSServers) Kill(i int) { s.stop[i]() }

// NATS starts an n-node nats-server cluster with JetStream on 127.0.0.1
// free ports (routes direct, no proxies) and waits until every node is
// healthy. The servers are killed, and waited for, when the test ends. It
// skips or fails like RequireBinaries when nats-server is missing.
func NATS(t testing.TB, n int) *NATSServers {
	t.Helper()
	return NATSWith(t, n, nil)
}

// NATSWith is NATS with each node's configuration changed by configure
// (nil: none) before it is written: a login clients must give, say.
func NATSWith(t testing.TB, n int, configure func(*natsserver.Node)) *NATSServers {
	t.Helper()
	RequireBinaries(t, natsserver.Binary)
	if err := natsserver.ValidNodes(n); err != nil {
		t.Fatal(err)
	}
	var lastErr error
	// A free port can be taken by someone else before the server binds it:
	// then a node exits and the cluster is tried again on other ports.
	for attempt := 1; attempt <= 3; attempt++ {
		s, err := startNATS(t, n, configure)
		if err == nil {
			return s
		}
		lastErr = err
	}
	t.Fatalf("start nats cluster: %v", lastErr)
	return nil
}

func startNATS(t testing.TB, n int, configure func(*natsserver.Node)) (*NATSServers, error) {
	t.Helper()
	dir := t.TempDir()
	addr := func() (string, error) {
		p, err := freePort()
		return net.JoinHostPort("127.0.0.1", strconv.Itoa(p)), err
	}
	nodes := make([]natsserver.Node, n)
	for i := range nodes {
		nd := natsserver.Node{Name: natsserver.NodeName(i), StoreDir: filepath.Join(dir, natsserver.NodeName(i))}
		var err error
		for _, a := range []*string{&nd.Client, &nd.Cluster, &nd.Monitor} {
			if *a, err = addr(); err != nil {
				return nil, err
			}
		}
		if configure != nil {
			configure(&nd)
		}
		nodes[i] = nd
	}
	s := &NATSServers{}
	for i := range nodes {
		if n > 1 {
			for j := range nodes {
				if j != i {
					nodes[i].Routes = append(nodes[i].Routes, nodes[j].Cluster)
				}
			}
		}
		stop, err := startNATSNode(dir, nodes[i])
		if err != nil {
			for _, f := range s.stop {
				f()
			}
			return nil, err
		}
		s.Clients = append(s.Clients, nodes[i].Client)
		s.Monitors = append(s.Monitors, nodes[i].Monitor)
		s.stop = append(s.stop, stop)
	}
	t.Cleanup(func() {
		for _, f := range s.stop {
			f()
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Ready, then routed to every peer, as the cluster package starts
	// nodes: /healthz may say ok before a late peer's route is up.
	ready := func(ctx context.Context, m string) error {
		if err := natsserver.Ready(ctx, m); err != nil {
			return err
		}
		return natsserver.Routed(ctx, m, n-1)
	}
	for i, m := range s.Monitors {
		for {
			err := ready(ctx, m)
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				log, _ := os.ReadFile(filepath.Join(dir, nodes[i].Name+".log"))
				return nil, fmt.Errorf("%s not ready: %w\n%s", nodes[i].Name, err, log)
			}
			time.Sleep(50 * time.Millisecond) // polling interval, not synchronisation
		}
	}
	return s, nil
}

// startNATSNode writes nd's configuration and starts it; stop kills it
// (once) and waits for it.
func startNATSNode(dir string, nd natsserver.Node) (stop func(), err error) {
	conf := filepath.Join(dir, nd.Name+".conf")
	if err := os.WriteFile(conf, []byte(natsserver.Render(nd)), 0o644); err != nil {
		return nil, err
	}
	logFile, err := os.Create(filepath.Join(dir, nd.Name+".log"))
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd := exec.Command(natsserver.Binary, natsserver.Args(conf)...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Own process group; Pdeathsig so the server dies with the test binary
	// even if Cleanup never runs.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait() // always reap: PID 1 here does not
		close(done)
	}()
	return func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}, nil
}
