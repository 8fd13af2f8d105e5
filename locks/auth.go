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
//
// Clients reach the servers through proxies on 127.0.0.1, so TLS clients
// verify each server's certificate against the host of its real address
// (Endpoints.Real), not against the address they dial.
type Auth credentials.Set

// EtcdTLS reports whether etcd connections use TLS.
func (a Auth) EtcdTLS() bool { return credentials.Set(a).EtcdTLS() }

// IsZero reports whether no credential is set.
func (a Auth) IsZero() bool { return a == Auth{} }

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
