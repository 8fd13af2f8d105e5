"""A locklab client for a memcached lock of your own: start here.

`bench init --exec --backend memcached` writes this file as NAME_client.py,
beside locklab_client.py (the protocol: docs/client-protocol.md). It runs
as written: a plain memcached lock, the way Laravel's, Django's and Rails'
cache locks take one, so the harness has something to test before you
change anything. Replace the body of acquire and release with calls to
your lock, keep what they return, and run
`bench client-check --backend memcached -- python3 THIS_FILE`.

The lock as written (pymemcache, one connection):
  acquire: add key owner with an expiry, stored only if the key holds
           nothing, retried every retry_ms until timeout
  expiry:  the TTL rounded up to whole seconds, plus one: memcached counts
           expiry in whole seconds on a clock that ticks once a second, so
           an item may expire up to a second before its exptime
  token:   incr key:fence after each grant, the counter created at 0 when
           missing (it only grows while the server lives; the resource
           rejects a write with an older one)
  release: gets key and, only if it still holds our owner, cas it to an
           expired item (exptime -1): memcached has no conditional delete
  validity_ms: the TTL, counted by the harness from the add that won:
           lc.sending() before each add makes the acquired line say when
           it was sent (sent_us). No renewal: the key expires on its own,
           and nothing tells the holder.
memcached keeps every item in memory: a restarted server has lost the key
(a second holder is granted) and the counter (tokens start over at 1).
"""
import hashlib
import time
import uuid

import pymemcache
from pymemcache.client.base import Client

import locklab_client as lc


def memcached_key(name):
    """A memcached key: printable ASCII without spaces, at most 200 bytes
    here (memcached takes 250); other names are hashed."""
    b = name.encode()
    if len(b) <= 200 and all(32 < c < 127 for c in b):
        return name
    return "locklab:" + hashlib.sha1(b).hexdigest()


class Adapter:
    def __init__(self, config):
        # config is the harness's first line: endpoints, ttl_ms, retry_ms,
        # prefix, options (docs/client-protocol.md, "Configuration").
        host, port = config["endpoints"]["memcached"][0].rsplit(":", 1)
        self.mc = Client((host, int(port)), connect_timeout=5, timeout=5, default_noreply=False)
        self.mc.version()  # fails here, not in the first acquire, when the server is not there
        self.ttl_ms = int(config["ttl_ms"]) or 10000
        self.exptime = -(-self.ttl_ms // 1000) + 1
        self.retry = (config.get("retry_ms") or 10) / 1000.0

    def acquire(self, name, timeout):
        """Take lock name within timeout seconds.

        Return (handle, token, validity_ms), or None on timeout. token is an
        integer >= 0 that grows with every grant of this lock (0: none);
        validity_ms is how long the lock is yours without renewal (None: no
        time bound). Raise lc.NotObtained when your lock gives up by itself.
        """
        key = memcached_key(name)
        owner = uuid.uuid4().hex
        deadline = time.monotonic() + timeout
        while True:
            lc.sending()  # this add may win: the TTL counts from here
            if self.mc.add(key, owner, expire=self.exptime):
                break
            if time.monotonic() >= deadline:
                return None
            time.sleep(self.retry)
        return (key, owner), self.token(key + ":fence"), self.ttl_ms

    def token(self, fence):
        """incr the fencing counter, created at 0 (no expiry) when missing."""
        for _ in range(2):
            n = self.mc.incr(fence, 1)
            if n is not None:
                return n
            self.mc.add(fence, "0", expire=0)  # False: another client created it first
        raise RuntimeError("incr %s: not found after add" % fence)

    def release(self, handle):
        """Give the lock up: "ok", or "not_held" when it was no longer ours."""
        key, owner = handle
        value, cas = self.mc.gets(key)
        if value != owner.encode():
            return "not_held"  # expired, or someone else's
        return "ok" if self.mc.cas(key, owner, cas, expire=-1) else "not_held"

    def lost(self, handle):
        """True when your lock says it is gone (checked after the critical
        section). This one never knows: the key expires silently."""
        return False

    def close(self):
        self.mc.close()


if __name__ == "__main__":
    lc.run(Adapter, "starter-memcached (pymemcache " + pymemcache.__version__ + ")")
