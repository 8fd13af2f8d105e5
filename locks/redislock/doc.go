// Package redislock holds the single-instance Redis locks, in the order the
// usual write-ups evolve them, each registered under its contract name:
//
//   - redis-setnx-expire: SETNX, then EXPIRE as a second command. Broken: a
//     holder that dies between the two leaves a key without a TTL, and the
//     lock is held forever.
//   - redis-set-del: SET NX PX in one command, released by a plain DEL.
//     Broken: a holder whose key expired deletes the next holder's lock.
//   - redis-cad: SET NX PX with a random owner id, released by a Lua
//     compare-and-delete, so a late release cannot delete someone else's key.
//   - redis-watchdog: redis-cad whose holder renews the key every ttl/3 with
//     a Lua compare-and-pexpire, and learns (Lease.Lost) when it cannot.
//   - redis-reentrant: Redisson's lock: a hash {owner: count} taken and
//     released by Lua, re-entrant per Locker, waiters woken by pub/sub, and
//     the watchdog's renewal.
//
// Beyond the mutex (locks.Kind), with waiters woken by pub/sub like
// redis-reentrant's:
//
//   - redis-rw: Redisson's RReadWriteLock: a hash {mode, owner: count} and
//     one timeout key per reader, so a dead reader's hold runs out while
//     the others renew theirs; RWLocker.AcquireShared takes the read side.
//   - redis-rw-naive: redis-rw whose reader reads the mode and registers in
//     a second round trip. Broken: a writer that took the lock in between
//     is overwritten, and both are inside.
//   - redis-fair: Redisson's RFairLock: a queue list and a sorted set of
//     waiters' timeouts (FairWait), grants in request order.
//   - redis-semaphore: expiring permits in a sorted set {owner: expiry},
//     expired ones dropped before counting, renewed by the watchdog.
//   - redis-semaphore-leaky: permits in a plain counter without expiry.
//     Broken: a holder that dies never gives its permit back.
//
// Every variant hands out a fencing token drawn by INCR of a per-lock-name
// counter key (<key>:fence). For the scripted variants the INCR runs in the
// same Lua script that takes the lock; redis-setnx-expire draws it right
// after its SETNX, while the key has no TTL yet and so cannot change hands.
//
// Blocked acquirers of the polling variants retry after min(Retry, the key's
// remaining PTTL), jittered from a source seeded by Config.Seed; the
// reentrant variant waits for the release message on <key>:channel and polls
// only as a fallback (lost messages, keys that expired with a dead holder).
//
// Keys are Config.Prefix (default "locklab:") + the lock name. A Client
// connects to Endpoints.Redis[0], or, when Endpoints.Sentinels is set, to the
// master Endpoints.MasterNames[0] as reported by Sentinel, dialing every
// discovered address through Endpoints.Dial so traffic stays on the client's
// proxied links. When Endpoints.RedisCluster is set it is a cluster client
// seeded with every address of Endpoints.Redis (ConnectUniversal), and
// every key is hash-tagged, "{<prefix><name>}" and "{<prefix><name>}:fence",
// so the keys of one lock share a hash slot.
//
// Of locklab it imports only locks; like every lock package it never
// imports cluster, checker, scenarios, faults, runner or workload
// (docs/architecture.md).
package redislock
