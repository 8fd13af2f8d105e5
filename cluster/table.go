package cluster

// The backend table: servers written once, in a package of their own
// below cluster/ (cluster/backends/...), and registered here. Generic code
// (the plan, Start, Endpoints, scenario sections, fault targets, test
// environments, `bench list`) iterates the table instead of naming them.

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/locklab/locklab/locks"
)

// TableBackend is one row of the backend table: everything locklab knows
// about one server kind.
//
// Redis's row (cluster/backends/redis) is listed first. Its section is
// kept in a Spec as the typed RedisSpec (Spec.Redis; Spec.Declare and
// Spec.SettingsOf convert), and its endpoints and credentials, like
// etcd's and ZooKeeper's, are fields of their own (Endpoints.Redis,
// Credentials.Redis*).
type TableBackend struct {
	// Name is the backend's name everywhere: the scenario section
	// cluster.<Name>, the list cluster.external.<Name>, the locks.Backend
	// value of its locks, the key of Info.Versions and Endpoints.Table.
	Name string
	// Doc is one line for the scenario reference (the section's doc).
	Doc string
	// Fields are the section's fields (cluster.<Name>.<field>).
	Fields []TableField
	// Check validates a section beyond each field's own bounds, for the
	// provider that runs it; it returns the offending field's name and a
	// message, or "", "".
	Check func(s Settings, provider string) (field, msg string)
	// Kinds are the node kinds of its plan with the pattern of their names
	// for messages ("postgres-N"), in plan order.
	Kinds []TableKind
	// Providers are the providers that start its servers (ProviderLocal,
	// ProviderNetns, ProviderDocker); ProviderExternal is always accepted
	// (cluster.external.<Name>).
	Providers []string
	// Binaries are the programs the local provider runs (absolute paths or
	// names on PATH): what `make deps` installs and tests require.
	Binaries []string
	// Files are other files the local provider needs (ZooKeeper's jar).
	Files []string
	// Packages are the Debian packages holding Binaries and Files:
	// what `make deps` installs (through `bench deps --missing`) and `make
	// images` puts in the locklab images.
	Packages []string
	// Installed are paths (glob patterns allowed) of which each must match
	// a file when its server is installed: what `bench deps` checks before
	// it says Packages are missing; nil: Binaries (found on PATH unless
	// absolute) and Files. postgres: its server, not pg_config, which
	// libpq-dev ships without it.
	Installed []string
	// VersionPackage is the Debian package (a dpkg-query pattern:
	// "postgresql-[0-9]*") whose version is its server's, for the labels
	// and tags of `make images`; "": the first of Packages.
	VersionPackage string
	// ClientPort is the port its servers serve clients on by default
	// (etcd 2379), for examples of cluster.external.<Name>.
	ClientPort int
	// ExternalDoc, when set, is the reference's line for its list
	// cluster.external.<Name>; "": "<Name> servers".
	ExternalDoc string
	// Leader, when set, is a selector (a node name in faults: "nats-leader")
	// standing for the node of its first kind whose Role says "leader" when
	// the fault starts.
	Leader string
	// Sessions says its locks are session locks, with no lease: a lock
	// lasts until the server notices its client's session is gone (TCP
	// keepalives, a killed client), so a paused holder keeps it.
	Sessions bool
	// Volatile says its servers keep everything in memory: a restarted
	// server comes back empty, without the keys of the locks it granted
	// (the atlas's restart-empty family then acts on its locks).
	Volatile bool
	// Faults are the server fault types that act on its nodes (pause,
	// kill, restart, power-cut, failover, the clock faults; see also
	// TableKind.Faults). Client-link faults act on every backend.
	Faults []string
	// NoClock, when set, says why clock faults cannot act on its nodes,
	// for the message refusing one.
	NoClock string
	// ReadClock, for a backend whose Faults hold clock faults, reads a
	// node's own wall clock, the evidence a clock fault bit; ClockSource
	// says what it asks ("the log timestamp of srvr").
	ReadClock   func(ctx context.Context, n *Node) (ClockReading, error)
	ClockSource string
	// Fallback, when set, is the source of a link into each node
	// (Fallback->node) for peer connections whose sender the provider's
	// demultiplexer cannot name; planned, with more than one node, where
	// peer links are proxies (every provider but netns). etcd-peers.
	Fallback string
	// DefaultImage is the official image provider docker runs when it is
	// present and the section names none; "": the newest locklab/<Name>.
	DefaultImage string
	// SyncsEveryWrite says whether its servers fsync every write before
	// they answer, with these settings: a power-cut's lossy filesystem
	// then goes without the kernel's writeback cache. nil: never.
	SyncsEveryWrite func(Settings) bool
	// Ping is a raw round trip that shows a server answers, for the
	// evidence of link faults (latency, drop); nil: none. NoPeerPing:
	// only on client links (its peer ports speak another protocol).
	Ping       *TablePing
	NoPeerPing bool
	// Plan returns its nodes in start order (Name and Kind) and its
	// proxied peer links for a section's settings.
	Plan func(Settings) ([]PlanNode, []PlanLink)
	// PacketLinks, when set, are its links for a section's settings where
	// the kernel carries them (Traits.PacketLinks); nil: Plan's.
	PacketLinks func(Settings) []PlanLink
	// Peered, when set, says whether its nodes have peer fronts with these
	// settings (a Fallback link into each where links are proxies, planned
	// before the other links unless Plan places it); nil: when the plan has
	// more than one node.
	Peered func(Settings) bool
	// Endpoints, when set, puts a client's addresses of its client-facing
	// nodes (addrs[i] for nodes[i]) into e; nil: e.Table[<Name>].
	Endpoints func(e *Endpoints, nodes []*Node, addrs []string)
	// Build configures the nodes of its plan (Build.Nodes) for a start:
	// address, command, readiness probe and role per node, and returns how
	// to start them.
	Build func(b *Build) (Started, error)
	// Credentials are the LOCKLAB_<NAME>_* variables its locks log in to
	// servers the user runs with (provider external), in the order they
	// show: ExternalCredentialsFromEnv reads and checks them, and their
	// values reach the locks in Endpoints.Auth.Table[<Name>] and client
	// programs in their environment. None: its servers need no login.
	Credentials []TableCredential
}

