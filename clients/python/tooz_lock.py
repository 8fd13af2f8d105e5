"""locklab client: OpenStack tooz's get_lock on one driver.

Usage: tooz_lock.py redis|zookeeper|etcd3

tooz locks give no fencing token (0). The coordinator's heartbeat thread
keeps the lock alive (redis: re-sets the key's expiry; etcd3: refreshes the
lease; zookeeper: the session), so the TTL (lock_timeout / session
timeout, whole seconds) only runs out when the holder stops. redis and
etcd3: promised validity is that TTL, and each heartbeat of the held lock
is reported as renewed (the TTL less the time since the heartbeat was
sent). zookeeper: the lock is the session's, reported as session_ms.

sent_us: tooz retries inside acquire. redis: its lock is redis-py's Lock,
whose every try (do_acquire, the SET NX PX) is wrapped to call
lc.sending(); etcd3: every try of lc.poll_acquire grants a new lease, and
calls lc.sending() first. zookeeper: none (a session lock: the lock node
is created by the first request). On a topology with Sentinels the redis
driver asks them for the primary (tooz's sentinel= URL).
"""
import sys
import time
import uuid

import tooz
from tooz import coordination

import locklab_client as lc

try:
    from importlib.metadata import version
    TOOZ_VERSION = version("tooz")
except Exception:
    TOOZ_VERSION = "3.1"


def url(driver, config):
    ttl = max(1, int(round(config["ttl_ms"] / 1000.0)))
    if driver == "redis":
        auth = ""
        if lc.env("LOCKLAB_REDIS_PASSWORD"):
            auth = "%s:%s@" % (lc.env("LOCKLAB_REDIS_USERNAME") or "", lc.env("LOCKLAB_REDIS_PASSWORD"))
        sentinels, master = lc.redis_sentinels(config)
        if sentinels:
            # tooz asks the first Sentinel for master's primary (falling
            # back to the others) and follows failovers; the address the
            # Sentinel reports is dialled through our proxy.
            lc.follow_redirects(config)
            (host, port), rest = sentinels[0], sentinels[1:]
            extra = "&sentinel=" + master + "".join("&sentinel_fallback=%s:%d" % a for a in rest)
        else:
            (host, port), extra = lc.redis_endpoint(config), ""
        return "redis://%s%s:%d?lock_timeout=%d&timeout=10%s" % (auth, host, port, ttl, extra), ttl
    if driver == "zookeeper":
        return "zookeeper://%s?timeout=%d" % (lc.zk_hosts(config), ttl), ttl
    if driver == "etcd3":
        host, port = lc.etcd_endpoint(config)
        return "etcd3://%s:%d?lock_timeout=%d&timeout=10" % (host, port, ttl), ttl
    raise SystemExit("unknown tooz driver %r (want redis, zookeeper or etcd3)" % driver)


class Adapter:
    def __init__(self, config):
        driver = sys.argv[1] if len(sys.argv) > 1 else ""
        u, self.ttl = url(driver, config)
        member = ("locklab-client-%d-%s" % (config["client"], uuid.uuid4().hex[:8])).encode()
        # tooz's ZooKeeper driver waits for its first connection only as
        # long as the session timeout (the TTL, 2 s in some scenarios): on
        # a loaded machine that can pass before the ensemble answers, so
        # start is tried again until a deadline well inside the harness's
        # 60 s wait for ready.
        deadline = time.monotonic() + 30
        while True:
            self.coord = coordination.get_coordinator(u, member)
            try:
                self.coord.start(start_heart=True)
                break
            except coordination.ToozConnectionError as e:
                if time.monotonic() >= deadline:
                    raise
                lc.log("start: %s: trying again" % e)
                time.sleep(0.5)
        self.locks = {}
        self.etcd = driver == "etcd3"
        self.zk = driver == "zookeeper"

    def acquire(self, name, timeout):
        lock = self.locks.get(name)
        if lock is None:
            lock = self.locks[name] = self.coord.get_lock(name.encode())
            if not self.zk:
                self._report_heartbeats(lock)
            if not self.zk and not self.etcd:
                self._report_tries(lock)
        if self.etcd:
            # tooz's etcd3 lock wraps python-etcd3's: see lc.poll_acquire.
            # Each try grants a new lease: the TTL counts from the winner's.
            def try_once():
                lc.sending()
                return lock.acquire(blocking=False)
            got = lc.poll_acquire(try_once, lc.etcd_waiter(self.coord.client, lock._lock.key), timeout)
        else:
            got = lock.acquire(blocking=timeout)
        if not got:
            return None
        if self.zk:
            return lock, 0, None, {"session_ms": self.coord._coord._session_timeout}
        return lock, 0, self.ttl * 1000

    def _report_tries(self, lock):
        """redis: tooz's lock is redis-py's Lock (lock._lock), which retries
        inside acquire; wrap its do_acquire (one SET NX PX) so that each try
        calls lc.sending() and the acquired line says when the winner was
        sent."""
        inner = lock._lock
        try_once = inner.do_acquire

        def do_acquire(token):
            lc.sending()
            return try_once(token)
        inner.do_acquire = do_acquire

    def _report_heartbeats(self, lock):
        """Wrap the lock's heartbeat (called by tooz's heart thread for
        every held lock) so that each renewal is reported."""
        beat = lock.heartbeat

        def heartbeat():
            sent = time.monotonic()
            ok = beat()
            if ok and self._lease_alive(lock):
                lc.renewed(lock, (self.ttl - (time.monotonic() - sent)) * 1000)
            elif ok:
                lc.log("heartbeat of %s answered True after its lease expired: "
                       "not reported as a renewal" % lock.name)
            return ok
        lock.heartbeat = heartbeat

    def _lease_alive(self, lock):
        """etcd3: tooz's heartbeat answers True even when the lease had
        already expired (python-etcd3's refresh of an expired lease answers
        TTL 0, no error): a holder paused past its lease would report a
        renewal the lock never made. Report one only while the lease lives."""
        if not self.etcd:
            return True
        lease = getattr(lock._lock, "lease", None)
        try:
            return lease is not None and lease.remaining_ttl > 0
        except Exception as e:
            lc.log("lease ttl after heartbeat: %s" % e)
            return False

    def release(self, lock):
        return "ok" if lock.release() else "not_held"

    def lost(self, lock):
        return False

    def close(self):
        self.coord.stop()


if __name__ == "__main__":
    lc.run(Adapter, "tooz " + TOOZ_VERSION + " (" + (sys.argv[1] if len(sys.argv) > 1 else "?") + ")")
