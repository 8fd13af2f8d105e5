"""locklab client: kazoo's Lock (ZooKeeper ephemeral sequential node).

Fencing token: the sequence number of this holder's lock node + 1
(strictly increasing per lock path; + 1 because the first node's is 0,
which the protocol reads as "no token"). Promised validity: the
session's: the lock lasts as long as the session, so acquired reports
session_ms (the session timeout kazoo requested, the TTL) and the harness
derives the promise from it. A SUSPENDED or LOST connection state while
holding is reported as "lost".
"""
import kazoo
from kazoo.client import KazooClient, KazooState

import locklab_client as lc


def sequence(node):
    """The token of a lock node: its sequence suffix + 1 (the first node's
    sequence is 0, and token 0 means none); 0 without a suffix."""
    digits = ""
    for ch in reversed(node or ""):
        if not ch.isdigit():
            break
        digits = ch + digits
    return int(digits) + 1 if digits else 0


class Adapter:
    def __init__(self, config):
        self.zk = KazooClient(hosts=lc.zk_hosts(config), timeout=config["ttl_ms"] / 1000.0)
        self.gone = False
        self.zk.add_listener(self._state)
        self.zk.start(timeout=30)
        digest = lc.env("LOCKLAB_ZK_DIGEST")
        if digest:
            self.zk.add_auth("digest", digest)
        self.prefix = config.get("prefix", "")
        self.locks = {}

    def _state(self, state):
        if state in (KazooState.SUSPENDED, KazooState.LOST):
            self.gone = True

    def acquire(self, name, timeout):
        lock = self.locks.get(name)
        if lock is None:
            lock = self.locks[name] = self.zk.Lock(lc.zk_path("", name))
        self.gone = False
        if not lock.acquire(timeout=timeout):
            return None
        return lock, sequence(lock.node), None, {"session_ms": self.zk._session_timeout}

    def release(self, lock):
        return "ok" if lock.release() else "not_held"

    def lost(self, lock):
        return self.gone

    def close(self):
        self.zk.stop()
        self.zk.close()


if __name__ == "__main__":
    lc.run(Adapter, "kazoo " + getattr(kazoo, "__version__", "2.8"))