// TableCredential declares one credential variable of a table backend:
// Env, what it holds (What: "user", "password", "database", "token",
// "tls-mode" or "cacert"), whether it is Secret (never shown) or names a
// File (which must exist), the values it accepts (Allowed) and the
// credential it Needs beside it.
type TableCredential = locks.Credential

// ClockReading is a server's own wall clock as one query read it: T, the
// server's clock, at some moment between Sent and Received (the
// harness's clock around the query), give or take Unsure beyond that (a
// timestamp's resolution).
type ClockReading struct {
	T, Sent, Received time.Time
	Unsure            time.Duration
}

// TableKind is one node kind of a table backend.
type TableKind struct {
	Kind    string // "postgres", "postgres-replica"
	Pattern string // "postgres-N", "postgres-N-rM"
	// Faults are server fault types that act on nodes of this kind only,
	// beside the row's Faults (Redis's failover: on primaries).
	Faults []string
	// ClockSource, when set, is what the row's ReadClock asks a node of
	// this kind instead of the row's ClockSource (a Sentinel: INFO).
	ClockSource string
}

// TablePing is a raw request and the check of the reply's first bytes.
type TablePing struct {
	Request []byte            // sent on a new connection; nil: the server speaks first
	Reply   int               // how many bytes of the reply to read
	OK      func([]byte) bool // whether they are the server's answer
}

// TableField is one field of a table backend's scenario section.
type TableField struct {
	Name    string
	Kind    string // "int", "bool" or "string"
	Default any    // the value when the field is absent (int, bool, string)
	Min     *int   // the least value of an int field
	Allowed []string
	Example string
	Doc     string
	// DefaultDoc, when set, is what the reference says of the default
	// instead of Default ("the most any lock needs").
	DefaultDoc string
}

