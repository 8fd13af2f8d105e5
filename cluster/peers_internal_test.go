package cluster

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// TestSocketInode finds the connecting end of a loopback connection and
// checks it is the socket this process holds.
func TestSocketInode(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dialed, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer dialed.Close()
	accepted, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer accepted.Close()
	inode, err := socketInode(accepted.RemoteAddr().(*net.TCPAddr), accepted.LocalAddr().(*net.TCPAddr))
	if err != nil || inode == 0 {
		t.Fatalf("inode %d, %v", inode, err)
	}
	f, err := dialed.(*net.TCPConn).File()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	target, err := os.Readlink(filepath.Join("/proc/self/fd", strconv.Itoa(int(f.Fd()))))
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("socket:[%d]", inode); target != want {
		t.Errorf("dialing socket is %s, sock_diag says %s", target, want)
	}
	// A socket that does not exist.
	if inode, err := socketInode(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}, accepted.LocalAddr().(*net.TCPAddr)); err != nil || inode != 0 {
		t.Errorf("no socket: inode %d, %v", inode, err)
	}
}

// peersHarness is 3 demultiplexers in front of fake etcd members (HTTP
// servers that answer every request with their own name, and nodes
// without processes), naming senders by headerSender.
func peersHarness(t *testing.T) (*Cluster, []*PeerDemux) {
	t.Helper()
	if _, ok := LookupBackend("etcd"); !ok {
		t.Fatal("etcd's row is not in the table: an external test of this package must import cluster/backends/all (through testenv)")
	}
	c := &Cluster{log: slog.New(slog.DiscardHandler), nodeByKey: map[string]*Node{}, linkByKey: map[string]*Link{},
		aliases: map[string][]string{}}
	c.prov = localProvider{c: c}
	c.tp = toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	var nodes []*Node
	var addrs []string
	for i := range 3 {
		name := "etcd-" + strconv.Itoa(i)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, name)
		})}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
		n := &Node{Name: name, Kind: "etcd", c: c}
		c.nodes = append(c.nodes, n)
		c.nodeByKey[name] = n
		nodes = append(nodes, n)
		addrs = append(addrs, ln.Addr().String())
	}
	c.plan = PlanOf(Spec{Backends: map[string]Settings{"etcd": {"nodes": 3}}})
	upstream := map[*Node]string{}
	for i, n := range nodes {
		upstream[n] = addrs[i]
	}
	demux, err := localProvider{c: c}.FrontPeers(Front{Fallback: "etcd-peers", Nodes: nodes,
		Up:       func(n *Node) []string { return []string{upstream[n]} },
		Identify: func([]*Node) func(net.Conn) ([]byte, int) { return headerSender(nodes) },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		closeDemux(demux)
		for _, l := range c.AllLinks() {
			l.close()
		}
	})
	return c, demux
}

// headerSender names the sender of a connection by the X-Peer header of
// the request head it sends first (the sender's index), else by the
// process that opened it: the two ways a backend's Identify works (etcd's
// reads etcd's own headers; cluster/backends/etcd tests those).
func headerSender(nodes []*Node) func(c net.Conn) ([]byte, int) {
	return func(c net.Conn) ([]byte, int) {
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
		defer c.SetReadDeadline(time.Time{})
		var head []byte
		buf := make([]byte, 512)
		for !bytes.Contains(head, []byte("\r\n\r\n")) {
			n, err := c.Read(buf)
			head = append(head, buf[:n]...)
			if err != nil {
				break
			}
		}
		for _, line := range strings.Split(string(head), "\r\n") {
			if v, ok := strings.CutPrefix(line, "X-Peer: "); ok {
				if i, err := strconv.Atoi(v); err == nil {
					return head, i
				}
			}
		}
		return head, senderBySocket(nodes, c)
	}
}

// closeDemux stops every demultiplexer and closes the connections they
// forward.
func closeDemux(demux []*PeerDemux) {
	for _, d := range demux {
		d.Close()
	}
}

// peerGet sends GET / to addr with headers and returns the body, or an
// error when no answer comes within wait.
func peerGet(addr string, headers map[string]string, wait time.Duration) (string, error) {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	var b strings.Builder
	b.WriteString("GET /raft/stream/message/1 HTTP/1.1\r\nHost: x\r\n")
	for k, v := range headers {
		fmt.Fprintf(&b, "%s: %s\r\n", k, v)
	}
	b.WriteString("\r\n")
	if _, err := io.WriteString(conn, b.String()); err != nil {
		return "", err
	}
	conn.SetReadDeadline(time.Now().Add(wait))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return string(body), err
}

