"""Client side of locklab's client protocol (docs/client-protocol.md).

A reference client wraps one lock library in an adapter with three
methods and hands it to run():

    acquire(name, timeout_s) -> (handle, token, validity_ms) or None on timeout
                                (validity_ms None: no lease; a fourth item,
                                a dict, adds fields to the acquired line,
                                e.g. {"session_ms": 10000})
    release(handle)          -> "ok" | "not_held"
    lost(handle)             -> True when the library says the lock is gone

Before each request that may win the lock (each try of a retry loop),
acquire calls sending(): the acquired line then says how long before it
that request was sent (sent_us), and the harness counts the promise from
there rather than from the start of the acquire call.

and optionally held(handle), called once the acquired line is out (a
renewal done then can be reported), close(), and, for a read-write lock,

    acquire_shared(name, timeout_s) -> as acquire, for the shared (read) side

called when the harness's go says "mode": "shared" (acquire takes the
exclusive side; mode() says which side the current go asked for). An
adapter without acquire_shared takes every lock exclusively: stricter
than a shared go asks, never weaker. A shared holding reads the resource
twice (at the start and the end of its critical section) and never
writes.

A library thread that renews the lease calls renewed(handle,
validity_ms); one that sees the lock go calls lost(handle): both may run
at any time, from any thread.

acquire may raise NotObtained (the library gave up by itself); any other
exception counts as a backend error ("acquire_failed" with reason
"error"). The harness does the rest: it hands out the lock names, owns
the shared resource and records every measurement.

Run with /usr/bin/python3: Debian's lock libraries are installed for it.
"""
import json
import os
import sys
import threading
import time
import traceback


class NotObtained(Exception):
    """The library gave up acquiring (its own retry budget ran out)."""


PROTOCOL_VERSION = 2


class Harness:
    """The JSON-lines conversation with the harness on stdin/stdout.

    Every line is written whole under one lock and flushed at once: lines
    may come from a library's threads (renewed, lost) while the main loop
    talks, and an unflushed line never reaches the harness.
    """

    def __init__(self):
        self._in = sys.stdin
        self._out = sys.stdout
        self._mu = threading.Lock()
        self._holding = None  # the handle held now, for background lines

    def read(self):
        line = self._in.readline()
        if not line:
            sys.exit(0)  # the harness closed our stdin: stop
        return json.loads(line)

    def send(self, **msg):
        line = json.dumps(msg) + "\n"
        with self._mu:
            self._out.write(line)
            self._out.flush()

    def hold(self, handle):
        """handle is held from now on (None: nothing is)."""
        with self._mu:
            self._holding = handle

    def send_if_held(self, handle, **msg):
        """Send msg only while handle is the lock held: a late line from a
        library thread must not land on the next holding."""
        line = json.dumps(msg) + "\n"
        with self._mu:
            if handle is None or handle is not self._holding:
                return False
            self._out.write(line)
            self._out.flush()
            return True

    def call(self, **msg):
        self.send(**msg)
        return self.read()


def zk_path(prefix, name):
    """A ZooKeeper path for lock name under the run's prefix."""
    return "/" + "/".join(p for p in (prefix + name).replace(":", "/").split("/") if p)


def zk_hosts(config):
    return ",".join(config["endpoints"]["zookeeper"])


def redis_endpoint(config):
    host, port = config["endpoints"]["redis"][0].rsplit(":", 1)
    return host, int(port)


def etcd_endpoint(config):
    host, port = config["endpoints"]["etcd"][0].rsplit(":", 1)
    return host, int(port)


def redis_client(config):
    """A redis-py client of the run's Redis primary, logged in with the
    LOCKLAB_REDIS_* credentials (none: no login), checked with PING.

    When the topology has Sentinels (endpoints "sentinels"), the client
    asks them for the primary of the first master name and follows their
    failovers (redis.sentinel.Sentinel(...).master_for), as the Go Redis
    locks do; the primary's address they report is dialled through this
    client's proxy (follow_redirects). Else it connects to the first
    Redis address."""
    import redis
    opts = dict(username=env("LOCKLAB_REDIS_USERNAME"),
                password=env("LOCKLAB_REDIS_PASSWORD"),
                socket_timeout=10)
    if env("LOCKLAB_REDIS_TLS"):
        # Only then: a plain Connection (a Sentinel's) refuses ssl_* keys.
        opts.update(ssl=True, ssl_ca_certs=env("LOCKLAB_REDIS_CACERT"))
    sentinels, master = redis_sentinels(config)
    if sentinels:
        from redis.sentinel import Sentinel
        follow_redirects(config)
        s = Sentinel(sentinels, sentinel_kwargs=dict(opts), **opts)
        r = s.master_for(master)
    else:
        host, port = redis_endpoint(config)
        r = redis.Redis(host=host, port=port, **opts)
    r.ping()
    return r