// Refuses says why v, a value of f's kind, is not one f takes (below its
// least value, not one of its allowed values), in the words the
// scenario parser uses; "" when f takes it.
func (f TableField) Refuses(v any) string {
	switch x := v.(type) {
	case int:
		if f.Min != nil && x < *f.Min {
			return fmt.Sprintf("must be >= %d (got %d)", *f.Min, x)
		}
		if n := len(f.Allowed); n > 0 && !slices.Contains(f.Allowed, strconv.Itoa(x)) {
			list := f.Allowed[0]
			if n > 1 {
				list = strings.Join(f.Allowed[:n-1], ", ") + " or " + f.Allowed[n-1]
			}
			return fmt.Sprintf("must be %s (got %d)", list, x)
		}
	case string:
		if len(f.Allowed) > 0 && !slices.Contains(f.Allowed, x) {
			return fmt.Sprintf("must be one of %s (got %q)", strings.Join(f.Allowed, ", "), x)
		}
	}
	return ""
}

// Settings are a table backend's section as parsed: each field's value
// (int, bool or string) by name. A field absent from Settings has its
// default.
type Settings map[string]any

// Int is the int field name of s (0 when absent). A row's Plan, Check,
// SyncsEveryWrite and Build get settings with every default filled in
// (TableBackend.Settle), so they read fields this way.
func (s Settings) Int(name string) int { v, _ := s[name].(int); return v }

// String is the string field name of s ("" when absent).
func (s Settings) String(name string) string { v, _ := s[name].(string); return v }

// Bool is the bool field name of s (false when absent).
func (s Settings) Bool(name string) bool { v, _ := s[name].(bool); return v }

// Members is the plan of a backend whose nodes are alike members
// prefix0 .. prefix<n-1> of kind (at least one), with a link for every
// directed pair, grouped by destination (zk-1->zk-0, zk-2->zk-0, ...).
func Members(prefix, kind string, n int) ([]PlanNode, []PlanLink) {
	var nodes []PlanNode
	for i := range max(n, 1) {
		nodes = append(nodes, PlanNode{Name: prefix + strconv.Itoa(i), Kind: kind})
	}
	var links []PlanLink
	for _, to := range nodes {
		for _, from := range nodes {
			if from != to {
				links = append(links, PlanLink{From: from.Name, To: to.Name})
			}
		}
	}
	return nodes, links
}

// Started is what a table backend's Build returns.
type Started struct {
	// Start launches its nodes (Build.StartNodes) in its order and
	// returns once they all serve.
	Start func(ctx context.Context) error
	// Version asks a started server its version; "" when it does not say.
	Version func(ctx context.Context) string
	// Failover, when the backend has one, promotes a replica of group (a
	// primary's node name): it kills the group's current primary, makes a
	// replica the primary and returns what it did.
	Failover func(ctx context.Context, group string) (string, error)
	// Primary, when set, returns the node now serving as the primary of
	// group (a primary's node name): after a failover, the promoted
	// replica (Cluster.Primary).
	Primary func(ctx context.Context, group string) (*Node, error)
	// Close releases what Build made outside the node data dirs; called
	// by Cluster.Close after every server ended.
	Close func() error
}

var table = struct {
	sync.RWMutex
	rows map[string]TableBackend
}{rows: map[string]TableBackend{}}

// RegisterBackend adds a row to the backend table; backend packages call
// it from init. It panics on a duplicate or incomplete row.
func RegisterBackend(b TableBackend) {
	table.Lock()
	defer table.Unlock()
	if b.Name == "" || b.Plan == nil || b.Build == nil || len(b.Kinds) == 0 {
		panic("cluster: RegisterBackend needs a name, kinds, a plan and a build")
	}
	if _, dup := table.rows[b.Name]; dup {
		panic("cluster: duplicate backend " + b.Name)
	}
	if err := checkCredentials(b, table.rows); err != nil {
		panic("cluster: backend " + b.Name + ": " + err.Error())
	}
	if slices.Contains(b.Providers, ProviderDocker) && !slices.ContainsFunc(b.Fields, func(f TableField) bool { return f.Name == ImageField }) {
		b.Fields = append(slices.Clone(b.Fields), TableField{Name: ImageField, Kind: "string", Default: "",
			Example: "locklab/" + b.Name + ":latest",
			Doc:     "provider docker only: the image of its servers (default: the newest locklab/" + b.Name + " tag `make images` built)"})
	}
	table.rows[b.Name] = b
	locks.RegisterTableBackend(locks.Backend(b.Name))
}

