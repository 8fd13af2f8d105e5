// Package cluster starts and stops real servers (Redis primaries, replicas and
// Sentinels, ZooKeeper ensembles, etcd clusters) for one locklab run, and puts
// an embedded toxiproxy proxy on every client->node link (and on peer links
// where the backend allows it) so faults can act on named links.
//
// Node names and link names follow DESIGN.md §3 (contract): redis-0,
// redis-0-r0, sentinel-0, zk-0, etcd-0; links "client-3->redis-0",
// "redis-0-r0->redis-0", "zk-1->zk-0".
package cluster
