package recheck

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
)

// Exposure is one fault's exposure as docs/verdicts.md defines it,
// recomputed from the history's fault, acquire, enter, renew, exit and
// attempt lines: whether the race opened (Exposed, for DurationNs in all),
// or the lock held its holder through the fault (Held), and how many
// requests of other clients for the holder's key could have won it
// (Attempts). Holder is -1 when nobody was inside when the fault struck.
type Exposure struct {
	Index      int
	Holder     int
	Exposed    bool
	DurationNs int64
	Held       bool
	Attempts   int
	// Setting: no visit had entered when the fault started; it opens no
	// race of its own.
	Setting bool
}

// expLine is the part of a history line the exposure reads.
type expLine struct {
	Run        int     `json:"run"`
	Client     int     `json:"client"`
	Lock       string  `json:"lock"`
	Op         string  `json:"op"`
	Visit      uint64  `json:"visit"`
	Invoke     int64   `json:"invoke_ns"`
	Return     int64   `json:"return_ns"`
	ValidUntil int64   `json:"valid_until_ns"`
	Unbounded  bool    `json:"unbounded"`
	Tries      []int64 `json:"tries_ns"`
	Outcome    string  `json:"outcome"`
	Standing   bool    `json:"standing"`
	Fault      *struct {
		Index  int    `json:"index"`
		Error  string `json:"error"`
		LostAt *int64 `json:"lost_at_ns"`
		Lease  int64  `json:"lease_ns"`
	} `json:"fault"`
}

// stay is one visit: who, which key, [in, out) on the resource's clock
// (out = the run's end while inside), and the last instant its promise
// ran (upTo; none when it promised nothing).
type stay struct {
	id        uint64
	client    int
	key       string
	in, out   int64
	upTo      int64
	promised  bool
	unbounded bool
}

// request is a send of an acquire call, or (end) the moment the call was
// answered: granted, refused or timed out. An answer counts only for a
// call none of whose sends counts. A standing call (its line says
// standing) is also one request from at to until, counted when it
// overlaps the spans and nothing else of the call counted.
type request struct {
	client   int
	at       int64
	call     int
	end      bool
	standing bool
	until    int64
}

type faultLine struct {
	index, client int
	from, to      int64
	failed        bool
	lost          bool
	lostAt        int64
	lease         int64
}

type expRun struct {
	calls    int
	keyUsers map[string]map[int]bool
	stays    map[uint64]*stay
	order    []*stay
	requests map[string][]request
	faults   []faultLine
	last     int64
	// told is when each visit's first lost line says its holder learnt
	// the lease was lost.
	told map[uint64]int64
}

// Exposures reads a history and returns, per run index, the exposure of
// each fault line (in the order of the lines; a fault that failed to apply
// gets none), and the most distinct clients that visited one key (at most
// 2 counted, as result.json's key_clients).
func Exposures(r io.Reader) (map[int][]Exposure, map[int]int, error) {
	j, err := Judge(r)
	return j.Exposures, j.KeyClients, err
}

// Judged is what the re-check derives of a history beyond its figures,
// per run index: each fault's exposure (Exposures), the most distinct
// clients that visited one key, and the zombie time (Zombies).
type Judged struct {
	Exposures  map[int][]Exposure
	KeyClients map[int]int
	Zombies    map[int]Zombie
}

// Judge reads a history once for everything Judged holds.
func Judge(r io.Reader) (Judged, error) {
	runs, err := readRuns(r)
	if err != nil {
		return Judged{}, err
	}
	j := Judged{Exposures: map[int][]Exposure{}, KeyClients: map[int]int{}, Zombies: map[int]Zombie{}}
	for i, rn := range runs {
		for _, cs := range rn.keyUsers {
			j.KeyClients[i] = max(j.KeyClients[i], min(len(cs), 2))
		}
		for _, f := range rn.faults {
			if f.failed {
				continue
			}
			j.Exposures[i] = append(j.Exposures[i], rn.judge(f))
		}
		j.Zombies[i] = rn.zombies()
	}
	return j, nil
}

// readRuns reads a history into what the exposure and the zombie time
// read of each run (by run index).
func readRuns(r io.Reader) (map[int]*expRun, error) {
	runs := map[int]*expRun{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		var l expLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return nil, fmt.Errorf("history line %d: %w", n, err)
		}
		rn := runs[l.Run]
		if rn == nil {
			rn = &expRun{stays: map[uint64]*stay{}, requests: map[string][]request{}, keyUsers: map[string]map[int]bool{}, told: map[uint64]int64{}}
			runs[l.Run] = rn
		}
		rn.take(l)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read history: %w", err)
	}
	return runs, nil
}