// checkCredentials refuses a row's credential variable that names no known
// kind, reads another backend's variable, needs one its row lacks, or
// would show a password or token (not Secret) or a CA file's name (not
// File).
func checkCredentials(b TableBackend, rows map[string]TableBackend) error {
	taken := map[string]string{}
	for _, env := range fixedCredentialEnv {
		taken[env] = "the harness"
	}
	for _, r := range rows {
		for _, v := range r.Credentials {
			taken[v.Env] = r.Name
		}
	}
	whats := map[locks.CredentialKind]bool{}
	for _, v := range b.Credentials {
		whats[v.What] = true
	}
	for _, v := range b.Credentials {
		switch {
		case !strings.HasPrefix(v.Env, "LOCKLAB_"):
			return fmt.Errorf("credential %s: want a LOCKLAB_ variable", v.Env)
		case taken[v.Env] != "":
			return fmt.Errorf("credential %s is read by %s already", v.Env, taken[v.Env])
		case !slices.Contains(locks.CredentialKinds, v.What):
			return fmt.Errorf("credential %s: unknown kind %q (want one of %v)", v.Env, v.What, locks.CredentialKinds)
		case v.Needs != "" && !whats[v.Needs]:
			return fmt.Errorf("credential %s needs a %s, which the row does not declare", v.Env, v.Needs)
		case (v.What == locks.CredPassword || v.What == locks.CredToken) && !v.Secret:
			return fmt.Errorf("credential %s: a %s is a secret (Secret: true)", v.Env, v.What)
		case v.What == locks.CredCACert && !v.File:
			return fmt.Errorf("credential %s: a %s names a file (File: true)", v.Env, v.What)
		}
		taken[v.Env] = b.Name
	}
	return nil
}

// ImageField is the field every table backend that runs under provider
// docker gains (cluster.<name>.image): the image of its servers, "" for
// the newest locklab/<name> image built locally.
const ImageField = "image"

// PingOf returns the raw round trip that shows a server of kind answers,
// for the evidence of link faults: its row's Ping; nil for a kind without
// one.
func PingOf(kind string) *TablePing {
	if b, ok := BackendOfKind(kind); ok {
		return b.Ping
	}
	return nil
}

// Missing returns the paths of b.Installed (or its Binaries and Files)
// that match no file here: none when its server is installed.
func (b TableBackend) Missing() []string {
	var missing []string
	if b.Installed != nil {
		for _, pat := range b.Installed {
			if m, _ := filepath.Glob(pat); len(m) == 0 {
				missing = append(missing, pat)
			}
		}
		return missing
	}
	for _, bin := range b.Binaries {
		if _, err := exec.LookPath(bin); err != nil {
			missing = append(missing, bin)
		}
	}
	for _, f := range b.Files {
		if _, err := os.Stat(f); err != nil {
			missing = append(missing, f)
		}
	}
	return missing
}

