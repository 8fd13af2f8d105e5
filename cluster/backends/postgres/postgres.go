// Package postgres is the PostgreSQL row of the cluster's backend table:
// a primary postgres-0 and streaming replicas postgres-0-r0, ... (Debian's
// postgresql 15), started by providers local, netns and docker as the
// postgres system user, each replica streaming from the primary over the
// link postgres-0-rJ->postgres-0 (a proxy under local and docker). A
// failover kills the primary and promotes the first running replica
// (pg_promote).
//
// Import it for its side effect (cluster/backends/all does).
// Of locklab it imports only cluster.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sys/unix"

	"github.com/locklab/locklab/cluster"
)

// Name is the backend's name: the section cluster.postgres, the list
// cluster.external.postgres and the locks' Backend.
const Name = "postgres"

// Node kinds.
const (
	KindPrimary = "postgres"         // postgres-0
	KindReplica = "postgres-replica" // postgres-0-r0, ...
)

// User is the system user the servers run as: postgres refuses root.
const User = "postgres"

// Session settings the servers run with (docs/backends.md): a client
// whose TCP peer stops answering is dropped after KeepaliveIdle +
// KeepaliveInterval*KeepaliveCount of silence, which releases its session
// locks; an idle session is never ended by the server (idle_session_timeout
// 0), so a holder that is slow inside its critical section keeps its lock;
// a running query notices a closed client every ClientCheck.
const (
	KeepaliveIdle     = 2 * time.Second
	KeepaliveInterval = 1 * time.Second
	KeepaliveCount    = 3
	ClientCheck       = 1 * time.Second
)

func init() {
	zero := 0
	cluster.RegisterBackend(cluster.TableBackend{
		Name: Name,
		Doc:  "a PostgreSQL primary (postgres-0) with streaming replicas (postgres-0-r0, ...); providers local, netns, docker and external",
		Fields: []cluster.TableField{
			{Name: "replicas", Kind: "int", Default: 0, Min: &zero, Example: "1",
				Doc: "streaming replicas of postgres-0 (postgres-0-r0, ...); a failover fault promotes the first running one"},
		},
		Kinds: []cluster.TableKind{
			{Kind: KindPrimary, Pattern: "postgres-0"},
			{Kind: KindReplica, Pattern: "postgres-0-rN"},
		},
		Providers: []string{cluster.ProviderLocal, cluster.ProviderNetns, cluster.ProviderDocker},
		Binaries:  []string{"pg_config"},
		Packages:  []string{"postgresql"},
		// The server itself: pg_config alone can come from libpq-dev.
		Installed:      []string{"/usr/lib/postgresql/*/bin/postgres"},
		VersionPackage: "postgresql-[0-9]*",
		ClientPort:     5432,
		Sessions:       true,
		Faults:         []string{"pause", "kill", "restart", "failover"},
		Credentials: []cluster.TableCredential{
			{Env: "LOCKLAB_POSTGRES_USER", What: "user", Doc: "the user to log in as (default postgres; a lock's user option wins)"},
			{Env: "LOCKLAB_POSTGRES_PASSWORD", What: "password", Secret: true, Doc: "its password (none: the server must trust the user or not ask)"},
			{Env: "LOCKLAB_POSTGRES_DATABASE", What: "database", Doc: "the database the locks use (default postgres; its fencing sequence is created there)"},
			{Env: "LOCKLAB_POSTGRES_SSLMODE", What: "tls-mode", Allowed: []string{"disable", "allow", "prefer", "require", "verify-ca", "verify-full"},
				Doc: "libpq's sslmode (default disable, verify-full with a CA); verify-full checks the certificate against the server's real host name"},
			{Env: "LOCKLAB_POSTGRES_CACERT", What: "cacert", File: true, Doc: "a PEM file of the CA that signed the servers' certificates (sslrootcert)"},
		},
		// SSLRequest: the server answers N (no TLS here) or S.
		Ping: &cluster.TablePing{Request: []byte{0, 0, 0, 8, 4, 210, 22, 47}, Reply: 1,
			OK: func(b []byte) bool { return b[0] == 'N' || b[0] == 'S' }},
		Plan:  plan,
		Build: build,
	})
}

