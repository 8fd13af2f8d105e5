package cluster

// Docker provider: the container of a table backend's node.

import (
	"slices"
	"strconv"
)

// publish records that n's container publishes its port on 127.0.0.1 at
// the same number (Build.ClientAddr).
func (p *dockerProvider) publish(node string, port int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.published == nil {
		p.published = map[string][]int{}
	}
	if !slices.Contains(p.published[node], port) {
		p.published[node] = append(p.published[node], port)
	}
}

// tableSpec is the container of a table backend's node for cmd: image
// ("": the backend's newest locklab/<name> image), n's client port (its Addr) and every
// other port Build.ClientAddr published, the command's directory and n's
// data dir mounted at their own paths (so the paths in the command line
// hold inside the container), and the command's user as the host's uid
// and gid, which own those directories.
func (p *dockerProvider) tableSpec(backend, image string, n *Node, cmd command) (*containerSpec, error) {
	_, port := splitHostPort(n.Addr())
	pn, err := strconv.Atoi(port)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	pub := slices.Clone(p.published[n.Name])
	p.mu.Unlock()
	spec := &containerSpec{backend: backend, image: image, port: pn, publish: pub, mounts: []string{n.dataDir}}
	if cmd.dir != "" && cmd.dir != n.dataDir {
		spec.mounts = append(spec.mounts, cmd.dir)
	}
	if cmd.user != "" {
		cred, err := credentialOf(cmd.user)
		if err != nil {
			return nil, err
		}
		spec.user = strconv.Itoa(int(cred.Uid)) + ":" + strconv.Itoa(int(cred.Gid))
	}
	return spec, nil
}
