package cluster

import (
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/Shopify/toxiproxy/v2/stream"
	"github.com/Shopify/toxiproxy/v2/toxics"
)

// The gate is how Cut holds a link's data. Every proxy gets a gate toxic in
// both directions when it is created, and keeps it for life; Cut and Heal
// only flip the gate's state, which the toxic's goroutines watch.
//
// Why not an ordinary toxic added by Cut and removed by Heal: removing a
// toxiproxy toxic flushes what it buffered under the proxy's toxic lock,
// waiting up to 5 s per chunk when the connection's writer is gone (the
// peer closed it during the partition) — healing a partition of a few
// seconds took minutes, and no new connection could start meanwhile. A
// timeout toxic (blackhole) drops the data instead, and its removal closes
// every connection it saw, which is not what a healed network does.

const gateToxicType = "locklab_gate"

// gateHoldBytes is how much a gate holds per connection and direction
// before it stops reading, so the sender feels backpressure as with a full
// TCP window.
const gateHoldBytes = 16 << 20

func init() { toxics.Register(gateToxicType, new(gateToxic)) }

// gate is the state one link's gate toxics share.
type gate struct {
	mu      sync.Mutex
	cut     bool
	changed chan struct{} // closed and replaced at every change
	closed  chan struct{} // closed when the link closes: toxics exit
	once    sync.Once
}

var (
	gates   sync.Map // gate id -> *gate
	gateSeq atomic.Int64
)

func newGate() (string, *gate) {
	g := &gate{changed: make(chan struct{}), closed: make(chan struct{})}
	id := strconv.FormatInt(gateSeq.Add(1), 10)
	gates.Store(id, g)
	return id, g
}

func (g *gate) set(cut bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cut == cut {
		return
	}
	g.cut = cut
	close(g.changed)
	g.changed = make(chan struct{})
}

func (g *gate) state() (cut bool, changed <-chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.cut, g.changed
}

func (g *gate) close(id string) {
	g.once.Do(func() { close(g.closed) })
	gates.Delete(id)
}

// gateToxic is the toxiproxy toxic of a gate; toxiproxy creates it from
// JSON, so it finds its gate by id.
type gateToxic struct {
	Gate string `json:"gate"`
}

// gateState is per connection and direction, kept across the toxic's
// restarts (toxiproxy interrupts and restarts a toxic whenever another
// toxic is added after it).
type gateState struct {
	held  []*stream.StreamChunk
	bytes int
	eof   bool
}

func (t *gateToxic) NewState() any { return new(gateState) }

func (t *gateToxic) Pipe(stub *toxics.ToxicStub) {
	v, ok := gates.Load(t.Gate)
	if !ok {
		new(toxics.NoopToxic).Pipe(stub)
		return
	}
	g := v.(*gate)
	st, _ := stub.State.(*gateState)
	if st == nil {
		st = new(gateState)
		stub.State = st
	}
	for {
		cut, changed := g.state()
		if !cut && len(st.held) > 0 {
			// Healed: deliver what was held, in order, before anything new.
			select {
			case stub.Output <- st.held[0]:
				st.bytes -= len(st.held[0].Data)
				st.held = st.held[1:]
			case <-stub.Interrupt:
				return
			case <-changed:
			case <-g.closed:
				return
			}
			continue
		}
		if !cut && st.eof {
			stub.Close()
			return
		}
		var in <-chan *stream.StreamChunk
		if !st.eof && (!cut || st.bytes < gateHoldBytes) {
			in = stub.Input
		}
		select {
		case c := <-in:
			if c == nil {
				st.eof = true
				continue
			}
			if cut {
				st.held = append(st.held, c)
				st.bytes += len(c.Data)
				continue
			}
			select {
			case stub.Output <- c:
			case <-stub.Interrupt:
				st.held = append(st.held, c)
				st.bytes += len(c.Data)
				return
			case <-changed:
				st.held = append(st.held, c)
				st.bytes += len(c.Data)
			case <-g.closed:
				return
			}
		case <-stub.Interrupt:
			return
		case <-changed:
		case <-g.closed:
			return
		}
	}
}
