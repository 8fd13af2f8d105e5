package checker

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/recheck"
)

// zombieCases are the hand-written histories of testdata/zombies with the
// figures docs/verdicts.md ("Zombie time") gives them; recheck's tests
// judge the same files and restate the figures.
var zombieCases = []struct {
	file       string
	lostLeases int
	p50, max   time.Duration
}{
	// paused past its promise (100 ms), told at 250 ms, left at 400 ms
	{"paused-told.jsonl", 1, ms(150), ms(150)},
	// a restart took the key at 120 ms; never told, it left at 300 ms
	{"fault-untold.jsonl", 1, ms(180), ms(180)},
	// promises outlive the visits; the faults took the state after the
	// holder left, from another client, or failed
	{"none.jsonl", 0, 0, 0},
	// zombies of 100, 300, 0 (told before the promise ran out) and 150 ms
	// (still inside at the end)
	{"four.jsonl", 4, ms(125), ms(300)},
}

// TestZombieHistories: the replay gives each hand-written history its
// figures, and the independent re-check gives the same.
func TestZombieHistories(t *testing.T) {
	for _, c := range zombieCases {
		t.Run(c.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", "zombies", c.file))
			if err != nil {
				t.Fatal(err)
			}
			sums, err := Replay(bytes.NewReader(data), FencingOff)
			if err != nil {
				t.Fatal(err)
			}
			want := Zombies{LostLeases: c.lostLeases, P50: c.p50, Max: c.max}
			if got := sums[0].Zombies; got != want {
				t.Errorf("replay: %+v, want %+v", got, want)
			}
			re, err := recheck.Zombies(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			r := re[0]
			if got := (Zombies{LostLeases: r.LostLeases, P50: time.Duration(r.P50Ns), Max: time.Duration(r.MaxNs)}); got != want {
				t.Errorf("recheck: %+v, want %+v", got, want)
			}
		})
	}
}

// TestZombiesLive: a live resource without faults (no TrackExposure)
// still finds the holder that stayed past its promise, and the lost line
// Record takes after its exit times the zombie; a visit inside its
// promise is no lost lease.
func TestZombiesLive(t *testing.T) {
	f := newFake(t, FencingOff)
	f.at(1).enter("a", Visit{Lock: "L", Client: 0, Token: 1, Acquired: ms(1), ValidUntil: ms(100)})
	f.at(400).exit("a")
	if err := f.s.Record(context.Background(), Op{Op: OpLost, Client: 0, Lock: "L", Visit: f.ids["a"],
		Invoke: int64(ms(250)), Return: int64(ms(250)), Outcome: "lost_while_held"}); err != nil {
		t.Fatal(err)
	}
	f.at(401).enter("b", Visit{Lock: "L", Client: 1, Token: 2, Acquired: ms(401), ValidUntil: ms(1400)})
	f.at(500).exit("b")
	want := Zombies{LostLeases: 1, P50: ms(150), Max: ms(150)}
	if got := f.s.Summary().Zombies; got != want {
		t.Errorf("zombies %+v, want %+v", got, want)
	}
}

// TestLostLeases: the rule on single visits, one per line of it.
func TestLostLeases(t *testing.T) {
	lost := func(start, at, client int) FaultSpan {
		return FaultSpan{Start: ms(start), End: ms(start + 50), Client: client, Lost: true, LostAt: ms(at)}
	}
	in := func(enter, exit, promise int) ExpVisit {
		return ExpVisit{Client: 0, Lock: "L", Enter: ms(enter), Exit: ms(exit), PromiseEnd: ms(promise), Promised: true}
	}
	told := func(v ExpVisit, at int) ExpVisit { v.Told, v.Learnt = true, ms(at); return v }
	for _, c := range []struct {
		name   string
		faults []FaultSpan
		visit  ExpVisit
		lost   bool
		zombie time.Duration
	}{
		{"inside its promise", nil, in(0, 100, 200), false, 0},
		{"past its promise, never told", nil, in(0, 300, 100), true, ms(200)},
		{"past its promise, told", nil, told(in(0, 300, 100), 180), true, ms(80)},
		{"told before the loss", nil, told(in(0, 300, 100), 50), true, 0},
		{"told after it left: counted to its exit", nil, told(in(0, 300, 100), 350), true, ms(200)},
		{"state lost while inside", []FaultSpan{lost(50, 120, -1)}, in(0, 300, 1000), true, ms(180)},
		{"state lost, then the promise ran out: the earlier", []FaultSpan{lost(50, 120, -1)}, in(0, 300, 200), true, ms(180)},
		{"promise ran out, then the state was lost: the earlier", []FaultSpan{lost(50, 250, -1)}, in(0, 300, 200), true, ms(100)},
		{"state lost after it left", []FaultSpan{lost(50, 320, -1)}, in(0, 300, 1000), false, 0},
		{"fault struck before it entered", []FaultSpan{lost(10, 120, -1)}, in(20, 300, 1000), false, 0},
		{"fault aimed at another client", []FaultSpan{lost(50, 120, 1)}, in(0, 300, 1000), false, 0},
		{"unbounded promise", nil, ExpVisit{Enter: 0, Exit: ms(300), Unbounded: true, Promised: true}, false, 0},
		{"no promise reported", nil, ExpVisit{Enter: 0, Exit: ms(300)}, false, 0},
		{"still inside at the end (400 ms)", nil, ExpVisit{Enter: 0, Exit: -1, PromiseEnd: ms(100), Promised: true}, true, ms(300)},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := LostLeases(c.faults, []ExpVisit{c.visit}, ms(400))
			want := Zombies{}
			if c.lost {
				want = Zombies{LostLeases: 1, P50: c.zombie, Max: c.zombie}
			}
			if got != want {
				t.Errorf("%+v, want %+v", got, want)
			}
		})
	}
}

