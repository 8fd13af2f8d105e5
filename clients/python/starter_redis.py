"""A locklab client for a Redis lock of your own: start here.

`bench init --exec --backend redis` writes this file as NAME_client.py,
beside locklab_client.py (the protocol: docs/client-protocol.md). It runs
as written: a plain Redis lock, so the harness has something to test
before you change anything. Replace the body of acquire and release with
calls to your lock (your library, your service's wrapper), keep what they
return, and run `bench client-check --backend redis -- python3 THIS_FILE`.

The lock as written:
  acquire: SET key owner NX PX ttl, retried every retry_ms until timeout
  token:   INCR key:fence after each grant (a fencing token that only
           grows; the resource rejects a write with an older one)
  release: a Lua script deletes the key only if it still holds our owner
  validity_ms: the TTL, counted by the harness from the SET that won:
           lc.sending() before each SET makes the acquired line say when
           that SET was sent (sent_us). Keep it before every request that
           may take the lock, or the promise counts from before your
           retries (docs/client-protocol.md, sent_us).
"""
import time
import uuid

import redis

import locklab_client as lc

RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('del', KEYS[1])
end
return 0
"""


class Adapter:
    def __init__(self, config):
        # config is the harness's first line: endpoints, ttl_ms, retry_ms,
        # prefix, options (docs/client-protocol.md, "Configuration").
        self.r = lc.redis_client(config)  # redis-py, logged in, PINGed
        self.ttl_ms = int(config["ttl_ms"]) or 10000
        self.retry = (config.get("retry_ms") or 5) / 1000.0
        self.release_script = self.r.register_script(RELEASE)

    def acquire(self, name, timeout):
        """Take lock name within timeout seconds.

        Return (handle, token, validity_ms), or None on timeout. token is an
        integer >= 0 that grows with every grant of this lock (0: none);
        validity_ms is how long the lock is yours without renewal (None: no
        time bound). Raise lc.NotObtained when your lock gives up by itself.
        """
        owner = uuid.uuid4().hex
        deadline = time.monotonic() + timeout
        while True:
            lc.sending()  # this SET may win: the TTL counts from here
            if self.r.set(name, owner, nx=True, px=self.ttl_ms):
                break
            if time.monotonic() >= deadline:
                return None
            time.sleep(self.retry)
        token = self.r.incr(name + ":fence")
        return (name, owner), token, self.ttl_ms

    def release(self, handle):
        """Give the lock up: "ok", or "not_held" when it was no longer ours."""
        name, owner = handle
        return "ok" if self.release_script(keys=[name], args=[owner]) == 1 else "not_held"

    def lost(self, handle):
        """True when your lock says it is gone (checked after the critical
        section). A library thread that learns it sooner calls
        lc.lost(handle); one that renews the lease calls
        lc.renewed(handle, validity_ms)."""
        return False

    def close(self):
        self.r.close()


if __name__ == "__main__":
    lc.run(Adapter, "starter-redis (redis-py " + redis.__version__ + ")")
