package cluster

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// buildDockerEtcd is buildEtcd for the docker provider: the same nodes and
// per-destination peer links. Each member advertises its peer proxy on the
// network's gateway (all members agree on it), whose upstream is the
// member's container address; clients learn the members' container client
// addresses from the member list, which Endpoints.Redirect maps to their
// proxies.
func (c *Cluster) buildDockerEtcd(es EtcdSpec) (backend, error) {
	p := c.docker
	b := backend{name: BackendEtcd}
	var nodes []*Node
	for i := 0; i < es.Nodes; i++ {
		n, err := c.addNode("etcd-"+strconv.Itoa(i), KindEtcd, true)
		if err != nil {
			return b, err
		}
		nodes = append(nodes, n)
	}
	ports, err := pickPorts(len(nodes))
	if err != nil {
		return b, err
	}
	peerURL := make([]string, len(nodes))
	for i, n := range nodes {
		n.setAddr(hostPort(ports[i]))
		c.addAlias(n.Name, p.containerAddr(n.Name, dockerEtcdClient))
		peerURL[i] = "http://" + p.containerAddr(n.Name, dockerEtcdPeer)
		if len(nodes) > 1 {
			l, err := c.addLinkAt(EtcdPeers, n.Name, []string{p.containerAddr(n.Name, dockerEtcdPeer)},
				[]string{p.listenAddr()}, nil)
			if err != nil {
				return b, err
			}
			peerURL[i] = "http://" + l.Addr()
		}
	}
	var initial []string
	for i, n := range nodes {
		initial = append(initial, n.Name+"="+peerURL[i])
	}
	token := fmt.Sprintf("locklab-%s-%d", p.runID, time.Now().UnixNano())
	for i, n := range nodes {
		spec := &containerSpec{backend: BackendEtcd, image: es.Image, port: dockerEtcdClient}
		client := "http://" + p.containerAddr(n.Name, dockerEtcdClient)
		n.cmd = func() (command, error) {
			return command{path: "etcd", dir: dockerDataDir, container: spec, args: []string{
				"--name", n.Name, "--data-dir", dockerDataDir + "/etcd",
				"--listen-client-urls", "http://0.0.0.0:" + strconv.Itoa(dockerEtcdClient),
				"--advertise-client-urls", client,
				"--listen-peer-urls", "http://0.0.0.0:" + strconv.Itoa(dockerEtcdPeer),
				"--initial-advertise-peer-urls", peerURL[i],
				"--initial-cluster", strings.Join(initial, ","),
				"--initial-cluster-state", "new", "--initial-cluster-token", token,
				"--heartbeat-interval", strconv.FormatInt(etcdHeartbeat.Milliseconds(), 10),
				"--election-timeout", strconv.FormatInt(etcdElectionTimeout.Milliseconds(), 10),
				"--logger", "zap", "--log-level", "warn", "--log-outputs", "stderr",
			}}, nil
		}
		n.probe = func(ctx context.Context) error { return etcdHealth(ctx, n.Addr()) }
		n.role = func(ctx context.Context) (string, error) { return etcdRole(ctx, n.Addr()) }
	}
	b.start = func(ctx context.Context) error {
		if err := p.createAll(ctx, nodes); err != nil {
			return err
		}
		return dockerStartNodes(ctx, nodes, nil)
	}
	b.version = func(ctx context.Context) string {
		var v struct {
			Server string `json:"etcdserver"`
		}
		if err := etcdGet(ctx, nodes[0].Addr(), "/version", &v); err != nil {
			return ""
		}
		return v.Server
	}
	return b, nil
}
