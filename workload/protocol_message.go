package workload

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
)

// message is one line a client program wrote: a JSON object with an "op"
// field. Fields are read one by one so a wrong one gets its own message.
type message struct {
	op     string
	raw    []byte
	fields map[string]json.RawMessage
}

// decode parses one protocol line.
func decode(line []byte) (message, error) {
	m := message{raw: line}
	d := json.NewDecoder(bytes.NewReader(line))
	d.UseNumber()
	if err := d.Decode(&m.fields); err != nil || m.fields == nil {
		return m, fmt.Errorf("said %q: not a JSON object", clip(line))
	}
	op, ok := m.fields["op"]
	if !ok {
		return m, fmt.Errorf("said %q: missing field op", clip(line))
	}
	if err := json.Unmarshal(op, &m.op); err != nil {
		return m, fmt.Errorf("said %q: field op must be a string", clip(line))
	}
	return m, nil
}

func clip(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "..."
	}
	return string(b)
}

func (m message) errorf(format string, args ...any) error {
	return fmt.Errorf("%s message %s: %s", m.op, clip(m.raw), fmt.Sprintf(format, args...))
}

// number returns a numeric field; ok is false when it is absent or null.
func (m message) number(name string) (v float64, ok bool, err error) {
	raw, ok := m.fields[name]
	if !ok || string(raw) == "null" {
		return 0, false, nil
	}
	var n json.Number
	if json.Unmarshal(raw, &n) != nil {
		return 0, false, m.errorf("field %s must be a number (got %s)", name, raw)
	}
	v, err = n.Float64()
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false, m.errorf("field %s must be a number (got %s)", name, raw)
	}
	return v, true, nil
}

// uint returns a required non-negative integer field (a fencing token).
func (m message) uint(name string) (uint64, error) {
	return integer[uint64](m, name, "an integer >= 0", "; 0 when the library gives no fencing token")
}

// int returns a required integer field.
func (m message) int(name string) (int64, error) { return integer[int64](m, name, "an integer", "") }

// integer returns m's required integer field name; what says which
// integers it takes and hint what to send when it is missing.
func integer[T int64 | uint64](m message, name, what, hint string) (T, error) {
	raw, ok := m.fields[name]
	if !ok {
		return 0, m.errorf("missing field %s (%s%s)", name, what, hint)
	}
	var v T
	if json.Unmarshal(raw, &v) != nil {
		return 0, m.errorf("field %s must be %s (got %s)", name, what, raw)
	}
	return v, nil
}

// str returns a string field; ok is false when it is absent.
func (m message) str(name string) (string, bool) {
	var s string
	raw, ok := m.fields[name]
	if !ok || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// oneOf returns a required string field that must be one of allowed.
func (m message) oneOf(name string, allowed ...string) (string, error) {
	s, ok := m.str(name)
	if !ok {
		return "", m.errorf("missing or non-string field %s (one of %v)", name, allowed)
	}
	for _, a := range allowed {
		if s == a {
			return s, nil
		}
	}
	return "", m.errorf("field %s is %q, want one of %v", name, s, allowed)
}

// duration returns an optional field in microseconds or milliseconds as a
// duration; it must be >= 0.
func (m message) duration(name string, unit float64) (d float64, ok bool, err error) {
	v, ok, err := m.number(name)
	if err != nil || !ok {
		return 0, ok, err
	}
	if v < 0 {
		return 0, false, m.errorf("field %s must be >= 0 (got %v)", name, v)
	}
	return v * unit, true, nil
}
