package nats

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// Binary is the server's executable (Debian package nats-server).
const Binary = "nats-server"

// ClusterName is the cluster name every node of a locklab cluster shares.
const ClusterName = "locklab"

// Limits of a node's JetStream storage: a lock bucket holds a few small
// messages, so these only keep a runaway run bounded.
const (
	MaxMemoryStore = 64 << 20
	MaxFileStore   = 1 << 30
)

// ValidNodes checks a cluster size: 1, 3 or 5 (JetStream replicates by
// Raft, so an even size only adds a node that cannot break a tie).
func ValidNodes(n int) error {
	if n != 1 && n != 3 && n != 5 {
		return fmt.Errorf("nodes %d: want 1, 3 or 5", n)
	}
	return nil
}

// NodeName is the contract name of node i: "nats-<i>".
func NodeName(i int) string { return "nats-" + strconv.Itoa(i) }

// Names returns the names of an n-node cluster, nats-0 first.
func Names(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = NodeName(i)
	}
	return out
}

// Node is one server's configuration.
type Node struct {
	// Name is the server name (nats-0, ...): the name JetStream reports a
	// stream's leader by.
	Name string
	// Client, Cluster and Monitor are the host:port the server listens on
	// for clients, for its peers' routes and for HTTP monitoring.
	Client, Cluster, Monitor string
	// StoreDir is JetStream's storage directory (kept across restarts).
	StoreDir string
	// Routes are the host:port this node dials to reach each peer's
	// cluster listener (a proxy's address where the link is proxied).
	// Empty for a single node: then no cluster block is written.
	Routes []string
	// Advertise is the cluster address the node tells its peers to use
	// for it; empty means the node's Cluster address. Where routes run
	// through per-link proxies a peer must not learn a direct address
	// (it would dial around the proxy): give one that does not answer.
	Advertise string
	// User and Password, or Token, when set, are the login every client
	// must give (an authorization block); none: clients need no login,
	// as in the clusters locklab starts.
	User, Password, Token string
}

// Render returns the node's configuration file. Clients are told of no
// other servers (no_advertise): a client reaches exactly the addresses
// it was given, which may be proxies.
func Render(n Node) string {
	var b strings.Builder
	fmt.Fprintf(&b, "server_name: %q\n", n.Name)
	fmt.Fprintf(&b, "listen: %q\n", n.Client)
	fmt.Fprintf(&b, "http: %q\n", n.Monitor)
	b.WriteString("jetstream {\n")
	fmt.Fprintf(&b, "  store_dir: %q\n", n.StoreDir)
	fmt.Fprintf(&b, "  max_memory_store: %d\n", MaxMemoryStore)
	fmt.Fprintf(&b, "  max_file_store: %d\n", MaxFileStore)
	b.WriteString("}\n")
	if n.User != "" || n.Token != "" {
		b.WriteString("authorization {\n")
		if n.User != "" {
			fmt.Fprintf(&b, "  user: %q\n  password: %q\n", n.User, n.Password)
		}
		if n.Token != "" {
			fmt.Fprintf(&b, "  token: %q\n", n.Token)
		}
		b.WriteString("}\n")
	}
	if len(n.Routes) > 0 {
		b.WriteString("cluster {\n")
		fmt.Fprintf(&b, "  name: %q\n", ClusterName)
		fmt.Fprintf(&b, "  listen: %q\n", n.Cluster)
		if n.Advertise != "" {
			fmt.Fprintf(&b, "  advertise: %q\n", n.Advertise)
		}
		b.WriteString("  no_advertise: true\n")
		b.WriteString("  routes: [\n")
		for _, r := range n.Routes {
			fmt.Fprintf(&b, "    %q\n", "nats-route://"+r)
		}
		b.WriteString("  ]\n}\n")
	}
	return b.String()
}

// Args is the server's command line for a configuration file.
func Args(confPath string) []string { return []string{"-c", confPath} }

// Ready returns nil once the server at monitor answers /healthz with
// status ok: JetStream is on, the node knows its meta leader, and its
// streams and consumers are current.
func Ready(ctx context.Context, monitor string) error {
	var h struct {
		Status string `json:"status"`
		Error  string `json:"error"`
	}
	if err := get(ctx, monitor, "/healthz", &h); err != nil {
		return err
	}
	if h.Status != "ok" {
		return fmt.Errorf("nats %s not healthy: %s %s", monitor, h.Status, h.Error)
	}
	return nil
}

