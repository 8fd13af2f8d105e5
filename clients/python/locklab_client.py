"""Client side of locklab's client protocol (docs/client-protocol.md).

A reference client wraps one lock library in an adapter with three
methods and hands it to run():

    acquire(name, timeout_s) -> (handle, token, validity_ms) or None on timeout
    release(handle)          -> "ok" | "not_held"
    lost(handle)             -> True when the library says the lock is gone

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


class Harness:
    """The JSON-lines conversation with the harness on stdin/stdout."""

    def __init__(self):
        self._in = sys.stdin
        self._out = sys.stdout

    def read(self):
        line = self._in.readline()
        if not line:
            sys.exit(0)  # the harness closed our stdin: stop
        return json.loads(line)

    def send(self, **msg):
        self._out.write(json.dumps(msg) + "\n")
        self._out.flush()

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


def log(*args):
    print(*args, file=sys.stderr, flush=True)


def run(make_adapter, library):
    """Speak the protocol until the harness says stop.

    make_adapter(config) connects to the backend and returns the adapter.
    """
    h = Harness()
    config = h.read()
    if config.get("op") != "config":
        raise SystemExit("first line is not a config message: %r" % config)
    adapter = make_adapter(config)
    h.send(op="ready", library=library)
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
        t0 = time.perf_counter()
        try:
            got = adapter.acquire(name, timeout)
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
        handle, token, validity_ms = got
        msg = dict(op="acquired", token=int(token), us=(time.perf_counter() - t0) * 1e6)
        if validity_ms is not None:
            msg["validity_ms"] = validity_ms
        h.send(**msg)
        if h.call(op="enter").get("ok"):
            r = h.call(op="read")
            if r.get("ok"):
                if hold > 0:
                    time.sleep(hold)
                h.call(op="write", value=r["value"] + 1)
            h.call(op="exit")
        try:
            if adapter.lost(handle):
                h.send(op="lost")
        except Exception:
            pass
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
