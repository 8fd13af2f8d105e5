// Package credentials holds backend credentials and formats them for logs
// and results without a secret: cluster.Credentials and locks.Auth are both
// defined as Set, so their fields and their String exist once. It imports
// nothing of locklab.
package credentials

import "strings"

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
}

// EtcdTLS reports whether etcd connections use TLS: a CA or a client
// certificate is set.
func (s Set) EtcdTLS() bool { return s.EtcdCACert != "" || s.EtcdCert != "" }

// String says which credentials are set (user names, "password ***",
// "tls", "client-cert"), never a secret or a file name: a password shows
// as *** whenever one is set, with or without a user.
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
