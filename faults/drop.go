package faults

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/locklab/locklab/cluster"
)

// Directions of a drop fault (contract values of its direction field).
const (
	DropRequest = "request" // what the client side sends is lost
	DropReply   = "reply"   // what the server answers is lost, after it acted
)

// dropAction makes each selected link swallow what the side that opened a
// connection sends (a toxiproxy timeout toxic on the upstream; with
// direction: reply, what the other side answers, on the downstream): the proxy
// accepts connections and reads their data but passes none of it on, so
// requests vanish, no reply comes and neither end sees an error — a
// middlebox that eats packets after the handshake, or a server that
// accepts but never reads. Unlike a partition nothing is held: what was
// sent during the fault is lost, and healing closes every connection that
// lost data (their byte streams have a hole). With close_after the proxy
// also closes a connection that received nothing for that long.
type dropAction struct{}

func (dropAction) check(t *topology, f Fault) error { return checkLinkFault(t, f) }

func (dropAction) apply(ctx context.Context, env Env, f Fault) (effect, error) {
	closeAfter := f.Duration("close_after")
	stream, lost := cluster.StreamUp, "data sent to the server"
	if f.Direction == DropReply {
		stream, lost = cluster.StreamDown, "the server's replies"
	}
	what := lost + " dropped on"
	if closeAfter > 0 {
		what = fmt.Sprintf("connections idle for %v closed, %s dropped on", closeAfter, lost)
	}
	return applyToxic(ctx, env, f, true, func(l *cluster.Link) (string, error) {
		return l.Timeout(closeAfter, stream)
	}, what)
}

// observe probes each link that answered before the fault, at once and
// for at most dropProbe (or 20 round trips before, when longer), so that a
// short drop still heals on time: each must get no reply now.
func (dropAction) observe(ctx context.Context, env Env, _ Fault, eff effect) evidence {
	if len(eff.rtt) == 0 {
		return toxicsPresent(eff.links, "no link's round trip could be measured")
	}
	parts := make([]string, len(eff.links))
	lost := make([]bool, len(eff.links))
	var wg sync.WaitGroup
	for i, l := range eff.links {
		before, ok := eff.rtt[l]
		if !ok {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			pctx, cancel := context.WithTimeout(ctx, max(dropProbe, 20*before))
			defer cancel()
			n, _ := env.Cluster.Node(l.To)
			_, _, err := roundTrip(pctx, l.Addr(), n.Kind, 0)
			lost[i] = err != nil
			parts[i] = l.Name + ": answered while"
			if lost[i] {
				parts[i] = fmt.Sprintf("%s: answered in %v before, no reply while (%v)", l.Name, before.Round(time.Microsecond), err)
			}
		}()
	}
	wg.Wait()
	n := 0
	for _, b := range lost {
		if b {
			n++
		}
	}
	return seen(n == len(eff.rtt), "%s", strings.Join(slices.DeleteFunc(parts, func(p string) bool { return p == "" }), "; "))
}

// dropProbe is the least a probe through a dropped link waits for its
// reply.
const dropProbe = 250 * time.Millisecond
