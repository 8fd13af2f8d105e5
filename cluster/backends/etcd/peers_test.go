package etcd

import (
	"io"
	"net"
	"strings"
	"testing"
)

// head is a request head as etcd's raft transport writes it, with headers.
func head(headers ...string) string {
	return "GET /raft/stream/message/1 HTTP/1.1\r\nHost: x\r\n" + strings.Join(headers, "") + "\r\n"
}

// TestSenderByHeader: a sender is named by the demultiplexer address in its
// X-PeerURLs, and, once that paired it with its X-Server-From id, by the id
// alone; a head naming neither names nobody.
func TestSenderByHeader(t *testing.T) {
	ps := &etcdPeers{ids: map[string]int{}}
	ps.setFront([]string{"127.0.0.1:1000", "127.0.0.1:1001", "127.0.0.1:1002"})
	for _, tc := range []struct {
		name string
		head string
		want int
	}{
		{"id not learned yet", head("X-Server-From: a1\r\n"), -1},
		{"peer urls", head("X-PeerURLs: http://127.0.0.1:1001\r\n", "X-Server-From: a1\r\n"), 1},
		{"id learned", head("X-Server-From: a1\r\n"), 1},
		{"several urls", head("X-PeerURLs: http://10.0.0.9:2380,http://127.0.0.1:1002\r\n"), 2},
		{"unknown url", head("X-PeerURLs: http://127.0.0.1:9\r\n"), -1},
		{"no headers", head(), -1},
		{"not http", "\x16\x03\x01 tls hello", -1},
	} {
		if got := ps.senderByHeader([]byte(tc.head)); got != tc.want {
			t.Errorf("%s: sender %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestIdentifyForwardsHead: identify returns every byte it read, so the
// demultiplexer forwards the request whole.
func TestIdentifyForwardsHead(t *testing.T) {
	ps := &etcdPeers{ids: map[string]int{}}
	ps.setFront([]string{"127.0.0.1:1000", "127.0.0.1:1001"})
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	req := head("X-PeerURLs: http://127.0.0.1:1000\r\n") + "body"
	go io.WriteString(a, req)
	read, from := ps.identify(b)
	if from != 0 || !strings.HasPrefix(req, string(read)) || !strings.Contains(string(read), "\r\n\r\n") {
		t.Errorf("identify read %q, sender %d; want the head (and what came with it) and sender 0", read, from)
	}
}
