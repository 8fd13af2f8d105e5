"""locklab client: python-etcd3's Lock (txn create_revision == 0, put with a lease).

Fencing token: the lock key's create revision, read with one get right
after acquiring (0 when the key is no longer ours by then). Promised
validity: the lease TTL (whole seconds: python-etcd3 leases take an int;
the Lock never refreshes it by itself). Each try grants a new lease, then
the transaction: lc.sending() before each try, so the TTL counts from the
lease of the try that won (sent_us).

The blocking wait is done here, not by Lock.acquire: see
locklab_client.poll_acquire (python-etcd3 0.12 + tenacity 8 bug).
"""
import etcd3

import locklab_client as lc


class Adapter:
    def __init__(self, config):
        self.c = lc.etcd_client(config)
        self.ttl = max(1, int(round(config["ttl_ms"] / 1000.0)))

    def acquire(self, name, timeout):
        lock = self.c.lock(name, ttl=self.ttl)
        def try_once():
            lc.sending()  # this try's lease starts the TTL
            return lock.acquire(timeout=0)
        if not lc.poll_acquire(try_once, lc.etcd_waiter(self.c, lock.key), timeout):
            return None
        token = 0
        value, meta = self.c.get(lock.key)
        if value == lock.uuid and meta is not None:
            token = meta.create_revision
        return lock, token, self.ttl * 1000

    def release(self, lock):
        return "ok" if lock.release() else "not_held"

    def lost(self, lock):
        return False

    def close(self):
        self.c.close()


if __name__ == "__main__":
    lc.run(Adapter, "python-etcd3 " + getattr(etcd3, "__version__", "0.12"))
