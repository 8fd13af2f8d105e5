package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/locklab/locklab/locks"
)

// buildExternal registers servers the user runs (provider external) as
// nodes without a process: clients still reach them through their own
// proxies, so client-side faults apply; node operations return
// ErrUnsupported. Start checks that every server accepts a TCP connection
// (not that it is the right kind of server, nor the credentials), so that a
// wrong address fails the run at once with its name rather than as lock
// errors.
func (c *Cluster) buildExternal(es *ExternalSpec) (backend, error) {
	var nodes []*Node
	b := backend{name: "external", start: func(ctx context.Context) error { return checkExternal(ctx, nodes) }}
	for _, row := range Backends() {
		ns, err := c.addPlanned(row.Name)
		if err != nil {
			return b, err
		}
		addrs := es.List(row.Name)
		for i, n := range ns {
			n.setAddr(addrs[i])
		}
		nodes = append(nodes, ns...)
	}
	return b, nil
}

// checkExternal dials every external server once.
func checkExternal(ctx context.Context, nodes []*Node) error {
	var errs []error
	for _, n := range nodes {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", n.Addr())
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("external %s at %s: %w", n.Name, n.Addr(), err))
			continue
		}
		conn.Close()
	}
	return errors.Join(errs...)
}

// Credentials are what lock clients need to log in to servers the user
// runs (provider external); its fields and their variables are
// credentials.Set's, and the table backends' are the variables their rows
// declare (TableBackend.Credentials), in Table by backend name. They come
// from the environment only (ExternalCredentialsFromEnv), never from
// scenario files, and nothing in the cluster writes them anywhere: Info,
// logs and results do not contain them, and String and GoString redact
// them.
//
// The clients reach the servers through their proxies on 127.0.0.1, so a
// TLS client must verify the server's certificate against the real host
// name (ServerName), not the address it dials. They are the locks
// package's Auth, which its Endpoints carry to the clients.
type Credentials = locks.Auth

// fixedCredentialEnv are the variables of Credentials' own fields (Redis,
// etcd, ZooKeeper), which no row may declare.
var fixedCredentialEnv = []string{
	"LOCKLAB_REDIS_USERNAME", "LOCKLAB_REDIS_PASSWORD", "LOCKLAB_REDIS_TLS", "LOCKLAB_REDIS_CACERT",
	"LOCKLAB_ETCD_USERNAME", "LOCKLAB_ETCD_PASSWORD", "LOCKLAB_ETCD_CACERT", "LOCKLAB_ETCD_CERT", "LOCKLAB_ETCD_KEY",
	"LOCKLAB_ZK_DIGEST",
}

// CredentialEnv returns every variable ExternalCredentialsFromEnv reads:
// Redis's, etcd's and ZooKeeper's, then each table backend's in the
// table's order.
func CredentialEnv() []string {
	out := slices.Clone(fixedCredentialEnv)
	for _, b := range Backends() {
		for _, v := range b.Credentials {
			out = append(out, v.Env)
		}
	}
	return out
}

