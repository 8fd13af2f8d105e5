// Package cluster starts and stops real servers (Redis primaries, replicas and
// Sentinels, ZooKeeper ensembles, etcd clusters) for one locklab run, and puts
// an embedded toxiproxy proxy on every client->node link, and on the peer
// links each backend allows, so faults can act on named links.
//
//	c, err := cluster.Start(ctx, cluster.Spec{
//		Redis:   &cluster.RedisSpec{Replicas: 1, Sentinels: 3},
//		Clients: 4,
//		Dir:     "results/run-1",
//	})
//	defer c.Close()
//	ep := c.Endpoints(2)                       // client-2's proxied addresses
//	links, _ := c.Links("redis-0-r0->redis-0") // the replication link
//	links[0].Latency(time.Second, 0, cluster.StreamDown)
//	n, _ := c.Node("redis-0")
//	n.Kill(ctx)
//
// It owns the one model of a cluster, PlanOf (plan.go): every node and
// proxied link a Spec produces, computed before anything starts; Start
// builds exactly that plan, and faults and scenarios validate against it.
// It takes plain Go values: it never imports scenarios, faults, runner,
// workload, checker or report, and locks only for the endpoint and
// credential types (Endpoints, Credentials) a client's addresses are.
// Of locklab it imports only images, internal/resp and locks
// (docs/architecture.md).
//
// Files: cluster.go Start and Close, plan.go the plan, registry.go nodes,
// links and Endpoints, roles.go leaders and primaries, table.go the backend
// table whose rows (one per server kind: Redis, ZooKeeper, etcd, ...) live
// in cluster/backends/... (docs/backends.md) and build with
// build.go's API (cluster.Build); Redis's row is listed first, its
// section kept as the typed RedisSpec (Spec.Declare converts); each
// backend builds for every
// provider, composed from the provider's fabric
// (fabric.go), external.go the external servers, providers.go the seam a
// provider in a package of its own plugs into (RegisterProvider, with the
// Traits the plan and the fault checks read instead of its name; provider
// docker is cluster/providers/docker, provider netns
// cluster/providers/netns, whose links are kernel_link.go's and whose
// faults are packets.go's rules), link.go/gate.go/select.go links and
// selectors, peers.go the
// peer demultiplexers (Redis's links in cluster/backends/redis/peers.go; (etcd's senders are named in cluster/backends/etcd).
//
// # Names (contract: docs/faults.md)
//
// Nodes: redis-0, redis-1, .. (independent primaries), redis-0-r0, redis-0-r1,
// .. (replicas of redis-0), sentinel-0, .. (each monitors every primary under
// the primary's node name, "redis-0"), zk-0, .. (myid 1, ..), etcd-0, ...
// Clients are client-0 .. client-<Clients-1>; "clients" stands for all of
// them.
//
// A link "A->B" carries the connections A opens to B; data flows both ways
// on them (see Stream). Links that exist:
//
//	client-<i>-><node>     every client to every node (primaries, replicas,
//	                       sentinels, ZooKeeper and etcd members; those of
//	                       Spec.ClientProxies when it is set)
//	redis-0-r0->redis-0    replication: the replica's connection to its primary
//	redis-0->redis-0-r0    replication once a failover swapped the roles (with
//	                       sentinels: every server of a master group to every
//	                       other one)
//	sentinel-1->redis-0    Sentinel's connections to a Redis server
//	sentinel-1->sentinel-0 Sentinel's connections to another sentinel
//	redis-peers->redis-0   connections to redis-0's peer address whose sender
//	                       is unknown; as a selector, also every peer link
//	                       into redis-0
//	zk-1->zk-0             ZooKeeper quorum and election traffic, per
//	                       directed pair (two proxies: quorum and election port)
//	etcd-1->etcd-0         etcd peer traffic, per directed pair
//	etcd-peers->etcd-0     other etcd members' connections to etcd-0 whose sender
//	                       is unknown; as a selector, also every pair link
//	                       into etcd-0
//
// The Redis peer links exist in topologies with replicas or sentinels (not
// for independent primaries, which never talk to each other).
//
// Links selects by name, "clients->X", "A->B" or a bare node name (every link
// touching it); Partition returns the links separating groups of nodes.
//
// # What can be partitioned, per backend
//
//	backend    proxied links between servers        partitions            providers
//	Redis      replica->primary, sentinel->server,  any                   local, docker
//	           sentinel->sentinel; with sentinels
//	           server->server in a master group
//	ZooKeeper  member->member (quorum, election)    any                   local, docker
//	etcd       member->member                       any                   local, docker
//	(any)      none                                 clients from servers  external
//
// Client links: every client has its own proxy to every node named in
// Spec.ClientProxies (nil: every node), and reaches the others at their
// real address; Redirect maps each address a server reports for a node
// (its real address, its peer address, its container address) to the
// address the client uses for it.
//
// Redis, per directed pair, every peer connection: in a topology with
// replicas or sentinels every node has one peer address, and the whole
// topology uses it: a replica's replicaof is its primary's, sentinels
// monitor the primaries at theirs, servers announce theirs
// (replica-announce-ip/-port: what a primary lists in INFO replication,
// hence where Sentinel finds replicas) and sentinels theirs (sentinel
// announce-ip/-port: what their hellos carry, hence where the other
// sentinels find them). Sentinel thus sees one address per node: it has no
// reason to reconfigure a replica to another address (+fix-slave-config),
// and after a failover it points the remaining replicas, the returning old
// primary and clients (get-master-addr-by-name, SENTINEL SENTINELS) at peer
// addresses too. A demultiplexer on each peer address names the process
// that opened each connection (local: the process whose file descriptors
// hold the connecting socket; docker: the source address, the sender's
// container) and forwards it through that pair's link (cluster/backends/redis,
// peers.go). So the classic Sentinel split can be built: [[redis-0],
// [sentinel-0, sentinel-1, sentinel-2, redis-0-r0, clients]] cuts the
// primary off from every sentinel (they deem it down and promote the
// replica) while it lives on for whoever still reaches it, and
// [[redis-0, sentinel-0, client-0], [sentinel-1, sentinel-2, redis-0-r0,
// client-1]] leaves a minority sentinel with the old primary. A connection
// whose sender stays unknown (a client dialing a reported address without
// Redirect) goes through "redis-peers->redis-0", cut only when every node
// with a pair link into redis-0 is across.
//
// ZooKeeper, per directed pair: a member's configuration lists its own real
// ports and, for every other member, the proxies of that pair; and since a
// member dials back the election address a peer announces, the election
// proxies rewrite that announcement to the proxy of the reverse pair
// (cluster/backends/zookeeper). Tests check that no member holds a connection to
// another member's real address.
//
// etcd, per directed pair: every member must agree on every member's peer
// URL (the cluster id is derived from the membership), so each member
// advertises one address that all others dial; a demultiplexer there reads
// each connection's first request head, names the sender (X-PeerURLs or
// X-Server-From, which etcd's raft transport sets, else the process that
// opened the socket; with docker, the source address) and forwards the
// connection through "etcd-1->etcd-0" (cluster/backends/etcd, peers.go). So any
// partition can be built: [[etcd-0], [etcd-1, etcd-2, clients]] or
// [[etcd-0, etcd-1], [etcd-2]]. A connection whose sender stays unknown goes
// through "etcd-peers->etcd-0", cut only when every other member is across.
//
// # What a cut is
//
// Link.Cut holds data in both directions instead of dropping it, as TCP over
// a partitioned network does: writes succeed until buffers fill, readers
// wait, nobody sees a reset, and Heal delivers what was held, in order (so a
// request sent during the cut may still execute after its client gave up —
// a real hazard for locks). A new connection during a cut is accepted by the
// proxy but passes no byte (a real partition would time the connect out).
// Blackhole, Timeout and Reset are there for lost data and broken
// connections. See Link.Cut.
//
// Proxies of the local provider also follow their server's listening state
// (listen.go): a server that is down, or a ZooKeeper member that does not
// lead and so does not listen on its quorum port, is refused by its proxies
// as it would refuse by itself, instead of being accepted and closed.
//
// # Readiness
//
// Start returns when every server is ready: Redis answers PING, each replica
// reports master_link_status:up, each sentinel reports every primary at its
// peer address and knows its replicas and the other sentinels (about 2 s:
// Sentinel says hello every 2 s); every ZooKeeper member reports leader, follower or
// standalone (srvr); every etcd member reports health (it has a leader).
// Node.Start waits for the same per-node condition, so restarting a
// ZooKeeper or etcd member waits until it rejoins a quorum.
//
// # Processes
//
// The local provider runs each server as a child process in its own process
// group (signals reach Redis's forks and the JVM alike) with Pdeathsig
// SIGKILL, so servers die with the harness; one goroutine waits for each.
// Pause and Resume send SIGSTOP and SIGCONT to the group; Kill sends SIGKILL
// and returns once the server was reaped; Close kills every group, waits for
// every server, closes every proxy and removes the data dirs, keeping the
// logs (Dir/logs/<node>.log, appended to on every start). A Redis fork alive
// when its server is killed (AOF rewrite, replica sync) is orphaned to PID 1;
// Close avoids that by killing forks first and letting the server reap them.
//
// Ports come from the kernel (listen on :0, close); a server that loses its
// port to another process before binding it is started again on new ports.
//
// Everything provider-specific sits behind the provider and process
// interfaces (provider.go).
//
// # Provider docker
//
// Package cluster/providers/docker runs the same topologies, node names
// and links as containers; it registers itself (RegisterProvider) when
// imported, as package scenarios does.
//
// # Provider netns
//
// Package cluster/providers/netns runs every server in a network namespace
// of its own, links carried by the kernel; it registers itself when
// imported, as package scenarios does.
//
// # Provider external
//
// Provider external registers the given addresses as nodes without
// processes: client links and their faults work, node operations return
// ErrUnsupported, Start checks that each address accepts a TCP connection.
// Credentials for the servers come from the environment
// (ExternalCredentialsFromEnv: LOCKLAB_REDIS_PASSWORD, LOCKLAB_ETCD_USERNAME,
// ..., and the variables each table backend's row declares in its
// Credentials, LOCKLAB_POSTGRES_PASSWORD, ...) and are never part of Info
// or the run's files.
package cluster
