package faults

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/locklab/locklab/clockshim"
	"github.com/locklab/locklab/cluster"
)

// clockAction moves one server's own wall clock: clock-jump (by offset),
// clock-drift (rate times as fast from the start) and clock-strobe
// (flipping between offset and true time every period). The server runs
// with the clock shim preloaded (package clockshim, cluster.Node.SetClock):
// only its process sees the clock move, its peers and the harness keep
// the machine's. Healing (at for, or when the run ends) gives it the real
// clock back; what the wrong clock did meanwhile stays (keys expired,
// timestamps written). MONOTONIC is untouched, so what a server times on
// it (ZooKeeper's sessions, Redis's timeouts of blocked clients) does not
// move.
//
// Each reads the process's own clock (Redis TIME, Sentinel INFO server,
// the timestamp ZooKeeper's log gives the srvr it was sent) before, right
// after applying and at the end (before healing), and says it bit when
// the process's clock moved as the fault says; healing fails when the
// clock did not come back.
//
// With provider external the servers' processes are out of reach:
// clock-jump forward on a Redis node is emulated (emulateJump), the other
// clock faults are refused.
type clockAction struct{}

// clockTolerance bounds the disagreement between a clock reading and what
// the fault should have made of it, beyond the reading's own uncertainty
// (half the round trip): ZooKeeper's log has millisecond timestamps.
const clockTolerance = 100 * time.Millisecond

func (clockAction) check(t *topology, f Fault) error {
	if f.Type == ClockDrift && f.Factor("rate") == 1 {
		return fieldError("rate", errors.New("must not be 1 (the real rate): 1.5 runs 50% fast, 0.9 10% slow"))
	}
	if f.Node == "" {
		return checkServer(t, f)
	}
	k, err := t.known(f.Node)
	if err != nil {
		return err
	}
	if b, ok := cluster.BackendOfKind(k); ok && b.NoClock != "" {
		return unsupported("clock faults cannot act on %q: %s; they act on Redis and ZooKeeper nodes", f.Node, b.NoClock)
	}
	if err := checkServer(t, f); err != nil {
		return err
	}
	switch t.Provider {
	case cluster.ProviderExternal:
		if f.Type != ClockJump || (k != cluster.KindRedis && k != cluster.KindReplica) || f.Offset < 0 || f.For > 0 {
			return unsupported("with provider external the servers' processes are out of reach: only a forward clock-jump "+
				"without for on a Redis node is possible there, emulated (every TTL shortened by offset); %s on %s is not", f.Type, f.Node)
		}
	default:
		if tr := t.Traits(); !tr.Clock {
			return unsupported("provider %s: %s; clock faults run with provider %s", t.Provider, tr.NoClock,
				providersWhere(func(t cluster.Traits) bool { return t.Clock }))
		}
	}
	return nil
}

// clockState is the clock f gives its node, starting now.
func clockState(f Fault, now time.Time) clockshim.State {
	switch f.Type {
	case ClockDrift:
		return clockshim.State{Rate: f.Factor("rate"), Ref: now}
	case ClockStrobe:
		return clockshim.State{Offset: f.Offset, Period: f.Duration("period"), Ref: now}
	}
	return clockshim.State{Offset: f.Offset}
}

