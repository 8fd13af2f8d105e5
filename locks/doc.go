// Package locks defines the interface every lock implementation in locklab
// satisfies, the sentinel errors they share, and the registry that maps a lock
// name (a contract used by scenario files, see docs/scenario-file.md) to a constructor.
//
// A lock package (redislock, zklock, etcdlock, redlock, adapters) registers its
// variants in an init function; importing locks/all registers every one of them.
// Lock packages are usable as libraries on their own: they never import the
// cluster, checker, scenarios, faults, runner or workload packages.
//
// Files: locks.go the Locker/Lease contract and errors, registry.go the
// registry (Spec, Register, Lookup), endpoints.go where a client dials
// (Endpoints), auth.go the credentials it logs in with (Auth, formatted by
// internal/credentials), config.go the options every constructor gets,
// promise.go the validity a lease promises, renew.go the watchdog loop of
// the locks that renew a key (KeepRenewed), sessionlease.go the lease of
// a lock held by a database session (SessionLease).
//
// Package locks itself imports only internal/credentials of locklab:
// never a lock package, cluster or anything of the harness
// (docs/architecture.md).
package locks
