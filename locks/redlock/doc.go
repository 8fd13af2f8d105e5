// Package redlock implements Redlock, the distributed lock over N
// independent Redis primaries described at redis.io/docs/latest/develop/
// clients/patterns/distributed-locks, registered as "redlock".
//
// # Algorithm
//
// A Client holds one go-redis client per primary (redislock.Connect's
// settings: no command retries, context deadlines on socket I/O). An
// attempt to acquire sends SET key value NX PX ttl with a fresh random
// value to every primary in parallel, each call bounded by the node
// timeout (option node_timeout, default min(50ms, ttl/10)), and holds the
// lock when at least N/2+1 nodes took the key and the validity
//
//	validity = ttl - elapsed - drift,   drift = ttl/100 + 2ms
//
// is positive, elapsed being the time from before the first SET to after
// the last reply. Otherwise the value is deleted (Lua compare-and-delete)
// from every node that took it or did not answer — a SET that timed out
// may have been executed all the same — and the next attempt follows after
// a random delay in [Retry/2, Retry] (default 10ms) drawn from a source
// seeded by Config.Seed, until ctx ends. Release deletes the value from
// every node by compare-and-delete, each call bounded by max(node timeout,
// ttl/10). A delete a node does not confirm in time is sent again in the
// background by that node's janitor, within one TTL (janitor.go): a node
// that answered late may still have executed the SET, and its key would
// otherwise block everyone until it expires. Each node's failure is a
// *locks.NodeError; several are joined with errors.Join.
//
// # Validity and Lost
//
// A Redlock holder is only entitled to the lock for its validity time: the
// keys of its majority expire about ttl after they were set, and nothing
// stops another client from taking a majority then. So Lease.Lost closes
// when Lease.ValidUntil passes. With renew=true the holder extends the
// keys on every node every ttl/3 (Lua compare-and-pexpire, never setting a
// key a node has lost) and each extension that reaches a quorum within the
// validity moves ValidUntil to its start + ttl - drift; Lost closes when
// none did in time, or at once when so many nodes no longer hold our value
// that a quorum cannot be reached. Default: renew=false, as in the
// algorithm's description.
//
// # No fencing token
//
// Lease.Token returns 0 and the spec says Fencing: false. Kleppmann's "How
// to do distributed locking" (2016) shows why Redlock cannot give one: the
// random value is unique but not ordered, and independent nodes share no
// counter that increases with each holding. Nor is Redlock safe when its
// timing assumptions fail: a node that restarts without persistence, or
// whose clock jumps forward, forgets the holder's key, and another client
// can then assemble a majority while the first still holds (scenarios
// redlock-restart and redlock-clock-jump show both). antirez's answer —
// fsync=always, or keep a crashed node down for longer than the TTL — is
// scenario redlock-restart-safe.
//
// # Number of nodes
//
// Every primary of Config.Endpoints.Redis (or, with Sentinels, every
// master of Endpoints.MasterNames) is a node, or the first N with the
// nodes option. The spec asks the harness for 3 primaries at least
// (MinRedis): with 1 or 2 a majority is every node and no failure is
// tolerated. New accepts them all the same.
//
// Of locklab it imports only locks and locks/redislock; like every lock
// package it never imports cluster, checker, scenarios, faults, runner or
// workload (docs/architecture.md).
package redlock
