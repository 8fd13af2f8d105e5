package nats

import (
	"context"
	"os"
	"path/filepath"

	"github.com/locklab/locklab/cluster"
)

// Name is the backend's name: the section cluster.nats, the list
// cluster.external.nats and the locks' Backend.
const Name = "nats"

// Kind is the node kind of every NATS server.
const Kind = "nats"

// LeaderSelector names, in a fault, the node leading the lock bucket's
// stream when the fault starts (contract).
const LeaderSelector = "nats-leader"

func init() {
	one := 1
	cluster.RegisterBackend(cluster.TableBackend{
		Name: Name,
		Doc:  "NATS servers with JetStream (nats-0, nats-1, ...), a link per directed pair (proxied under local and docker); providers local, netns, docker and external",
		Fields: []cluster.TableField{
			{Name: "nodes", Kind: "int", Default: 1, Min: &one, Example: "3",
				Doc: "servers in the JetStream cluster: 1, 3 or 5 (nats-0, ...); nats-leader names the one leading the lock bucket's stream"},
		},
		Check: func(s cluster.Settings, _ string) (string, string) {
			if n, ok := s["nodes"].(int); ok {
				if err := ValidNodes(n); err != nil {
					return "nodes", err.Error()
				}
			}
			return "", ""
		},
		Kinds:      []cluster.TableKind{{Kind: Kind, Pattern: "nats-N"}},
		Providers:  []string{cluster.ProviderLocal, cluster.ProviderNetns, cluster.ProviderDocker},
		Binaries:   []string{Binary},
		Packages:   []string{"nats-server"},
		ClientPort: 4222,
		Faults:     []string{"pause", "kill", "restart", "power-cut"},
		Leader:     LeaderSelector,
		Credentials: []cluster.TableCredential{
			{Env: "LOCKLAB_NATS_USER", What: "user", Needs: "password", Doc: "the user to connect as (with LOCKLAB_NATS_PASSWORD)"},
			{Env: "LOCKLAB_NATS_PASSWORD", What: "password", Secret: true, Needs: "user", Doc: "its password"},
			{Env: "LOCKLAB_NATS_TOKEN", What: "token", Secret: true, Doc: "an authorization token, for a server that takes one instead of users"},
		},
		// A server greets every new client connection with INFO.
		Ping:  &cluster.TablePing{Reply: 5, OK: func(b []byte) bool { return string(b) == "INFO " }},
		Plan:  plan,
		Build: build,
	})
}

// plan is nats-0 .. nats-<nodes-1> and, with more than one, a route link
// for every directed pair (nats-1->nats-0: the routes nats-1 dials).
func plan(s cluster.Settings) ([]cluster.PlanNode, []cluster.PlanLink) {
	var nodes []cluster.PlanNode
	for _, name := range Names(max(s.Int("nodes"), 1)) {
		nodes = append(nodes, cluster.PlanNode{Name: name, Kind: Kind})
	}
	var links []cluster.PlanLink
	for _, from := range nodes {
		for _, to := range nodes {
			if from.Name != to.Name {
				links = append(links, cluster.PlanLink{From: from.Name, To: to.Name})
			}
		}
	}
	return nodes, links
}

// build gives every node a client, a cluster and a monitoring port, and
// routes to every peer through the link from it to that peer. A node
// advertises a cluster address nothing listens on: a server learning of a
// peer by gossip (after a partition heals) must not dial it around the
// proxies of providers local and docker; the explicit routes reconnect
// through them.
func build(b *cluster.Build) (cluster.Started, error) {
	var st cluster.Started
	ports, err := b.Ports(3*len(b.Nodes) + 1)
	if err != nil {
		return st, err
	}
	conf := make([]Node, len(b.Nodes))
	monitor := make([]string, len(b.Nodes)) // what the harness dials
	for i, n := range b.Nodes {
		conf[i] = Node{
			Name:     n.Name,
			Client:   b.ListenAddr(n, ports[3*i]),
			Cluster:  b.ListenAddr(n, ports[3*i+1]),
			Monitor:  b.ListenAddr(n, ports[3*i+2]),
			StoreDir: filepath.Join(n.DataDir(), "jetstream"),
		}
		monitor[i] = b.ClientAddr(n, ports[3*i+2])
	}
	for i, n := range b.Nodes {
		if len(b.Nodes) == 1 {
			break
		}
		conf[i].Advertise = b.ListenAddr(n, ports[len(ports)-1]) // nothing listens there
		for j, peer := range b.Nodes {
			if j == i {
				continue
			}
			addr, err := b.PeerLinkTo(n, peer, b.ClientAddr(peer, ports[3*j+1]))
			if err != nil {
				return st, err
			}
			conf[i].Routes = append(conf[i].Routes, addr)
		}
	}
	for i, n := range b.Nodes {
		c, mon := conf[i], monitor[i]
		path := filepath.Join(n.DataDir(), "nats.conf")
		b.Configure(n, cluster.Setup{
			Addr: b.ClientAddr(n, ports[3*i]),
			Command: func() (cluster.Command, error) {
				if err := os.WriteFile(path, []byte(Render(c)), 0o644); err != nil {
					return cluster.Command{}, err
				}
				return cluster.Command{Path: Binary, Args: Args(path)}, nil
			},
			Probe: func(ctx context.Context) error { return Ready(ctx, mon) },
			Role:  func(ctx context.Context) (string, error) { return role(ctx, c.Name, mon) },
		})
	}
	// Every node starts at once: a node is ready only once the JetStream
	// meta group has a leader, which needs a majority up.
	// Every node then waits for a route to every peer.
	st.Start = func(ctx context.Context) error {
		return b.StartNodes(ctx, b.Nodes, func(ctx context.Context, n *cluster.Node) error {
			for i := range b.Nodes {
				if b.Nodes[i] == n {
					return Routed(ctx, monitor[i], len(b.Nodes)-1)
				}
			}
			return nil
		})
	}
	st.Version = func(ctx context.Context) string {
		v, _ := Version(ctx, monitor[0])
		return v
	}
	return st, nil
}

// role is "leader" when node name, whose monitoring port is at monitor,
// leads the KV stream (or, before any, the JetStream meta group) by its own
// account, else "follower".
func role(ctx context.Context, name, monitor string) (string, error) {
	r, err := QueryRoles(ctx, monitor)
	if err != nil {
		return "", err
	}
	if r.KVLeader() == name {
		return "leader", nil
	}
	return "follower", nil
}
