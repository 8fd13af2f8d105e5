package recheck

import (
	"fmt"
	"strings"
	"testing"
)

// TestStandingWaiters: three waiters time out after a held fault's window
// with no send inside it; they count as refused requests only when their
// lines say standing (the server answers a waiting call when the holder's
// state goes).
func TestStandingWaiters(t *testing.T) {
	const ms = 1_000_000
	for _, standing := range []bool{false, true} {
		var b strings.Builder
		seq := 0
		line := func(format string, a ...any) {
			seq++
			fmt.Fprintf(&b, `{"run":0,"seq":%d,`+format+"}\n", append([]any{seq}, a...)...)
		}
		line(`"client":0,"lock":"k","op":"acquire","visit":1,"invoke_ns":0,"return_ns":1,"valid_until_ns":%d,"outcome":"ok","standing":%v`, 5000*ms, standing)
		line(`"client":0,"lock":"k","op":"enter","visit":1,"invoke_ns":1,"return_ns":1,"outcome":"ok"`)
		line(`"client":0,"lock":"k","op":"exit","visit":1,"invoke_ns":%d,"return_ns":%d,"outcome":"ok"`, 1000*ms, 1000*ms)
		for c := 1; c <= 3; c++ {
			line(`"client":%d,"lock":"k","op":"attempt","invoke_ns":%d,"return_ns":%d,"outcome":"acquire_timeout","standing":%v`, c, 50*ms, 900*ms, standing)
		}
		line(`"client":0,"lock":"","op":"fault","invoke_ns":%d,"return_ns":%d,"outcome":"ok","fault":{"index":0,"type":"pause","bit":true,"lease_ns":%d}`, 100*ms, 400*ms, 1000*ms)
		exps, _, err := Exposures(strings.NewReader(b.String()))
		if err != nil {
			t.Fatal(err)
		}
		want := 0
		if standing {
			want = 3
		}
		if e := exps[0][0]; !e.Held || e.Attempts != want {
			t.Errorf("standing %v: held %v, attempts %d, want held with %d", standing, e.Held, e.Attempts, want)
		}
	}
}
