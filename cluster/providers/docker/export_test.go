package docker

import "github.com/locklab/locklab/cluster"

// HostKill kills n's container from the host, as a killed container's
// wait does when the engine does not report its exit; it reports whether
// n runs in a container it could do that to.
func HostKill(n *cluster.Node) bool {
	pr, ok := n.Process().(*dockerProcess)
	if ok {
		pr.hostKill()
	}
	return ok
}
