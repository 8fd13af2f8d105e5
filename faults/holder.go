package faults

import (
	"context"
	"fmt"
)

// Holder is the selector for the client inside the critical section when a
// fault starts (a contract name: docs/faults.md).
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
// section, waiting for one through env.Holder, which holds it there until
// its Release (the caller's to call). held is nil when f does not name
// holder.
func resolveHolder(ctx context.Context, env Env, f Fault) (Fault, *HeldClient, error) {
	if !usesHolder(f) {
		return f, nil, nil
	}
	if env.Holder == nil {
		return f, nil, ErrNoHolder
	}
	h, err := env.Holder(ctx)
	if err != nil {
		return f, nil, fmt.Errorf("wait for a client in the critical section: %w", err)
	}
	if h.Release == nil {
		h.Release = func() {}
	}
	name := ClientName(h.Client)
	return mapNames(f, func(s string) string {
		if s == Holder {
			return name
		}
		return s
	}), &h, nil
}
