// Package nats is what locklab knows about a NATS server with JetStream on
// (Debian's nats-server): the node plan (nats-0, nats-1, ...), the
// configuration file of one node (client, cluster and monitoring listeners,
// JetStream store, routes to its peers), the command line, the readiness
// probe, the role query (which node leads a KV bucket's stream, which the
// JetStream meta group) and the version.
//
// nats.go holds that knowledge as plain functions of plain values
// (addresses, directories); table.go registers the backend's row in the
// cluster's backend table (cluster.nats: {nodes: 1|3|5}, the route links
// nats-1->nats-0, ..., the leader selector nats-leader), composing them
// with the fabric a provider gives. It talks to the servers over their
// HTTP monitoring port only (/healthz, /jsz, /varz), so it needs no NATS
// client.
//
// Import it for its side effect (cluster/backends/all does).
// Of locklab it imports only cluster.
package nats
