package recheck

import (
	"fmt"
	"time"

	"github.com/anishathalye/porcupine"
)

// counterModel: per lock, each grant must hand out a token greater than
// every grant ordered before it. Porcupine looks for an order of the
// grants consistent with their [request, reply] intervals in which that
// holds.
var counterModel = porcupine.Model{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		idx := map[string]int{}
		var out [][]porcupine.Operation
		for _, op := range h {
			l := op.Input.(string)
			i, ok := idx[l]
			if !ok {
				i = len(out)
				idx[l] = i
				out = append(out, nil)
			}
			out[i] = append(out[i], op)
		}
		return out
	},
	Init: func() interface{} { return uint64(0) },
	Step: func(state, input, output interface{}) (bool, interface{}) {
		next := output.(uint64)
		if next <= state.(uint64) {
			return false, state
		}
		return true, next
	},
}

// tokenOrder asks porcupine about one run's grants with a token.
func tokenOrder(grants map[string][]*visit, timeout time.Duration) string {
	var h []porcupine.Operation
	for lock, gs := range grants {
		for _, g := range gs {
			h = append(h, porcupine.Operation{Input: lock, Output: g.token, Call: g.req, Return: g.acq})
		}
	}
	switch {
	case len(h) == 0:
		return ""
	case len(h) > MaxTokenOrderOps:
		return fmt.Sprintf("skipped: more than %d grants", MaxTokenOrderOps)
	}
	switch porcupine.CheckOperationsTimeout(counterModel, h, timeout) {
	case porcupine.Ok:
		return "ok"
	case porcupine.Illegal:
		return "violation"
	}
	return "unknown"
}