func plan(s cluster.Settings) ([]cluster.PlanNode, []cluster.PlanLink) {
	replicas := s.Int("replicas")
	nodes := []cluster.PlanNode{{Name: "postgres-0", Kind: KindPrimary}}
	var links []cluster.PlanLink
	for j := range replicas {
		r := fmt.Sprintf("postgres-0-r%d", j)
		nodes = append(nodes, cluster.PlanNode{Name: r, Kind: KindReplica})
		links = append(links, cluster.PlanLink{From: r, To: "postgres-0"})
	}
	return nodes, links
}

// BinDir is the directory of Debian's PostgreSQL server binaries (not on
// PATH): pg_config --bindir, else /usr/lib/postgresql/15/bin.
func BinDir() string {
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		if d := strings.TrimSpace(string(out)); d != "" {
			if _, err := os.Stat(filepath.Join(d, "postgres")); err == nil {
				return d
			}
		}
	}
	return "/usr/lib/postgresql/15/bin"
}

// server is one node's files and listen address.
type server struct {
	n      *cluster.Node
	dir    string // data dir, owned by User
	listen string // host:port
}

func build(b *cluster.Build) (cluster.Started, error) {
	var st cluster.Started
	bin := BinDir()
	uid, gid, err := ids(User)
	if err != nil {
		return st, err
	}
	// The data dirs live outside the run's dir, whose parents may be
	// closed to other users (t.TempDir is 0700).
	root, err := os.MkdirTemp("", "locklab-postgres-")
	if err != nil {
		return st, err
	}
	st.Close = func() error { return cleanup(root) }
	if err := os.Chmod(root, 0o755); err != nil {
		return st, err
	}
	if err := os.Chown(root, int(uid), int(gid)); err != nil {
		return st, err
	}
	ports, err := b.Ports(len(b.Nodes))
	if err != nil {
		return st, err
	}
	servers := make([]*server, len(b.Nodes))
	for i, n := range b.Nodes {
		s := &server{n: n, dir: filepath.Join(root, n.Name), listen: b.ListenAddr(n, ports[i])}
		servers[i] = s
		addr := b.ClientAddr(n, ports[i])
		b.Configure(n, cluster.Setup{
			Addr: addr,
			Command: func() (cluster.Command, error) {
				return cluster.Command{Path: filepath.Join(bin, "postgres"), Args: []string{"-D", s.dir}, User: User, Dir: root}, nil
			},
			Probe: func(ctx context.Context) error { return query(ctx, addr, "SELECT 1", new(int)) },
			Role:  func(ctx context.Context) (string, error) { return Role(ctx, addr) },
		})
	}
	primary := servers[0]
	upstream := map[*server]string{}
	for _, s := range servers[1:] {
		a, err := b.PeerLink(s.n, primary.n)
		if err != nil {
			return st, err
		}
		upstream[s] = a
	}
	run := func(ctx context.Context, s *server, name string, args ...string) error {
		cmd := exec.CommandContext(ctx, filepath.Join(bin, name), args...)
		cmd.Dir = root
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid}, Setpgid: true, Pdeathsig: syscall.SIGKILL}
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s for %s: %w: %s", name, s.n.Name, err, strings.TrimSpace(string(out)))
		}
		return nil
	}
	st.Start = func(ctx context.Context) error {
		// initdb once per server version (the user's cache), copied here.
		tmpl, err := b.Template(ctx, "postgres-"+filepath.Base(filepath.Dir(bin))+"-initdb-1", func(ctx context.Context, dir string) error {
			if err := os.Chown(dir, int(uid), int(gid)); err != nil {
				return err
			}
			return run(ctx, primary, "initdb", "-D", filepath.Join(dir, "data"), "-U", User, "--auth=trust", "-E", "UTF8", "--no-sync", "--no-instructions")
		})
		if err != nil {
			return err
		}
		if err := cluster.CopyDir(ctx, filepath.Join(tmpl, "data"), primary.dir); err != nil {
			return err
		}
		if err := configure(primary, uid, gid); err != nil {
			return err
		}
		if err := b.StartNodes(ctx, []*cluster.Node{primary.n}, nil); err != nil {
			return err
		}
		for _, s := range servers[1:] {
			host, port, _ := strings.Cut(upstream[s], ":")
			if err := run(ctx, s, "pg_basebackup", "-h", host, "-p", port, "-U", User, "-D", s.dir,
				"-R", "-X", "stream", "--no-sync", "-c", "fast"); err != nil {
				return err
			}
			if err := configure(s, uid, gid); err != nil {
				return err
			}
		}
		return b.StartNodes(ctx, b.Nodes[1:], func(ctx context.Context, n *cluster.Node) error {
			var streaming bool
			return query(ctx, n.Addr(), "SELECT count(*) > 0 FROM pg_stat_wal_receiver WHERE status = 'streaming'", &streaming, func() error {
				if !streaming {
					return errors.New("not streaming from the primary yet")
				}
				return nil
			})
		})
	}
	st.Version = func(ctx context.Context) string {
		var v string
		if query(ctx, primary.n.Addr(), "SHOW server_version", &v) != nil {
			return ""
		}
		return v
	}
	st.Failover = func(ctx context.Context, group string) (string, error) { return failover(ctx, b.Nodes) }
	return st, nil
}

