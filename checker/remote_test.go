package checker

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestRemote(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res := New(FencingEnforce, time.Now())
	srv, err := Serve(res, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	a, err := Dial(ctx, srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	b, err := Dial(ctx, srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	va, _ := a.Enter(ctx, Visit{Lock: "L", Client: 0, Token: 1})
	ra, _ := a.Read(ctx, va)
	vb, _ := b.Enter(ctx, Visit{Lock: "L", Client: 1, Token: 2})
	rb, _ := b.Read(ctx, vb)
	if err := b.Write(ctx, vb, rb+1); err != nil {
		t.Fatal(err)
	}
	b.Exit(ctx, vb)
	if err := a.Write(ctx, va, ra+1); !errors.Is(err, ErrStaleToken) {
		t.Fatalf("stale write over the wire: %v, want ErrStaleToken", err)
	}
	// a dies inside: its connection closes and the server exits its visit.
	a.Close()
	deadline := time.Now().Add(2 * time.Second)
	for len(res.Inside()) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("visit of a closed connection still inside: %v", res.Inside())
		}
		time.Sleep(time.Millisecond)
	}
	sum := res.Summary()
	if sum.Violations != 1 || sum.StaleRejected != 1 || sum.Counter != 1 {
		t.Fatalf("summary %+v", sum)
	}
}
