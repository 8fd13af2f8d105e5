package testenv

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster/providers/netns"
)

// Netns reports whether the calling top-level test runs inside a network
// namespace of the run, where provider netns clusters can start (see
// netns.Run). Outside one it runs the test again, alone, in a
// child test process inside a fresh namespace, logs the child's output,
// fails when the child failed, and returns false: the caller returns at
// once. Without root or nftables the test is Unavailable (fails in CI).
//
//	if !testenv.Netns(t) {
//		return
//	}
func Netns(t *testing.T) bool {
	t.Helper()
	if netns.InHarness() {
		return true
	}
	if testing.Short() {
		t.Skip("provider netns: skipped under -short")
	}
	if err := netns.Available(); err != nil {
		Unavailable(t, "%v", err)
	}
	args := []string{os.Args[0], "-test.run=^" + regexp.QuoteMeta(t.Name()) + "$", "-test.count=1", "-test.v"}
	if d, ok := t.Deadline(); ok {
		args = append(args, "-test.timeout="+time.Until(d).Round(time.Second).String())
	}
	var out bytes.Buffer
	code, err := runChild(args, &out)
	t.Logf("in a network namespace of the run:\n%s", out.String())
	if err != nil {
		t.Fatalf("run in netns: %v", err)
	}
	if code != 0 {
		t.Fatalf("the test failed inside its network namespace (exit %d)", code)
	}
	if bytes.Contains(out.Bytes(), []byte("--- SKIP")) {
		t.Skip("skipped inside its network namespace")
	}
	return false
}

// runChild runs args in a network namespace with its output in out.
func runChild(args []string, out *bytes.Buffer) (int, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		out.ReadFrom(r)
	}()
	code, err := netns.RunWith(context.Background(), args, nil, w)
	w.Close()
	<-done
	r.Close()
	return code, err
}
