package redislock_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/redislock"
	"github.com/locklab/locklab/locktest"
	"github.com/locklab/locklab/testenv"
)

const (
	testPassword = "s3cret-default"
	testACLUser  = "app"
	testACLPass  = "s3cret-app"
)

// protectedRedis starts a redis-server whose default user needs
// testPassword and which has an ACL user testACLUser (password
// testACLPass) allowed every command on keys and channels under
// redislock.DefaultPrefix only. It returns the address and a raw client
// logged in as the default user.
func protectedRedis(t *testing.T) (string, *redis.Client) {
	t.Helper()
	addr := testenv.Redis(t)
	raw := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	t.Cleanup(func() { _ = raw.Close() })
	ctx := locktest.Timeout(t, 5*time.Second)
	if err := raw.Do(ctx, "ACL", "SETUSER", testACLUser, "on", ">"+testACLPass,
		"~"+redislock.DefaultPrefix+"*", "&"+redislock.DefaultPrefix+"*", "+@all").Err(); err != nil {
		t.Fatal(err)
	}
	// Same as --requirepass: the default user needs the password from now
	// on, this connection stays logged in.
	if err := raw.ConfigSet(ctx, "requirepass", testPassword).Err(); err != nil {
		t.Fatal(err)
	}
	return addr, raw
}

// handoff checks that lock works for two clients built through the
// registry with e: one holds, the other waits and gets the lock once it is
// released.
func handoff(t *testing.T, lock string, e locks.Endpoints) {
	t.Helper()
	spec, ok := locks.Lookup(lock)
	if !ok {
		t.Fatalf("%s not registered", lock)
	}
	var cs [2]locks.Locker
	for i := range cs {
		ctx := locktest.Timeout(t, 5*time.Second)
		c, err := spec.New(ctx, locks.Config{Endpoints: e, TTL: 5 * time.Second, Seed: int64(i)})
		if err != nil {
			t.Fatalf("%s client %d: %v", lock, i, err)
		}
		t.Cleanup(func() { _ = c.Close() })
		cs[i] = c.Locker("auth")
	}
	locktest.Handoff(t, locktest.Acquire(t, cs[0]), cs[1])
}

// Every variant logs in with a password (default user) or an ACL user,
// on its pub/sub connection too (redis-reentrant's waiter).
func TestAuthPassword(t *testing.T) {
	addr, _ := protectedRedis(t)
	for _, tc := range []struct {
		name string
		auth locks.Auth
	}{
		{"requirepass", locks.Auth{RedisPassword: testPassword}},
		{"acl-user", locks.Auth{RedisUsername: testACLUser, RedisPassword: testACLPass}},
	} {
		for _, v := range allVariants {
			t.Run(tc.name+"/"+string(v), func(t *testing.T) {
				handoff(t, string(v), locks.Endpoints{Redis: []string{addr}, Auth: tc.auth})
			})
		}
	}
}

// Without the right credentials New fails at once, saying why.
func TestAuthRefused(t *testing.T) {
	addr, _ := protectedRedis(t)
	for _, tc := range []struct {
		name string
		auth locks.Auth
		want string
	}{
		{"none", locks.Auth{}, "NOAUTH"},
		{"wrong-password", locks.Auth{RedisPassword: "wrong"}, "WRONGPASS"},
		{"wrong-user", locks.Auth{RedisUsername: "nobody", RedisPassword: testACLPass}, "WRONGPASS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			ctx := locktest.Timeout(t, 10*time.Second)
			c, err := redislock.New(ctx, redislock.CAD, locks.Config{Endpoints: locks.Endpoints{Redis: []string{addr}, Auth: tc.auth}})
			if err == nil {
				c.Close()
				t.Fatal("connected without the right credentials")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want %s", err, tc.want)
			}
			// At once: long before the 10s context a retrying client would
			// wait out (half of it leaves a loaded machine its slack).
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("failed after %v, want at once (not with the context's end)", d)
			}
			t.Logf("refused: %v", err)
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("error shows a password: %v", err)
			}
		})
	}
}

// With RedisTLS the client verifies the server's certificate against the
// real host name behind the address it dials (Endpoints.Real), as clients
// do when they dial their proxy on 127.0.0.1.
func TestAuthTLS(t *testing.T) {
	_, raw := protectedRedis(t)
	const host = "redis.locklab.test"
	dir := t.TempDir()
	caFile, certFile, keyFile := writeCerts(t, dir, host)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close() // the server takes it next
	ctx := locktest.Timeout(t, 5*time.Second)
	for _, kv := range [][2]string{
		{"tls-cert-file", certFile}, {"tls-key-file", keyFile}, {"tls-ca-cert-file", caFile},
		{"tls-auth-clients", "no"}, {"tls-port", strconv.Itoa(port)},
	} {
		if err := raw.ConfigSet(ctx, kv[0], kv[1]).Err(); err != nil {
			if testenv.InCI() {
				t.Fatalf("CONFIG SET %s: %v", kv[0], err)
			}
			t.Skipf("redis-server without TLS support? CONFIG SET %s: %v", kv[0], err)
		}
	}
	tlsAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	auth := locks.Auth{RedisPassword: testPassword, RedisTLS: true, RedisCACert: caFile}
	// The real address the proxy stands for carries the certificate's name.
	e := locks.Endpoints{Redis: []string{tlsAddr}, Redirect: map[string]string{host + ":6379": tlsAddr}, Auth: auth}
	t.Run("verified", func(t *testing.T) { handoff(t, string(redislock.Reentrant), e) })

	t.Run("wrong-name", func(t *testing.T) {
		e := locks.Endpoints{Redis: []string{tlsAddr}, Redirect: map[string]string{"other.locklab.test:6379": tlsAddr}, Auth: auth}
		c, err := redislock.New(locktest.Timeout(t, 5*time.Second), redislock.CAD, locks.Config{Endpoints: e})
		if err == nil {
			c.Close()
			t.Fatal("connected to a server whose certificate names another host")
		}
		if !strings.Contains(err.Error(), "certificate") {
			t.Errorf("err %v, want a certificate error", err)
		}
	})
	t.Run("plain-client", func(t *testing.T) {
		e := locks.Endpoints{Redis: []string{tlsAddr}, Auth: locks.Auth{RedisPassword: testPassword}}
		c, err := redislock.New(locktest.Timeout(t, 3*time.Second), redislock.CAD, locks.Config{Endpoints: e})
		if err == nil {
			c.Close()
			t.Fatal("a plain-text client connected to the TLS port")
		}
	})
}

// writeCerts writes a CA and a server certificate for host (signed by it)
// into dir as PEM files.
func writeCerts(t *testing.T, dir, host string) (caFile, certFile, keyFile string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "locklab test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	srvTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: host}, DNSNames: []string{host},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, caTmpl, &srvKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(srvKey)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	return write("ca.pem", "CERTIFICATE", caDER), write("server.pem", "CERTIFICATE", srvDER),
		write("server-key.pem", "EC PRIVATE KEY", keyDER)
}