func (clockAction) apply(ctx context.Context, env Env, f Fault) (out effect, err error) {
	eff := effect{target: f.Node}
	n, err := node(env, f.Node)
	if err != nil {
		return eff, err
	}
	if env.Cluster.Info().Provider == cluster.ProviderExternal {
		return emulateJump(ctx, n, f)
	}
	eff.method = MethodReal
	before, berr := readClock(ctx, n)
	// A clock that moves forward or runs fast makes the Redis node expire
	// its keys early: the first one (the holder's, when one holds) goes
	// when the node's clock passes its expiry, the lock state lost then.
	var ttl time.Duration
	var keyed bool
	if isRedis(n) && n.Kind != cluster.KindSentinel {
		ttl, keyed, _ = leastTTL(ctx, n.Addr())
	}
	s := clockState(f, time.Now())
	jumped := time.Now()
	defer func() {
		if keyed && err == nil && out.seen.bit {
			out.seen.lostAt = earlyExpiry(f, jumped, ttl)
		}
	}()
	if err := n.SetClock(s); err != nil {
		return eff, err
	}
	eff.heal = func(ctx context.Context) error {
		if err := n.SetClock(clockshim.State{}); err != nil {
			return err
		}
		if !n.Alive() {
			return nil
		}
		after, err := readClock(ctx, n)
		if err != nil {
			return fmt.Errorf("%s's clock after healing: %w", n.Name, err)
		}
		if !after.near(0) {
			return fmt.Errorf("%s's clock still %s off after healing", n.Name, after)
		}
		return nil
	}
	during, derr := readClock(ctx, n)
	eff.detail = fmt.Sprintf("%s's wall clock set to %s (clock shim)", n.Name, s)
	switch {
	case berr != nil:
		eff.seen = seen(false, "%s's clock before the fault: %v", n.Name, berr)
	case derr != nil:
		eff.seen = seen(false, "%s's clock after applying: %v", n.Name, derr)
	default:
		want := s.Shift(during.at)
		eff.seen = seen(during.sub(before).near(want), "%s: %s from the harness's clock before, %s right after (want %s)",
			clockSource(n), before, during, signed(want))
	}
	if f.Type == ClockJump {
		return eff, nil
	}
	// Drift and strobe show over time: read the clock again at the end.
	eff.late = func() evidence {
		if !eff.seen.bit {
			return eff.seen
		}
		ctx, cancel := observeCtx(context.Background())
		defer cancel()
		end, err := readClock(ctx, n)
		if err != nil {
			return seen(false, "%s; at the end: %v", eff.seen.seen, err)
		}
		want := s.Shift(end.at)
		return seen(end.sub(before).near(want), "%s; %s at the end, %v after the start (want %s)",
			eff.seen.seen, end, end.at.Sub(during.at).Round(time.Millisecond), signed(want))
	}
	return eff, nil
}

// earlyExpiry is when a key with ttl left at the fault's start (now)
// expires on the node's clock under f; zero when f does not bring it
// forward (a backward jump, a slow clock).
func earlyExpiry(f Fault, now time.Time, ttl time.Duration) time.Time {
	switch {
	case f.Type == ClockDrift && f.Factor("rate") > 1:
		return now.Add(time.Duration(float64(ttl) / f.Factor("rate")))
	case f.Type != ClockDrift && f.Offset > 0:
		return now.Add(max(ttl-f.Offset, 0))
	}
	return time.Time{}
}

func (clockAction) observe(_ context.Context, _ Env, _ Fault, eff effect) evidence { return eff.seen }

// skew is one reading of a process's wall clock: how far it was from the
// harness's (the process's time minus the harness's at the midpoint of the
// request), and half the request's round trip, the reading's uncertainty.
type skew struct {
	d, unsure time.Duration
	at        time.Time // the harness's time of the reading
}

func (k skew) String() string { return signed(k.d) }

// sub is k measured from an earlier reading: what moved between them.
func (k skew) sub(from skew) skew {
	return skew{d: k.d - from.d, unsure: k.unsure + from.unsure, at: k.at}
}

// near says whether k is want within the readings' uncertainty.
func (k skew) near(want time.Duration) bool {
	d := k.d - want
	return d.Abs() <= k.unsure+clockTolerance
}

func signed(d time.Duration) string {
	d = d.Round(time.Millisecond)
	if d >= 0 {
		return "+" + d.String()
	}
	return d.String()
}

// clockSource names what readClock asks n.
func clockSource(n *cluster.Node) string {
	if b, ok := cluster.BackendOfKind(n.Kind); ok && b.ReadClock != nil {
		return b.ClockSourceOf(n.Kind) + " on " + n.Name
	}
	return "no clock reading on " + n.Name
}

// readClock reads n's own wall clock against the harness's, as its row
// says.
func readClock(ctx context.Context, n *cluster.Node) (skew, error) {
	b, ok := cluster.BackendOfKind(n.Kind)
	if !ok || b.ReadClock == nil {
		return skew{}, fmt.Errorf("%s: its backend reads no clock: %w", n.Name, cluster.ErrUnsupported)
	}
	r, err := b.ReadClock(ctx, n)
	if err != nil {
		return skew{}, err
	}
	k := measured(r.T, r.Sent, r.Received)
	k.unsure += r.Unsure
	return k, nil
}

func measured(t, t0, t1 time.Time) skew {
	half := t1.Sub(t0) / 2
	mid := t0.Add(half)
	return skew{d: t.Sub(mid), unsure: half, at: mid}
}
