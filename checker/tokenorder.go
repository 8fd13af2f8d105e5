package checker

import (
	"fmt"
	"io"
	"time"

	"github.com/anishathalye/porcupine"
)

// Token-order verdicts of CheckTokenOrder.
const (
	TokenOrderOK        = "ok"
	TokenOrderViolation = "violation"
	TokenOrderUnknown   = "unknown" // porcupine ran out of time
)

// MaxTokenOrderOps bounds the grants handed to porcupine per run: beyond
// it the run is not checked (its verdict says so).
const MaxTokenOrderOps = 50000

// TokenOrder is porcupine's second opinion on one run's fencing tokens.
type TokenOrder struct {
	Verdict string // TokenOrderOK, TokenOrderViolation, TokenOrderUnknown, or why it was skipped
	// Visualize writes porcupine's HTML visualisation (nil unless a
	// violation was found).
	Visualize func(w io.Writer) error
}

// tokenModel is a strictly increasing counter per lock: each grant (from
// its request to its return, on the harness clock) must return a token
// greater than every grant linearized before it. Porcupine searches for an
// order consistent with real time in which that holds; none exists exactly
// when some grant's token is not greater than that of a grant that returned
// before it was requested, or two grants share a token.
var tokenModel = porcupine.Model{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		by := map[string][]porcupine.Operation{}
		var order []string
		for _, op := range h {
			l := op.Input.(string)
			if _, ok := by[l]; !ok {
				order = append(order, l)
			}
			by[l] = append(by[l], op)
		}
		out := make([][]porcupine.Operation, 0, len(order))
		for _, l := range order {
			out = append(out, by[l])
		}
		return out
	},
	Init: func() interface{} { return uint64(0) },
	Step: func(state, input, output interface{}) (bool, interface{}) {
		t := output.(uint64)
		return t > state.(uint64), t
	},
	DescribeOperation: func(input, output interface{}) string {
		return fmt.Sprintf("grant %s -> token %d", input, output)
	},
	DescribeState: func(state interface{}) string { return fmt.Sprintf("last token %d", state) },
}

// CheckTokenOrder reads every run's grants (acquire lines with a non-zero
// token) from a history and checks each run's token sequence with
// porcupine, giving each check at most timeout.
func CheckTokenOrder(r io.Reader, timeout time.Duration) (map[int]TokenOrder, error) {
	ops := map[int][]porcupine.Operation{}
	err := readHistory(r, func(_ int, op Op) error {
		// Readers' and a semaphore's tokens fence nothing (fencingGrant).
		if op.Op == OpAcquire && op.Token != 0 && op.Mode != ModeShared && op.Kind != KindSemaphore && len(ops[op.Run]) <= MaxTokenOrderOps {
			ops[op.Run] = append(ops[op.Run], porcupine.Operation{
				ClientId: op.Client, Input: op.Lock, Output: op.Token, Call: op.Invoke, Return: op.Return,
			})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := map[int]TokenOrder{}
	for run, h := range ops {
		if len(h) > MaxTokenOrderOps {
			out[run] = TokenOrder{Verdict: fmt.Sprintf("skipped: more than %d grants", MaxTokenOrderOps)}
			continue
		}
		res, info := porcupine.CheckOperationsVerbose(tokenModel, h, timeout)
		switch res {
		case porcupine.Ok:
			out[run] = TokenOrder{Verdict: TokenOrderOK}
		case porcupine.Illegal:
			out[run] = TokenOrder{Verdict: TokenOrderViolation, Visualize: func(w io.Writer) error {
				return porcupine.Visualize(tokenModel, info, w)
			}}
		default:
			out[run] = TokenOrder{Verdict: TokenOrderUnknown}
		}
	}
	return out, nil
}