// Backends returns every row of the backend table: Redis's first (its
// nodes come first in a plan), then the others by name.
func Backends() []TableBackend {
	table.RLock()
	defer table.RUnlock()
	out := make([]TableBackend, 0, len(table.rows))
	for _, b := range table.rows {
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool {
		if ri, rj := out[i].Name == BackendRedis, out[j].Name == BackendRedis; ri != rj {
			return ri
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// LookupBackend returns the row of the backend called name.
func LookupBackend(name string) (TableBackend, bool) {
	table.RLock()
	defer table.RUnlock()
	b, ok := table.rows[name]
	return b, ok
}

// ClockSourceOf says what b's ReadClock asks a node of kind ("TIME").
func (b TableBackend) ClockSourceOf(kind string) string {
	for _, k := range b.Kinds {
		if k.Kind == kind && k.ClockSource != "" {
			return k.ClockSource
		}
	}
	return b.ClockSource
}

// BackendOfKind returns the row of the backend whose nodes are of kind.
func BackendOfKind(kind string) (TableBackend, bool) {
	for _, b := range Backends() {
		if slices.ContainsFunc(b.Kinds, func(k TableKind) bool { return k.Kind == kind }) {
			return b, true
		}
	}
	return TableBackend{}, false
}

// KindsActedOnBy returns the node kinds on which the server fault type
// acts (its rows' Faults and their kinds' own), in the table's order.
func KindsActedOnBy(fault string) []string {
	var out []string
	for _, b := range Backends() {
		for _, k := range b.Kinds {
			if slices.Contains(b.Faults, fault) || slices.Contains(k.Faults, fault) {
				out = append(out, k.Kind)
			}
		}
	}
	return out
}

// Runs reports whether provider starts b's servers, and an error naming
// both when it does not.
func (b TableBackend) Runs(provider string) error {
	if provider == "" {
		provider = ProviderLocal
	}
	if provider == ProviderExternal || slices.Contains(b.Providers, provider) {
		return nil
	}
	return fmt.Errorf("provider %s does not run %s yet (providers for %s: %v, external)", provider, b.Name, b.Name, b.Providers)
}

// Int returns the int field name of s (its default when absent).
func (b TableBackend) Int(s Settings, name string) int {
	v, _ := b.value(s, name).(int)
	return v
}

// String returns the string field name of s (its default when absent).
func (b TableBackend) String(s Settings, name string) string {
	v, _ := b.value(s, name).(string)
	return v
}

// Bool returns the bool field name of s (its default when absent).
func (b TableBackend) Bool(s Settings, name string) bool {
	v, _ := b.value(s, name).(bool)
	return v
}

// Settle returns a copy of s with each of b's fields that s lacks at its
// default: what the cluster hands the row's funcs.
func (b TableBackend) Settle(s Settings) Settings {
	out := Settings{}
	for _, f := range b.Fields {
		if f.Default != nil {
			out[f.Name] = f.Default
		}
	}
	for k, v := range s {
		out[k] = v
	}
	return out
}

func (b TableBackend) value(s Settings, name string) any {
	if v, ok := s[name]; ok {
		return v
	}
	for _, f := range b.Fields {
		if f.Name == name {
			return f.Default
		}
	}
	return nil
}

// planRows adds the nodes and peer links of every row s declares
// (Redis's first).
func (p *Plan) planRows(s Spec) {
	for _, b := range Backends() {
		if set, ok := s.SettingsOf(b); ok {
			p.planRow(b, set)
		}
	}
}

// planRow adds the nodes and peer links of row b with settings set.
func (p *Plan) planRow(b TableBackend, set Settings) {
	nodes, links := b.Plan(set)
	packets := p.Traits().PacketLinks
	if packets && b.PacketLinks != nil {
		links = b.PacketLinks(set)
	}
	peered := len(nodes) > 1
	if b.Peered != nil {
		peered = b.Peered(set)
	}
	for _, n := range nodes {
		n.Backend = b.Name
		p.Nodes = append(p.Nodes, n)
		if fb := (PlanLink{b.Fallback, n.Name}); b.Fallback != "" && peered && !packets && !slices.Contains(links, fb) {
			p.Links = append(p.Links, fb)
		}
	}
	p.Links = append(p.Links, links...)
}

// planExternal adds the nodes of every row's external list, named by the
// row's first kind's pattern: redis-0, redis-1, ...; zk-0, ...; postgres-0.
func (p *Plan) planExternal(e *ExternalSpec) {
	for _, b := range Backends() {
		p.addNumbered(strings.TrimRight(b.Kinds[0].Pattern, "N0123456789"), b.Kinds[0].Kind, b.Name, len(e.List(b.Name)))
	}
}

// CheckBackends reports a table backend of s that s's provider does not
// run (Start refuses it too, before starting anything): for callers that
// check a run's plan before any cluster starts.
func (s Spec) CheckBackends() error { return checkTable(s.sized()) }

// checkTable refuses a section of s that names no row, that s's
// provider does not run, or whose settings its row refuses (Validate). A
// provider no package registered is left to Start to report.
func checkTable(s Spec) error {
	_, registered := TraitsOf(s.Provider)
	names := slices.Collect(maps.Keys(s.Backends))
	if s.Redis != nil {
		names = append(names, BackendRedis)
	}
	for _, name := range names {
		if _, ok := LookupBackend(name); !ok {
			return fmt.Errorf("cluster: unknown backend %q (no package registered it: import cluster/backends/all)", name)
		}
	}
	for _, b := range Backends() {
		set, ok := s.SettingsOf(b)
		if !ok {
			continue
		}
		if err := b.Runs(s.Provider); err != nil && registered {
			return fmt.Errorf("cluster: %w", err)
		}
		if err := b.Validate(set, s.Provider); err != nil {
			return fmt.Errorf("cluster: %w", err)
		}
	}
	return nil
}

// Validate checks a section's settings against b's fields (kind, least
// value, allowed values) and b's Check, for provider.
func (b TableBackend) Validate(set Settings, provider string) error {
	for _, f := range b.Fields {
		v, ok := set[f.Name]
		if !ok {
			continue
		}
		path := b.Name + "." + f.Name
		var kindOK bool
		kind := "a string"
		switch f.Kind {
		case "int":
			_, kindOK = v.(int)
			kind = "an int"
		case "bool":
			_, kindOK = v.(bool)
			kind = "a bool"
		default:
			_, kindOK = v.(string)
		}
		if !kindOK {
			return fmt.Errorf("%s: %v is not %s", path, v, kind)
		}
		if msg := f.Refuses(v); msg != "" {
			return fmt.Errorf("%s: %s", path, msg)
		}
	}
	if b.Check != nil {
		if field, msg := b.Check(set, provider); msg != "" {
			return fmt.Errorf("%s.%s: %s", b.Name, field, msg)
		}
	}
	return nil
}

// buildRows builds every row the spec declares (Redis's first).
func (c *Cluster) buildRows() ([]backend, error) {
	var out []backend
	for _, tb := range Backends() {
		if set, ok := c.spec.SettingsOf(tb); ok {
			b, err := c.buildRow(tb, set)
			if err != nil {
				return out, err
			}
			out = append(out, b)
		}
	}
	return out, nil
}

// buildRow builds the nodes of row tb with settings set.
func (c *Cluster) buildRow(tb TableBackend, set Settings) (backend, error) {
	nodes, err := c.addPlanned(tb.Name)
	if err != nil {
		return backend{}, err
	}
	for _, n := range nodes {
		if err := c.prov.Place(n); err != nil {
			return backend{}, fmt.Errorf("cluster: build %s: %w", tb.Name, err)
		}
	}
	b := &Build{c: c, Backend: tb, Settings: set, Nodes: nodes, Log: c.log.With("backend", tb.Name)}
	st, err := tb.Build(b)
	if st.Close != nil {
		c.addCloser(st.Close)
	}
	if err != nil {
		return backend{}, fmt.Errorf("cluster: build %s: %w", tb.Name, err)
	}
	c.mu.Lock()
	if st.Failover != nil {
		c.failovers[tb.Name] = st.Failover
	}
	if st.Primary != nil {
		c.primaries[tb.Name] = st.Primary
	}
	c.mu.Unlock()
	return backend{name: tb.Name, start: st.Start, version: st.Version}, nil
}

func (c *Cluster) addCloser(f func() error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closers = append(c.closers, f)
}

// Failover promotes a replica of group (a primary's node name of a table
// backend with failover, "postgres-0"): the backend kills the group's
// current primary and promotes a replica; the detail says what it did.
func (c *Cluster) Failover(ctx context.Context, group string) (string, error) {
	n, ok := c.Node(group)
	if !ok {
		return "", fmt.Errorf("cluster: failover: no node %s", group)
	}
	c.mu.Lock()
	f := c.failovers[n.backend]
	c.mu.Unlock()
	if f == nil {
		return "", fmt.Errorf("cluster: failover of %s: %w", group, ErrUnsupported)
	}
	return f(ctx, group)
}

// KeepBackend returns s with only the section of backend name (Redis's
// included; none when name is no row of the table: mem): the spec one
// lock runs on.
func (s Spec) KeepBackend(name string) Spec {
	out := s
	if name != BackendRedis {
		out.Redis = nil
	}
	out.Backends = nil
	if set, ok := s.Backends[name]; ok {
		out.Backends = map[string]Settings{name: set}
	}
	return out
}

// TableParts names the table backends of s and their sizes, for logs
// ("postgres x2").
func (s Spec) TableParts() []string {
	var out []string
	for _, b := range Backends() {
		if _, ok := s.Backends[b.Name]; ok {
			nodes, _ := b.Plan(b.Settle(s.Backends[b.Name]))
			out = append(out, b.Name+" x"+strconv.Itoa(len(nodes)))
		}
	}
	return out
}
