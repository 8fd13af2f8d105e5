package workload

import (
	"testing"

	"github.com/locklab/locklab/checker"
)

// TestTryLogSpread: a call that sends far more than checker.MaxTries keeps
// at most that many, evenly over the whole call, so its late sends (a
// fault's window late in a long wait) still show; a short call keeps all.
func TestTryLogSpread(t *testing.T) {
	var short tryLog
	for range 10 {
		short.add()
	}
	if len(short.at) != 10 {
		t.Fatalf("short call kept %d of 10 sends", len(short.at))
	}

	var long tryLog
	const sends = 5*checker.MaxTries + 3
	for range sends {
		long.add()
	}
	n := len(long.at)
	if n > checker.MaxTries || n < checker.MaxTries/2 {
		t.Fatalf("kept %d sends of %d, want between %d and %d", n, sends, checker.MaxTries/2, checker.MaxTries)
	}
	// Every kept send is the stride-th: the first and then evenly spaced,
	// up to the last stride of the call.
	if long.stride != 8 {
		t.Fatalf("stride %d after %d sends, want 8", long.stride, sends)
	}
	if want := (sends-1)/long.stride + 1; n != want {
		t.Fatalf("kept %d sends, want %d (every %d-th of %d)", n, want, long.stride, sends)
	}
	for i := 1; i < n; i++ {
		if long.at[i].Before(long.at[i-1]) {
			t.Fatalf("send %d kept out of order", i)
		}
	}
	// A send late in the call is kept: the last kept one is within a
	// stride of the end.
	if last := (n-1)*long.stride + 1; sends-last >= long.stride {
		t.Fatalf("last kept send is #%d of %d (stride %d)", last, sends, long.stride)
	}
}
