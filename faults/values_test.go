package faults

import (
	"encoding/json"
	"testing"
	"time"
)

// TestValuesJSON: a value field kept in Fault.Values comes back from JSON
// with its kind's Go type, and copies of a Fault do not share a SetValue.
func TestValuesJSON(t *testing.T) {
	f := Fault{Type: Drop, Link: "clients->redis-0", Latency: time.Second}
	if err := f.SetValue("close_after", 1500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	g := f
	if err := g.SetValue("close_after", time.Second); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	var back Fault
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if d := back.Duration("close_after"); d != 1500*time.Millisecond || back.Latency != time.Second {
		t.Errorf("%s read back: close_after %v, latency %v", b, d, back.Latency)
	}
	if err := json.Unmarshal([]byte(`{"Type":"drop","Values":{"nope":1}}`), &back); err == nil {
		t.Error("an undeclared value field read back")
	}
}