// configure writes the node's rendered settings (locklab.conf, included
// from postgresql.conf) and client authentication (pg_hba.conf), and
// hands its data dir to User.
func configure(s *server, uid, gid uint32) error {
	host, port, err := net.SplitHostPort(s.listen)
	if err != nil {
		return err
	}
	conf := fmt.Sprintf(`# written by locklab
listen_addresses = '%s'
port = %s
unix_socket_directories = ''
max_connections = 300
shared_buffers = '32MB'
tcp_keepalives_idle = %d
tcp_keepalives_interval = %d
tcp_keepalives_count = %d
idle_session_timeout = 0
idle_in_transaction_session_timeout = 0
client_connection_check_interval = '%dms'
hot_standby = on
wal_keep_size = '64MB'
wal_retrieve_retry_interval = '100ms'
logging_collector = off
log_min_messages = warning
`, host, port, int(KeepaliveIdle.Seconds()), int(KeepaliveInterval.Seconds()), KeepaliveCount, ClientCheck.Milliseconds())
	if err := os.WriteFile(filepath.Join(s.dir, "locklab.conf"), []byte(conf), 0o600); err != nil {
		return err
	}
	main := filepath.Join(s.dir, "postgresql.conf")
	b, err := os.ReadFile(main)
	if err != nil {
		return err
	}
	if !strings.Contains(string(b), "include_if_exists = 'locklab.conf'") {
		b = append(b, "\ninclude_if_exists = 'locklab.conf'\n"...)
		if err := os.WriteFile(main, b, 0o600); err != nil {
			return err
		}
	}
	// Any host may log in as any user: the server listens on its node's
	// address only, which under provider netns the harness reaches from
	// an address of its own.
	hba := "host all all all trust\nhost replication all all trust\n"
	if err := os.WriteFile(filepath.Join(s.dir, "pg_hba.conf"), []byte(hba), 0o600); err != nil {
		return err
	}
	return filepath.Walk(s.dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, int(uid), int(gid))
	})
}

