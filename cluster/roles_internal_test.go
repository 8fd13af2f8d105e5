package cluster

import (
	"context"
	"testing"
	"time"
)

// TestLeaderReturnsWhenNobodyAnswers: members whose role query only ends
// with its context (paused, or cut off) make Leader fail once the context
// is over, every time; it hung when an asker dropped its answer because
// the context ended as the query failed (an atlas run waited 36 minutes).
func TestLeaderReturnsWhenNobodyAnswers(t *testing.T) {
	c := &Cluster{}
	for _, name := range []string{"etcd-0", "etcd-1", "etcd-2"} {
		c.nodes = append(c.nodes, &Node{c: c, Name: name, Kind: "etcd", role: func(ctx context.Context) (string, error) {
			<-ctx.Done()
			return "", ctx.Err()
		}})
	}
	for i := range 200 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		done := make(chan error, 1)
		go func() {
			_, err := c.Leader(ctx, "etcd")
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil {
				t.Fatalf("call %d: a leader without any answer", i)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("call %d: Leader still waiting 5s after its context ended", i)
		}
		cancel()
	}
}