func (rn *expRun) take(l expLine) {
	if l.Op != "acquire" && l.Op != "attempt" {
		rn.last = max(rn.last, l.Return)
	}
	sent := func() {
		rn.calls++
		if len(l.Tries) == 0 {
			rn.requests[l.Lock] = append(rn.requests[l.Lock], request{client: l.Client, at: l.Invoke, call: rn.calls})
		}
		for _, t := range l.Tries {
			rn.requests[l.Lock] = append(rn.requests[l.Lock], request{client: l.Client, at: t, call: rn.calls})
		}
		if l.Op == "acquire" || l.Outcome == "not_obtained" || l.Outcome == "acquire_timeout" {
			rn.requests[l.Lock] = append(rn.requests[l.Lock], request{client: l.Client, at: l.Return, call: rn.calls, end: true})
		}
		if l.Standing {
			rn.requests[l.Lock] = append(rn.requests[l.Lock], request{client: l.Client, at: l.Invoke, call: rn.calls, standing: true, until: l.Return})
		}
	}
	switch l.Op {
	case "acquire":
		sent()
		rn.stays[l.Visit] = &stay{id: l.Visit, client: l.Client, key: l.Lock, in: -1, out: -1, upTo: l.ValidUntil,
			promised: l.Unbounded || l.ValidUntil != 0, unbounded: l.Unbounded}
	case "attempt":
		sent()
	case "enter":
		if s := rn.stays[l.Visit]; s != nil {
			s.in = l.Return
			rn.order = append(rn.order, s)
			if rn.keyUsers[s.key] == nil {
				rn.keyUsers[s.key] = map[int]bool{}
			}
			rn.keyUsers[s.key][s.client] = true
		}
	case "renew":
		if s := rn.stays[l.Visit]; s != nil && s.in >= 0 && s.out < 0 && !s.unbounded {
			s.upTo, s.promised = max(s.upTo, l.ValidUntil), true
		}
	case "exit":
		if s := rn.stays[l.Visit]; s != nil {
			s.out = l.Return
		}
	case "lost":
		if _, seen := rn.told[l.Visit]; !seen && l.Visit != 0 {
			rn.told[l.Visit] = l.Return
		}
	case "fault":
		if l.Fault == nil {
			return
		}
		f := faultLine{index: l.Fault.Index, client: l.Client, from: l.Invoke, to: l.Return, failed: l.Fault.Error != "", lease: l.Fault.Lease}
		if l.Fault.LostAt != nil {
			f.lost, f.lostAt = true, *l.Fault.LostAt
		}
		rn.faults = append(rn.faults, f)
	}
}

// judge applies the rule to fault f: among the visits inside when it
// struck (the one it was aimed at, if any), the first that opened the race
// with the most requests, else the first the lock held with the most.
func (rn *expRun) judge(f faultLine) Exposure {
	best := Exposure{Index: f.index, Holder: -1, Setting: true}
	for _, s := range rn.order {
		if s.in <= f.from {
			best.Setting = false
			break
		}
	}
	found := false
	for _, s := range rn.order {
		out := s.out
		if out < 0 {
			out = rn.last
		}
		if s.in > f.from || out <= f.from || (f.client >= 0 && s.client != f.client) {
			continue
		}
		e := rn.one(f, s, out)
		better := !found ||
			e.Exposed && (!best.Exposed || e.Attempts > best.Attempts) ||
			!best.Exposed && e.Held && (!best.Held || e.Attempts > best.Attempts)
		if better {
			best = e
		}
		found = true
	}
	return best
}

// one judges fault f for the visit s, which leaves at out.
func (rn *expRun) one(f faultLine, s *stay, out int64) Exposure {
	e := Exposure{Index: f.index, Holder: s.client}
	runsTo := out // the promise's end, or out for an unbounded one
	if !s.unbounded {
		runsTo = s.upTo
		if !s.promised {
			runsTo = s.in
		}
	}
	var spans [][2]int64
	if f.lost {
		if a, b := max(f.lostAt, s.in), min(out, runsTo); b > a {
			spans = append(spans, [2]int64{a, b})
		}
	}
	if s.promised && !s.unbounded && runsTo < out {
		if a := max(runsTo, f.from); out > a {
			spans = append(spans, [2]int64{a, out})
		}
	}
	merged := mergeSpans(spans)
	for _, sp := range merged {
		e.DurationNs += sp[1] - sp[0]
	}
	count := func(spans [][2]int64) int {
		inside := func(t int64) bool {
			for _, sp := range spans {
				if t >= sp[0] && t <= sp[1] {
					return true
				}
			}
			return false
		}
		meets := func(lo, hi int64) bool {
			for _, sp := range spans {
				if lo <= sp[1] && hi >= sp[0] {
					return true
				}
			}
			return false
		}
		n, seen := 0, map[int]bool{}
		for _, r := range rn.requests[s.key] {
			if r.client != s.client && !r.end && !r.standing && inside(r.at) {
				n++
				seen[r.call] = true
			}
		}
		for _, r := range rn.requests[s.key] {
			if r.client != s.client && r.end && !seen[r.call] && inside(r.at) {
				n++
				seen[r.call] = true
			}
		}
		for _, r := range rn.requests[s.key] {
			if r.client != s.client && r.standing && !seen[r.call] && meets(r.at, r.until) {
				n++
				seen[r.call] = true
			}
		}
		return n
	}
	if e.DurationNs > 0 {
		e.Exposed, e.Attempts = true, count(merged)
		return e
	}
	if f.lost || (!s.promised && !s.unbounded) {
		return e // the race never opened
	}
	to := f.to
	if to <= f.from {
		to = rn.last
	}
	e.Held, e.Attempts = true, count([][2]int64{{f.from, min(to, out+f.lease)}})
	return e
}