def redis_sentinels(config):
    """([(host, port)] of the run's Sentinels, the first master name), or
    ([], None) when the topology has no Sentinel."""
    ep = config["endpoints"]
    sentinels = [split_addr(a) for a in ep.get("sentinels") or []]
    names = ep.get("master_names") or []
    if not sentinels:
        return [], None
    if not names:
        raise SystemExit("endpoints have sentinels but no master_names")
    return sentinels, names[0]


def split_addr(addr):
    host, port = addr.rsplit(":", 1)
    return host, int(port)


_redirecting = False


def follow_redirects(config):
    """Make every redis-py Sentinel in this process dial the primary it
    discovers through this client's proxy: a Sentinel reports the primary's
    real address, which endpoints "redirect" maps to the proxied one (the
    client-link faults act there). Used by redis_client and by tooz's
    redis driver (its sentinel= URL builds a redis-py Sentinel)."""
    global _redirecting
    redirect = config["endpoints"].get("redirect") or {}
    if _redirecting or not redirect:
        return
    from redis.sentinel import Sentinel
    discover = Sentinel.discover_master

    def discover_master(self, service_name):
        host, port = discover(self, service_name)
        to = redirect.get("%s:%d" % (host, int(port)))
        return split_addr(to) if to else (host, port)
    Sentinel.discover_master = discover_master
    _redirecting = True


def etcd_client(config):
    """A python-etcd3 client of the run's first etcd member, logged in with
    the LOCKLAB_ETCD_* credentials (none: no login), checked with status."""
    import etcd3
    host, port = etcd_endpoint(config)
    c = etcd3.client(host=host, port=port,
                     user=env("LOCKLAB_ETCD_USERNAME"),
                     password=env("LOCKLAB_ETCD_PASSWORD"),
                     ca_cert=env("LOCKLAB_ETCD_CACERT"),
                     cert_cert=env("LOCKLAB_ETCD_CERT"),
                     cert_key=env("LOCKLAB_ETCD_KEY"),
                     timeout=10)
    c.status()
    return c


def log(*args):
    print(*args, file=sys.stderr, flush=True)


_harness = None
_sent = None  # perf_counter() before the last request that may win
_mode = "exclusive"  # the side the current go asked for

# The sides of a read-write lock a go may ask for ("mode"; absent: exclusive).
EXCLUSIVE, SHARED = "exclusive", "shared"


def mode():
    """The side of the lock the current go asked for: "exclusive" (the
    write side, and every mutex) or "shared" (a read-write lock's read
    side)."""
    return _mode


def sending():
    """Call just before each request of acquire that may win the lock (each
    try of a retry loop; for a lease granted before waiting, before the
    lease's grant). The acquired line then carries sent_us, the time from
    the last such call to the line, and the harness counts the promise from
    there: without it the promise counts from the start of the acquire
    call, before every retry."""
    global _sent
    _sent = time.perf_counter()


def renewed(handle, validity_ms):
    """Report that handle's lease was extended: validity_ms is what is left,
    counted from the renewal's send time (measure it from just before the
    library's renewal call). Safe from any thread; dropped when handle is
    no longer held."""
    if _harness is not None:
        _harness.send_if_held(handle, op="renewed", validity_ms=max(0.0, float(validity_ms)))


def lost(handle):
    """Report that the library said handle's lock is gone. Safe from any
    thread; dropped when handle is no longer held."""
    if _harness is not None:
        _harness.send_if_held(handle, op="lost")


