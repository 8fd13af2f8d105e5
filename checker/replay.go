package checker

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// Replay recomputes every run's Summary from history lines alone (bench
// check): the lines are fed, in their order, to a fresh resource per run
// whose clock reads each line's time. It agrees with the live resource
// because the live one wrote the lines in its own order.
func Replay(r io.Reader, fencing Fencing) (map[int]Summary, error) {
	runs, err := replayInto(r, fencing)
	if err != nil {
		return nil, err
	}
	out := make(map[int]Summary, len(runs))
	for i, s := range runs {
		out[i] = s.Summary()
	}
	return out, nil
}

// replayInto feeds the history lines of r, in their order, to a fresh
// resource per run (by run index) whose clock reads each line's time, and
// returns the resources as the last line left them.
func replayInto(r io.Reader, fencing Fencing) (map[int]*Shared, error) {
	type replay struct {
		s       *Shared
		now     time.Duration
		pending map[uint64]Visit
		ids     map[uint64]uint64 // history visit id -> replayed id, kept after the exit
	}
	runs := map[int]*replay{}
	ctx := context.Background()
	err := readHistory(r, func(n int, op Op) error {
		rp := runs[op.Run]
		if rp == nil {
			rp = &replay{s: New(fencing, time.Time{}), pending: map[uint64]Visit{}, ids: map[uint64]uint64{}}
			rp.s.clock = func() time.Duration { return rp.now }
			// Fault lines come after the last visit: keep every visit,
			// a fault may have taken any one's lease (Summary.Zombies).
			rp.s.TrackExposure()
			runs[op.Run] = rp
		}
		// The resource's own lines (enter, read, write, exit) carry its
		// clock when it wrote them; a client's lines (acquire, renew,
		// release, lost) carry the client's times, which may run ahead of
		// the line's place (a renewal reported late) and must not move the
		// clock the resource's lines are replayed on.
		if t := time.Duration(op.Return); t > rp.now && resourceOp(op.Op) {
			rp.now = t
		}
		id := rp.ids[op.Visit]
		var err error
		switch op.Op {
		case OpAcquire:
			if op.Fences {
				rp.s.fences = true
			}
			if op.Kind != "" {
				rp.s.SetKind(op.Kind, op.Permits)
			}
			if op.Standing {
				rp.s.SetStanding(true)
			}
			rp.pending[op.Visit] = Visit{Lock: op.Lock, Client: op.Client, Token: op.Token,
				Requested: time.Duration(op.Invoke), Acquired: time.Duration(op.Return),
				ValidUntil: time.Duration(op.ValidUntil), Unbounded: op.Unbounded, Estimated: op.Estimated,
				Uncertainty: time.Duration(op.Uncertainty), Shared: op.Mode == ModeShared}
		case OpEnter:
			v, ok := rp.pending[op.Visit]
			if !ok {
				return fmt.Errorf("history line %d: enter of visit %d without its acquire line", n, op.Visit)
			}
			delete(rp.pending, op.Visit)
			rp.ids[op.Visit], err = rp.s.Enter(ctx, v)
		case OpRead:
			_, err = rp.s.Read(ctx, id)
		case OpWrite:
			if werr := rp.s.Write(ctx, id, op.Value); werr != nil && (op.Outcome == "ok" || !isStale(werr)) {
				err = werr
			}
		case OpExit:
			// The id stays known: the visit's release line follows its
			// exit.
			err = rp.s.Exit(ctx, id)
		case OpFault:
			err = rp.s.Record(ctx, op)
		case OpRenew, OpRelease, OpLost:
			// A lost line is written when the holder learnt it, often
			// after its exit, as is the release line.
			op.Visit = id
			err = rp.s.Record(ctx, op)
		case OpAttempt:
			if op.Kind != "" {
				rp.s.SetKind(op.Kind, op.Permits)
			}
			err = rp.s.Record(ctx, op)
		}
		if err != nil {
			return fmt.Errorf("history line %d (%s of visit %d): %w", n, op.Op, op.Visit, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make(map[int]*Shared, len(runs))
	for i, rp := range runs {
		out[i] = rp.s
	}
	return out, nil
}

func isStale(err error) bool { return errors.Is(err, ErrStaleToken) }

// resourceOp reports whether op is a line the resource writes itself.
func resourceOp(op string) bool {
	return op == OpEnter || op == OpRead || op == OpWrite || op == OpExit
}

// readHistory calls each with every line of a history (history.jsonl) in
// order, numbered from 1, once the line is known valid (lineCheck), and
// stops at the first error.
func readHistory(r io.Reader, each func(n int, op Op) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var valid lineCheck
	for n := 1; sc.Scan(); n++ {
		var op Op
		if err := json.Unmarshal(sc.Bytes(), &op); err != nil {
			return fmt.Errorf("history line %d: %w", n, err)
		}
		if err := valid.check(n, op); err != nil {
			return err
		}
		if err := each(n, op); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read history: %w", err)
	}
	return nil
}
