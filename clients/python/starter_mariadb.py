"""A locklab client for a MariaDB lock of your own: start here.

`bench init --exec --backend mariadb` writes this file as NAME_client.py,
beside locklab_client.py (the protocol: docs/client-protocol.md). It runs
as written: a plain MariaDB named lock, so the harness has something to
test before you change anything. Replace the body of acquire and release
with calls to your lock, keep what they return, and run
`bench client-check --backend mariadb -- python3 THIS_FILE`.

The lock as written (PyMySQL, one connection: one session):
  connect: the server of endpoints.mariadb as LOCKLAB_MARIADB_USER
  acquire: GET_LOCK(name, 1) on the session, again until it returns 1 or
           the timeout passed; the server wakes a waiter at the holder's
           release
  token:   an AUTO_INCREMENT id inserted into locklab.fence after each
           grant (grows with every grant; the resource rejects a write
           with an older one)
  release: RELEASE_LOCK(name) on the same session ("not_held": the session
           no longer held it)
  promise: the session's. The lock lasts until the session ends, and the
           server ends a silent client's session no sooner than its TCP
           keepalive time (tcp_keepalive_time + interval x probes, read from
           the server) after it last heard from it: session_ms, from the
           GET_LOCK that won (sent_us). A session can end sooner (the
           connection is reset); lost() notices only at release. With
           keepalives at the system's default (0) no promise is stated.
"""
import hashlib
import time

import pymysql

import locklab_client as lc


def lock_name(name):
    """A GET_LOCK name: at most 64 characters (longer ones are hashed)."""
    if len(name) <= 64:
        return name
    return name[:24] + ":" + hashlib.sha1(name.encode()).hexdigest()


class Adapter:
    def __init__(self, config):
        # config is the harness's first line: endpoints, prefix, options
        # (docs/client-protocol.md, "Configuration"). ttl_ms is unused: a
        # session lock has no TTL of its own.
        host, port = config["endpoints"]["mariadb"][0].rsplit(":", 1)
        self.kw = dict(host=host, port=int(port), user=lc.env("LOCKLAB_MARIADB_USER") or "root",
                       password=lc.env("LOCKLAB_MARIADB_PASSWORD") or "", autocommit=True, connect_timeout=5)
        self.conn = None
        self.session_ms = 0
        self.connect()

    def connect(self):
        if self.conn is not None:
            self.conn.close()
        self.conn = pymysql.connect(**self.kw)
        with self.conn.cursor() as cur:
            cur.execute("CREATE DATABASE IF NOT EXISTS locklab")
            cur.execute("CREATE TABLE IF NOT EXISTS locklab.fence (id BIGINT AUTO_INCREMENT PRIMARY KEY) ENGINE=InnoDB")
            cur.execute("SELECT @@tcp_keepalive_time, @@tcp_keepalive_interval, @@tcp_keepalive_probes")
            idle, interval, probes = cur.fetchone()
        self.session_ms = (idle + interval * probes) * 1000 if idle > 0 and interval > 0 and probes > 0 else 0

    def acquire(self, name, timeout):
        """Take lock name within timeout seconds.

        Return (handle, token, validity_ms, extra) or None on timeout; extra
        adds session_ms to the acquired line: the lock lasts as long as the
        session. Raise lc.NotObtained when your lock gives up by itself.
        """
        if not self.conn.open:
            self.connect()  # the session ended (a reset, a restart)
        name = lock_name(name)
        deadline = time.monotonic() + timeout
        with self.conn.cursor() as cur:
            while True:
                lc.sending()  # this GET_LOCK may win
                cur.execute("SELECT GET_LOCK(%s, 1)", (name,))
                if cur.fetchone()[0] == 1:
                    break
                if time.monotonic() >= deadline:
                    return None
            cur.execute("INSERT INTO locklab.fence () VALUES ()")
            token = cur.lastrowid
        extra = {"session_ms": self.session_ms} if self.session_ms else {}
        return name, token, None, extra

    def release(self, name):
        """Give the lock up: "ok", or "not_held" when it was no longer ours."""
        with self.conn.cursor() as cur:
            cur.execute("SELECT RELEASE_LOCK(%s)", (name,))
            return "ok" if cur.fetchone()[0] == 1 else "not_held"

    def lost(self, name):
        """True when the session is gone."""
        return not self.conn.open

    def close(self):
        self.conn.close()


if __name__ == "__main__":
    lc.run(Adapter, "starter-mariadb (PyMySQL " + pymysql.__version__ + ")")
