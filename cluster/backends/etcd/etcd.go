// Package etcd is etcd's row of the cluster's backend table: members
// etcd-0, etcd-1, ... (cluster.etcd: {nodes, fsync, image}) under every
// provider, their membership and command line, health and role through the
// client port, and the senders of peer connections named for the
// demultiplexers in front of the members (peers.go).
//
// Of locklab it imports only cluster.
package etcd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/locklab/locklab/cluster"
)

// Names of etcd's row (contract: they appear in scenario files).
const (
	// Name is the backend's name: the section cluster.etcd, the list
	// cluster.external.etcd and the locks' Backend.
	Name = "etcd"
	// Kind is the node kind of every member (etcd-0, etcd-1, ...).
	Kind = "etcd"
	// Peers is the source of the links that carry peer connections whose
	// sender the demultiplexer in front of a member could not name
	// ("etcd-peers->etcd-0"); as a selector end it also names every
	// member's link into that member.
	Peers = "etcd-peers"
	// LeaderSelector names, in a fault, the member leading when the fault
	// starts.
	LeaderSelector = "etcd-leader"
	// DefaultImage is the official image provider docker runs when it is
	// present and cluster.etcd.image names none.
	DefaultImage = "gcr.io/etcd-development/etcd:v3.5.17"
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

// etcdRow is etcd's row of the backend table (registered by init).
var etcdRow = cluster.TableBackend{
	Name: Name,
	Doc:  "an etcd cluster (not with provider external)",
	Fields: []cluster.TableField{
		{Name: "nodes", Kind: "int", Default: 1, Allowed: []string{"1", "3", "5"}, Example: "3",
			Doc: "cluster members (etcd-0, etcd-1, ...)"},
		{Name: "fsync", Kind: "bool", Default: true, Example: "false",
			Doc: "false runs the members with --unsafe-no-fsync: the WAL is not fsynced, so a power-cut fault can lose acknowledged writes"},
		{Name: cluster.ImageField, Kind: "string", Default: "", Example: DefaultImage,
			Doc: "container image, provider docker only (default: " + DefaultImage + ", or the newest locklab/etcd image when only that exists)"},
	},
	Kinds:      []cluster.TableKind{{Kind: Kind, Pattern: "etcd-N"}},
	Providers:  []string{cluster.ProviderLocal, cluster.ProviderNetns, cluster.ProviderDocker},
	Binaries:   []string{"etcd"},
	Packages:   []string{"etcd-server"},
	ClientPort: etcdClientPort,
	Leader:     LeaderSelector,
	Faults:     []string{"pause", "kill", "restart", "power-cut"},
	NoClock: "etcd is a Go program, which reads the clock from the vDSO without calling glibc, " +
		"so the clock shim (a preload library) cannot move its clock",
	Fallback:        Peers,
	DefaultImage:    DefaultImage,
	SyncsEveryWrite: etcdFsync,
	Ping:            etcdRawPing,
	Plan:            plan,
	Build:           buildEtcd,
}

func init() { cluster.RegisterBackend(etcdRow) }

// plan is etcd-0 .. etcd-<nodes-1> and, with more than one, a link for
// every directed pair (etcd-1->etcd-0: what etcd-1 sends etcd-0, whoever
// opened the connection).
func plan(s cluster.Settings) ([]cluster.PlanNode, []cluster.PlanLink) {
	return cluster.Members("etcd-", Kind, s.Int("nodes"))
}

// etcdFsync is cluster.etcd.fsync.
func etcdFsync(s cluster.Settings) bool { return s.Bool("fsync") }

// buildEtcd creates a cluster etcd-0..etcd-<n-1>, under any provider: the
// provider's fabric (cluster.Build) places each member and says where it
// listens, where clients dial it and where its peers reach it.
//
// Every member must agree on every member's peer URL (the cluster id is
// derived from them, and members learn each other's URLs from the
// membership, not from their own flags), so each member advertises one
// address that all the others dial. Where links are proxies (providers
// local and docker) a demultiplexer there tells the senders apart and
// forwards each connection through its pair's link, "etcd-1->etcd-0", or
// through "etcd-peers->etcd-0" when the sender is not named
// (peers.go); under netns each member advertises its own address and
// the kernel carries the links. Cutting "etcd-1->etcd-0" and
// "etcd-0->etcd-1" stops all traffic between the two, whichever of them
// opened the connections (etcd's raft transport sends a member's messages
// mostly on streams the peer opened, and pipelines and lease forwarding on
// connections the sender opened).
func buildEtcd(b *cluster.Build) (cluster.Started, error) {
	var st cluster.Started
	nodes := b.Nodes
	free, err := b.Ports(2 * len(nodes))
	if err != nil {
		return st, err
	}
	clientPort := make([]int, len(nodes))
	peerPort := make([]int, len(nodes))
	peerURL := make([]string, len(nodes)) // advertised: the demultiplexer, or the member's own
	setPorts := func(i int, client, peer int) {
		clientPort[i] = b.Port(client, etcdClientPort)
		peerPort[i] = b.Port(peer, etcdPeerPort)
		b.Serve(nodes[i], clientPort[i])
	}
	peerListen := func(i int) string { return b.ListenAddr(nodes[i], peerPort[i]) }
	for i := range nodes {
		setPorts(i, free[2*i], free[2*i+1])
		peerURL[i] = "http://" + peerListen(i)
	}
	var peers *etcdPeers
	if len(nodes) > 1 {
		peers = &etcdPeers{log: b.Log, nodes: nodes, ids: map[string]int{}}
		index := map[*cluster.Node]int{}
		for i, n := range nodes {
			index[n] = i
		}
		front, err := b.FrontPeers(cluster.PeerFront{Nodes: nodes,
			Up:       func(n *cluster.Node) []string { return []string{peerListen(index[n])} },
			Identify: func([]*cluster.Node) func(net.Conn) ([]byte, int) { return peers.identify },
		})
		if err != nil {
			return st, err
		}
		if front != nil {
			peers.setFront(front)
			for i, addr := range front {
				peerURL[i] = "http://" + addr
			}
		} else {
			peers = nil
		}
	}
	membership := etcdMembership(nodes, peerURL, b.RunID(), !etcdFsync(b.Settings))
	for i, n := range nodes {
		b.Configure(n, cluster.Setup{
			Command: func() (cluster.Command, error) {
				client := "http://" + b.ListenAddr(n, clientPort[i])
				return cluster.Command{Path: "etcd", Args: append([]string{
					"--name", n.Name, "--data-dir", filepath.Join(n.DataDir(), "data"),
					"--listen-client-urls", client, "--advertise-client-urls", client,
					"--listen-peer-urls", "http://" + peerListen(i),
				}, membership(i)...)}, nil
			},
			Probe: func(ctx context.Context) error { return etcdHealth(ctx, n.Addr()) },
			Role:  func(ctx context.Context) (string, error) { return etcdRole(ctx, n.Addr()) },
			// A member whose port was taken before it bound it moves
			// (provider local; the others give each member its own address).
			Rebind: func() error {
				ports, err := b.Ports(2)
				if err != nil {
					return err
				}
				setPorts(i, ports[0], ports[1])
				if peers == nil {
					peerURL[i] = "http://" + peerListen(i)
				}
				return b.SetUpstreams(n, n.Addr(), peerListen(i))
			},
		})
	}
	st.Start = func(ctx context.Context) error {
		if err := b.StartNodes(ctx, nodes, nil); err != nil {
			return err
		}
		if peers != nil {
			// Member ids name senders by X-Server-From alone; the other
			// ways to name them work without.
			if err := peers.learnIDs(ctx, nodes[0].Addr()); err != nil {
				b.Log.Debug("etcd: member ids not read", "err", err)
			}
		}
		return nil
	}
	st.Version = func(ctx context.Context) string { return etcdVersion(ctx, nodes[0].Addr()) }
	return st, nil
}

// The ports an etcd member uses where it has an address of its own
// (provider netns): etcd's standard ones.
const (
	etcdClientPort = 2379
	etcdPeerPort   = 2380
)

var etcdHTTP = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

// etcdMembership returns, for member i of nodes (advertised at peerURL,
// read at each call: a single member that moved ports updates it), the
// arguments every provider gives it: its peer URL, the initial cluster, a
// token unique to this start, the fast election settings and the log
// settings.
func etcdMembership(nodes []*cluster.Node, peerURL []string, runID string, noFsync bool) func(i int) []string {
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
var etcdRawPing = &cluster.TablePing{Request: []byte("GET /version HTTP/1.0\r\nHost: etcd\r\n\r\n"), Reply: 7,
	OK: func(b []byte) bool { return string(b) == "HTTP/1." }}
