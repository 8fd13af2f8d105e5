package locks_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"testing"

	"github.com/locklab/locklab/locks"
)

func secretAuth() locks.Auth {
	return locks.Auth{
		RedisUsername: "app", RedisPassword: "s3cret-redis", RedisTLS: true, RedisCACert: "/etc/ca.pem",
		EtcdUsername: "root", EtcdPassword: "s3cret-etcd", EtcdCACert: "/etc/etcd-ca.pem",
		EtcdCert: "/etc/client.pem", EtcdKey: "/etc/client-key.pem",
		ZooKeeperDigest: "bob:s3cret-zk",
		Table: map[string][]locks.CredentialValue{
			"postgres": {
				{Var: locks.Credential{Env: "LOCKLAB_POSTGRES_USER", What: locks.CredUser}, Value: "alice"},
				{Var: locks.Credential{Env: "LOCKLAB_POSTGRES_PASSWORD", What: locks.CredPassword, Secret: true}, Value: "s3cret-pg"},
				{Var: locks.Credential{Env: "LOCKLAB_POSTGRES_CACERT", What: locks.CredCACert, File: true}, Value: "/etc/s3cret-pg-ca.pem"},
			},
			"nats": {{Var: locks.Credential{Env: "LOCKLAB_NATS_TOKEN", What: locks.CredToken, Secret: true}, Value: "s3cret-nats"}},
		},
	}
}

// Auth never shows a secret when printed or logged, alone or inside
// Endpoints and Config.
func TestAuthRedacted(t *testing.T) {
	a := secretAuth()
	e := locks.Endpoints{Redis: []string{"127.0.0.1:1"}, Auth: a}
	cfg := locks.Config{Endpoints: e}
	var logged bytes.Buffer
	for _, h := range []slog.Handler{slog.NewTextHandler(&logged, nil), slog.NewJSONHandler(&logged, nil)} {
		slog.New(h).Info("connect", "auth", a, "endpoints", e, "config", cfg)
	}
	outputs := map[string]string{
		"String":        a.String(),
		"fmt Auth":      fmt.Sprintf("%v %+v %#v %s", a, a, a, a),
		"fmt Endpoints": fmt.Sprintf("%v %+v", e, e),
		"fmt Config":    fmt.Sprintf("%v %+v", cfg, cfg),
		"slog":          logged.String(),
	}
	for what, out := range outputs {
		if strings.Contains(out, "s3cret") {
			t.Errorf("%s shows a secret: %s", what, out)
		}
	}
	want := "redis: user app password *** tls; etcd: user root password *** tls client-cert; zookeeper: digest bob:***; " +
		"nats: token ***; postgres: user alice password *** cacert"
	if got := a.String(); got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if got := (locks.Auth{}).String(); got != "none" {
		t.Errorf("zero String() = %q, want none", got)
	}
}

// Endpoints carry Auth through JSON (how client processes get it), and
// leave it out when there is none.
func TestAuthJSON(t *testing.T) {
	e := locks.Endpoints{Redis: []string{"127.0.0.1:1"}, Auth: secretAuth()}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	var back locks.Endpoints
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Auth, e.Auth) {
		t.Errorf("round trip: got %v", back.Auth)
	}
	if back.Auth.Get(locks.Postgres, locks.CredPassword) != "s3cret-pg" || back.Auth.Get(locks.MariaDB, locks.CredPassword) != "" {
		t.Errorf("Get after the round trip: %q", back.Auth.Get(locks.Postgres, locks.CredPassword))
	}
	b, err = json.Marshal(locks.Endpoints{Redis: []string{"127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "Auth") {
		t.Errorf("no credentials, yet Auth in %s", b)
	}
}

// IsZero says whether any credential is set, a table backend's included.
func TestAuthIsZero(t *testing.T) {
	for _, tc := range []struct {
		a    locks.Auth
		zero bool
	}{
		{locks.Auth{}, true},
		{locks.Auth{Table: map[string][]locks.CredentialValue{}}, true},
		{locks.Auth{RedisTLS: true}, false},
		{locks.Auth{Table: map[string][]locks.CredentialValue{"mariadb": {{Var: locks.Credential{What: locks.CredUser}, Value: "app"}}}}, false},
	} {
		if got := tc.a.IsZero(); got != tc.zero {
			t.Errorf("%v: IsZero %v, want %v", tc.a, got, tc.zero)
		}
	}
}

func TestEndpointsReal(t *testing.T) {
	e := locks.Endpoints{Redirect: map[string]string{
		"redis.example:6379": "127.0.0.1:7001",
		"10.0.0.5:6379":      "127.0.0.1:7001", // an alias of the same node
		"10.0.0.6:6379":      "127.0.0.1:7002",
	}}
	for _, tc := range []struct{ addr, real, serverName string }{
		{"127.0.0.1:7001", "redis.example:6379", "redis.example"}, // host name before IP
		{"127.0.0.1:7002", "10.0.0.6:6379", "10.0.0.6"},
		{"10.0.0.5:6379", "10.0.0.5:6379", "10.0.0.5"},    // a real address stays
		{"127.0.0.1:9999", "127.0.0.1:9999", "127.0.0.1"}, // not proxied
	} {
		if got := e.Real(tc.addr); got != tc.real {
			t.Errorf("Real(%s) = %s, want %s", tc.addr, got, tc.real)
		}
		if got := e.ServerName(tc.addr); got != tc.serverName {
			t.Errorf("ServerName(%s) = %s, want %s", tc.addr, got, tc.serverName)
		}
	}
}

func TestZooKeeperUser(t *testing.T) {
	if _, _, ok := (locks.Auth{}).ZooKeeperUser(); ok {
		t.Error("no digest, yet ok")
	}
	u, p, ok := locks.Auth{ZooKeeperDigest: "bob:pw:with:colons"}.ZooKeeperUser()
	if !ok || u != "bob" || p != "pw:with:colons" {
		t.Errorf("got %q %q %v", u, p, ok)
	}
}
