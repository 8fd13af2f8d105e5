package cluster

import (
	"context"
	"fmt"
)

// buildExternal registers servers the user runs (provider external) as
// nodes without a process: clients still reach them through their own
// proxies, so client-side faults apply; node operations return
// ErrUnsupported.
func (c *Cluster) buildExternal(es *ExternalSpec) (backend, error) {
	b := backend{name: "external", start: func(context.Context) error { return nil }}
	add := func(prefix, kind string, addrs []string) error {
		for i, a := range addrs {
			n, err := c.addNode(fmt.Sprintf("%s-%d", prefix, i), kind, true)
			if err != nil {
				return err
			}
			n.setAddr(a)
		}
		return nil
	}
	if err := add("redis", KindRedis, es.Redis); err != nil {
		return b, err
	}
	if err := add("zk", KindZooKeeper, es.ZooKeeper); err != nil {
		return b, err
	}
	if err := add("etcd", KindEtcd, es.Etcd); err != nil {
		return b, err
	}
	return b, nil
}
