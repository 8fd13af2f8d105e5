package cluster

import (
	"log/slog"
	"slices"
	"testing"

	"github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// TestSetUpstreamsTo: after a node moved ports, a client's link into it
// dials its client address, a peer's link dials the peer addresses, one per
// proxy (a ZooKeeper member's quorum and election ports), and links into
// other nodes are left alone.
func TestSetUpstreamsTo(t *testing.T) {
	c := &Cluster{log: slog.New(slog.DiscardHandler), nodeByKey: map[string]*Node{}, linkByKey: map[string]*Link{},
		aliases: map[string][]string{}}
	c.prov = localProvider{c: c}
	c.tp = toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	mk := func(from, to string, ups ...string) *Link {
		labels := []string{"quorum", "election"}[:len(ups)]
		if len(ups) == 1 {
			labels = nil
		}
		l, err := c.addLink(from, to, ups, labels)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(l.close)
		return l
	}
	client := mk("client-0", "zk-0", "127.0.0.1:1001")
	peer := mk("zk-1", "zk-0", "127.0.0.1:1002", "127.0.0.1:1003")
	other := mk("zk-0", "zk-1", "127.0.0.1:1004", "127.0.0.1:1005")

	if err := c.setUpstreamsTo("zk-0", "127.0.0.1:2001", "127.0.0.1:2002", "127.0.0.1:2003"); err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct {
		l    *Link
		want []string
	}{
		{client, []string{"127.0.0.1:2001"}},
		{peer, []string{"127.0.0.1:2002", "127.0.0.1:2003"}},
		{other, []string{"127.0.0.1:1004", "127.0.0.1:1005"}},
	} {
		if got := w.l.Upstreams(); !slices.Equal(got, w.want) {
			t.Errorf("%s: upstreams %v, want %v", w.l.Name, got, w.want)
		}
	}
}
