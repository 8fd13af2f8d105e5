package cluster

// ZooKeeperJar is the ZooKeeper server jar the local provider runs (Debian's
// zookeeper package).
const ZooKeeperJar = "/usr/share/java/zookeeper.jar"

func (c *Cluster) buildZooKeeper(zs ZooKeeperSpec) (backend, error) {
	return backend{name: BackendZooKeeper}, ErrUnsupported
}
