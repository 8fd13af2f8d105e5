"""A locklab client for an etcd lock of your own: start here.

`bench init --exec --backend etcd` writes this file as NAME_client.py,
beside locklab_client.py (the protocol: docs/client-protocol.md). It runs
as written: a plain etcd lock, so the harness has something to test
before you change anything. Replace the body of acquire and release with
calls to your lock, keep what they return, and run
`bench client-check --backend etcd -- python3 THIS_FILE`.

The lock as written:
  acquire: a lease of ttl (whole seconds), then a transaction that puts the
           key with the lease only if the key does not exist
           (create_revision == 0); otherwise wait for the key to change
  token:   the key's create revision (grows with every grant)
  release: delete the key only if it still holds our owner, revoke the lease
  validity_ms: the lease's TTL (never refreshed here)
"""
import uuid

import etcd3

import locklab_client as lc


class Adapter:
    def __init__(self, config):
        # config is the harness's first line: endpoints, ttl_ms, prefix,
        # options (docs/client-protocol.md, "Configuration").
        self.c = lc.etcd_client(config)  # python-etcd3, logged in, checked
        self.ttl = max(1, int(round(config["ttl_ms"] / 1000.0)))

    def acquire(self, name, timeout):
        """Take lock name within timeout seconds.

        Return (handle, token, validity_ms), or None on timeout. token is an
        integer >= 0 that grows with every grant of this lock (0: none);
        validity_ms is how long the lock is yours without renewal.
        """
        owner = uuid.uuid4().hex.encode()
        # The lease is granted once, before any try: its TTL runs from this
        # grant, whichever try wins, so the winning "request" for the
        # promise is this one (not the transaction that took the key).
        lc.sending()
        lease = self.c.lease(self.ttl)
        t = self.c.transactions

        def try_once():
            ok, _ = self.c.transaction(compare=[t.create(name) == 0],
                                       success=[t.put(name, owner, lease)], failure=[])
            return ok
        if not lc.poll_acquire(try_once, lc.etcd_waiter(self.c, name), timeout):
            lease.revoke()
            return None
        value, meta = self.c.get(name)
        token = meta.create_revision if value == owner and meta is not None else 0
        return (name, owner, lease), token, self.ttl * 1000

    def release(self, handle):
        """Give the lock up: "ok", or "not_held" when it was no longer ours."""
        name, owner, lease = handle
        t = self.c.transactions
        ok, _ = self.c.transaction(compare=[t.value(name) == owner],
                                   success=[t.delete(name)], failure=[])
        lease.revoke()
        return "ok" if ok else "not_held"

    def lost(self, handle):
        return False

    def close(self):
        self.c.close()


if __name__ == "__main__":
    lc.run(Adapter, "starter-etcd (python-etcd3 " + getattr(etcd3, "__version__", "0.12") + ")")
