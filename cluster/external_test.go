package cluster_test

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
	_ "github.com/locklab/locklab/cluster/backends/all" // the table's rows and their credentials
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/external"
)

func TestExternalCredentialsFromEnv(t *testing.T) {
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, []byte("not checked"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		env     map[string]string
		want    string // String()
		wantErr string
	}{
		{"none", nil, "none", ""},
		{"redis password", map[string]string{"LOCKLAB_REDIS_PASSWORD": "s3cret"}, "redis: password ***", ""},
		{"redis acl tls", map[string]string{"LOCKLAB_REDIS_USERNAME": "app", "LOCKLAB_REDIS_PASSWORD": "s3cret", "LOCKLAB_REDIS_CACERT": ca},
			"redis: user app password *** tls", ""},
		{"etcd", map[string]string{"LOCKLAB_ETCD_USERNAME": "root", "LOCKLAB_ETCD_PASSWORD": "s3cret", "LOCKLAB_ETCD_CACERT": ca},
			"etcd: user root password *** tls", ""},
		{"zk", map[string]string{"LOCKLAB_ZK_DIGEST": "bob:s3cret"}, "zookeeper: digest bob:***", ""},
		{"user without password", map[string]string{"LOCKLAB_ETCD_USERNAME": "root"}, "", "LOCKLAB_ETCD_USERNAME without"},
		{"missing file", map[string]string{"LOCKLAB_ETCD_CACERT": "/nonexistent.pem"}, "", "LOCKLAB_ETCD_CACERT"},
		{"cert without key", map[string]string{"LOCKLAB_ETCD_CERT": ca}, "", "go together"},
		{"bad tls flag", map[string]string{"LOCKLAB_REDIS_TLS": "maybe"}, "", "LOCKLAB_REDIS_TLS"},
		// The table backends' variables, as their rows declare them.
		{"postgres", map[string]string{"LOCKLAB_POSTGRES_USER": "alice", "LOCKLAB_POSTGRES_PASSWORD": "s3cret",
			"LOCKLAB_POSTGRES_DATABASE": "app", "LOCKLAB_POSTGRES_SSLMODE": "verify-full", "LOCKLAB_POSTGRES_CACERT": ca},
			"postgres: user alice password *** database app tls-mode verify-full cacert", ""},
		{"postgres password alone", map[string]string{"LOCKLAB_POSTGRES_PASSWORD": "s3cret"}, "postgres: password ***", ""},
		{"mariadb", map[string]string{"LOCKLAB_MARIADB_USER": "app", "LOCKLAB_MARIADB_PASSWORD": "s3cret"}, "mariadb: user app password ***", ""},
		{"mariadb user without password", map[string]string{"LOCKLAB_MARIADB_USER": "app"}, "mariadb: user app", ""},
		{"nats user", map[string]string{"LOCKLAB_NATS_USER": "app", "LOCKLAB_NATS_PASSWORD": "s3cret"}, "nats: user app password ***", ""},
		{"nats token", map[string]string{"LOCKLAB_NATS_TOKEN": "s3cret"}, "nats: token ***", ""},
		{"all at once", map[string]string{"LOCKLAB_ZK_DIGEST": "bob:s3cret", "LOCKLAB_NATS_TOKEN": "s3cret", "LOCKLAB_MARIADB_PASSWORD": "s3cret"},
			"zookeeper: digest bob:***; mariadb: password ***; nats: token ***", ""},
		{"nats user without password", map[string]string{"LOCKLAB_NATS_USER": "app"}, "", "LOCKLAB_NATS_USER without LOCKLAB_NATS_PASSWORD"},
		{"nats password without user", map[string]string{"LOCKLAB_NATS_PASSWORD": "s3cret"}, "", "LOCKLAB_NATS_PASSWORD without LOCKLAB_NATS_USER"},
		{"postgres missing ca", map[string]string{"LOCKLAB_POSTGRES_CACERT": "/nonexistent/ca.pem"}, "", "LOCKLAB_POSTGRES_CACERT: stat /nonexistent/ca.pem"},
		{"postgres bad sslmode", map[string]string{"LOCKLAB_POSTGRES_SSLMODE": "on"}, "", `LOCKLAB_POSTGRES_SSLMODE="on": want one of disable, allow`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range cluster.CredentialEnv() {
				t.Setenv(k, tc.env[k])
			}
			c, err := cluster.ExternalCredentialsFromEnv()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "s3cret") {
					t.Errorf("the error shows a secret: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tc.env {
				if !slices.Contains(cluster.CredentialEnv(), k) {
					t.Errorf("%s is not in CredentialEnv", k)
				}
				if got := external.Env(c); !slices.Contains(got, k+"="+v) {
					t.Errorf("a program's environment %v lacks %s", got, k)
				}
			}
			for _, s := range []string{c.String(), fmt.Sprintf("%v %+v %#v", c, c, c)} {
				if strings.Contains(s, "s3cret") {
					t.Errorf("a password shows: %s", s)
				}
			}
			if c.String() != tc.want {
				t.Errorf("String %q, want %q", c.String(), tc.want)
			}
		})
	}
}

