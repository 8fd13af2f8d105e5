package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// etcd timing: etcd's own defaults, heartbeats every 100 ms and elections
// after 1 s of silence. 50/500 started a cluster faster but, on a 2-core
// machine running -race tests, let a busy leader miss its heartbeats and
// lose an election now and then ("etcdserver: leader changed" in the middle
// of a lock test that had no fault); a second of silence is a real fault.
const (
	etcdHeartbeat       = 100 * time.Millisecond
	etcdElectionTimeout = 1000 * time.Millisecond
)

// buildEtcd creates a cluster etcd-0..etcd-<n-1>.
//
// Peer links are per directed pair ("etcd-1->etcd-0") plus one per
// destination for connections whose sender is unknown
// ("etcd-peers->etcd-0"). Every member must agree on every member's peer
// URL (the cluster id is derived from them, and members learn each other's
// URLs from the membership, not from their own flags), so each member
// advertises one address that all the others dial: a demultiplexer there
// tells the senders apart and forwards each connection through its pair's
// link (etcdpeers.go). Cutting "etcd-1->etcd-0" and "etcd-0->etcd-1" stops
// all traffic between the two, whichever of them opened the connections
// (etcd's raft transport sends a member's messages mostly on streams the
// peer opened, and pipelines and lease forwarding on connections the
// sender opened).
func (c *Cluster) buildEtcd(es EtcdSpec) (backend, error) {
	b := backend{name: BackendEtcd}
	nodes, err := c.addPlanned(BackendEtcd)
	if err != nil {
		return b, err
	}
	free, err := pickPorts(2 * len(nodes))
	if err != nil {
		return b, err
	}
	peerPort := make([]int, len(nodes))
	peerURL := make([]string, len(nodes)) // advertised: the demultiplexer, or the real port for a single member
	peerAddr := make([]string, len(nodes))
	for i, n := range nodes {
		n.setAddr(hostPort(free[2*i]))
		peerPort[i] = free[2*i+1]
		peerAddr[i] = hostPort(peerPort[i])
		peerURL[i] = "http://" + peerAddr[i]
	}
	var peers *etcdPeers
	if len(nodes) > 1 {
		peers, err = c.buildEtcdPeers(nodes, peerAddr)
		if err != nil {
			return b, err
		}
		for i, d := range peers.demux {
			c.addPeerDemux(d)
			peerURL[i] = "http://" + d.addr
		}
	}
	membership := etcdMembership(nodes, peerURL, c.spec.RunID, es.NoFsync)

	for i, n := range nodes {
		n.cmd = etcdCommand(n, "http://"+hostPort(peerPort[i]), membership(i))
		etcdChecks(n)
		n.rebind = func() error {
			ports, err := pickPorts(2)
			if err != nil {
				return err
			}
			n.setAddr(hostPort(ports[0]))
			peerPort[i] = ports[1]
			if peers != nil {
				return peers.setUpstream(i, hostPort(peerPort[i]))
			}
			peerURL[i] = "http://" + hostPort(peerPort[i])
			return nil
		}
	}
	b.start = func(ctx context.Context) error {
		if err := startNodes(ctx, nodes, nil); err != nil {
			return err
		}
		if peers != nil {
			// Member ids name senders by X-Server-From alone; the other
			// ways to name them work without.
			if err := peers.learnIDs(ctx, nodes[0].Addr()); err != nil {
				c.log.Debug("etcd: member ids not read", "err", err)
			}
		}
		return nil
	}
	b.version = func(ctx context.Context) string { return etcdVersion(ctx, nodes[0].Addr()) }
	return b, nil
}

var etcdHTTP = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

