package natslock

import (
	"context"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestRetryableBucketErr: opening the bucket is tried again when the
// request got no answer or JetStream was not ready, never when the server
// answered with a refusal another attempt would meet too.
func TestRetryableBucketErr(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("stream info: %w", context.DeadlineExceeded), true},
		{nats.ErrNoResponders, true},
		{jetstream.ErrJetStreamNotEnabled, true},
		{&jetstream.APIError{Code: 503, ErrorCode: 10008, Description: "JetStream system temporarily unavailable"}, true},
		{&jetstream.APIError{Code: 400, ErrorCode: 10052, Description: "replicas > 1 not supported in non-clustered mode"}, false},
		{jetstream.ErrBucketExists, false},
		{context.Canceled, false},
	} {
		if got := retryableBucketErr(c.err); got != c.want {
			t.Errorf("retryableBucketErr(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
