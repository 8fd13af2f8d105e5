package redislock

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

// subscriber is a Client's one pub/sub connection, shared by its blocked
// redis-reentrant acquirers (Redisson shares one the same way). A channel,
// once subscribed, stays subscribed until Close: a client waits on a handful
// of lock names at most. go-redis reconnects and resubscribes on its own;
// messages published meanwhile are lost, which the waiters' polling covers.
type subscriber struct {
	c      *Client
	ps     *redis.PubSub
	done   chan struct{}
	mu     sync.Mutex
	topics map[string]*topic
}

// topic is one subscribed channel.
type topic struct {
	ready     chan struct{} // closed once Redis confirmed the subscription
	readyOnce sync.Once
	wake      chan struct{} // closed, and replaced, by every message
}

// subscriber returns the client's subscriber, starting it on first use;
// nil once the client is closed.
func (c *Client) subscriber() *subscriber {
	c.subOnce.Do(func() {
		s := &subscriber{
			c:      c,
			ps:     c.rdb.Subscribe(context.Background()),
			done:   make(chan struct{}),
			topics: map[string]*topic{},
		}
		go s.run(s.ps.ChannelWithSubscriptions())
		c.sub = s
	})
	return c.sub
}

// watch subscribes to channel unless already subscribed and returns a
// channel closed by the next message on it, and one closed once the
// subscription is active (messages published before that are missed).
// Call it before the attempt whose failure makes you wait, so a release
// between the attempt and the wait still wakes you.
func (s *subscriber) watch(ctx context.Context, channel string) (wake, ready <-chan struct{}) {
	s.mu.Lock()
	t, ok := s.topics[channel]
	if !ok {
		t = &topic{ready: make(chan struct{}), wake: make(chan struct{})}
		s.topics[channel] = t
	}
	wake, ready = t.wake, t.ready
	s.mu.Unlock()
	if !ok {
		// On error go-redis still records the channel and subscribes on
		// its next reconnect; until then the waiters poll.
		if err := s.ps.Subscribe(ctx, channel); err != nil {
			s.c.log.Debug("subscribe failed", "channel", channel, "err", err)
		}
	}
	return wake, ready
}

func (s *subscriber) run(ch <-chan any) {
	defer close(s.done)
	for m := range ch {
		switch m := m.(type) {
		case *redis.Subscription:
			if m.Kind != "subscribe" {
				continue
			}
			s.mu.Lock()
			if t := s.topics[m.Channel]; t != nil {
				t.readyOnce.Do(func() { close(t.ready) })
			}
			s.mu.Unlock()
		case *redis.Message:
			s.c.notifications.Add(1)
			s.mu.Lock()
			if t := s.topics[m.Channel]; t != nil {
				close(t.wake)
				t.wake = make(chan struct{})
			}
			s.mu.Unlock()
		}
	}
}

// close closes the pub/sub connection and waits for the reader to stop.
func (s *subscriber) close() error {
	err := s.ps.Close()
	<-s.done
	return err
}
