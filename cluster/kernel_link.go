package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// kernelLink is what a Link of provider netns holds instead of proxies:
// the packet rules cutting it, in the namespace of its server end.
type kernelLink struct {
	c       *Cluster
	mu      sync.Mutex
	filters []PacketFilter
}

// addKernelLink registers the link from->to of provider netns; its Addr is
// the server's own address (there is no proxy to go through).
func (c *Cluster) addKernelLink(from, to string) error {
	n, ok := c.Node(to)
	if !ok {
		return fmt.Errorf("cluster: link %s->%s: unknown node %s", from, to, to)
	}
	l := &Link{Name: from + "->" + to, From: from, To: to, addrs: []string{n.Addr()},
		kernel: &kernelLink{c: c}}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.linkByKey[l.Name]; ok {
		return fmt.Errorf("cluster: duplicate link %s", l.Name)
	}
	c.links = append(c.links, l)
	c.linkByKey[l.Name] = l
	return nil
}

// errNoProxy is the error of a proxy-only operation on a link of provider
// netns.
func errNoProxy(l *Link, what string) error {
	return fmt.Errorf("link %s: %s needs a proxy, and links of provider netns have none: %w", l.Name, what, ErrUnsupported)
}

// CutWays drops the link's packets in the given directions: forward is
// From to To, backward To to From (provider netns only: a proxied link
// holds both directions or none, see Cut). Both directions is Cut. Heal
// ends it. Cutting a link already cut adds nothing.
func (l *Link) CutWays(forward, backward bool) error {
	k := l.kernel
	if k == nil {
		if forward && backward {
			return l.Cut()
		}
		return fmt.Errorf("link %s: a one-way cut needs provider netns: %w", l.Name, ErrUnsupported)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.filters) > 0 {
		return nil
	}
	var rules []PacketRule
	if forward {
		rules = append(rules, PacketRule{From: l.From, To: l.To, Action: PacketDrop})
	}
	if backward {
		rules = append(rules, PacketRule{From: l.To, To: l.From, Action: PacketDrop})
	}
	for _, r := range rules {
		f, err := k.c.AddPacketRule(r)
		if err != nil {
			return errors.Join(err, k.removeLocked())
		}
		k.filters = append(k.filters, f)
	}
	return nil
}

func (k *kernelLink) removeLocked() error {
	var errs []error
	for _, f := range k.filters {
		if err := f.Remove(); err != nil {
			errs = append(errs, err)
		}
	}
	k.filters = nil
	return errors.Join(errs...)
}

func (k *kernelLink) heal(context.Context) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.removeLocked()
}

func (k *kernelLink) isCut() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.filters) > 0
}

// Dropped is how many packets the rules cutting the link dropped so far
// (provider netns; 0 for a proxied link or a link not cut).
func (l *Link) Dropped() uint64 {
	if l.kernel == nil {
		return 0
	}
	l.kernel.mu.Lock()
	defer l.kernel.mu.Unlock()
	var n uint64
	for _, f := range l.kernel.filters {
		m, _ := f.Matched()
		n += m
	}
	return n
}

// Kernel reports whether the link is carried by the kernel with no proxy
// (provider netns): faults on it are packet rules.
func (l *Link) Kernel() bool { return l.kernel != nil }
