// Package credentials holds backend credentials and formats them for logs
// and results without a secret: cluster.Credentials and locks.Auth are both
// defined as Set, so their fields and their String exist once. It imports
// nothing of locklab.
package credentials

import (
	"reflect"
	"sort"
	"strings"
)

// Set is the credentials for the backends' servers, the same for every
// node of a backend; the zero value means none. The harness reads them from
// the LOCKLAB_* environment variables named below
// (cluster.ExternalCredentialsFromEnv), for provider external only.
type Set struct {
	// RedisUsername is the Redis 6 ACL user (LOCKLAB_REDIS_USERNAME); ""
	// with a RedisPassword (LOCKLAB_REDIS_PASSWORD) means the default user
	// (AUTH password). Sentinels get the same credentials.
	RedisUsername string
	RedisPassword string
	// RedisTLS (LOCKLAB_REDIS_TLS=1, or a LOCKLAB_REDIS_CACERT) makes Redis
	// connections (Sentinel's too) use TLS, verified against RedisCACert (a
	// PEM file) or, when it is empty, the system's roots.
	RedisTLS    bool
	RedisCACert string

	// EtcdUsername and EtcdPassword (LOCKLAB_ETCD_USERNAME,
	// LOCKLAB_ETCD_PASSWORD) log in to etcd (auth enabled).
	EtcdUsername string
	EtcdPassword string
	// EtcdCACert (LOCKLAB_ETCD_CACERT, PEM file) verifies the members'
	// certificates; EtcdCert and EtcdKey (LOCKLAB_ETCD_CERT,
	// LOCKLAB_ETCD_KEY) are a client certificate and its key. TLS is on
	// when any is set (EtcdTLS).
	EtcdCACert string
	EtcdCert   string
	EtcdKey    string

	// ZooKeeperDigest (LOCKLAB_ZK_DIGEST) is "user:password": the session
	// adds it as digest auth, and nodes the locks create get a digest ACL
	// for that identity only (instead of world:anyone).
	ZooKeeperDigest string

	// Table holds the credentials of the backend table's servers
	// (PostgreSQL, MariaDB, NATS, ...) by backend name: the values of the
	// variables each row declares (cluster.TableBackend.Credentials), in
	// the row's order, only those set.
	Table map[string][]Value `json:",omitempty"`
}

// What says what a table backend's credential variable holds: the words
// its row declares and its locks look a value up by (Set.Get).
type What string

// What a credential variable holds.
const (
	User     What = "user"     // the user to log in as
	Password What = "password" // the user's password
	Database What = "database" // the database to connect to
	Token    What = "token"    // a bearer token instead of a user (NATS)
	TLSMode  What = "tls-mode" // how TLS is used (PostgreSQL's sslmode)
	CACert   What = "cacert"   // a PEM file verifying the servers' certificates
)

// Whats are the known kinds of credential: a row declares no other.
var Whats = []What{User, Password, Database, Token, TLSMode, CACert}

// Var declares one credential variable of a table backend: what its row
// reads and how the harness checks and prints it.
type Var struct {
	// Env is the environment variable (LOCKLAB_POSTGRES_PASSWORD).
	Env string
	// What it holds.
	What What
	// Secret values never show: String prints "password ***".
	Secret bool
	// File says the value names a file, which must exist; String shows
	// only What, never the file's name.
	File bool
	// Allowed, when set, are the values it accepts.
	Allowed []string `json:",omitempty"`
	// Needs is the credential of the same backend that must be set with
	// this one ("" when none): a NATS user needs a password.
	Needs What `json:",omitempty"`
	// Doc says what it is for, for the docs.
	Doc string
}

// Value is one variable a row declares with the value it was given.
type Value struct {
	Var
	Value string
}

// Get returns the value of backend's credential what; "" when none is set.
func (s Set) Get(backend string, what What) string {
	for _, v := range s.Table[backend] {
		if v.What == what {
			return v.Value
		}
	}
	return ""
}

// IsZero reports whether no credential is set.
func (s Set) IsZero() bool {
	if len(s.Table) > 0 {
		return false
	}
	s.Table = nil
	return reflect.ValueOf(s).IsZero()
}

// EtcdTLS reports whether etcd connections use TLS: a CA or a client
// certificate is set.
func (s Set) EtcdTLS() bool { return s.EtcdCACert != "" || s.EtcdCert != "" }

// String says which credentials are set (user names, "password ***",
// "tls", "client-cert"), never a secret or a file name: a password shows
// as *** whenever one is set, with or without a user. A table backend's
// values show as "<what> <value>", "<what> ***" when secret and "<what>"
// for a file ("postgres: user app password *** cacert").
func (s Set) String() string {
	var parts []string
	if s.RedisPassword != "" || s.RedisTLS {
		parts = append(parts, "redis:"+login(s.RedisUsername, s.RedisPassword)+flag(s.RedisTLS, " tls"))
	}
	if s.EtcdPassword != "" || s.EtcdTLS() {
		parts = append(parts, "etcd:"+login(s.EtcdUsername, s.EtcdPassword)+
			flag(s.EtcdTLS(), " tls")+flag(s.EtcdCert != "", " client-cert"))
	}
	if s.ZooKeeperDigest != "" {
		user, _, _ := strings.Cut(s.ZooKeeperDigest, ":")
		parts = append(parts, "zookeeper: digest "+user+":***")
	}
	names := make([]string, 0, len(s.Table))
	for name := range s.Table {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if t := table(s.Table[name]); t != "" {
			parts = append(parts, name+":"+t)
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}

func login(user, password string) string {
	s := ""
	if user != "" {
		s += " user " + user
	}
	return s + flag(password != "", " password ***")
}

func flag(on bool, s string) string {
	if on {
		return s
	}
	return ""
}

// table shows a table backend's values in its row's order: secrets as
// ***, files by what they are only.
func table(values []Value) string {
	s := ""
	for _, v := range values {
		switch {
		case v.Value == "":
		case v.Secret:
			s += " " + string(v.What) + " ***"
		case v.File:
			s += " " + string(v.What)
		default:
			s += " " + string(v.What) + " " + v.Value
		}
	}
	return s
}