// failover kills the current primary among nodes and promotes the first
// running replica, waiting until it accepts writes.
func failover(ctx context.Context, nodes []*cluster.Node) (string, error) {
	var old *cluster.Node
	for _, n := range nodes {
		if r, err := n.Role(ctx); err == nil && r == "primary" {
			old = n
			break
		}
	}
	if old == nil {
		return "", errors.New("no running primary to fail over")
	}
	var next *cluster.Node
	for _, n := range nodes {
		if n != old && n.Alive() {
			if r, err := n.Role(ctx); err == nil && r == "replica" {
				next = n
				break
			}
		}
	}
	if next == nil {
		return "", fmt.Errorf("no running replica to promote after %s", old.Name)
	}
	t0 := time.Now()
	if err := old.Kill(ctx); err != nil {
		return "", err
	}
	var ok bool
	if err := query(ctx, next.Addr(), "SELECT pg_promote(true, 30)", &ok); err != nil || !ok {
		return "", fmt.Errorf("promote %s: %v (promoted: %v)", next.Name, err, ok)
	}
	if err := cluster.Poll(ctx, next.Name+" primary", func(ctx context.Context) error {
		r, err := Role(ctx, next.Addr())
		if err == nil && r != "primary" {
			err = fmt.Errorf("role %s", r)
		}
		return err
	}); err != nil {
		return "", err
	}
	return fmt.Sprintf("killed %s; promoted %s %v after the kill", old.Name, next.Name, time.Since(t0).Round(time.Millisecond)), nil
}

// Role is "primary" or "replica" (in recovery) for the server at addr.
func Role(ctx context.Context, addr string) (string, error) {
	var rec bool
	if err := query(ctx, addr, "SELECT pg_is_in_recovery()", &rec); err != nil {
		return "", err
	}
	if rec {
		return "replica", nil
	}
	return "primary", nil
}

// query runs sql on a fresh connection to addr as User, scans its one row
// into dst and then runs each check.
func query(ctx context.Context, addr, sql string, dst any, checks ...func() error) error {
	host, port, _ := strings.Cut(addr, ":")
	conn, err := pgx.Connect(ctx, fmt.Sprintf("host=%s port=%s user=%s dbname=postgres sslmode=disable connect_timeout=2", host, port, User))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if err := conn.QueryRow(ctx, sql).Scan(dst); err != nil {
		return err
	}
	for _, c := range checks {
		if err := c(); err != nil {
			return err
		}
	}
	return nil
}

func ids(name string) (uid, gid uint32, err error) {
	u, err := user.Lookup(name)
	if err != nil {
		return 0, 0, fmt.Errorf("postgres runs as the %s user: %w (install postgresql)", name, err)
	}
	a, err1 := strconv.Atoi(u.Uid)
	g, err2 := strconv.Atoi(u.Gid)
	return uint32(a), uint32(g), errors.Join(err1, err2)
}

// cleanup removes the System V shared memory each killed postmaster
// leaves behind (its key and id are in postmaster.pid; a segment with
// another key or still attached is not its) and the data dirs.
func cleanup(root string) error {
	dirs, _ := os.ReadDir(root)
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(root, d.Name(), "postmaster.pid"))
		if err != nil {
			continue
		}
		lines := strings.Split(string(b), "\n")
		if len(lines) < 7 {
			continue
		}
		if f := strings.Fields(lines[6]); len(f) == 2 {
			key, err1 := strconv.ParseInt(f[0], 10, 32)
			id, err2 := strconv.Atoi(f[1])
			// Only the segment this postmaster made, unused: one in
			// another IPC namespace (a container's) may share its id
			// with a live segment here.
			var desc unix.SysvShmDesc
			if err1 == nil && err2 == nil {
				if _, err := unix.SysvShmCtl(id, unix.IPC_STAT, &desc); err == nil && desc.Perm.Key == int32(key) && desc.Nattch == 0 {
					_, _ = unix.SysvShmCtl(id, unix.IPC_RMID, nil)
				}
			}
		}
	}
	return os.RemoveAll(root)
}
