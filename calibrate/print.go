package calibrate

import (
	"fmt"
	"io"
)

// Targets of the harness (issue "the harness is never the bottleneck").
const (
	TargetMemRate      = 200000 // critical sections/s with MemClients clients
	TargetMemNsPerOp   = 5000   // wall ns of harness per critical section
	TargetDirectRatio  = 0.9    // redis-cad direct / redis-benchmark raw cycle
	TargetProxiedRatio = 0.8    // the same through the proxies
	TargetBeyondCommit = 2      // hand-off - one write (a commit where consensus), in round trips
)

// WriteText prints f for a reader, each figure beside its target.
func (f *Figures) WriteText(w io.Writer) error {
	p := &printer{w: w}
	if m := f.Mem; m != nil {
		p.f("mem (harness ceiling, %d clients, zero critical section): %.0f critical sections/s %s, %.0f ns wall %s and %.0f ns CPU of harness per critical section\n",
			m.Clients, m.Rate, meets(m.Rate >= TargetMemRate, ">= 200000"), m.WallNsPerOp, meets(m.WallNsPerOp <= TargetMemNsPerOp, "<= 5000"), m.CPUNsPerOp)
	}
	if r := f.Redis; r != nil {
		p.f("\nRedis rates: median of %d interleaved rounds, each ratio taken within its round\n", len(r.Rounds))
		p.f("redis-benchmark (%d connections): SET NX PX %.0f/s, EVALSHA compare-and-delete %.0f/s => raw cycle %.0f/s\n",
			r.Clients, r.SetRate, r.ReleaseRate, r.RawCycle)
		p.f("redis-benchmark, redis-cad's own acquire script (SET NX PX + INCR fence): %.0f/s => cycle %.0f/s\n", r.AcquireRate, r.OwnCycle)
		p.f("harness redis-cad direct   %d clients x %d keys: %.0f ops/s = %.2f of the raw cycle %s\n",
			r.Clients, r.Clients, r.Direct, r.DirectRatio, meets(r.DirectRatio >= TargetDirectRatio, ">= 0.9"))
		p.f("  bare Go client, same commands, direct:    %.0f cycles/s = %.2f of the raw cycle; the harness reaches %.2f of it\n",
			r.BareDirect, r.BareDirectRatio, r.DirectOfBare)
		p.f("harness redis-cad proxied  %d clients x %d keys: %.0f ops/s = %.2f of the raw cycle %s\n",
			r.Clients, r.Clients, r.Proxied, r.ProxiedRatio, meets(r.ProxiedRatio >= TargetProxiedRatio, ">= 0.8"))
		p.f("  bare Go client, same commands, proxied:   %.0f cycles/s = %.2f of the raw cycle; the harness reaches %.2f of it\n",
			r.BareProxied, r.BareProxiedRatio, r.ProxiedOfBare)
		p.f("Redis round trip through a proxy: PING p50 %.3f ms\n", r.PingMs)
		for _, h := range r.Handoff {
			p.f("hand-off p50 on one key, 4 clients: %-16s %.3f ms = %.1f round trips (%d hand-offs)\n", h.Lock, h.P50Ms, h.RoundTrips, h.Count)
		}
	}
	for _, t := range tables {
		c := t.text
		cf := *t.figures(f)
		if cf == nil {
			continue
		}
		h := cf.Handoff
		nodes := fmt.Sprintf("%d nodes", cf.Nodes)
		if cf.Nodes == 1 {
			nodes = "1 node"
		}
		p.f("\n%s (%s, through a proxy): median of %d interleaved rounds, each ratio taken within its round\n", c.title, nodes, len(cf.Rounds))
		p.f("%s p50 %.3f ms (%s), %s p50 %.3f ms, %s p50 %.3f ms (one round trip)\n",
			c.write, cf.WriteMs, c.kind, c.del, cf.DeleteMs, c.read, cf.ReadMs)
		target := fmt.Sprintf("<= 1 %s + 2 round trips", c.unit)
		p.f("hand-off p50 on one key, 4 clients: %-16s %.3f ms = %.2f %ss = 1 %s + %.1f round trips %s (%d hand-offs)\n",
			h.Lock, h.P50Ms, h.Commits, c.unit, c.unit, h.Beyond, meets(h.Beyond <= TargetBeyondCommit, target), h.Count)
	}
	return p.err
}

func meets(ok bool, target string) string {
	if ok {
		return "[target " + target + ": met]"
	}
	return "[target " + target + ": NOT met]"
}

type printer struct {
	w   io.Writer
	err error
}

func (p *printer) f(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}
