// Package adapters puts the third-party lock libraries people actually use
// behind locks.Locker, so the harness measures them under the same workload
// and faults as locklab's own recipes. Each library is used unmodified and
// the way its documentation shows: an adapter only maps the library's calls
// and errors onto Acquire, Release and Lost, and it fills in what the
// library leaves to its user (a retry loop bounded by ctx, seeded jitter, an
// optional renewal loop) the way a careful user would.
//
// Registered here: "redsync" (github.com/go-redsync/redsync/v4) and
// "bsm-redislock" (github.com/bsm/redislock). None of the libraries gives a
// fencing token: their Token is 0. Also "etcd-rw", the read-write lock of
// go.etcd.io/etcd/client/v3/experimental/recipes (RWMutex, a
// locks.SharedLocker), whose Token is its key's create revision.
//
// Of locklab it imports only locks, locks/etcdlock, locks/redislock and
// locks/zklock; like every lock package it never imports cluster, checker,
// scenarios, faults, runner or workload (docs/architecture.md).
package adapters
