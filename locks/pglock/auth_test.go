package pglock_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/pglock"
	"github.com/locklab/locklab/locktest"
	"github.com/locklab/locklab/testenv"
)

const (
	appUser     = "locklab_app"
	appPassword = "s3cret-pg-app"
	appDatabase = "locklab_app"
)

// TestExternalLogin: a PostgreSQL role with a password, which the server
// checks (scram-sha-256 in pg_hba.conf for that role; the servers locklab
// starts trust every other login), reached as provider external with the
// LOCKLAB_POSTGRES_* variables. pg-advisory acquires, on the database
// named, with the right password, and fails with a clear error, showing
// no password, with a wrong one or none.
func TestExternalLogin(t *testing.T) {
	c := testenv.Cluster(t, cluster.Spec{Clients: 1, Backends: map[string]cluster.Settings{"postgres": {}}})
	server, _ := c.Node("postgres-0")
	ctx := locktest.Timeout(t, 60*time.Second)
	requirePassword(ctx, t, c.Endpoints(0))

	acquire := func(t *testing.T, env map[string]string) (locks.Lease, error) {
		ext := testenv.External(t, "postgres", []string{server.Addr()}, env)
		cl := locktest.Connect(t, pglock.NameSession, locks.Config{Endpoints: ext.Endpoints(0), Prefix: "locklab-test/"})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		return cl.Locker(locktest.Name(t)).Acquire(ctx)
	}
	t.Run("RightPassword", func(t *testing.T) {
		held, err := acquire(t, map[string]string{"LOCKLAB_POSTGRES_USER": appUser, "LOCKLAB_POSTGRES_PASSWORD": appPassword,
			"LOCKLAB_POSTGRES_DATABASE": appDatabase})
		if err != nil {
			t.Fatalf("acquire with the right password: %v", err)
		}
		if held.Token() == 0 {
			t.Error("token 0: want one from the fencing sequence")
		}
		locktest.ReleaseHeld(t, ctx, held, "app")
		// The lock's session ran as the role, on its database: the
		// fencing sequence is there, owned by the role.
		admin := connect(ctx, t, c.Endpoints(0), appDatabase)
		var owner string
		if err := admin.QueryRow(ctx, "SELECT sequenceowner FROM pg_sequences WHERE sequencename = 'locklab_fence'").Scan(&owner); err != nil {
			t.Fatalf("the fencing sequence in %s: %v", appDatabase, err)
		}
		if owner != appUser {
			t.Errorf("fencing sequence owned by %s, want %s", owner, appUser)
		}
	})
	for _, tc := range []struct {
		name     string
		password string
		want     string
	}{
		{"WrongPassword", "wrong-s3cret", `password authentication failed for user "` + appUser + `"`},
		{"NoPassword", "", "password"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := acquire(t, map[string]string{"LOCKLAB_POSTGRES_USER": appUser, "LOCKLAB_POSTGRES_PASSWORD": tc.password,
				"LOCKLAB_POSTGRES_DATABASE": appDatabase})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("acquire: %v, want an error saying %q", err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), "pglock: connect: ") || strings.Contains(err.Error(), "s3cret") {
				t.Errorf("error %q: want pglock's connect error, without the password", err)
			}
			t.Logf("refused: %v", err)
		})
	}
}

// requirePassword makes the server behind e check appUser's password:
// the role with appPassword and a database of its own, and a
// scram-sha-256 line for the role before pg_hba.conf's trust lines, in
// force after a reload.
func requirePassword(ctx context.Context, t *testing.T, e locks.Endpoints) {
	t.Helper()
	admin := connect(ctx, t, e, "postgres")
	for _, q := range []string{
		"CREATE ROLE " + appUser + " LOGIN PASSWORD '" + appPassword + "'",
		"CREATE DATABASE " + appDatabase + " OWNER " + appUser,
	} {
		if _, err := admin.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", strings.Replace(q, appPassword, "***", 1), err)
		}
	}
	var hbaFile string
	if err := admin.QueryRow(ctx, "SHOW hba_file").Scan(&hbaFile); err != nil {
		t.Fatal(err)
	}
	hba, err := os.ReadFile(hbaFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hbaFile, append([]byte("host all "+appUser+" all scram-sha-256\n"), hba...), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, "SELECT pg_reload_conf()"); err != nil {
		t.Fatal(err)
	}
	var errText *string
	if err := admin.QueryRow(ctx, "SELECT error FROM pg_hba_file_rules WHERE '"+appUser+"' = ANY(user_name)").Scan(&errText); err != nil || errText != nil {
		t.Fatalf("the scram-sha-256 line in %s: %v %v", hbaFile, err, errText)
	}
	// The reload is asynchronous: wait until the server refuses the role
	// a login without its password (it trusted every login before).
	cs, err := pglock.ConnString(e, appUser)
	if err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, "pg_hba.conf in force", func() error {
		conn, err := pgx.Connect(ctx, cs)
		if err == nil {
			conn.Close(ctx)
			return errors.New("a login without a password is trusted")
		}
		return nil
	})
}