func TestPeerDemux(t *testing.T) {
	c, demux := peersHarness(t)
	d0 := demux[0]
	link := func(name string) *Link {
		t.Helper()
		l, ok := c.link(name)
		if !ok {
			t.Fatalf("no link %s", name)
		}
		return l
	}
	from1 := map[string]string{"X-Peer": "1"}
	from2 := map[string]string{"X-Peer": "2"}
	unknown := map[string]string{}

	t.Run("routes", func(t *testing.T) {
		for _, tc := range []struct {
			name    string
			headers map[string]string
			via     string
		}{
			{"peer", from1, "etcd-1->etcd-0"},
			{"other peer", from2, "etcd-2->etcd-0"},
			{"unknown", unknown, "etcd-peers->etcd-0"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if got, err := peerGet(d0.addr, tc.headers, 5*time.Second); err != nil || got != "etcd-0" {
					t.Fatalf("before the cut: %q, %v", got, err)
				}
				l := link(tc.via)
				l.Cut()
				defer l.Heal(context.Background())
				if got, err := peerGet(d0.addr, tc.headers, 300*time.Millisecond); err == nil {
					t.Fatalf("answer %q through cut %s", got, tc.via)
				}
				// Every other way in still works.
				for _, other := range []map[string]string{from1, from2, unknown} {
					if fmt.Sprint(other) == fmt.Sprint(tc.headers) {
						continue
					}
					if got, err := peerGet(d0.addr, other, 5*time.Second); err != nil || got != "etcd-0" {
						t.Errorf("%v with %s cut: %q, %v", other, tc.via, got, err)
					}
				}
			})
		}
	})

	t.Run("heal delivers", func(t *testing.T) {
		l := link("etcd-2->etcd-0")
		l.Cut()
		got := make(chan string, 1)
		go func() {
			s, err := peerGet(d0.addr, from2, 10*time.Second)
			if err != nil {
				s = err.Error()
			}
			got <- s
		}()
		select {
		case s := <-got:
			t.Fatalf("answer through a cut link: %q", s)
		case <-time.After(200 * time.Millisecond):
		}
		l.Heal(context.Background())
		if s := <-got; s != "etcd-0" {
			t.Errorf("after heal: %q", s)
		}
	})

	t.Run("socket owner", func(t *testing.T) {
		// This process plays etcd-2: a request without sender headers
		// from it goes through etcd-2->etcd-0.
		n := c.nodes[2]
		n.mu.Lock()
		n.proc = selfProcess{}
		n.mu.Unlock()
		defer func() {
			n.mu.Lock()
			n.proc = nil
			n.mu.Unlock()
		}()
		l := link("etcd-2->etcd-0")
		l.Cut()
		defer l.Heal(context.Background())
		if got, err := peerGet(d0.addr, unknown, 300*time.Millisecond); err == nil {
			t.Fatalf("answer %q through cut %s", got, l.Name)
		}
		if got, err := peerGet(d0.addr, from1, 5*time.Second); err != nil || got != "etcd-0" {
			t.Errorf("from etcd-1: %q, %v", got, err)
		}
	})

	t.Run("selectors", func(t *testing.T) {
		ls, err := c.Links("etcd-peers->etcd-0")
		if err != nil || len(ls) != 3 {
			t.Fatalf("etcd-peers->etcd-0: %v %v", linkNamesOf(ls), err)
		}
		ls, err = c.Links("etcd-1->etcd-0")
		if err != nil || len(ls) != 1 {
			t.Fatalf("etcd-1->etcd-0: %v %v", linkNamesOf(ls), err)
		}
	})

	t.Run("partition", func(t *testing.T) {
		for _, tc := range []struct {
			groups [][]string
			want   string
		}{
			{[][]string{{"etcd-0"}, {"etcd-1", "etcd-2"}},
				"etcd-0->etcd-1 etcd-0->etcd-2 etcd-1->etcd-0 etcd-2->etcd-0 etcd-peers->etcd-0"},
			{[][]string{{"etcd-0", "etcd-1"}, {"etcd-2"}},
				"etcd-0->etcd-2 etcd-1->etcd-2 etcd-2->etcd-0 etcd-2->etcd-1 etcd-peers->etcd-2"},
			{[][]string{{"etcd-0"}, {"etcd-1"}},
				"etcd-0->etcd-1 etcd-1->etcd-0"},
		} {
			ls, err := c.Partition(tc.groups)
			if err != nil {
				t.Fatalf("%v: %v", tc.groups, err)
			}
			if got := strings.Join(sortedNames(ls), " "); got != tc.want {
				t.Errorf("%v cuts %s, want %s", tc.groups, got, tc.want)
			}
		}
	})

	t.Run("close", func(t *testing.T) {
		conn, err := net.Dial("tcp", d0.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		closeDemux(demux)
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := conn.Read(make([]byte, 1)); err == nil || os.IsTimeout(err) {
			t.Errorf("read after close: %v, want the connection closed", err)
		}
		if _, err := net.DialTimeout("tcp", d0.addr, time.Second); err == nil {
			t.Error("demultiplexer still listens after close")
		}
	})
}

// TestPeerDemuxListening: the demultiplexer refuses connections while its
// member does not listen, unless one of its links is cut, and ignores a
// reading of the sockets older than one it followed.
func TestPeerDemuxListening(t *testing.T) {
	_, demux := peersHarness(t)
	d := demux[0]
	up := d.fallback.upstreams[0]
	dials := func() bool {
		conn, err := net.DialTimeout("tcp", d.addr, time.Second)
		if err == nil {
			conn.Close()
		}
		return err == nil
	}
	d.syncListening(map[string]bool{}, 10)
	if dials() {
		t.Fatal("accepts while the member does not listen")
	}
	d.syncListening(map[string]bool{up: true}, 9) // older reading
	if dials() {
		t.Fatal("followed an older reading")
	}
	d.syncListening(map[string]bool{up: true}, 11)
	if !dials() {
		t.Fatal("refuses while the member listens")
	}
	d.pairs[1].Cut()
	d.syncListening(map[string]bool{}, 12)
	if !dials() {
		t.Fatal("stopped listening while a link is cut")
	}
	d.pairs[1].Heal(context.Background())
}

func linkNamesOf(ls []*Link) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.Name)
	}
	return out
}

func sortedNames(ls []*Link) []string {
	out := linkNamesOf(ls)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// selfProcess is a process whose pid is the test's own.
type selfProcess struct{}

func (selfProcess) Pid() int              { return os.Getpid() }
func (selfProcess) Pause() error          { return nil }
func (selfProcess) Resume() error         { return nil }
func (selfProcess) Terminate() error      { return nil }
func (selfProcess) Kill() error           { return nil }
func (selfProcess) Shutdown() error       { return nil }
func (selfProcess) Done() <-chan struct{} { return nil }
func (selfProcess) ExitErr() error        { return nil }
