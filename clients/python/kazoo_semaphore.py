"""locklab client: kazoo's Semaphore (lease nodes under the lock's path).

A holder takes a short kazoo Lock beside the path, counts the lease
nodes, creates its own ephemeral one when fewer than max_leases exist,
and drops the Lock; releasing deletes the lease node. max_leases is the
config's option "permits" (default 3). kazoo stores it in the path's data
and refuses a holder that asks for another count on the same path.

Token 0 (none): lease nodes are named by a random id, and holders inside
together have no order a token could give. Promised validity: the
session's (session_ms), as the kazoo client; a SUSPENDED or LOST
connection state while holding is reported as "lost".
"""
import kazoo
from kazoo.exceptions import LockTimeout

import locklab_client as lc
from starter_zookeeper import Adapter

DEFAULT_PERMITS = 3


class SemaphoreAdapter(Adapter):
    def __init__(self, config):
        super().__init__(config)
        self.permits = int((config.get("options") or {}).get("permits") or DEFAULT_PERMITS)

    def acquire(self, name, timeout):
        sem = self.locks.get(name)
        if sem is None:
            sem = self.locks[name] = self.zk.Semaphore(lc.zk_path("", name), max_leases=self.permits)
        self.gone = False
        try:
            if not sem.acquire(timeout=timeout):
                return None
        except LockTimeout:
            return None
        return sem, 0, None, {"session_ms": self.zk._session_timeout}


if __name__ == "__main__":
    lc.run(SemaphoreAdapter, "kazoo " + getattr(kazoo, "__version__", "2.8") + " Semaphore")
