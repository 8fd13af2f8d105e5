package faults

import "slices"

// Fault types (contract names: docs/scenario-file.md), the values of a fault's type field.
const (
	Latency     = "latency"
	Bandwidth   = "bandwidth"
	Partition   = "partition"
	Reset       = "reset"
	Pause       = "pause"
	Kill        = "kill"
	Restart     = "restart"
	Failover    = "failover"
	PauseClient = "pause-client"
	ClockJump   = "clock-jump"
	ClockDrift  = "clock-drift"
	ClockStrobe = "clock-strobe"
	Loss        = "loss"
	Blackhole   = "blackhole"
	Drop        = "drop"
	PowerCut    = "power-cut"
)

// Target is how a fault type says what it acts on.
type Target int

// Targets of Type.Target.
const (
	OnLinkOrNode Target = iota // link: A->B, or node: N (every link touching N)
	OnServer                   // node: a server of a kind its backend's row says the type acts on
	OnPartition                // groups: [[..],[..]] or isolate: N
	OnClient                   // client: holder or an index
)

// Type is one row of the fault table: a fault type's name, the fields it
// takes, what it may act on, its one-line doc and the action performing
// it. The table is the one place that knows this: Check and Run, scenario
// parsing and validation, the reference and `chaos list` follow it. Adding
// a fault type, even with value fields of its own, is one row plus its
// action.
type Type struct {
	Name   string
	Target Target
	// Values are the value fields the type takes besides type, at, for
	// and the target, in the order the reference shows them.
	Values   []Value
	Heals    bool // takes for: the fault ends after it
	External bool // possible with provider external (client links only)
	// Proxied faults act through the proxies on links: not possible with
	// provider netns, whose links have none.
	Proxied bool
	// Netns faults are packet rules: provider netns only.
	Netns bool
	Doc   string
	// Observes is what the fault looks for to say it bit (Window.Bit):
	// its observable effect.
	Observes string
	// Bounds are the ranges `chaos explore` draws this type's fields
	// from (at, for and the value fields). A type without bounds is never
	// drawn: declaring them is how a row joins random exploration.
	Bounds []Bound
	action action
}

// Bound is the range one field of a fault is drawn from, uniformly
// between Min and Max. With PerTTL the field is a duration and the range
// is in multiples of the run's lease (at: 0.5 to 3 leases), so every
// schedule keeps its faults relative to the TTL it runs with; without it
// the field is a plain number (rate_kbps).
type Bound struct {
	Field    string
	Min, Max float64
	PerTTL   bool
}

// ttls is a Bound of a duration field in multiples of the lease.
func ttls(field string, lo, hi float64) Bound {
	return Bound{Field: field, Min: lo, Max: hi, PerTTL: true}
}

// startAndHeal are the bounds of at and for shared by the faults that
// heal: a start within the first three leases, a length from a quarter
// of a lease (a blip the lock must ride out) to three (past any lease).
var startAndHeal = []Bound{ttls("at", 0.5, 3), ttls("for", 0.25, 3)}

// withBounds returns startAndHeal (or just the start, for faults that do
// not heal) followed by extra.
func withBounds(heals bool, extra ...Bound) []Bound {
	out := []Bound{startAndHeal[0]}
	if heals {
		out = append(out, startAndHeal[1])
	}
	return append(out, extra...)
}

