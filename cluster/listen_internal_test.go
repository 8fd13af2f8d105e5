package cluster

import (
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// TestStaleSocketReading replays the race behind a fresh cluster's first
// request failing with EOF: a watch round reads the sockets before the
// server listens, the server starts listening, its client link is created
// (its proxy listens) and a client connects; then the slow round applies
// what it read. It must not stop the proxy.
func TestStaleSocketReading(t *testing.T) {
	c := &Cluster{spec: Spec{Provider: ProviderLocal}, log: slog.New(slog.DiscardHandler),
		nodeByKey: map[string]*Node{}, linkByKey: map[string]*Link{}, aliases: map[string][]string{}}
	c.prov = localProvider{c: c}
	c.tp = toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())

	stale, staleSeq, err := readListening() // before the server listens
	if err != nil {
		// The cluster reads listening sockets through sock_diag: without it
		// the code under test cannot work, so CI must not pass silently.
		if ci := strings.ToLower(os.Getenv("CI")); ci == "true" || ci == "1" {
			t.Fatalf("sock_diag: %v", err)
		}
		t.Skipf("sock_diag: %v", err)
	}
	srv, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	go func() {
		for {
			conn, err := srv.Accept()
			if err != nil {
				return
			}
			go io.Copy(conn, conn) // echo
		}
	}()
	if stale[srv.Addr().String()] {
		t.Fatal("the stale reading already sees the server")
	}
	l, err := c.addLink("client-0", "echo", []string{srv.Addr().String()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	conn, err := net.DialTimeout("tcp", l.Addr(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	c.applyListening(stale, staleSeq) // the slow round
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(conn, make([]byte, 1)); err != nil {
		t.Fatalf("echo through the proxy after a stale reading: %v", err)
	}

	// A newer reading is followed: the server stopped listening.
	srv.Close()
	ls, seq, err := readListening()
	if err != nil {
		t.Fatal(err)
	}
	c.applyListening(ls, seq)
	if _, err := net.DialTimeout("tcp", l.Addr(), time.Second); err == nil {
		t.Error("the proxy still listens after its server stopped")
	}
}