// etcdMembership returns, for member i of nodes (advertised at peerURL,
// read at each call: a single member that moved ports updates it), the
// arguments every provider gives it: its peer URL, the initial cluster, a
// token unique to this start, the fast election settings and the log
// settings.
func etcdMembership(nodes []*Node, peerURL []string, runID string, noFsync bool) func(i int) []string {
	token := fmt.Sprintf("locklab-%s-%d", runID, time.Now().UnixNano())
	return func(i int) []string {
		initial := make([]string, len(nodes))
		for j, n := range nodes {
			initial[j] = n.Name + "=" + peerURL[j]
		}
		args := []string{
			"--initial-advertise-peer-urls", peerURL[i],
			"--initial-cluster", strings.Join(initial, ","),
			"--initial-cluster-state", "new", "--initial-cluster-token", token,
			"--heartbeat-interval", strconv.FormatInt(etcdHeartbeat.Milliseconds(), 10),
			"--election-timeout", strconv.FormatInt(etcdElectionTimeout.Milliseconds(), 10),
			"--logger", "zap", "--log-level", "warn", "--log-outputs", "stderr",
		}
		if noFsync { // cluster.etcd.fsync: false
			args = append(args, "--unsafe-no-fsync")
		}
		return args
	}
}

// etcdCommand runs member n, listening for peers at listenPeer and for
// clients at its address, with its membership flags (etcdMembership).
func etcdCommand(n *Node, listenPeer string, membership []string) func() (command, error) {
	return func() (command, error) {
		client := "http://" + n.Addr()
		return command{path: "etcd", dir: n.dataDir, args: append([]string{
			"--name", n.Name, "--data-dir", filepath.Join(n.dataDir, "data"),
			"--listen-client-urls", client, "--advertise-client-urls", client,
			"--listen-peer-urls", listenPeer,
		}, membership...)}, nil
	}
}

// etcdVersion is the server version of the member at addr; "" when it
// does not say.
func etcdVersion(ctx context.Context, addr string) string {
	var v struct {
		Server string `json:"etcdserver"`
	}
	if err := etcdGet(ctx, addr, "/version", &v); err != nil {
		return ""
	}
	return v.Server
}

// etcdChecks sets how n's readiness and role are asked: through its client
// port.
func etcdChecks(n *Node) {
	n.probe = func(ctx context.Context) error { return etcdHealth(ctx, n.Addr()) }
	n.role = func(ctx context.Context) (string, error) { return etcdRole(ctx, n.Addr()) }
}

func etcdGet(ctx context.Context, addr, path string, v any) error {
	return etcdDo(ctx, http.MethodGet, addr, path, nil, v)
}

func etcdDo(ctx context.Context, method, addr, path string, body io.Reader, v any) error {
	req, err := http.NewRequestWithContext(ctx, method, "http://"+addr+path, body)
	if err != nil {
		return err
	}
	resp, err := etcdHTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, strings.TrimSpace(string(b)))
	}
	return json.Unmarshal(b, v)
}

// etcdHealth succeeds when the member reports health: it has a leader and
// no alarm.
func etcdHealth(ctx context.Context, addr string) error {
	var h struct {
		Health string `json:"health"`
		Reason string `json:"reason"`
	}
	if err := etcdGet(ctx, addr, "/health", &h); err != nil {
		return err
	}
	if h.Health != "true" {
		return fmt.Errorf("health %q %s", h.Health, h.Reason)
	}
	return nil
}

// etcdRole asks the member's status through the gRPC gateway.
func etcdRole(ctx context.Context, addr string) (string, error) {
	var s struct {
		Header struct {
			MemberID string `json:"member_id"`
		} `json:"header"`
		Leader string `json:"leader"`
	}
	if err := etcdDo(ctx, http.MethodPost, addr, "/v3/maintenance/status", strings.NewReader("{}"), &s); err != nil {
		return "", err
	}
	switch {
	case s.Leader == "" || s.Leader == "0":
		return "", fmt.Errorf("no leader")
	case s.Leader == s.Header.MemberID:
		return "leader", nil
	default:
		return "follower", nil
	}
}

// etcdRawPing is GET /version over HTTP/1.0, for PingOf.
var etcdRawPing = &TablePing{Request: []byte("GET /version HTTP/1.0\r\nHost: etcd\r\n\r\n"), Reply: 7, OK: replyIs("HTTP/1.")}