// The value fields of the built-in types.
var (
	latencyValue = Value{Name: "latency", Kind: KindDuration, Required: true, Example: "100ms",
		Hint: "the delay to add, e.g. latency: 500ms", Doc: "added to each round trip (on the reply direction)"}
	jitterValue = Value{Name: "jitter", Kind: KindDuration, Example: "20ms", Doc: "± random spread of the latency"}
	rateValue   = Value{Name: "rate_kbps", Kind: KindNumber, Required: true, Positive: true, Example: "64",
		Hint: "the bandwidth limit in kB/s, e.g. rate_kbps: 64", Doc: "bandwidth in KB/s, both directions"}
	delayValue = Value{Name: "delay", Kind: KindDuration, Default: "0", Example: "1s",
		Doc: "how long the node stays down"}
	offsetValue = Value{Name: "offset", Kind: KindDuration, Required: true, Positive: true, Signed: true, Example: "30s",
		Hint: "how far the clock jumps, e.g. offset: 10s or offset: -5s", Doc: "how far the server's clock moves (negative: back)"}
	driftRateValue = Value{Name: "rate", Kind: KindFactor, Required: true, Example: "1.5",
		Hint: "how fast the clock runs, e.g. rate: 1.5", Doc: "the server's clock speed against the real one (1.5: 50% fast, 0.9: 10% slow); not 1"}
	periodValue = Value{Name: "period", Kind: KindDuration, Required: true, Positive: true, Example: "2s",
		Hint: "how long each of offset and true time lasts, e.g. period: 2s", Doc: "how long the clock stays at each of offset and true time"}
	percentValue = Value{Name: "percent", Kind: KindPercent, Required: true, Example: "10",
		Hint: "the share of packets to drop, e.g. percent: 10", Doc: "loss: the share of packets dropped, both ways, at random"}
	dropDirectionValue = Value{Name: "direction", Kind: KindEnum, Allowed: []string{DropRequest, DropReply}, Default: DropRequest, Example: DropReply,
		Doc: "drop: request swallows what the client side sends (the server never sees it), reply what the server answers (it acted: a lock taken, extended or released, and the client never learns it)"}
	directionValue = Value{Name: "direction", Kind: KindEnum, Allowed: []string{DirectionBoth, DirectionOut, DirectionIn}, Default: "both", Example: "out",
		Doc: "partition, provider netns: out drops only the packets leaving the first group (isolate: the node), in only those entering it"}
)

var table = []Type{
	{Name: Latency, Target: OnLinkOrNode, Values: []Value{latencyValue, jitterValue}, Heals: true, External: true, Proxied: true,
		Doc: "delay on the link(s)", Bounds: withBounds(true, ttls("latency", 0.1, 2), ttls("jitter", 0, 0.2)), action: latencyAction{},
		Observes: "a probed link's round trip rose by latency/2 or more (PING, srvr or GET /version through the proxy, before and while)"},
	{Name: Bandwidth, Target: OnLinkOrNode, Values: []Value{rateValue}, Heals: true, External: true, Proxied: true,
		Doc: "throttle the link(s)", Bounds: withBounds(true, Bound{Field: "rate_kbps", Min: 1, Max: 64}), action: bandwidthAction{},
		Observes: "the toxics are in place on every link"},
	{Name: Partition, Target: OnPartition, Values: []Value{directionValue}, Heals: true, External: true,
		Doc: "cut every link between the groups (requests hang); provider netns: packets dropped, direction out or in cuts one way", Bounds: withBounds(true), action: partitionAction{},
		Observes: "every cut link's proxy holds its traffic (netns: its rules dropped packets); holder: a contender granted, or its promise expired, while it was inside; leader selectors: whether the leader changed"},
	{Name: Reset, Target: OnLinkOrNode, Heals: true, External: true,
		Doc: "reset live connections (netns: TCP packets answered with a reset, for 1s or until healed)", Bounds: withBounds(true), action: resetAction{},
		Observes: "live connections closed (count, /proc/net/tcp); with for: a new connection reset on its first request; netns: packets answered with a reset"},
	{Name: Pause, Target: OnServer, Heals: true,
		Doc: "SIGSTOP the server, SIGCONT after for", Bounds: withBounds(true), action: pauseAction{},
		Observes: "the process stopped (state T in /proc/PID/stat)"},
	{Name: Kill, Target: OnServer,
		Doc: "SIGKILL the server", Bounds: withBounds(false), action: killAction{},
		Observes: "the process gone"},
	{Name: Restart, Target: OnServer, Values: []Value{delayValue},
		Doc: "kill, wait delay, start again on the same data dir", Bounds: withBounds(false, ttls("delay", 0, 1)), action: restartAction{},
		Observes: "the process gone and a new one serving; Redis without persistence: keys there before the kill, none loaded at the start"},
	{Name: PowerCut, Target: OnServer, Values: []Value{delayValue},
		Doc: "kill, drop what the node's data dir received since each file's last fsync, wait delay, start again on what is left (providers local and netns)", Bounds: withBounds(false, ttls("delay", 0, 1)), action: powerCutAction{},
		Observes: "the process gone and a new one serving; the bytes and files the cut dropped; Redis: keys there before the cut absent or changed after it"},
	{Name: Failover, Target: OnServer,
		Doc: "kill a Redis primary, wait until Sentinel (or, with cluster.redis.mode: cluster, the Redis Cluster itself) promotes a replica", Bounds: withBounds(false), action: failoverAction{},
		Observes: "a replica promoted; the keys on the old and the new primary"},
	{Name: PauseClient, Target: OnClient, Heals: true, External: true,
		Doc: "SIGSTOP a client process (holder: the one in the critical section)", Bounds: withBounds(true), action: pauseClientAction{},
		Observes: "the client's process stopped (state T); holder: inside when the pause applied and when it ended"},
	// The clock faults (clock.go): real on providers local and netns,
	// a forward clock-jump emulated on provider external.
	{Name: ClockJump, Target: OnServer, Values: []Value{offsetValue}, Heals: true, External: true,
		Doc:    "the server's wall clock jumps by offset (Redis: keys expire early, or late when negative); healed at for, else lasts; provider external: forward only, emulated by shortening every TTL",
		Bounds: withBounds(false, ttls("offset", 2, 10)), action: clockAction{},
		Observes: "the process's own clock (Redis TIME, Sentinel INFO, ZooKeeper log timestamps) moved by offset; external: keys expired early or their TTL shortened"},
	{Name: ClockDrift, Target: OnServer, Values: []Value{driftRateValue}, Heals: true,
		Doc:    "the server's wall clock runs rate times as fast as the real one (1.5: 50% fast), from the fault's start until for",
		Bounds: withBounds(true, Bound{Field: "rate", Min: 1.1, Max: 3}), action: clockAction{},
		Observes: "the process's own clock gained (rate - 1) × the time since the start"},
	{Name: ClockStrobe, Target: OnServer, Values: []Value{offsetValue, periodValue}, Heals: true,
		Doc:    "the server's wall clock flips between offset and true time every period, starting at offset, until for",
		Bounds: withBounds(true, ttls("offset", 2, 10), ttls("period", 0.25, 1)), action: clockAction{},
		Observes: "the process's own clock at offset when it started and where the flips put it at the end"},
	{Name: Drop, Target: OnLinkOrNode, Heals: true, External: true, Proxied: true, action: dropAction{},
		Values: []Value{{Name: "close_after", Kind: KindDuration, Default: "0: never", Example: "2s",
			Doc: "drop: a connection that received nothing for this long is closed"}, dropDirectionValue},
		Doc:      "the link(s) accept connections but swallow what the client side sends (direction: reply, what the server answers: the server acted, its answer is lost): no error on either side; healing closes the connections that lost data",
		Observes: "a probed link that answered before the fault gets no reply while it acts"},
	// loss and blackhole declare no Bounds: chaos explore draws for the
	// proxy providers, where they are refused.
	{Name: Loss, Target: OnLinkOrNode, Values: []Value{percentValue}, Heals: true, Netns: true,
		Doc: "drop percent of the packets both ways at random (provider netns)", action: lossAction{},
		Observes: "the nftables rules' counters: packets dropped"},
	{Name: Blackhole, Target: OnLinkOrNode, Heals: true, Netns: true,
		Doc: "drop new connections (TCP SYN) from A to B; live ones carry on (provider netns)", action: blackholeAction{},
		Observes: "the nftables rules' counters: connection requests dropped"},
}

