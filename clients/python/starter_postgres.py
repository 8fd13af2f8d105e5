"""A locklab client for a PostgreSQL lock of your own: start here.

`bench init --exec --backend postgres` writes this file as NAME_client.py,
beside locklab_client.py (the protocol: docs/client-protocol.md). It runs
as written: a plain PostgreSQL advisory lock, so the harness has something
to test before you change anything. Replace the body of acquire and
release with calls to your lock, keep what they return, and run
`bench client-check --backend postgres -- python3 THIS_FILE`.

The lock as written (psycopg2, one connection: one session):
  connect: every server of endpoints.postgres, the writable one chosen by
           libpq (target_session_attrs=read-write), as LOCKLAB_POSTGRES_USER
           on LOCKLAB_POSTGRES_DATABASE
  acquire: pg_advisory_lock(hashtextextended(name, 0)) on the session; the
           server queues the waiters and wakes one at the holder's release;
           lock_timeout bounds the wait
  token:   nextval of the sequence locklab_fence after each grant (grows
           with every grant; the resource rejects a write with an older one)
  release: pg_advisory_unlock on the same session ("not_held": the session
           no longer held it)
  promise: the session's. The lock lasts until the session ends, and the
           server ends a silent client's session no sooner than its TCP
           keepalive time (tcp_keepalives_idle + interval x count, read
           from the server) after it last heard from it: session_ms, from
           the pg_advisory_lock request (sent_us). A session can end sooner
           (the connection is reset, the primary fails over: the new one
           holds no advisory lock); lost() notices only at release. With
           keepalives at the system's default (0) no promise is stated.
"""
import psycopg2
import psycopg2.errors

import locklab_client as lc

SEQUENCE = "locklab_fence"


def conninfo(config):
    """libpq's connection keywords for the run's PostgreSQL servers."""
    hosts, ports = [], []
    for addr in config["endpoints"]["postgres"]:
        host, port = addr.rsplit(":", 1)
        hosts.append(host)
        ports.append(port)
    kw = dict(host=",".join(hosts), port=",".join(ports), target_session_attrs="read-write",
              user=lc.env("LOCKLAB_POSTGRES_USER") or "postgres",
              dbname=lc.env("LOCKLAB_POSTGRES_DATABASE") or "postgres", connect_timeout=5)
    password = lc.env("LOCKLAB_POSTGRES_PASSWORD")
    if password:
        kw["password"] = password
    return kw


class Adapter:
    def __init__(self, config):
        # config is the harness's first line: endpoints, prefix, options
        # (docs/client-protocol.md, "Configuration"). ttl_ms is unused: a
        # session lock has no TTL of its own.
        self.kw = conninfo(config)
        self.conn = None
        self.session_ms = 0
        self.connect()

    def connect(self):
        if self.conn is not None:
            self.conn.close()
        self.conn = psycopg2.connect(**self.kw)
        self.conn.autocommit = True
        with self.conn.cursor() as cur:
            try:
                cur.execute("CREATE SEQUENCE IF NOT EXISTS " + SEQUENCE)
            except (psycopg2.errors.UniqueViolation, psycopg2.errors.DuplicateTable):
                pass  # another client created it at the same moment
            cur.execute("""SELECT
                (SELECT setting::int FROM pg_settings WHERE name = 'tcp_keepalives_idle'),
                (SELECT setting::int FROM pg_settings WHERE name = 'tcp_keepalives_interval'),
                (SELECT setting::int FROM pg_settings WHERE name = 'tcp_keepalives_count')""")
            idle, interval, count = cur.fetchone()
        self.session_ms = (idle + interval * count) * 1000 if idle > 0 and interval > 0 and count > 0 else 0

    def acquire(self, name, timeout):
        """Take lock name within timeout seconds.

        Return (handle, token, validity_ms, extra) or None on timeout; extra
        adds session_ms to the acquired line: the lock lasts as long as the
        session. Raise lc.NotObtained when your lock gives up by itself.
        """
        if self.conn.closed:
            self.connect()  # the session ended (a failover, a reset)
        with self.conn.cursor() as cur:
            cur.execute("SET lock_timeout = %s", (max(1, int(timeout * 1000)),))
            lc.sending()  # the server heard from us last at this request
            try:
                cur.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))", (name,))
            except psycopg2.errors.LockNotAvailable:
                return None
            cur.execute("SELECT nextval(%s)", (SEQUENCE,))
            token = cur.fetchone()[0]
        extra = {"session_ms": self.session_ms} if self.session_ms else {}
        return name, token, None, extra

    def release(self, name):
        """Give the lock up: "ok", or "not_held" when it was no longer ours."""
        with self.conn.cursor() as cur:
            cur.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", (name,))
            return "ok" if cur.fetchone()[0] else "not_held"

    def lost(self, name):
        """True when the session is gone (psycopg2 notices on its next use)."""
        return bool(self.conn.closed)

    def close(self):
        self.conn.close()


if __name__ == "__main__":
    lc.run(Adapter, "starter-postgres (psycopg2 " + psycopg2.__version__.split()[0] + ")")
