package redislock

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisClient is what the locks use of a Redis connection: Lua scripts,
// the commands of the two-command variants, WAIT, and pub/sub for
// redis-reentrant's waiters. *redis.Client and *redis.ClusterClient
// satisfy it; a test can wrap one to inject a failure between two
// commands (a crash after SETNX) without a hook in the lock.
type RedisClient interface {
	redis.Scripter
	SetNX(ctx context.Context, key string, value any, expiration time.Duration) *redis.BoolCmd
	Incr(ctx context.Context, key string) *redis.IntCmd
	PExpire(ctx context.Context, key string, expiration time.Duration) *redis.BoolCmd
	PTTL(ctx context.Context, key string) *redis.DurationCmd
	Del(ctx context.Context, keys ...string) *redis.IntCmd
	Wait(ctx context.Context, numSlaves int, timeout time.Duration) *redis.IntCmd
	Subscribe(ctx context.Context, channels ...string) *redis.PubSub
	// HGet is redis-rw-naive's separate check of the mode.
	HGet(ctx context.Context, key, field string) *redis.StringCmd
}

var (
	_ RedisClient = (*redis.Client)(nil)
	_ RedisClient = (*redis.ClusterClient)(nil)
)

// Option configures a Client made by NewClient.
type Option func(*Client) error

// WithTTL sets the key's time to live, the lease every holder is promised.
// Default: DefaultTTL. At least 1ms.
func WithTTL(ttl time.Duration) Option {
	return func(c *Client) error {
		if ttl < time.Millisecond {
			return fmt.Errorf("redislock: ttl %v is below 1ms", ttl)
		}
		c.ttl = ttl
		return nil
	}
}

// WithRetry sets the longest a blocked Acquire waits between attempts.
// Default: DefaultRetry, DefaultNotifyRetry for redis-reentrant (whose
// waiters wake on the release message). Not negative.
func WithRetry(retry time.Duration) Option {
	return func(c *Client) error {
		if retry < 0 {
			return fmt.Errorf("redislock: negative retry %v", retry)
		}
		if retry > 0 {
			c.retry = retry
		}
		return nil
	}
}

// WithPrefix sets the prefix of every key the locks create. Default:
// DefaultPrefix.
func WithPrefix(prefix string) Option {
	return func(c *Client) error {
		if prefix != "" {
			c.prefix = prefix
		}
		return nil
	}
}

// WithWaitReplicas makes redis-cad and redis-watchdog WAIT, after taking
// the lock, for n replicas to acknowledge it within timeout; fewer acks
// give the key back and count as not obtained. Default: 0 (no WAIT),
// timeout 100ms. The timeout must be at least 1ms (WAIT's 0 blocks
// forever).
func WithWaitReplicas(n int, timeout time.Duration) Option {
	return func(c *Client) error {
		if n < 0 {
			return fmt.Errorf("redislock: %s %d is negative", optWaitReplicas, n)
		}
		if timeout < time.Millisecond {
			return fmt.Errorf("redislock: %s %v is below 1ms", optWaitTimeout, timeout)
		}
		c.waitReplicas, c.waitTimeout = n, timeout
		return nil
	}
}

// WithSeed seeds the retry jitter (owner ids are random regardless).
// Default: 0.
func WithSeed(seed int64) Option {
	return func(c *Client) error {
		c.rng = newRand(seed)
		return nil
	}
}

// WithLogger sets where diagnostics go. Default: discarded.
func WithLogger(log *slog.Logger) Option {
	return func(c *Client) error {
		if log != nil {
			c.log = log
		}
		return nil
	}
}

// WithPermits sets a semaphore's permits (redis-semaphore,
// redis-semaphore-leaky): how many holders may be inside at once. Every
// client of one lock name must use the same count. Default:
// locks.DefaultPermits.
func WithPermits(n int) Option {
	return func(c *Client) error {
		if n < 1 {
			return fmt.Errorf("redislock: permits %d: want at least 1", n)
		}
		c.permits = n
		return nil
	}
}
