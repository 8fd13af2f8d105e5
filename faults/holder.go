package faults

import (
	"context"
	"fmt"
	"strconv"
)

// Holder is the selector for the client inside the critical section when a
// fault starts (contract, DESIGN.md §3).
const Holder = "holder"

// usesHolder reports whether f names holder anywhere.
func usesHolder(f Fault) bool {
	found := false
	mapNames(f, func(s string) string {
		if s == Holder {
			found = true
		}
		return s
	})
	return found
}

// resolveHolder replaces holder in f by the client inside the critical
// section, waiting for one through env.Holder. holder is that client's
// index, -1 when f does not name holder.
func resolveHolder(ctx context.Context, env Env, f Fault) (Fault, int, error) {
	if !usesHolder(f) {
		return f, -1, nil
	}
	if env.Holder == nil {
		return f, -1, ErrNoHolder
	}
	i, err := env.Holder(ctx)
	if err != nil {
		return f, -1, fmt.Errorf("wait for a client in the critical section: %w", err)
	}
	name := "client-" + strconv.Itoa(i)
	return mapNames(f, func(s string) string {
		if s == Holder {
			return name
		}
		return s
	}), i, nil
}
