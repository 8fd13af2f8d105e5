// Package zklock implements ZooKeeper locks and registers them:
//
//   - zk-recipe: ZooKeeper's lock recipe as Curator's InterProcessMutex does
//     it: ephemeral sequential nodes under /<prefix>/<name>/, lowest holds,
//     each waiter watches only its predecessor (FIFO, one wake-up per
//     release). Protected-mode node names ("_c_<guid>-lock-") solve the
//     create-retry problem.
//   - zk-herd: one ephemeral node /<prefix>/<name>/lock that every waiter
//     watches and races to create on delete (the herd effect).
//   - zk-rw: the shared-lock recipe of the ZooKeeper documentation on
//     zk-recipe's queue: "read-" and "write-" sequential nodes; a reader
//     waits for the last writer queued before it, a writer for the node
//     just below its own (a locks.SharedLocker, kind rw).
//   - zk-semaphore: Curator's InterProcessSemaphoreV2: under a zk-recipe
//     mutex an acquirer creates a lease node and holds a permit while at
//     most `permits` lease nodes exist (kind semaphore).
//
// All give the node's czxid as fencing token and are lease based: the lock
// lives as long as the client's session. Following Curator's rule, a lease's
// Lost channel closes as soon as the connection is suspended (the client
// stops hearing from the server for 2/3 of the session timeout, or the
// connection drops), not only when the session has expired: from then on the
// holder cannot know whether it still holds the lock.
//
// A Client holds one session (one go-zookeeper Conn) shared by all of its
// Lockers; it counts requests and watch notifications (locks.Stats) so the
// herd effect can be measured. The session timeout comes from the
// session_timeout option, else Config.TTL, else 10s (DefaultSessionTimeout).
//
// Of locklab it imports only locks; like every lock package it never
// imports cluster, checker, scenarios, faults, runner or workload
// (docs/architecture.md).
package zklock
