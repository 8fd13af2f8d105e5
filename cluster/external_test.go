package cluster_test

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
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
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range []string{"LOCKLAB_REDIS_USERNAME", "LOCKLAB_REDIS_PASSWORD", "LOCKLAB_REDIS_TLS", "LOCKLAB_REDIS_CACERT",
				"LOCKLAB_ETCD_USERNAME", "LOCKLAB_ETCD_PASSWORD", "LOCKLAB_ETCD_CACERT", "LOCKLAB_ETCD_CERT", "LOCKLAB_ETCD_KEY", "LOCKLAB_ZK_DIGEST"} {
				t.Setenv(k, tc.env[k])
			}
			c, err := cluster.ExternalCredentialsFromEnv()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
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
	for _, k := range []string{"LOCKLAB_REDIS_USERNAME", "LOCKLAB_REDIS_TLS", "LOCKLAB_REDIS_CACERT",
		"LOCKLAB_ETCD_USERNAME", "LOCKLAB_ETCD_PASSWORD", "LOCKLAB_ETCD_CACERT", "LOCKLAB_ETCD_CERT", "LOCKLAB_ETCD_KEY"} {
		t.Setenv(k, "")
	}
	t.Setenv("LOCKLAB_REDIS_PASSWORD", "s3cret-redis")
	t.Setenv("LOCKLAB_ZK_DIGEST", "bob:s3cret-zk")
	dir := t.TempDir()
	c, err := cluster.Start(ctxT(t, 10*time.Second), cluster.Spec{Provider: cluster.ProviderExternal, Dir: dir, Clients: 2,
		External: &cluster.ExternalSpec{Redis: []string{l.Addr().String()}}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		auth := c.Endpoints(i).Auth
		if auth.RedisPassword != "s3cret-redis" || auth.ZooKeeperDigest != "bob:s3cret-zk" {
			t.Errorf("client %d: Endpoints.Auth %v lacks the credentials", i, auth)
		}
	}
	info := fmt.Sprintf("%+v %#v", c.Info(), c.Endpoints(0))
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
