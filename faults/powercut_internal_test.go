package faults

import (
	"slices"
	"testing"
)

// TestChangedKeys: a key is lost when it is absent afterwards or holds
// another value (a waiter set it again: the holder's value is gone),
// whatever the key count says; keys that only appeared do not count.
func TestChangedKeys(t *testing.T) {
	before := map[string]string{"lock-0": "client-1:7", "lock-1": "client-2:8", "lock-2": "client-3:9"}
	after := map[string]string{"lock-0": "client-1:7", "lock-1": "client-4:10", "lock-3": "client-5:11"}
	if got, want := changedKeys(before, after), []string{"lock-1", "lock-2"}; !slices.Equal(got, want) {
		t.Errorf("changedKeys = %v, want %v", got, want)
	}
	if got := changedKeys(before, before); len(got) != 0 {
		t.Errorf("changedKeys of equal maps = %v", got)
	}
}
