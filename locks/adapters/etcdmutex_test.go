package adapters_test

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/adapters"
	"github.com/locklab/locklab/locks/etcdlock"
	"github.com/locklab/locklab/locktest"
	"github.com/locklab/locklab/testenv"
)

func TestEtcdMutexMutualExclusion(t *testing.T) {
	labContend(t, testenv.NewEnsemble(t, locks.Etcd, 8), adapters.NameEtcdMutex, 8, 250)
}

// TestEtcdMutexLostOnCut: the session's Done closes a TTL after the last
// keep-alive response arrived, checked once a second by clientv3.
func TestEtcdMutexLostOnCut(t *testing.T) {
	labLostOnCut(t, testenv.NewEnsemble(t, locks.Etcd, 3), adapters.NameEtcdMutex, locktest.LossBound(labTTL, time.Second), nil)
}

// TestEtcdMutexWaiterLeaseExpired is etcd #11456 against the library: a
// waiter whose lease expired while it waited (links cut) must not be told
// it holds the lock when the holder releases.
func TestEtcdMutexWaiterLeaseExpired(t *testing.T) {
	e := testenv.NewEnsemble(t, locks.Etcd, 3)
	lock := locktest.Name(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	adm, err := etcdlock.Dial(ctx, locks.Config{Endpoints: e.Endpoints(2)})
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	queued := func() int {
		resp, err := adm.Get(ctx, labPrefix+"/"+lock+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			t.Fatal(err)
		}
		return int(resp.Count)
	}

	holder := locktest.Acquire(t, labConnect(t, e, 0, adapters.NameEtcdMutex).Locker(lock))
	waiter := labConnect(t, e, 1, adapters.NameEtcdMutex).Locker(lock)
	result := locktest.Waiter(ctx, waiter.Acquire)
	locktest.WaitFor(t, 3*labTTL, "waiter queued", func() bool { return queued() == 2 })
	e.Cut(t, 1)
	locktest.WaitFor(t, 3*labTTL, "waiter's lease expired", func() bool { return queued() == 1 })
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	e.Heal(t, 1)
	locktest.WaiterLost(t, result)
}

// BenchmarkAcquireReleaseEtcdMutex measures an uncontended acquire + release.
func BenchmarkAcquireReleaseEtcdMutex(b *testing.B) { labBenchmark(b, adapters.NameEtcdMutex) }
