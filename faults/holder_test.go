package faults

import (
	"reflect"
	"testing"
)

// TestExpandWaiters: waiters becomes every client but the holder, and a
// client a group names already stays where it was written.
func TestExpandWaiters(t *testing.T) {
	for _, tc := range []struct {
		name    string
		groups  [][]string
		holder  int
		clients int
		want    [][]string
	}{
		{"all but the holder", [][]string{{"waiters"}, {"etcd-0", "client-1"}}, 1, 4,
			[][]string{{"client-0", "client-2", "client-3"}, {"etcd-0", "client-1"}}},
		{"a written client stays", [][]string{{"waiters"}, {"etcd-0", "client-2"}}, 0, 3,
			[][]string{{"client-1"}, {"etcd-0", "client-2"}}},
		{"two clients", [][]string{{"etcd-0"}, {"waiters"}}, 0, 2,
			[][]string{{"etcd-0"}, {"client-1"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := expandWaiters(tc.groups, tc.holder, tc.clients); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestCutsHolder: a partition cuts the holder when it isolates it or puts
// it (or clients) in a group apart from a server, not when it cuts the
// waiters from the servers the holder stays with.
func TestCutsHolder(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    Fault
		want bool
	}{
		{"isolate holder", Fault{Type: Partition, Isolate: Holder}, true},
		{"holder apart", Fault{Type: Partition, Groups: [][]string{{Holder}, {"etcd-0", Waiters}}}, true},
		{"clients apart", Fault{Type: Partition, Groups: [][]string{{"clients"}, {"zk-0"}}}, true},
		{"waiters apart", Fault{Type: Partition, Groups: [][]string{{Waiters}, {"etcd-0", Holder}}}, false},
		{"waiters only", Fault{Type: Partition, Groups: [][]string{{Waiters}, {"etcd-0"}}}, false},
		{"holder among clients", Fault{Type: Partition, Groups: [][]string{{Holder, "client-1"}, {Waiters}}}, false},
	} {
		if got := cutsHolder(tc.f); got != tc.want {
			t.Errorf("%s: cutsHolder = %v, want %v", tc.name, got, tc.want)
		}
	}
}
