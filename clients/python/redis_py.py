"""locklab client: redis-py's Lock (SET NX PX, Lua compare-and-delete release).

Fencing token: none (0). Promised validity: the lock's timeout (the TTL),
counted by the harness from the SET NX PX that won: Lock.acquire retries
inside, so each try (Lock.do_acquire) calls lc.sending() and the acquired
line carries sent_us. Option extend=<ms>: call Lock.extend
by that much once holding (redis-py's Lock renews only when asked) and
report the renewal: the key then lives at least TTL + extend from the
acquire's send time, and what is left of that is sent as renewed.
"""
import time

import redis
from redis.exceptions import LockNotOwnedError
from redis.lock import Lock

import locklab_client as lc


class SentLock(Lock):
    """redis-py's Lock, saying when each try (the SET NX PX that may win)
    is sent."""

    def do_acquire(self, token):
        self.sent = time.monotonic()
        lc.sending()
        return super().do_acquire(token)


class Adapter:
    def __init__(self, config):
        self.r = lc.redis_client(config)
        self.ttl = config["ttl_ms"] / 1000.0
        self.sleep = (config.get("retry_ms") or 5) / 1000.0
        self.extend = float((config.get("options") or {}).get("extend") or 0) / 1000.0

    def acquire(self, name, timeout):
        lock = self.r.lock(name, timeout=self.ttl, sleep=self.sleep,
                           blocking_timeout=timeout, thread_local=False, lock_class=SentLock)
        if not lock.acquire():
            return None
        return lock, 0, self.ttl * 1000

    def held(self, lock):
        if self.extend > 0 and lock.extend(self.extend):
            # lock.sent: before the SET NX PX that took it
            left = self.ttl + self.extend - (time.monotonic() - lock.sent)
            lc.renewed(lock, left * 1000)

    def release(self, lock):
        try:
            lock.release()
            return "ok"
        except LockNotOwnedError:
            return "not_held"

    def lost(self, lock):
        return False


if __name__ == "__main__":
    lc.run(Adapter, "redis-py " + redis.__version__)
