package etcdlock_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/etcdlock"
	"github.com/locklab/locklab/testenv"
)

// certs are PEM files of a test CA, a server certificate for one host name
// and a client certificate, all signed by the CA.
type certs struct {
	ca, serverCert, serverKey, clientCert, clientKey string
}

func writeCerts(t *testing.T, dir, host string) certs {
	t.Helper()
	key := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	now := time.Now()
	caKey := key()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "locklab test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	leaf := func(serial int64, cn string, dns []string, usage x509.ExtKeyUsage, name string) (cert, keyFile string) {
		k := key()
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn}, DNSNames: dns,
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caTmpl, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kder, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return write(name+".pem", "CERTIFICATE", der), write(name+"-key.pem", "EC PRIVATE KEY", kder)
	}
	c := certs{ca: write("ca.pem", "CERTIFICATE", caDER)}
	c.serverCert, c.serverKey = leaf(2, host, []string{host}, x509.ExtKeyUsageServerAuth, "server")
	c.clientCert, c.clientKey = leaf(3, "locklab", nil, x509.ExtKeyUsageClientAuth, "client")
	return c
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close() // etcd takes the port next
	return l.Addr().String()
}

// tlsEtcd starts one etcd member serving clients over TLS only, with a
// certificate for host and client certificates required. It returns the
// address it listens on and the certificates.
func tlsEtcd(t *testing.T, host string) (string, certs) {
	t.Helper()
	testenv.RequireBinaries(t, "etcd")
	if testing.Short() {
		t.Skip("starts etcd")
	}
	dir := t.TempDir()
	c := writeCerts(t, dir, host)
	client, peer := freeAddr(t), freeAddr(t)
	logf, err := os.Create(filepath.Join(dir, "etcd.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logf.Close() })
	cmd := exec.Command("etcd", "--name", "tls", "--data-dir", filepath.Join(dir, "data"),
		"--listen-client-urls", "https://"+client, "--advertise-client-urls", "https://"+client,
		"--listen-peer-urls", "http://"+peer, "--initial-advertise-peer-urls", "http://"+peer,
		"--initial-cluster", "tls=http://"+peer,
		"--cert-file", c.serverCert, "--key-file", c.serverKey,
		"--client-cert-auth", "--trusted-ca-file", c.ca)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	deadline := time.Now().Add(20 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", client, time.Second)
		if err == nil {
			conn.Close()
			return client, c
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logf.Name())
			t.Fatalf("etcd not listening on %s within 20s:\n%s", client, log)
		}
		time.Sleep(50 * time.Millisecond) // polling interval
	}
}

// With TLS, Dial verifies the member against the host of its real address
// (the Redirect key behind the 127.0.0.1 address it dials) and presents the
// client certificate.
func TestTLS(t *testing.T) {
	const host = "etcd.locklab.test"
	addr, c := tlsEtcd(t, host)
	auth := locks.Auth{EtcdCACert: c.ca, EtcdCert: c.clientCert, EtcdKey: c.clientKey}
	endpoints := func(realHost string, auth locks.Auth) locks.Endpoints {
		return locks.Endpoints{Table: map[string][]string{"etcd": {addr}}, Redirect: map[string]string{realHost + ":2379": addr}, Auth: auth}
	}

	t.Run("verified", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cl, err := etcdlock.New(ctx, locks.Config{Endpoints: endpoints(host, auth), TTL: ttl})
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ls, err := cl.Locker("tls").Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := ls.Release(ctx); err != nil {
			t.Fatal(err)
		}
	})
	for _, tc := range []struct {
		name string
		e    locks.Endpoints
		want string
	}{
		{"wrong-name", endpoints("other.locklab.test", auth), "certificate"},
		{"unknown-ca", endpoints(host, locks.Auth{EtcdCACert: c.clientCert}), "certificate"},
		// With TLS 1.3 the server refuses a missing client certificate
		// after the client's handshake has completed; plain text meets a
		// TLS server: both only end with the context, gRPC retrying.
		{"no-client-cert", endpoints(host, locks.Auth{EtcdCACert: c.ca}), ""},
		{"plain-text", endpoints(host, locks.Auth{}), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			start := time.Now()
			cli, err := etcdlock.Dial(ctx, locks.Config{Endpoints: tc.e})
			if err == nil {
				cli.Close()
				t.Fatal("connected")
			}
			t.Logf("refused after %v: %v", time.Since(start).Round(time.Millisecond), err)
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want %q", err, tc.want)
			}
			// At once: well before the 3s context that gRPC's retries
			// would wait out.
			if tc.want != "" && time.Since(start) > 1500*time.Millisecond {
				t.Errorf("a certificate failure took %v, want at once (not with the context's end)", time.Since(start))
			}
		})
	}
}
