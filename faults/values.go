package faults

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"
)

// ValueKind is the kind of value a fault's value field takes.
type ValueKind string

// Kinds of Value.Kind.
const (
	KindDuration ValueKind = "duration" // a Go duration: >= 0, or > 0 when Positive
	KindNumber   ValueKind = "number"   // an integer: >= 0, or >= 1 when Positive
	KindPercent  ValueKind = "percent"  // an integer 1..100
	KindEnum     ValueKind = "enum"     // one of Allowed; "" is the first
	KindFactor   ValueKind = "factor"   // a number with a fraction (float64): > 0
)

// Value declares one value field of a fault type (a field besides type,
// at, for and the target): its name as a scenario file writes it, its kind
// and bounds, and the words of the reference and of the parser's
// messages. A row of the fault table lists the values its type takes;
// Check, scenario decoding, the reference (docs/scenario-file.md) and
// FieldNames follow the declaration, so a new value field is one
// declaration in its row.
type Value struct {
	Name     string
	Kind     ValueKind
	Required bool
	// Positive values must be > 0 (durations) or >= 1 (numbers); a
	// Positive field should be Required, since an unset value is 0.
	Positive bool
	// Signed durations may be negative; a Signed and Positive one must
	// not be 0.
	Signed bool
	// Allowed are the values of a KindEnum field, the default first.
	Allowed []string
	Default string // as the reference shows it; "" when there is none
	Example string // a YAML value that parses
	// Hint says what a required field means, for "required" errors:
	// "the delay to add, e.g. latency: 500ms".
	Hint string
	Doc  string // one line for the reference
}

// Bounds says in words which values v accepts besides its kind, for the
// reference: ">= 0", "> 0", ">= 1", "1..100"; "" for an enumeration.
func (v Value) Bounds() string {
	switch {
	case v.Kind == KindPercent:
		return "1..100"
	case v.Kind == KindEnum:
		return ""
	case v.Kind == KindFactor:
		return "> 0"
	case v.Signed && v.Positive:
		return "≠ 0"
	case v.Signed:
		return ""
	case !v.Positive:
		return ">= 0"
	case v.Kind == KindDuration:
		return "> 0"
	}
	return ">= 1"
}

// check reports why x, the value a fault holds for v, is out of v's
// bounds.
func (v Value) check(x any) error {
	rel := ">= 0"
	if v.Positive {
		rel = "> 0"
	}
	switch x := x.(type) {
	case time.Duration:
		if v.Signed {
			if v.Positive && x == 0 {
				return fmt.Errorf("must not be 0")
			}
			return nil
		}
		if x < 0 || (v.Positive && x == 0) {
			return fmt.Errorf("must be %s (got %s)", rel, x)
		}
	case int:
		if v.Kind == KindPercent && (x < 1 || x > 100) {
			return fmt.Errorf("must be 1..100 (got %d)", x)
		}
		if x < 0 || (v.Positive && x == 0) {
			return fmt.Errorf("must be %s (got %d)", rel, x)
		}
	case float64:
		if x <= 0 {
			return fmt.Errorf("must be > 0 (got %g)", x)
		}
	case string:
		if x != "" && !slices.Contains(v.Allowed, x) {
			return fmt.Errorf("%s %q: allowed %s", v.Name, x, strings.Join(v.Allowed, ", "))
		}
	}
	return nil
}

// zero is the value of v's kind that an unset field holds.
func (v Value) zero() any {
	switch v.Kind {
	case KindDuration:
		return time.Duration(0)
	case KindEnum:
		return ""
	case KindFactor:
		return float64(0)
	}
	return 0
}

// LookupValue returns the declaration of the value field called name, as
// the first row of the fault table taking it declares it.
func LookupValue(name string) (Value, bool) {
	for _, t := range table {
		if i := slices.IndexFunc(t.Values, func(v Value) bool { return v.Name == name }); i >= 0 {
			return t.Values[i], true
		}
	}
	return Value{}, false
}

// slot is the field of f holding value field name: a *time.Duration, *int
// or *string; nil when Fault has no field of its own for it (the value is
// then in f.Values).
func (f *Fault) slot(name string) any {
	switch name {
	case "latency":
		return &f.Latency
	case "jitter":
		return &f.Jitter
	case "rate_kbps":
		return &f.RateKbps
	case "delay":
		return &f.Delay
	case "offset":
		return &f.Offset
	case "percent":
		return &f.Percent
	case "direction":
		return &f.Direction
	}
	return nil
}

// value is the value field name of f: a time.Duration, an int, a
// float64 or a string; nil when it is neither a field of Fault nor in f.Values.
func (f Fault) value(name string) any {
	switch p := f.slot(name).(type) {
	case *time.Duration:
		return *p
	case *int:
		return *p
	case *string:
		return *p
	}
	if x, ok := f.Values[name]; ok {
		return x
	}
	if v, ok := LookupValue(name); ok {
		return v.zero()
	}
	return nil
}

// Duration is the duration value field name of f; 0 when unset.
func (f Fault) Duration(name string) time.Duration { d, _ := f.value(name).(time.Duration); return d }

// Number is the number or percent value field name of f; 0 when unset.
func (f Fault) Number(name string) int { n, _ := f.value(name).(int); return n }

// Factor is the factor value field name of f; 0 when unset.
func (f Fault) Factor(name string) float64 { x, _ := f.value(name).(float64); return x }

// Text is the enumerated value field name of f; "" when unset.
func (f Fault) Text(name string) string { s, _ := f.value(name).(string); return s }

// SetValue sets the value field name of f to x, which must have the Go
// type of the field's kind (time.Duration; int for numbers and percents;
// float64 for factors; string for enumerations). f.Values is copied, never changed in place, so
// copies of a Fault do not share a change.
func (f *Fault) SetValue(name string, x any) error {
	v, ok := LookupValue(name)
	if !ok {
		return fmt.Errorf("faults: no value field %q", name)
	}
	if want := v.zero(); reflect.TypeOf(want) != reflect.TypeOf(x) {
		return fmt.Errorf("faults: value field %s takes a %T, not a %T", name, want, x)
	}
	switch p := f.slot(name).(type) {
	case *time.Duration:
		*p = x.(time.Duration)
	case *int:
		*p = x.(int)
	case *string:
		*p = x.(string)
	default:
		m := maps.Clone(f.Values)
		if m == nil {
			m = map[string]any{}
		}
		m[name] = x
		f.Values = m
	}
	return nil
}

// UnmarshalJSON reads a Fault as encoding/json writes it (explore keeps
// schedules so), giving each of Values the Go type of its declared kind:
// JSON has numbers only, which would read back as float64.
func (f *Fault) UnmarshalJSON(b []byte) error {
	type plain Fault
	if err := json.Unmarshal(b, (*plain)(f)); err != nil {
		return err
	}
	for name, x := range f.Values {
		v, ok := LookupValue(name)
		n, isNumber := x.(float64)
		switch {
		case !ok:
			return fmt.Errorf("faults: no value field %q", name)
		case isNumber && v.Kind == KindDuration:
			f.Values[name] = time.Duration(n)
		case isNumber && v.Kind == KindFactor:
			f.Values[name] = n
		case isNumber:
			f.Values[name] = int(n)
		}
	}
	return nil
}