def run(make_adapter, library):
    """Speak the protocol until the harness says stop.

    make_adapter(config) connects to the backend and returns the adapter.
    """
    global _harness, _sent, _mode
    h = _harness = Harness()
    config = h.read()
    if config.get("op") != "config":
        raise SystemExit("first line is not a config message: %r" % config)
    adapter = make_adapter(config)
    h.send(op="ready", library=library, version=PROTOCOL_VERSION)
    start = h.read()
    if start.get("op") != "start":
        raise SystemExit("expected start, got %r" % start)
    hold = config.get("critical_section_ms", 0) / 1000.0
    timeout = config.get("acquire_timeout_ms", 10000) / 1000.0
    prefix = config.get("prefix", "")
    while True:
        work = h.call(op="next")
        if work["op"] == "stop":
            break
        name = prefix + work["key"]
        _mode = work.get("mode") or EXCLUSIVE
        if _mode not in (EXCLUSIVE, SHARED):
            raise SystemExit("go with unknown mode %r (want exclusive or shared)" % _mode)
        take = adapter.acquire
        if _mode == SHARED:
            take = getattr(adapter, "acquire_shared", adapter.acquire)
        _sent = None
        t0 = time.perf_counter()
        try:
            got = take(name, timeout)
        except NotObtained as e:
            h.send(op="acquire_failed", reason="not_obtained", error=str(e))
            continue
        except Exception as e:
            log("acquire %s: %s" % (name, traceback.format_exc()))
            h.send(op="acquire_failed", reason="error", error=repr(e))
            continue
        if got is None:
            h.send(op="acquire_failed", reason="timeout")
            continue
        handle, token, validity_ms = got[:3]
        msg = dict(op="acquired", token=int(token), us=(time.perf_counter() - t0) * 1e6)
        if validity_ms is not None:
            msg["validity_ms"] = validity_ms
        if len(got) > 3:
            msg.update(got[3])
        if _sent is not None:
            msg["sent_us"] = (time.perf_counter() - _sent) * 1e6
        h.send(**msg)
        h.hold(handle)
        held = getattr(adapter, "held", None)
        if held:
            held(handle)
        if h.call(op="enter").get("ok"):
            r = h.call(op="read")
            if r.get("ok"):
                if hold > 0:
                    time.sleep(hold)
                if _mode == SHARED:
                    h.call(op="read")  # a reader writes nothing
                else:
                    h.call(op="write", value=r["value"] + 1)
            h.call(op="exit")
        try:
            if adapter.lost(handle):
                h.send(op="lost")
        except Exception:
            pass
        h.hold(None)
        t0 = time.perf_counter()
        try:
            outcome = adapter.release(handle)
        except Exception as e:
            log("release %s: %r" % (name, e))
            outcome = "error"
        h.send(op="released", outcome=outcome, us=(time.perf_counter() - t0) * 1e6)
    close = getattr(adapter, "close", None)
    if close:
        # A library's teardown may block (tooz's stop releasing a lock it
        # lost): give it a moment, then leave regardless.
        t = threading.Thread(target=close, daemon=True)
        t.start()
        t.join(1.0)
    sys.stdout.flush()
    os._exit(0)


def poll_acquire(try_once, wait, timeout):
    """Acquire by non-blocking attempts, waiting between them.

    python-etcd3 0.12's blocking Lock.acquire breaks with Debian's tenacity
    8 (TypeError: wait() missing 'delay_since_first_attempt') on every
    contended acquire; tooz's etcd3 driver inherits it. Its clients call
    try_once (acquire with timeout 0, which never reaches that wait) and
    wait(seconds) between attempts as the library intends (watch_once on
    the lock key), at most 1s at a time so a missed event costs 1s, not the
    whole acquire timeout.
    """
    deadline = time.monotonic() + timeout
    while True:
        if try_once():
            return True
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        wait(min(left, 1.0))


def etcd_waiter(client, key):
    """wait(seconds) for poll_acquire: until the etcd key changes."""
    import etcd3.exceptions

    def wait(seconds):
        try:
            client.watch_once(key, timeout=seconds)
        except etcd3.exceptions.WatchTimedOut:
            pass
    return wait


def env(name):
    """A LOCKLAB_* credential from the environment, None when unset."""
    return os.environ.get(name) or None
