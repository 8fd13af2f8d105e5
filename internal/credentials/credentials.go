// Package credentials formats backend credentials for logs and results
// without a secret: the one formatter behind cluster.Credentials and
// locks.Auth, whose fields mirror Set one for one (each converts to Set).
// It imports nothing of locklab.
package credentials

import "strings"

// Set is a backend's credentials, field for field as cluster.Credentials
// and locks.Auth (see those for each field's meaning).
type Set struct {
	RedisUsername string
	RedisPassword string
	RedisTLS      bool
	RedisCACert   string

	EtcdUsername string
	EtcdPassword string
	EtcdCACert   string
	EtcdCert     string
	EtcdKey      string

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
