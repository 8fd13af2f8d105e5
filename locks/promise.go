package locks

import "time"

// Promise is the validity a lease promises its holder: until when the
// holder may act as the only one holding the lock. Implementations measure
// it conservatively on the holder's side, from before the acquiring request
// was sent (ttl - elapsed - drift), moved forward by each successful
// renewal or keep-alive from that renewal's send time.
type Promise struct {
	// Until is when the promise runs out (a monotonic reading of this
	// process's clock). Ignored when Unbounded.
	Until time.Time
	// Unbounded means the lease promises validity with no time bound (a
	// lock without expiry, or one whose implementation does not say).
	Unbounded bool
	// Estimated means the value was computed by an adapter from outside a
	// library that does not expose it (redsync, bsm-redislock, zk.Lock,
	// etcd Mutex): conservative, from what the adapter can see.
	Estimated bool
}

// Promiser is implemented by leases that report their promise. It is
// optional so that leases written elsewhere keep compiling; read a lease's
// promise with PromiseOf.
type Promiser interface {
	// Promise returns the lease's current promise. Safe for concurrent
	// use; it may move later while the lease is held (renewals).
	Promise() Promise
}

// PromiseOf returns l's promise, or "no time bound" when l does not report
// one.
func PromiseOf(l Lease) Promise {
	if p, ok := l.(Promiser); ok {
		return p.Promise()
	}
	return Promise{Unbounded: true}
}

// Drift is the clock-drift allowance subtracted from a TTL-based promise:
// ttl/100 + 2ms, as in Redlock's validity (servers' clocks may run fast by
// that much, and the key expire that much sooner than the holder counts).
func Drift(ttl time.Duration) time.Duration { return ttl/100 + 2*time.Millisecond }

// TTLPromise is the promise of a key taken with ttl by a request sent at
// sent: sent + ttl - Drift(ttl).
func TTLPromise(sent time.Time, ttl time.Duration) Promise {
	return Promise{Until: sent.Add(ttl - Drift(ttl))}
}
