// Package mariadb is the MariaDB row of the cluster's backend table: one
// server mariadb-0 (Debian's mariadb-server 10.11), initialised by
// mariadb-install-db into a temporary directory and run by providers
// local, netns and docker as mariadbd --no-defaults, as the mysql user.
//
// Import it for its side effect (cluster/backends/all does).
// Of locklab it imports only cluster.
package mariadb

import (
	"context"
	"database/sql"
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

	"github.com/go-sql-driver/mysql"

	"github.com/locklab/locklab/cluster"
)

// Name is the backend's name: the section cluster.mariadb, the list
// cluster.external.mariadb and the locks' Backend.
const Name = "mariadb"

// Server is Debian's server binary, in /usr/sbin (not on every user's
// PATH).
const Server = "/usr/sbin/mariadbd"

// Kind is the kind of its node.
const Kind = "mariadb"

// User is the system user mariadbd runs as (Command.User; --user too):
// it refuses to run as root.
const User = "mysql"

// Session settings the server runs with (docs/backends.md): a client
// whose TCP peer stops answering is dropped after KeepaliveIdle +
// KeepaliveInterval*KeepaliveCount of silence, which releases its
// GET_LOCK locks.
const (
	KeepaliveIdle     = 2 * time.Second
	KeepaliveInterval = 1 * time.Second
	KeepaliveCount    = 3
)

func init() {
	cluster.RegisterBackend(cluster.TableBackend{
		Name:       Name,
		Doc:        "a MariaDB server (mariadb-0); providers local, netns, docker and external",
		Kinds:      []cluster.TableKind{{Kind: Kind, Pattern: "mariadb-0"}},
		Providers:  []string{cluster.ProviderLocal, cluster.ProviderNetns, cluster.ProviderDocker},
		Binaries:   []string{Server, "mariadb-install-db"},
		Packages:   []string{"mariadb-server"},
		ClientPort: 3306,
		Sessions:   true,
		Faults:     []string{"pause", "kill", "restart"},
		Credentials: []cluster.TableCredential{
			{Env: "LOCKLAB_MARIADB_USER", What: "user", Doc: "the user to log in as (default root; a lock's user option wins); it needs CREATE on the database locklab"},
			{Env: "LOCKLAB_MARIADB_PASSWORD", What: "password", Secret: true, Doc: "its password (none: an account without one)"},
		},
		// The server speaks first: a handshake packet of protocol 10.
		Ping: &cluster.TablePing{Reply: 5, OK: func(b []byte) bool { return b[4] == 10 }},
		Plan: func(cluster.Settings) ([]cluster.PlanNode, []cluster.PlanLink) {
			return []cluster.PlanNode{{Name: "mariadb-0", Kind: Kind}}, nil
		},
		Build: build,
	})
	_ = mysql.SetLogger(quiet{})
}

// quiet drops the driver's log lines (a killed server's "unexpected EOF").
type quiet struct{}

func (quiet) Print(...any) {}

func build(b *cluster.Build) (cluster.Started, error) {
	var st cluster.Started
	u, err := user.Lookup(User)
	if err != nil {
		return st, fmt.Errorf("mariadbd runs as the %s user: %w (install mariadb-server)", User, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	root, err := os.MkdirTemp("", "locklab-mariadb-")
	if err != nil {
		return st, err
	}
	st.Close = func() error { return os.RemoveAll(root) }
	if err := os.Chmod(root, 0o755); err != nil {
		return st, err
	}
	if err := os.Chown(root, uid, gid); err != nil {
		return st, err
	}
	ports, err := b.Ports(1)
	if err != nil {
		return st, err
	}
	n := b.Nodes[0]
	addr := b.ClientAddr(n, ports[0])
	host, _, _ := net.SplitHostPort(b.ListenAddr(n, ports[0]))
	data := filepath.Join(root, "data")
	// mariadb-install-db makes root@localhost only; the harness and the
	// clients may dial from another address (provider netns).
	initFile := filepath.Join(root, "init.sql")
	if err := os.WriteFile(initFile, []byte("CREATE USER IF NOT EXISTS root@'%';\nGRANT ALL ON *.* TO root@'%' WITH GRANT OPTION;\n"), 0o644); err != nil {
		return st, err
	}
	b.Configure(n, cluster.Setup{
		Addr: addr,
		Command: func() (cluster.Command, error) {
			return cluster.Command{Path: Server, Dir: root, Args: []string{
				"--no-defaults", "--datadir=" + data, "--socket=" + filepath.Join(root, "mariadbd.sock"),
				"--pid-file=" + filepath.Join(root, "mariadbd.pid"), "--init-file=" + initFile,
				"--port=" + strconv.Itoa(ports[0]), "--bind-address=" + host, "--user=" + User,
				"--skip-log-bin", "--innodb-buffer-pool-size=16M", "--max-connections=500",
				"--tcp-keepalive-time=" + strconv.Itoa(int(KeepaliveIdle.Seconds())),
				"--tcp-keepalive-interval=" + strconv.Itoa(int(KeepaliveInterval.Seconds())),
				"--tcp-keepalive-probes=" + strconv.Itoa(KeepaliveCount),
			}, User: User}, nil
		},
		Probe: func(ctx context.Context) error { return query(ctx, addr, "SELECT 1", new(int)) },
		Role: func(ctx context.Context) (string, error) {
			if err := query(ctx, addr, "SELECT 1", new(int)); err != nil {
				return "", err
			}
			return "primary", nil
		},
	})
	st.Start = func(ctx context.Context) error {
		// mariadb-install-db once per server version (the user's cache),
		// copied here.
		tmpl, err := b.Template(ctx, "mariadb-"+version()+"-install-1", func(ctx context.Context, dir string) error {
			cmd := exec.CommandContext(ctx, "mariadb-install-db", "--no-defaults", "--datadir="+filepath.Join(dir, "data"), "--user="+User,
				"--auth-root-authentication-method=normal", "--skip-test-db")
			cmd.Dir = dir
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
			if out, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("mariadb-install-db: %w: %s", err, strings.TrimSpace(string(out)))
			}
			return nil
		})
		if err != nil {
			return err
		}
		if err := cluster.CopyDir(ctx, filepath.Join(tmpl, "data"), data); err != nil {
			return err
		}
		return b.StartNodes(ctx, b.Nodes, nil)
	}
	st.Version = func(ctx context.Context) string {
		var v string
		if query(ctx, addr, "SELECT VERSION()", &v) != nil {
			return ""
		}
		return v
	}
	return st, nil
}

// query runs sql as root on a fresh connection to addr and scans its one
// row into dst.
func query(ctx context.Context, addr, q string, dst any) error {
	db, err := sql.Open("mysql", "root@tcp("+addr+")/?timeout=2s")
	if err != nil {
		return err
	}
	defer db.Close()
	return db.QueryRowContext(ctx, q).Scan(dst)
}

// version is the server's version as its binary says ("10.11.19"), for
// the template's name; "unknown" when it does not say.
func version() string {
	out, err := exec.Command(Server, "--version").Output()
	if err != nil {
		return "unknown"
	}
	for _, f := range strings.Fields(string(out)) {
		if v, _, ok := strings.Cut(f, "-MariaDB"); ok {
			return v
		}
	}
	return "unknown"
}
