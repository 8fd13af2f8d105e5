package checker

import (
	"encoding/json"
	"strconv"
)

// appendJSON appends op as one JSON line, the same as encoding/json would
// write it (field names and omitempty of Op's tags), without reflection:
// the resource writes a line per operation under its mutex, so the cost
// is paid by every client.
func (op *Op) appendJSON(b []byte) []byte {
	b = append(b, `{"run":`...)
	b = strconv.AppendInt(b, int64(op.Run), 10)
	b = append(b, `,"seq":`...)
	b = strconv.AppendUint(b, op.Seq, 10)
	b = append(b, `,"client":`...)
	b = strconv.AppendInt(b, int64(op.Client), 10)
	b = append(b, `,"lock":`...)
	b = appendString(b, op.Lock)
	b = append(b, `,"op":`...)
	b = appendString(b, op.Op)
	if op.Visit != 0 {
		b = append(b, `,"visit":`...)
		b = strconv.AppendUint(b, op.Visit, 10)
	}
	b = append(b, `,"invoke_ns":`...)
	b = strconv.AppendInt(b, op.Invoke, 10)
	b = append(b, `,"return_ns":`...)
	b = strconv.AppendInt(b, op.Return, 10)
	if op.Token != 0 {
		b = append(b, `,"token":`...)
		b = strconv.AppendUint(b, op.Token, 10)
	}
	if op.ValidUntil != 0 {
		b = append(b, `,"valid_until_ns":`...)
		b = strconv.AppendInt(b, op.ValidUntil, 10)
	}
	if op.Unbounded {
		b = append(b, `,"unbounded":true`...)
	}
	if op.Estimated {
		b = append(b, `,"estimated":true`...)
	}
	if op.Fences {
		b = append(b, `,"fences":true`...)
	}
	if op.Uncertainty != 0 {
		b = append(b, `,"uncertainty_ns":`...)
		b = strconv.AppendInt(b, op.Uncertainty, 10)
	}
	if op.Value != 0 {
		b = append(b, `,"value":`...)
		b = strconv.AppendInt(b, op.Value, 10)
	}
	b = append(b, `,"outcome":`...)
	b = appendString(b, op.Outcome)
	if len(op.Tries) > 0 {
		b = append(b, `,"tries_ns":[`...)
		for i, t := range op.Tries {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, t, 10)
		}
		b = append(b, ']')
	}
	if op.Fault != nil {
		f, _ := json.Marshal(op.Fault)
		b = append(b, `,"fault":`...)
		b = append(b, f...)
	}
	if op.Mode != "" {
		b = append(b, `,"mode":`...)
		b = appendString(b, op.Mode)
	}
	if op.Kind != "" {
		b = append(b, `,"kind":`...)
		b = appendString(b, op.Kind)
	}
	if op.Permits != 0 {
		b = append(b, `,"permits":`...)
		b = strconv.AppendInt(b, int64(op.Permits), 10)
	}
	if op.Standing {
		b = append(b, `,"standing":true`...)
	}
	return append(b, "}\n"...)
}

// appendString appends s as a JSON string: directly when it needs no
// escaping (lock names, op names, outcomes), else through encoding/json.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
