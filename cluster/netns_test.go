package cluster_test

import (
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/testenv"
)

// dialWithin dials addr and reports how it ended within d: nil when
// accepted.
func dialWithin(addr string, d time.Duration) error {
	conn, err := net.DialTimeout("tcp", addr, d)
	if err == nil {
		conn.Close()
	}
	return err
}

func TestNetnsRedisPartition(t *testing.T) {
	if !testenv.Netns(t) {
		return
	}
	c := testenv.Cluster(t, cluster.Spec{Provider: cluster.ProviderNetns,
		Redis: &cluster.RedisSpec{Primaries: 1, Replicas: 1}, Clients: 2})
	n, _ := c.Node("redis-0")
	if !strings.HasPrefix(n.Addr(), "198.1") {
		t.Fatalf("redis-0 at %s, want an address of 198.18.0.0/15", n.Addr())
	}
	e := c.Endpoints(0)
	if e.Redis[0] != n.Addr() {
		t.Fatalf("client 0 dials %s, want redis-0's own address %s (no proxy)", e.Redis[0], n.Addr())
	}
	if err := dialWithin(n.Addr(), time.Second); err != nil {
		t.Fatalf("dial redis-0 before the cut: %v", err)
	}
	ls, err := c.Partition([][]string{{"redis-0"}, {"redis-0-r0", "clients"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 4 { // client-0, client-1 -> redis-0 and both replication directions
		t.Fatalf("partition cuts %d links, want 4", len(ls))
	}
	for _, l := range ls {
		if err := l.Cut(); err != nil {
			t.Fatal(err)
		}
	}
	err = dialWithin(n.Addr(), 500*time.Millisecond)
	var ne net.Error
	if err == nil || !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("dial a cut node: %v, want a timeout (packets dropped, not refused)", err)
	}
	var dropped uint64
	for _, l := range ls {
		dropped += l.Dropped()
	}
	if dropped == 0 {
		t.Fatalf("the cut links' rules dropped no packet")
	}
	for _, l := range ls {
		if err := l.Heal(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if err := dialWithin(n.Addr(), time.Second); err != nil {
		t.Fatalf("dial redis-0 after healing: %v", err)
	}
	if _, err := os.Stat("/run/netns"); err != nil {
		t.Fatal(err)
	}
}