// FieldNames is every field any fault type takes: type, at, for, the
// target fields, then the value fields in table order.
var FieldNames = fieldNames()

func fieldNames() []string {
	out := []string{"type", "at", "for", "when", "after_enter", "after_enter_max", "link", "node", "groups", "isolate", "client"}
	for _, t := range table {
		for _, v := range t.Values {
			if !slices.Contains(out, v.Name) {
				out = append(out, v.Name)
			}
		}
	}
	return out
}

// Lookup returns the row of the fault type called name.
func Lookup(name string) (Type, bool) {
	i := slices.IndexFunc(table, func(t Type) bool { return t.Name == name })
	if i < 0 {
		return Type{}, false
	}
	return table[i], true
}

// Types returns the fault type names, sorted.
func Types() []string {
	out := make([]string, len(table))
	for i, t := range table {
		out[i] = t.Name
	}
	slices.Sort(out)
	return out
}

// Fields lists the fields the type accepts, in the order the doc shows
// them.
func (t Type) Fields() []string {
	out := []string{"type", "at"}
	if t.Heals {
		out = append(out, "for")
	}
	out = append(out, "when", "after_enter", "after_enter_max")
	switch t.Target {
	case OnLinkOrNode:
		out = append(out, "link", "node")
	case OnServer:
		out = append(out, "node")
	case OnPartition:
		out = append(out, "groups", "isolate")
	case OnClient:
		out = append(out, "client")
	}
	for _, v := range t.Values {
		out = append(out, v.Name)
	}
	return out
}
