package credentials

import (
	"strings"
	"testing"
)

func TestStringNeverLeaksSecrets(t *testing.T) {
	for _, tc := range []struct {
		set  Set
		want string
	}{
		{Set{}, "none"},
		{Set{RedisPassword: "s3cret-r"}, "redis: password ***"},
		{Set{RedisUsername: "app", RedisPassword: "s3cret-r", RedisTLS: true}, "redis: user app password *** tls"},
		// A password without a user (etcd's root login needs a user, but
		// a password alone must still say it is set).
		{Set{EtcdPassword: "s3cret-e"}, "etcd: password ***"},
		{Set{EtcdUsername: "root", EtcdPassword: "s3cret-e", EtcdCert: "/k/cert.pem", EtcdKey: "/k/key.pem"},
			"etcd: user root password *** tls client-cert"},
		{Set{ZooKeeperDigest: "zu:s3cret-z"}, "zookeeper: digest zu:***"},
		// A table backend's: secrets as ***, files by kind, in the row's
		// order; backends by name; a value that is not set not at all.
		{Set{Table: map[string][]Value{
			"postgres": {{Var{What: User}, "pu"}, {Var{What: Password, Secret: true}, "s3cret-p"},
				{Var{What: CACert, File: true}, "/k/ca.pem"}, {Var{What: TLSMode}, "verify-full"}},
			"nats":    {{Var{What: Token, Secret: true}, "s3cret-n"}},
			"mariadb": {{Var{What: User}, ""}},
		}}, "nats: token ***; postgres: user pu password *** cacert tls-mode verify-full"},
	} {
		got := tc.set.String()
		if got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.set, got, tc.want)
		}
		for _, secret := range []string{"s3cret", "/k/"} {
			if strings.Contains(got, secret) {
				t.Errorf("%q leaks %q", got, secret)
			}
		}
	}
}
