package etcdlock

import (
	"errors"
	"fmt"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

// TestTransient: the errors clientv3 returns for a request cut short by an
// election (rpctypes.Error of the server's gRPC status, possibly wrapped)
// are transient; a lost lease or a canceled context is not.
func TestTransient(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{rpctypes.Error(rpctypes.ErrGRPCLeaderChanged), true},
		{fmt.Errorf("txn: %w", rpctypes.Error(rpctypes.ErrGRPCNoLeader)), true},
		{rpctypes.Error(rpctypes.ErrGRPCTimeoutDueToLeaderFail), true},
		{rpctypes.Error(rpctypes.ErrGRPCLeaseNotFound), false},
		{errors.New("context canceled"), false},
		{nil, false},
	} {
		if got := transient(tc.err); got != tc.want {
			t.Errorf("transient(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
