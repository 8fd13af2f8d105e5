// Package etcdlock implements etcd-recipe, etcd's lock recipe written out
// step by step, and registers it:
//
//  1. grant a lease of the lock's TTL (rounded up to whole seconds, at least
//     1; the server may raise it to its minimum) and keep it alive;
//  2. put <prefix>/<name>/<lease id in hex>, attached to the lease, in a
//     transaction that succeeds only if the key does not exist;
//  3. the key with the lowest create revision holds the lock;
//  4. otherwise watch, from the revision just read, for the deletion of the
//     key with the greatest create revision below ours (one wake-up per
//     release, FIFO), then re-check ownership — our key must still exist,
//     on our lease, with no key below it — before reporting the lock held.
//     The re-check reads at the deletion's revision, which the member that
//     sent the event answers without a consensus round (a linearizable
//     read when it cannot).
//
// Step 4's re-check is the fix for etcd issue #11456: a waiter whose lease
// expired while it waited must not be told it holds the lock just because
// its predecessor went away.
//
// The fencing token is the key's create revision: keys are created in
// revision order and hold the lock in that order, so it is strictly
// increasing across holders, and a resource kept in etcd can check it in a
// transaction (Compare(CreateRevision(key), "=", token)).
//
// Lost closes when the lease is, or may be, gone. The keep-alive loop sends
// one keep-alive every TTL/3 and counts the lease's deadline from the moment
// the last successful keep-alive was *sent* (the server extended the lease on
// receipt, later than that), so the holder is told no later than the server
// expires the lease, short of clock-rate drift. clientv3's KeepAlive channel
// would close only a full TTL after the last response *arrived*, plus up to
// a second of polling — after the server may already have handed the lock
// to the next waiter.
//
// It also registers etcd-semaphore, the same recipe with `permits` holders:
// the keys with the permits lowest create revisions hold, and a waiter
// counts the deletions of keys ahead of its own on a watch of the prefix
// before re-checking (see semaphoreLocker).
//
// A Client owns one clientv3.Client (its gRPC connections) shared by its
// Lockers; every Acquire has its own lease, revoked by Release. Clients
// count requests, keep-alives and watch events (locks.Stats).
//
// Of locklab it imports only locks; like every lock package it never
// imports cluster, checker, scenarios, faults, runner or workload
// (docs/architecture.md).
package etcdlock
