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
