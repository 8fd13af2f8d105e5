// Package locktest holds the helpers the lock packages' tests share: a lock
// name per test, bounded Acquire, polling until a condition holds,
// Contend, which runs several clients through one lock and checks mutual
// exclusion and fencing tokens, and, for the lock kinds (kinds.go), an
// Acquire on its own goroutine (AcquireAsync, Waiting, Granted), a holder
// cut off while another waits (TakeOver), a count of the holders inside
// (Inside), and RWConformance, ContendRW and ContendPermits, which check a
// read-write lock's and a semaphore's promise.
//
// It is for tests only: every helper takes a testing.TB and fails the test
// itself. It sees lock implementations only through the locks interfaces and
// never starts servers (that is package testenv's job), so it does not
// import the cluster package.
// Of locklab it imports only locks; it never imports testenv, checker,
// scenarios, faults, runner or workload, and only tests import it
// (docs/architecture.md).
package locktest