// TestCredentialsDocumented: providers.md names every credential variable
// the harness reads, each row's included.
func TestCredentialsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/providers.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, env := range cluster.CredentialEnv() {
		if !strings.Contains(string(doc), "`"+env+"`") {
			t.Errorf("docs/providers.md does not name %s", env)
		}
	}
}

func TestExternalUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	ctx := ctxT(t, 10*time.Second)
	_, err = cluster.Start(ctx, cluster.Spec{Provider: cluster.ProviderExternal, Dir: t.TempDir(),
		External: &cluster.ExternalSpec{Redis: []string{addr}}})
	if err == nil || !strings.Contains(err.Error(), "external redis-0 at "+addr) {
		t.Fatalf("start with nothing listening: %v", err)
	}
}

// Provider external hands the credentials from the environment to every
// client in Endpoints.Auth (the runner passes them on to the lock clients),
// and nowhere else: not in Info, nor in the cluster's logs.
func TestExternalCredentialsInEndpoints(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() { // accept Start's reachability check
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	for _, k := range cluster.CredentialEnv() {
		t.Setenv(k, "")
	}
	t.Setenv("LOCKLAB_REDIS_PASSWORD", "s3cret-redis")
	t.Setenv("LOCKLAB_ZK_DIGEST", "bob:s3cret-zk")
	t.Setenv("LOCKLAB_POSTGRES_USER", "alice")
	t.Setenv("LOCKLAB_POSTGRES_PASSWORD", "s3cret-pg")
	t.Setenv("LOCKLAB_NATS_TOKEN", "s3cret-nats")
	dir := t.TempDir()
	c, err := cluster.Start(ctxT(t, 10*time.Second), cluster.Spec{Provider: cluster.ProviderExternal, Dir: dir, Clients: 2,
		External: &cluster.ExternalSpec{Redis: []string{l.Addr().String()}}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		auth := c.Endpoints(i).Auth
		if auth.RedisPassword != "s3cret-redis" || auth.ZooKeeperDigest != "bob:s3cret-zk" ||
			auth.Get(locks.Postgres, locks.CredUser) != "alice" || auth.Get(locks.Postgres, locks.CredPassword) != "s3cret-pg" ||
			auth.Get(locks.NATS, locks.CredToken) != "s3cret-nats" {
			t.Errorf("client %d: Endpoints.Auth %v lacks the credentials", i, auth)
		}
	}
	infoJSON, err := json.Marshal(c.Info())
	if err != nil {
		t.Fatal(err)
	}
	info := fmt.Sprintf("%+v %#v %s", c.Info(), c.Endpoints(0), infoJSON)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(info, "s3cret") {
		t.Errorf("Info or printed Endpoints show a secret: %s", info)
	}
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(b), "s3cret") {
			t.Errorf("%s shows a secret", p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
