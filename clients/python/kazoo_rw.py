"""locklab client: kazoo's read-write lock (ReadLock / WriteLock).

Both sides are ephemeral sequential nodes under the lock's path, numbered
by one counter: a writer ("__lock__" node) waits for every node before
it, a reader ("__rlock__" node) only for the writers before it. A go with
"mode": "shared" takes the ReadLock, any other the WriteLock.

Fencing token: the sequence number of this holder's node + 1 (+ 1 because
the first node's is 0, which the protocol reads as "no token"). Writers'
tokens strictly increase per lock path; a reader's is above every writer
that held before it and below every writer after it, but readers inside
together are not ordered among themselves. Promised validity: the
session's (session_ms), as the kazoo client; a SUSPENDED or LOST
connection state while holding is reported as "lost".
"""
import kazoo
from kazoo.exceptions import LockTimeout

import locklab_client as lc
from starter_zookeeper import Adapter, sequence


class RWAdapter(Adapter):
    def acquire(self, name, timeout):
        return self._take(name, timeout, False)

    def acquire_shared(self, name, timeout):
        return self._take(name, timeout, True)

    def _take(self, name, timeout, shared):
        lock = self.locks.get((name, shared))
        if lock is None:
            path = lc.zk_path("", name)
            lock = self.zk.ReadLock(path) if shared else self.zk.WriteLock(path)
            self.locks[(name, shared)] = lock
        self.gone = False
        try:
            if not lock.acquire(timeout=timeout):
                return None
        except LockTimeout:
            return None
        return lock, sequence(lock.node), None, {"session_ms": self.zk._session_timeout}


if __name__ == "__main__":
    lc.run(RWAdapter, "kazoo " + getattr(kazoo, "__version__", "2.8") + " ReadLock/WriteLock")
