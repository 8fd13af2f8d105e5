package locks

import (
	"log/slog"
	"strings"

	"github.com/locklab/locklab/internal/credentials"
)

// Auth are credentials for the backends' servers, the same for every node
// of a backend; the zero value means none. Its fields are
// credentials.Set's; cluster.Credentials is this type. The harness fills it
// from the LOCKLAB_* environment variables for provider external only.
// A table backend's credentials are in Table, by backend name: a lock
// reads them with Get.
//
// Clients reach the servers through proxies on 127.0.0.1, so TLS clients
// verify each server's certificate against the host of its real address
// (Endpoints.Real), not against the address they dial.
type Auth credentials.Set

// Credential declares one credential variable of a table backend
// (cluster.TableBackend.Credentials): its name, what it holds, whether it
// is a secret or a file.
type Credential = credentials.Var

// CredentialValue is a credential variable with the value it was given:
// an element of Auth.Table[<backend>].
type CredentialValue = credentials.Value

// CredentialKind is what a table backend's credential holds
// (Credential.What).
type CredentialKind = credentials.What

// CredentialKinds are the kinds a row may declare.
var CredentialKinds = credentials.Whats

// The kinds of credential, as the locks ask for them with Auth.Get.
const (
	CredUser     = credentials.User
	CredPassword = credentials.Password
	CredDatabase = credentials.Database
	CredToken    = credentials.Token
	CredTLSMode  = credentials.TLSMode
	CredCACert   = credentials.CACert
)

// EtcdTLS reports whether etcd connections use TLS.
func (a Auth) EtcdTLS() bool { return credentials.Set(a).EtcdTLS() }

// Get returns table backend b's credential what ("" when none is set).
func (a Auth) Get(b Backend, what CredentialKind) string {
	return credentials.Set(a).Get(string(b), what)
}

// IsZero reports whether no credential is set.
func (a Auth) IsZero() bool { return credentials.Set(a).IsZero() }

// String says which credentials are set (user names, "password ***",
// "tls"), without a secret or a file name (internal/credentials).
func (a Auth) String() string { return credentials.Set(a).String() }

// GoString redacts like String (for %#v).
func (a Auth) GoString() string { return "locks.Auth{" + a.String() + "}" }

// LogValue redacts like String (slog).
func (a Auth) LogValue() slog.Value { return slog.StringValue(a.String()) }

// ZooKeeperUser splits ZooKeeperDigest into user and password; ok is false
// when no digest is set.
func (a Auth) ZooKeeperUser() (user, password string, ok bool) {
	if a.ZooKeeperDigest == "" {
		return "", "", false
	}
	user, password, _ = strings.Cut(a.ZooKeeperDigest, ":")
	return user, password, true
}
