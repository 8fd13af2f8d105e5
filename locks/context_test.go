package locks_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/locks"
)

// TestAcquireError: while ctx lives the request's error is the one
// wrapped; once ctx has ended, or only its deadline has passed (a socket
// timeout can come before ctx's own timer), ctx's error is, with the
// request's text beside it.
func TestAcquireError(t *testing.T) {
	refused := errors.New("server refused")
	err := locks.AcquireError(context.Background(), "k", refused)
	if !errors.Is(err, refused) || err.Error() != "acquire k: server refused" {
		t.Errorf("live ctx: %v, want the request's error wrapped", err)
	}
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	past, stop := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer stop()
	for want, ctx := range map[error]context.Context{context.Canceled: canceled, context.DeadlineExceeded: past} {
		err := locks.AcquireError(ctx, "k", refused)
		if !errors.Is(err, want) || errors.Is(err, refused) || !strings.Contains(err.Error(), "server refused") {
			t.Errorf("ended ctx: %v, want %v wrapped and the request's text beside it", err, want)
		}
	}
}