// TestZombiesAgree: on 3,000 generated histories (genHistory's visits,
// lost lines at random times after some exits, and up to two fault lines
// that took the lock state, some aimed, some failed) the live resource,
// its replay and the independent re-check find the same lost leases and
// zombie times.
func TestZombiesAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	ctx := context.Background()
	for h := 0; h < 3000; h++ {
		vs := genHistory(rng)
		f := newFake(t, FencingObserve)
		var buf bytes.Buffer
		hist := NewHistory(&buf, 0)
		f.s.SetHistory(hist)
		nFaults := rng.IntN(3)
		if nFaults > 0 {
			f.s.TrackExposure() // as a run with faults does
		}
		type ev struct {
			t    time.Duration
			exit bool
			i    int
		}
		var evs []ev
		for i, v := range vs {
			evs = append(evs, ev{v.enter, false, i}, ev{v.exit, true, i})
		}
		sort.Slice(evs, func(a, b int) bool { return evs[a].t < evs[b].t })
		ids := make([]uint64, len(vs))
		for _, e := range evs {
			f.now = e.t
			v := vs[e.i]
			if !e.exit {
				id, err := f.s.Enter(ctx, v.Visit)
				if err != nil {
					t.Fatal(err)
				}
				ids[e.i] = id
				continue
			}
			if err := f.s.Exit(ctx, ids[e.i]); err != nil {
				t.Fatal(err)
			}
			if rng.IntN(3) == 0 {
				at := int64(v.enter) + int64(rng.IntN(int(v.exit-v.enter)+10))
				if err := f.s.Record(ctx, Op{Op: OpLost, Client: v.Client, Lock: v.Lock, Visit: ids[e.i], Invoke: at, Return: at, Outcome: "lost_while_held"}); err != nil {
					t.Fatal(err)
				}
			}
		}
		end := f.now
		for i := range nFaults {
			start := time.Duration(rng.IntN(int(end) + 1))
			lost := int64(start) + int64(rng.IntN(20))
			line := FaultLine{Index: i, Type: "restart", LostAt: &lost}
			if rng.IntN(5) == 0 {
				line.Error = "did not apply"
			}
			client := -1
			if len(vs) > 0 && rng.IntN(2) == 0 {
				client = vs[rng.IntN(len(vs))].Client
			}
			if err := f.s.Record(ctx, Op{Op: OpFault, Client: client, Invoke: int64(start), Return: int64(start) + 10, Outcome: "ok", Fault: &line}); err != nil {
				t.Fatal(err)
			}
		}
		live := f.s.Summary().Zombies
		if err := hist.Flush(); err != nil {
			t.Fatal(err)
		}
		sums, err := Replay(bytes.NewReader(buf.Bytes()), FencingObserve)
		if err != nil {
			t.Fatal(err)
		}
		re, err := recheck.Zombies(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		r := re[0]
		rz := Zombies{LostLeases: r.LostLeases, P50: time.Duration(r.P50Ns), Max: time.Duration(r.MaxNs)}
		if sums[0].Zombies != live || rz != live {
			t.Fatalf("history %d: live %+v, replay %+v, recheck %+v\n%s", h, live, sums[0].Zombies, rz, buf.Bytes())
		}
	}
}

// TestReferenceZombiesAgree: on every history committed under
// results/reference (real runs: paused holders, restarts that came back
// empty, clock jumps) the replay and the independent re-check find the
// same lost leases and zombie times, and some run lost a lease.
func TestReferenceZombiesAgree(t *testing.T) {
	histories, lost := 0, 0
	err := filepath.WalkDir("../results/reference", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasPrefix(d.Name(), "history.jsonl") {
			return err
		}
		histories++
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.HasSuffix(path, ".gz") {
			zr, err := gzip.NewReader(bytes.NewReader(data))
			if err != nil {
				return err
			}
			if data, err = io.ReadAll(zr); err != nil {
				return err
			}
		}
		sums, err := Replay(bytes.NewReader(data), FencingOff)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		re, err := recheck.Zombies(bytes.NewReader(data))
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		for i, s := range sums {
			r := re[i]
			if got := (Zombies{LostLeases: r.LostLeases, P50: time.Duration(r.P50Ns), Max: time.Duration(r.MaxNs)}); got != s.Zombies {
				t.Errorf("%s run %d: replay %+v, recheck %+v", path, i, s.Zombies, got)
			}
			lost += s.Zombies.LostLeases
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if histories < 100 || lost == 0 {
		t.Fatalf("%d histories, %d lost leases: the reference runs should show some", histories, lost)
	}
	t.Logf("%d histories, %d lost leases, replay and re-check agree", histories, lost)
}
