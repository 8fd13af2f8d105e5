// Package memcached is the memcached row of the cluster's backend table:
// one server memcached-0 (Debian's memcached 1.6), run by providers local,
// netns and docker on the port the provider gives, TCP only (-U 0), as the
// memcache user when the harness is root. memcached keeps every item in
// memory: a restart (or a kill and start) comes back empty.
//
// Import it for its side effect (cluster/backends/all does).
// Of locklab it imports only cluster.
package memcached

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/user"
	"strconv"
	"strings"
	"time"

	"github.com/locklab/locklab/cluster"
)

// Name is the backend's name: the section cluster.memcached, the list
// cluster.external.memcached and the locks' Backend.
const Name = "memcached"

// Server is Debian's server binary.
const Server = "/usr/bin/memcached"

// Kind is the kind of its node.
const Kind = "memcached"

// User is the system user memcached runs as when the harness is root
// (Command.User, and -u: memcached refuses root without it).
const User = "memcache"

func init() {
	cluster.RegisterBackend(cluster.TableBackend{
		Name: Name,
		Doc: "a memcached server (memcached-0), TCP only; it keeps nothing across a restart (every item is in memory); " +
			"providers local, netns, docker and external",
		Kinds:      []cluster.TableKind{{Kind: Kind, Pattern: "memcached-0"}},
		Providers:  []string{cluster.ProviderLocal, cluster.ProviderNetns, cluster.ProviderDocker},
		Binaries:   []string{Server},
		Packages:   []string{"memcached"},
		ClientPort: 11211,
		Faults:     []string{"pause", "kill", "restart"},
		Volatile:   true,
		Ping: &cluster.TablePing{Request: []byte("version\r\n"), Reply: 7,
			OK: func(b []byte) bool { return string(b) == "VERSION" }},
		Plan: func(cluster.Settings) ([]cluster.PlanNode, []cluster.PlanLink) {
			return []cluster.PlanNode{{Name: "memcached-0", Kind: Kind}}, nil
		},
		Build: build,
	})
}

func build(b *cluster.Build) (cluster.Started, error) {
	var st cluster.Started
	// The server's working directory: one the memcache user may enter
	// (the node's data dir may sit in a directory only root enters).
	dir, err := os.MkdirTemp("", "locklab-memcached-")
	if err != nil {
		return st, fmt.Errorf("memcached: %w", err)
	}
	st.Close = func() error { return os.RemoveAll(dir) }
	if err := os.Chmod(dir, 0o755); err != nil {
		return st, fmt.Errorf("memcached: %w", err)
	}
	var runAs string
	if os.Geteuid() == 0 {
		if _, err := user.Lookup(User); err != nil {
			return st, fmt.Errorf("memcached runs as the %s user when the harness is root: %w (install memcached)", User, err)
		}
		runAs = User
	}
	ports, err := b.Ports(1)
	if err != nil {
		return st, err
	}
	n := b.Nodes[0]
	addr := b.ClientAddr(n, ports[0])
	host, _, _ := net.SplitHostPort(b.ListenAddr(n, ports[0]))
	b.Configure(n, cluster.Setup{
		Addr: addr,
		Command: func() (cluster.Command, error) {
			args := []string{"-l", host, "-p", strconv.Itoa(ports[0]), "-U", "0", "-m", "64", "-c", "1024", "-t", "2"}
			if runAs != "" {
				args = append(args, "-u", runAs)
			}
			return cluster.Command{Path: Server, Dir: dir, Args: args, User: runAs}, nil
		},
		Probe: func(ctx context.Context) error { _, err := Version(ctx, addr); return err },
		Role: func(ctx context.Context) (string, error) {
			if _, err := Version(ctx, addr); err != nil {
				return "", err
			}
			return "primary", nil
		},
	})
	st.Start = func(ctx context.Context) error { return b.StartNodes(ctx, b.Nodes, nil) }
	st.Version = func(ctx context.Context) string {
		v, _ := Version(ctx, addr)
		return v
	}
	return st, nil
}

// Version asks the server at addr its version ("1.6.18") with the text
// protocol's version command, on a new connection bounded by ctx (and by
// 2 s without a deadline).
func Version(ctx context.Context, addr string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", fmt.Errorf("memcached %s: %w", addr, err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	if _, err := conn.Write([]byte("version\r\n")); err != nil {
		return "", fmt.Errorf("memcached %s: version: %w", addr, err)
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("memcached %s: version: %w", addr, err)
	}
	v, ok := strings.CutPrefix(strings.TrimSpace(line), "VERSION ")
	if !ok {
		return "", errors.New("memcached " + addr + ": version: unexpected reply " + strconv.Quote(line))
	}
	return v, nil
}