// connect logs in as postgres (trusted) to database.
func connect(ctx context.Context, t *testing.T, e locks.Endpoints, database string) *pgx.Conn {
	t.Helper()
	cs, err := pglock.ConnString(e, "")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := pgx.ParseConfig(cs)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Database = database
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("connect as postgres to %s: %v", database, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// TestConnConfig: the connection settings carry Auth's postgres login
// (a password with URL-special characters intact), database, sslmode and
// CA; the lock's user option wins over Auth's user; with TLS each host
// verifies the certificate against its real host name, not the proxy's.
func TestConnConfig(t *testing.T) {
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, selfSignedPEM(t), 0o600); err != nil {
		t.Fatal(err)
	}
	value := func(env string, what locks.CredentialKind, v string) locks.CredentialValue {
		return locks.CredentialValue{Var: locks.Credential{Env: env, What: what}, Value: v}
	}
	e := locks.Endpoints{
		Table:    map[string][]string{"postgres": {"127.0.0.1:7001", "127.0.0.1:7002"}},
		Redirect: map[string]string{"pg-a.example:5432": "127.0.0.1:7001", "pg-b.example:5432": "127.0.0.1:7002"},
		Auth: locks.Auth{Table: map[string][]locks.CredentialValue{"postgres": {
			value("LOCKLAB_POSTGRES_USER", locks.CredUser, "alice"),
			value("LOCKLAB_POSTGRES_PASSWORD", locks.CredPassword, "p@ss/w:rd?&%"),
			value("LOCKLAB_POSTGRES_DATABASE", locks.CredDatabase, "app"),
			value("LOCKLAB_POSTGRES_CACERT", locks.CredCACert, ca),
		}}},
	}
	cfg, err := pglock.ConnConfig(e, "")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.User != "alice" || cfg.Password != "p@ss/w:rd?&%" || cfg.Database != "app" {
		t.Errorf("login %q %q %q", cfg.User, cfg.Password, cfg.Database)
	}
	names := []string{}
	for _, tc := range append([]*tls.Config{cfg.TLSConfig}, fallbackTLS(cfg)...) {
		if tc == nil || tc.InsecureSkipVerify || tc.RootCAs == nil {
			t.Fatalf("sslmode verify-full (a CA set): TLS config %+v", tc)
		}
		names = append(names, tc.ServerName)
	}
	if want := []string{"pg-a.example", "pg-b.example"}; !slices.Equal(names, want) {
		t.Errorf("server names %v, want %v", names, want)
	}
	if cfg, err = pglock.ConnConfig(e, "bob"); err != nil || cfg.User != "bob" {
		t.Errorf("user option bob: %v %v", cfg.User, err)
	}
	e.Auth = locks.Auth{}
	if cfg, err = pglock.ConnConfig(e, ""); err != nil || cfg.User != "postgres" || cfg.Password != "" || cfg.Database != "postgres" || cfg.TLSConfig != nil {
		t.Errorf("no credentials: %v %q %q TLS %v", err, cfg.User, cfg.Database, cfg.TLSConfig)
	}
}

func fallbackTLS(cfg *pgx.ConnConfig) []*tls.Config {
	var out []*tls.Config
	for _, f := range cfg.Fallbacks {
		out = append(out, f.TLSConfig)
	}
	return out
}

// selfSignedPEM is a CA certificate, PEM-encoded.
func selfSignedPEM(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "locklab test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
