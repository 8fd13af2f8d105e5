package scenarios

import (
	"encoding/json"
	"strings"

	"github.com/locklab/locklab/locks"
)

// execName is the lock that runs a scenario-supplied program speaking the
// client protocol: {name: exec, backend: B, command: [...]}, B redis,
// zookeeper, etcd or a backend of the cluster's table (postgres, ...).
const execName = "exec"

// execCommand stores an exec entry's command (a list of strings, the
// program first) as its "command" option, a JSON list.
func (p *parser) execCommand(l *Lock, m *lockMeta, e entry, field string) {
	items, ok := p.sequence(e.val, field)
	if !ok {
		return
	}
	if len(items) == 0 {
		p.add(e.line(), field, "needs at least the program: [program, arg, ...]")
		return
	}
	argv := make([]string, len(items))
	for i, n := range items {
		v, msg := asString(n)
		if msg != "" {
			p.add(n.Line, index(field, i), "%s", msg)
			return
		}
		argv[i] = v
	}
	b, _ := json.Marshal(argv)
	if l.Options == nil {
		l.Options = map[string]string{}
	}
	l.Options["command"] = string(b)
	m.written = append(m.written, "command="+strings.Join(argv, " "))
}

// execLock checks an exec entry after its fields were read: backend and
// command are required, and the backend (not the registry's) decides which
// cluster the lock needs.
func (p *parser) execLock(l *Lock, m *lockMeta) {
	if l.Name != execName || !m.known {
		return
	}
	for _, f := range []struct{ name, want string }{
		{"backend", locks.ServerBackendList() + ": the servers the program uses"},
		{"command", "the program and its arguments, e.g. [python3, my_client.py]"},
	} {
		if _, ok := l.Options[f.name]; !ok && !p.reported(join(m.path, f.name)) {
			p.add(m.line, join(m.path, f.name), "required for exec: %s", f.want)
		}
	}
	if b, ok := l.Options["backend"]; ok {
		m.spec.Backend = locks.Backend(b)
	}
}

// reported reports whether a problem was already added for field or one
// of its items.
func (p *parser) reported(field string) bool {
	for _, pr := range p.list {
		if pr.Field == field || strings.HasPrefix(pr.Field, field+"[") {
			return true
		}
	}
	return false
}