// ExternalCredentialsFromEnv reads Credentials from the LOCKLAB_*
// variables (see Credentials and CredentialEnv) and checks that the files
// they name exist, that each user has a password where its server needs
// one, and that values from a list are in it. An error names every
// offending variable.
func ExternalCredentialsFromEnv() (Credentials, error) {
	get := os.Getenv
	c := Credentials{
		RedisUsername: get("LOCKLAB_REDIS_USERNAME"), RedisPassword: get("LOCKLAB_REDIS_PASSWORD"),
		RedisCACert:  get("LOCKLAB_REDIS_CACERT"),
		EtcdUsername: get("LOCKLAB_ETCD_USERNAME"), EtcdPassword: get("LOCKLAB_ETCD_PASSWORD"),
		EtcdCACert: get("LOCKLAB_ETCD_CACERT"), EtcdCert: get("LOCKLAB_ETCD_CERT"), EtcdKey: get("LOCKLAB_ETCD_KEY"),
		ZooKeeperDigest: get("LOCKLAB_ZK_DIGEST"),
	}
	var errs []error
	switch v := strings.ToLower(get("LOCKLAB_REDIS_TLS")); v {
	case "", "0", "false", "no":
	case "1", "true", "yes":
		c.RedisTLS = true
	default:
		errs = append(errs, fmt.Errorf("LOCKLAB_REDIS_TLS=%q: want 1 or 0", v))
	}
	c.RedisTLS = c.RedisTLS || c.RedisCACert != ""
	for env, path := range map[string]string{
		"LOCKLAB_REDIS_CACERT": c.RedisCACert, "LOCKLAB_ETCD_CACERT": c.EtcdCACert,
		"LOCKLAB_ETCD_CERT": c.EtcdCert, "LOCKLAB_ETCD_KEY": c.EtcdKey,
	} {
		if path == "" {
			continue
		}
		if _, err := os.Stat(path); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", env, err))
		}
	}
	if (c.EtcdCert == "") != (c.EtcdKey == "") {
		errs = append(errs, errors.New("LOCKLAB_ETCD_CERT and LOCKLAB_ETCD_KEY go together"))
	}
	if c.RedisUsername != "" && c.RedisPassword == "" {
		errs = append(errs, errors.New("LOCKLAB_REDIS_USERNAME without LOCKLAB_REDIS_PASSWORD"))
	}
	if c.EtcdUsername != "" && c.EtcdPassword == "" {
		errs = append(errs, errors.New("LOCKLAB_ETCD_USERNAME without LOCKLAB_ETCD_PASSWORD"))
	}
	if c.ZooKeeperDigest != "" && !strings.Contains(c.ZooKeeperDigest, ":") {
		errs = append(errs, errors.New("LOCKLAB_ZK_DIGEST: want user:password"))
	}
	for _, b := range Backends() {
		values, err := tableCredentials(b, get)
		errs = append(errs, err)
		if len(values) > 0 {
			if c.Table == nil {
				c.Table = map[string][]locks.CredentialValue{}
			}
			c.Table[b.Name] = values
		}
	}
	if err := errors.Join(errs...); err != nil {
		return Credentials{}, fmt.Errorf("cluster: credentials: %w", err)
	}
	return c, nil
}

// tableCredentials reads b's credential variables through get and checks
// them: a file must exist, a value from a list be in it, a credential
// that needs another have it beside it.
func tableCredentials(b TableBackend, get func(string) string) ([]locks.CredentialValue, error) {
	var values []locks.CredentialValue
	set := map[locks.CredentialKind]string{} // what -> the variable setting it
	for _, v := range b.Credentials {
		if val := get(v.Env); val != "" {
			values = append(values, locks.CredentialValue{Var: v, Value: val})
			set[v.What] = v.Env
		}
	}
	var errs []error
	for _, v := range values {
		if v.File {
			if _, err := os.Stat(v.Value); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", v.Env, err))
			}
		}
		if len(v.Allowed) > 0 && !slices.Contains(v.Allowed, v.Value) {
			errs = append(errs, fmt.Errorf("%s=%q: want one of %s", v.Env, v.Value, strings.Join(v.Allowed, ", ")))
		}
		if v.Needs != "" && set[v.Needs] == "" {
			errs = append(errs, fmt.Errorf("%s without %s", v.Env, envOf(b, v.Needs)))
		}
	}
	return values, errors.Join(errs...)
}

// envOf is the variable of b's credential what.
func envOf(b TableBackend, what locks.CredentialKind) string {
	for _, v := range b.Credentials {
		if v.What == what {
			return v.Env
		}
	}
	return string(what)
}

// Credentials are the credentials lock clients of this cluster need: read
// from the environment at Start for provider external, none otherwise.
func (c *Cluster) Credentials() Credentials {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.creds
}
