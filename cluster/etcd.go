package cluster

func (c *Cluster) buildEtcd(es EtcdSpec) (backend, error) {
	return backend{name: BackendEtcd}, ErrUnsupported
}
