// Package nats is what locklab knows about a NATS server with JetStream on
// (Debian's nats-server): the node plan (nats-0, nats-1, ...), the
// configuration file of one node (client, cluster and monitoring listeners,
// JetStream store, routes to its peers), the command line, the readiness
// probe, the role query (which node leads a KV bucket's stream, which the
// JetStream meta group) and the version.
//
// It takes plain values (addresses, directories) and knows no provider:
// how a process is launched and where it listens is the caller's. It
// talks to the servers over their HTTP monitoring port only (/healthz,
// /jsz, /varz), so it needs no NATS client.
//
// Of locklab it imports nothing.
package nats