// Routed returns nil once the server at monitor has a route to each of
// its peers: a node's /healthz may say ok while it still
// waits for a route to a peer that started late, and a replicated stream
// created meanwhile may not be placed.
func Routed(ctx context.Context, monitor string, peers int) error {
	var v struct {
		Routes int `json:"routes"`
	}
	if err := get(ctx, monitor, "/varz", &v); err != nil {
		return err
	}
	if v.Routes < peers {
		return fmt.Errorf("nats %s: %d of %d routes", monitor, v.Routes, peers)
	}
	return nil
}

// Version returns the server's version ("2.9.10") from /varz.
func Version(ctx context.Context, monitor string) (string, error) {
	var v struct {
		Version string `json:"version"`
	}
	if err := get(ctx, monitor, "/varz", &v); err != nil {
		return "", err
	}
	return v.Version, nil
}

// KVStreamPrefix begins the name of a KV bucket's stream ("KV_<bucket>").
const KVStreamPrefix = "KV_"

// Roles is what one node reports about JetStream's leaders.
type Roles struct {
	// Meta is the server name of the JetStream meta leader ("" unknown).
	Meta string
	// Streams maps each KV bucket stream this node holds a replica of
	// ("KV_<bucket>") to its leader's server name ("" while electing).
	Streams map[string]string
}

// QueryRoles asks the node at monitor for the JetStream leaders it knows
// (/jsz with stream details).
func QueryRoles(ctx context.Context, monitor string) (Roles, error) {
	var j struct {
		Meta struct {
			Leader string `json:"leader"`
		} `json:"meta_cluster"`
		Accounts []struct {
			Streams []struct {
				Name    string `json:"name"`
				Cluster struct {
					Leader string `json:"leader"`
				} `json:"cluster"`
			} `json:"stream_detail"`
		} `json:"account_details"`
	}
	if err := get(ctx, monitor, "/jsz?accounts=true&streams=true", &j); err != nil {
		return Roles{}, err
	}
	r := Roles{Meta: j.Meta.Leader, Streams: map[string]string{}}
	for _, a := range j.Accounts {
		for _, s := range a.Streams {
			if strings.HasPrefix(s.Name, KVStreamPrefix) {
				r.Streams[s.Name] = s.Cluster.Leader
			}
		}
	}
	return r, nil
}

// KVLeader is the node that leads the KV streams in r: the leader of the
// first KV stream by name that has one. A run's locks use one bucket per
// TTL, all created alike, so this is the node serving their writes. With
// no KV stream yet (no lock has run), it is the meta leader, which will
// place the first one. "" when neither is known.
func (r Roles) KVLeader() string {
	best := ""
	for name, leader := range r.Streams {
		if leader != "" && (best == "" || name < best) {
			best = name
		}
	}
	if best != "" {
		return r.Streams[best]
	}
	return r.Meta
}

// get reads a monitoring endpoint's JSON into v.
func get(ctx context.Context, monitor, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+monitor+path, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("nats %s%s: %w", monitor, path, err)
	}
	defer resp.Body.Close()
	// /healthz answers 503 with a JSON body saying why.
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusServiceUnavailable {
		return fmt.Errorf("nats %s%s: %s", monitor, path, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("nats %s%s: %w", monitor, path, err)
	}
	return nil
}

// RacyExpectedRevision reports whether a server of version ("2.9.10",
// "v2.9.10") checks a clustered stream write's expected last sequence
// before proposing it rather than in order with the writes in flight, so
// that concurrent conditional writes (a KV Create after a delete, an
// Update) may all succeed on a replicated stream: nats-server#4320, fixed
// in 2.9.21. Unreadable versions count as fixed.
func RacyExpectedRevision(version string) bool {
	parts := strings.SplitN(strings.TrimPrefix(version, "v"), ".", 3)
	if len(parts) != 3 {
		return false
	}
	var n [3]int
	for i, p := range parts {
		p, _, _ = strings.Cut(p, "-")
		v, err := strconv.Atoi(p)
		if err != nil {
			return false
		}
		n[i] = v
	}
	return n[0] < 2 || n[0] == 2 && (n[1] < 9 || n[1] == 9 && n[2] < 21)
}
