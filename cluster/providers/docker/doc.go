// Package docker is locklab's provider docker (cluster.ProviderDocker):
// importing it registers the provider with package cluster.
//
// It runs the same topologies, node names and links as containers (testcontainers-go,
// docker.go), one Docker network per cluster ("locklab-<run id>"):
//
//   - Images: cluster.<backend>.image, else the official image (redis:7.2,
//     zookeeper:3.9, gcr.io/etcd-development/etcd:v3.5.17) when present
//     locally, else the newest locklab/redis, locklab/zookeeper or
//     locklab/etcd that `make images` built from Debian packages (the run
//     log says which). testcontainers pulls an image only when it is not
//     present locally; its reaper (Ryuk), which would have to be pulled, is
//     off unless TESTCONTAINERS_RYUK_DISABLED is set.
//   - Addresses: each container has a fixed address on the network, kept
//     across restarts (the network's subnet is pinned), and its server
//     listens on its usual port there (6379, 26379, 2181, 2379). Only the
//     client port is published, on 127.0.0.1, at the port that is the
//     node's Addr: client proxies, readiness probes and Role dial it. etcd
//     advertises the container addresses as client URLs, Redis nodes
//     announce their peer addresses (below), and Endpoints.Redirect maps
//     both to the client's proxies like real addresses.
//   - Peer links: the proxies listen on the network's gateway address
//     (the host side of the bridge, which every container reaches) and
//     dial the peer's container address. A ZooKeeper member's configuration
//     lists the gateway proxies of its directed pairs (each with its own
//     ports, where the local provider uses one loopback address per pair)
//     and the election rewrite points dial-backs at the reverse pair's
//     proxy; an etcd member advertises, and a Redis node's peer address is,
//     a demultiplexer on the gateway that names the sender of each
//     connection by its source address (the sender's fixed container
//     address) and forwards it through the pair's link. So the same links
//     exist as with the local provider ("etcd-1->etcd-0",
//     "sentinel-1->redis-0", "redis-peers->redis-0" included) and the same
//     partitions can be made. Tests check that no server holds a connection
//     to another server's container address.
//   - Proxies follow their upstreams' listening state as with local
//     servers, reading each container's TCP table from the host
//     (/proc/<pid>/net/tcp of the container's init); with a remote or
//     rootless engine they listen all the time.
//   - Node operations: Pause and Resume are docker pause and unpause (the
//     cgroup freezer: every process of the container stops, as with
//     SIGSTOP to the group), Kill is docker kill (SIGKILL; a paused
//     container dies without running again), Stop sends SIGTERM, Start
//     starts the same container again, whose filesystem keeps the data
//     (Redis AOF, ZooKeeper and etcd data dirs), Pid is the host pid of the
//     container's init (docker-init), different after every start. Each
//     start's output is appended to the node's log as with local servers.
//   - Labels: containers and the network carry locklab=1, locklab.run=<run
//     id> (Spec.RunID plus a random suffix, Cluster.RunID), the node name,
//     and the harness's host, pid and start time. Close removes the
//     cluster's containers (with their anonymous volumes, found by label)
//     and its network; Cleanup (`bench cleanup`) removes what runs
//     killed before Close left behind.
//
// Starting a container costs a round trip to the engine (about half a
// second on a busy 2-core machine), so a docker cluster takes longer to
// start than a local one; containers of one role start side by side.
package docker
