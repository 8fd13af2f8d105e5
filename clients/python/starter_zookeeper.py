"""A locklab client for a ZooKeeper lock of your own: start here.

`bench init --exec --backend zookeeper` writes this file as NAME_client.py,
beside locklab_client.py (the protocol: docs/client-protocol.md). It runs
as written: kazoo's Lock recipe, so the harness has something to test
before you change anything. Replace the body of acquire and release with
calls to your lock, keep what they return, and run
`bench client-check --backend zookeeper -- python3 THIS_FILE`.

The lock as written:
  acquire: an ephemeral sequential node under the lock's path (kazoo Lock)
  token:   the node's sequence number + 1 (grows with every grant)
  promise: the session's: session_ms is the session timeout, from which
           the harness derives how long the lock is yours. No sent_us:
           the lock node is created by the first request of acquire, which
           then waits for a notification, and the session's clock counts
           from requests the harness cannot see (last_ok_ms_ago says
           when the library last heard from the server)
"""
import kazoo
from kazoo.client import KazooClient, KazooState

import locklab_client as lc


def sequence(node):
    """The token of a lock node: its sequence suffix + 1 (0 means none)."""
    digits = ""
    for ch in reversed(node or ""):
        if not ch.isdigit():
            break
        digits = ch + digits
    return int(digits) + 1 if digits else 0


class Adapter:
    def __init__(self, config):
        # config is the harness's first line: endpoints, ttl_ms (here the
        # session timeout), prefix, options (docs/client-protocol.md).
        self.session_ms = int(config["ttl_ms"]) or 10000
        self.zk = KazooClient(hosts=lc.zk_hosts(config), timeout=self.session_ms / 1000.0)
        self.gone = False
        self.zk.add_listener(self._state)
        self.zk.start(timeout=30)
        digest = lc.env("LOCKLAB_ZK_DIGEST")
        if digest:
            self.zk.add_auth("digest", digest)
        self.locks = {}

    def _state(self, state):
        # kazoo's thread: the session is suspended or lost.
        if state in (KazooState.SUSPENDED, KazooState.LOST):
            self.gone = True

    def acquire(self, name, timeout):
        """Take lock name within timeout seconds.

        Return (handle, token, validity_ms, extra) or None on timeout; extra
        adds session_ms to the acquired line: the lock lasts as long as the
        session. Raise lc.NotObtained when your lock gives up by itself.
        """
        lock = self.locks.get(name)
        if lock is None:
            lock = self.locks[name] = self.zk.Lock(lc.zk_path("", name))
        self.gone = False
        if not lock.acquire(timeout=timeout):
            return None
        # session_ms: the timeout the server granted (kazoo keeps the
        # negotiated value in _session_timeout; it may be below the asked).
        return lock, sequence(lock.node), None, {"session_ms": self.zk._session_timeout}

    def release(self, lock):
        """Give the lock up: "ok", or "not_held" when it was no longer ours."""
        return "ok" if lock.release() else "not_held"

    def lost(self, lock):
        """True when the session was suspended or lost while holding."""
        return self.gone

    def close(self):
        self.zk.stop()
        self.zk.close()


if __name__ == "__main__":
    lc.run(Adapter, "starter-zookeeper (kazoo " + getattr(kazoo, "__version__", "2.8") + ")")
