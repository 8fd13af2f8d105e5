// Package natslock holds nats-kv, a lock on a NATS JetStream key-value
// bucket, written with the nats.go client (package jetstream):
//
//   - acquire: create-if-absent (KeyValue.Create) of the lock's key, whose
//     value is a random owner id, in a bucket whose max age is the lease
//     (Config.TTL). The server drops a message once it is older than the
//     bucket's max age, so a key nobody renews disappears one TTL after its
//     last write. (NATS 2.11 added per-key TTLs; Debian's 2.9 has only the
//     bucket's max age, so each TTL gets a bucket of its own.)
//   - renewal: every ttl/3 a watchdog rewrites the key conditioned on the
//     revision it last wrote (KeyValue.Update), which starts the max age
//     over. A renewal that finds another revision (someone else's key, or
//     none: it expired) closes Lease.Lost, as does a whole TTL without a
//     successful renewal.
//   - release: a delete conditioned on the last revision (KeyValue.Delete
//     with LastRevision), so a late release never deletes a later holder's
//     key.
//   - fencing token: the key's revision at the grant. A KV revision is the
//     bucket stream's sequence number, which increases across the whole
//     bucket, so a later grant of the same key always has a larger one.
//   - waiting: a blocked Acquire watches the key (KeyValue.Watch) and tries
//     again when it is deleted, polling as a fallback at most every
//     Config.Retry and when the holder's key should have aged out (expiry
//     sends no notification).
//
// The bucket is created by the first client that needs it, with one replica
// per endpoint (at most 5) unless the replicas option says otherwise; its
// name is Config.Prefix (default "locklab") and the TTL in milliseconds,
// e.g. "locklab_10000ms". Key names are the lock names, characters a KV key
// cannot hold written as =XX.
//
// A Client connects to Endpoints.Table["nats"] (every address, tried in
// order from one chosen by a hash of Config.Seed and the addresses,
// reconnecting to the next when a connection breaks), dialing every
// address through Endpoints.Dial so traffic stays on the client's proxied
// links, and logs in with Endpoints.Auth's nats user and password or token
// when they are set (servers the user runs).
//
// Of locklab it imports only locks; like every lock package it never
// imports cluster, checker, scenarios, faults, runner or workload
// (docs/architecture.md).
package natslock
