package cluster

// HostKill kills n's container from the host, as a killed container's
// wait does when the engine does not report its exit; it reports whether
// n runs in a container it could do that to.
func HostKill(n *Node) bool {
	pr, ok := n.process().(*dockerProcess)
	if ok {
		pr.hostKill()
	}
	return ok
}
