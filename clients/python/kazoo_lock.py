"""locklab client: kazoo's Lock (ZooKeeper ephemeral sequential node).

The lock is the ZooKeeper starter's as written (starter_zookeeper.py: the
same recipe, commented for editing); this file runs it under kazoo's name.

Fencing token: the sequence number of this holder's lock node + 1
(strictly increasing per lock path; + 1 because the first node's is 0,
which the protocol reads as "no token"). Promised validity: the
session's: the lock lasts as long as the session, so acquired reports
session_ms (the session timeout the server granted) and the harness
derives the promise from it. A SUSPENDED or LOST connection state while
holding is reported as "lost".
"""
import kazoo

import locklab_client as lc
from starter_zookeeper import Adapter

if __name__ == "__main__":
    lc.run(Adapter, "kazoo " + getattr(kazoo, "__version__", "2.8"))
