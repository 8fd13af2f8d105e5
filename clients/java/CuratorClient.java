// locklab client: Apache Curator's lock recipes (ZooKeeper), chosen by the
// first argument: mutex (InterProcessMutex, the default), rw
// (InterProcessReadWriteLock: a go with "mode":"shared" takes its read
// lock, any other its write lock) or semaphore (InterProcessSemaphoreV2
// with the config's option "permits" leases, default 3).
//
// Speaks locklab's client protocol (docs/client-protocol.md) on
// stdin/stdout. Fencing token: the sequence number of this holder's lock
// node + 1 (strictly increasing per lock path while the path exists; + 1
// because the first node's is 0, which the protocol reads as "no token").
// The read-write lock numbers its read and write nodes with one counter:
// writers' tokens strictly increase; a reader's is above every writer
// before it and below every writer after it, and readers inside together
// are not ordered among themselves. A semaphore's token is 0 (none): its
// holders are inside together, and no token orders their writes.
// Promised validity: the session's. The lock lasts as long as the session,
// so acquired reports session_ms (the session timeout the server
// negotiated) and the harness derives the promise from it. Curator reports
// SUSPENDED/LOST connection states, sent as "lost" (from Curator's event
// thread: send writes each line whole under a lock). Protocol version 2.
// No sent_us: the mutex creates its lock node with its first request and
// then waits on a watch; a session lock's promise counts from the session's
// requests, not from a winning send.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;

public class CuratorClient {
    /** Exposes the holder's lock node path (protected in Curator). */
    static class Mutex extends InterProcessMutex {
        Mutex(CuratorFramework c, String path) { super(c, path); }
        String node() { return getLockPath(); }
    }

    /** The write side of a read-write lock, exposing its node path. */
    static class WriteSide extends InterProcessReadWriteLock.WriteLock {
        WriteSide(CuratorFramework c, String path) { super(c, path, null); }
        String node() { return getLockPath(); }
    }

    /** The read side of a read-write lock, exposing its node path. */
    static class ReadSide extends InterProcessReadWriteLock.ReadLock {
        ReadSide(CuratorFramework c, String path, WriteSide w) { super(c, path, null, w); }
        String node() { return getLockPath(); }
    }

    /** A read-write lock built from the two sides above (Curator's
     *  constructor for subclassed sides). */
    static class ReadWrite extends InterProcessReadWriteLock {
        ReadWrite(WriteSide w, ReadSide r) { super(w, r); }

        static ReadWrite of(CuratorFramework c, String path) {
            WriteSide w = new WriteSide(c, path);
            return new ReadWrite(w, new ReadSide(c, path, w));
        }
    }

    /** One holding: its fencing token and how to give it up. release
     *  throws IllegalMonitorStateException when the lock was not held. */
    interface Holding {
        long token();
        void release() throws Exception;
    }

    /** A lock recipe: acquire returns the holding, or null on timeout. */
    interface Recipe {
        Holding acquire(String path, boolean shared, long timeoutMs) throws Exception;
    }

    static Recipe recipe(String name, CuratorFramework c, Map<String, Object> cfg) {
        switch (name) {
            case "mutex": {
                Map<String, Mutex> locks = new HashMap<>();
                return (path, shared, timeoutMs) -> {
                    Mutex m = locks.computeIfAbsent(path, p -> new Mutex(c, p));
                    if (!m.acquire(timeoutMs, TimeUnit.MILLISECONDS)) return null;
                    return holding(sequence(m.node()), m::release);
                };
            }
            case "rw": {
                Map<String, InterProcessReadWriteLock> locks = new HashMap<>();
                return (path, shared, timeoutMs) -> {
                    InterProcessReadWriteLock rw = locks.computeIfAbsent(path, p -> ReadWrite.of(c, p));
                    InterProcessMutex m = shared ? rw.readLock() : rw.writeLock();
                    if (!m.acquire(timeoutMs, TimeUnit.MILLISECONDS)) return null;
                    String node = shared ? ((ReadSide) m).node() : ((WriteSide) m).node();
                    return holding(sequence(node), m::release);
                };
            }
            case "semaphore": {
                int permits = permits(cfg);
                Map<String, InterProcessSemaphoreV2> sems = new HashMap<>();
                return (path, shared, timeoutMs) -> {
                    InterProcessSemaphoreV2 s = sems.computeIfAbsent(path, p -> new InterProcessSemaphoreV2(c, p, permits));
                    Lease lease = s.acquire(timeoutMs, TimeUnit.MILLISECONDS);
                    if (lease == null) return null;
                    return holding(0, lease::close);
                };
            }
        }
        throw new IllegalArgumentException("unknown recipe " + str(name) + " (want mutex, rw or semaphore)");
    }

    interface Release { void run() throws Exception; }

    static Holding holding(long token, Release r) {
        return new Holding() {
            public long token() { return token; }
            public void release() throws Exception { r.run(); }
        };
    }

    /** The config's option "permits" (a string), 3 when unset. */
    static int permits(Map<String, Object> cfg) {
        Object o = cfg.get("options");
        Object v = o instanceof Map ? ((Map<?, ?>) o).get("permits") : null;
        int n = v == null ? 3 : Integer.parseInt(v.toString());
        if (n < 1) throw new IllegalArgumentException("permits " + n + ": want at least 1");
        return n;
    }

    static BufferedReader in;
    static PrintStream out;
    static volatile boolean lost;

    public static void main(String[] args) throws Exception {
        String recipeName = args.length > 0 ? args[0] : "mutex";
        in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        out = new PrintStream(System.out, false, "UTF-8");
        Map<String, Object> cfg = read();
        if (!"config".equals(cfg.get("op"))) throw new IllegalStateException("first line is not config: " + cfg);
        @SuppressWarnings("unchecked")
        Map<String, Object> ep = (Map<String, Object>) cfg.get("endpoints");
        @SuppressWarnings("unchecked")
        List<Object> zk = (List<Object>) ep.get("zookeeper");
        String hosts = String.join(",", zk.stream().map(Object::toString).toArray(String[]::new));
        int ttl = (int) num(cfg, "ttl_ms", 10000);
        CuratorFrameworkFactory.Builder b = CuratorFrameworkFactory.builder().connectString(hosts)
            .sessionTimeoutMs(ttl).connectionTimeoutMs(Math.max(1000, Math.min(ttl, 15000)))
            .retryPolicy(new ExponentialBackoffRetry(50, 3));
        String digest = System.getenv("LOCKLAB_ZK_DIGEST");
        if (digest != null && !digest.isEmpty()) b.authorization("digest", digest.getBytes(StandardCharsets.UTF_8));
        CuratorFramework c = b.build();
        c.getConnectionStateListenable().addListener((cl, st) -> {
            if (st == ConnectionState.SUSPENDED || st == ConnectionState.LOST) lost = true;
        });
        c.start();
        if (!c.blockUntilConnected(30, TimeUnit.SECONDS)) throw new IllegalStateException("no ZooKeeper connection to " + hosts);
        Recipe recipe = recipe(recipeName, c, cfg);
        String version = CuratorFramework.class.getPackage().getImplementationVersion();
        send("{\"op\":\"ready\",\"version\":2,\"library\":" + str("curator " + (version == null ? "5.4.0" : version) + ("mutex".equals(recipeName) ? "" : " " + recipeName)) + "}");
        if (!"start".equals(read().get("op"))) throw new IllegalStateException("expected start");

        long hold = (long) num(cfg, "critical_section_ms", 0);
        long timeout = (long) num(cfg, "acquire_timeout_ms", 10000);
        String prefix = String.valueOf(cfg.getOrDefault("prefix", ""));
        while (true) {
            Map<String, Object> work = call("{\"op\":\"next\"}");
            if (!"go".equals(work.get("op"))) break;
            String path = zkPath(prefix + work.get("key"));
            Object mode = work.get("mode");
            if (mode == null) mode = "exclusive";
            if (!"exclusive".equals(mode) && !"shared".equals(mode)) throw new IllegalStateException("go with unknown mode " + mode + " (want exclusive or shared)");
            boolean shared = "shared".equals(mode);
            long t0 = System.nanoTime();
            Holding h;
            try {
                lost = false;
                h = recipe.acquire(path, shared, timeout);
            } catch (Exception e) {
                System.err.println("acquire " + path + ": " + e);
                send("{\"op\":\"acquire_failed\",\"reason\":\"error\",\"error\":" + str(e.toString()) + "}");
                continue;
            }
            if (h == null) {
                send("{\"op\":\"acquire_failed\",\"reason\":\"timeout\"}");
                continue;
            }
            double us = (System.nanoTime() - t0) / 1000.0;
            int session = ttl;
            try {
                int negotiated = c.getZookeeperClient().getZooKeeper().getSessionTimeout();
                if (negotiated > 0) session = negotiated;
            } catch (Exception e) {
                System.err.println("session timeout: " + e);
            }
            send("{\"op\":\"acquired\",\"token\":" + h.token() + ",\"us\":" + us + ",\"session_ms\":" + session + "}");
            if (Boolean.TRUE.equals(call("{\"op\":\"enter\"}").get("ok"))) {
                Map<String, Object> r = call("{\"op\":\"read\"}");
                if (Boolean.TRUE.equals(r.get("ok"))) {
                    if (hold > 0) Thread.sleep(hold);
                    if (shared) call("{\"op\":\"read\"}"); // a reader writes nothing
                    else call("{\"op\":\"write\",\"value\":" + (((Number) r.get("value")).longValue() + 1) + "}");
                }
                call("{\"op\":\"exit\"}");
            }
            if (lost) send("{\"op\":\"lost\"}");
            t0 = System.nanoTime();
            String outcome = "ok";
            try {
                h.release();
            } catch (IllegalMonitorStateException e) {
                outcome = "not_held";
            } catch (Exception e) {
                System.err.println("release " + path + ": " + e);
                outcome = "error";
            }
            us = (System.nanoTime() - t0) / 1000.0;
            send("{\"op\":\"released\",\"outcome\":\"" + outcome + "\",\"us\":" + us + "}");
        }
        Thread closer = new Thread(c::close);
        closer.setDaemon(true);
        closer.start();
        closer.join(1000);
        System.exit(0);
    }

    static String zkPath(String name) {
        StringBuilder sb = new StringBuilder();
        for (String p : name.replace(':', '/').split("/")) if (!p.isEmpty()) sb.append('/').append(p);
        return sb.toString();
    }

    /** The token of a lock node: its sequence suffix + 1 ("..-lock-0000000042" -> 43;
     *  the first node's sequence is 0, and token 0 means none); 0 without a suffix. */
    static long sequence(String node) {
        if (node == null) return 0;
        int i = node.length();
        while (i > 0 && Character.isDigit(node.charAt(i - 1))) i--;
        return i == node.length() ? 0 : Long.parseLong(node.substring(i)) + 1;
    }

    static double num(Map<String, Object> m, String k, double def) {
        Object v = m.get(k);
        return v instanceof Number ? ((Number) v).doubleValue() : def;
    }

    /** Writes one whole line and flushes it; synchronized, so a line from
     *  another thread never interleaves with the main loop's. */
    static synchronized void send(String line) {
        out.print(line);
        out.print('\n');
        out.flush();
    }

    static Map<String, Object> call(String line) throws Exception {
        send(line);
        return read();
    }

    static Map<String, Object> read() throws Exception {
        String line = in.readLine();
        if (line == null) System.exit(0); // stdin closed: the harness stopped us
        @SuppressWarnings("unchecked")
        Map<String, Object> m = (Map<String, Object>) new Json(line).value();
        return m;
    }

    static String str(String s) {
        StringBuilder sb = new StringBuilder("\"");
        for (char ch : s.toCharArray()) {
            if (ch == '"' || ch == '\\') sb.append('\\').append(ch);
            else if (ch < 0x20) sb.append(String.format("\\u%04x", (int) ch));
            else sb.append(ch);
        }
        return sb.append('"').toString();
    }

    /** A minimal JSON reader for the harness's messages. */
    static class Json {
        final String s;
        int i;
        Json(String s) { this.s = s; }

        Object value() {
            ws();
            char ch = s.charAt(i);
            if (ch == '{') {
                Map<String, Object> m = new LinkedHashMap<>();
                i++;
                ws();
                if (s.charAt(i) == '}') { i++; return m; }
                while (true) {
                    ws();
                    String k = (String) value();
                    ws();
                    i++; // ':'
                    m.put(k, value());
                    ws();
                    if (s.charAt(i++) == '}') return m;
                }
            }
            if (ch == '[') {
                List<Object> l = new ArrayList<>();
                i++;
                ws();
                if (s.charAt(i) == ']') { i++; return l; }
                while (true) {
                    l.add(value());
                    ws();
                    if (s.charAt(i++) == ']') return l;
                }
            }
            if (ch == '"') {
                StringBuilder sb = new StringBuilder();
                i++;
                while (s.charAt(i) != '"') {
                    char c = s.charAt(i++);
                    if (c == '\\') {
                        char e = s.charAt(i++);
                        switch (e) {
                            case 'n': sb.append('\n'); break;
                            case 't': sb.append('\t'); break;
                            case 'r': sb.append('\r'); break;
                            case 'b': sb.append('\b'); break;
                            case 'f': sb.append('\f'); break;
                            case 'u': sb.append((char) Integer.parseInt(s.substring(i, i + 4), 16)); i += 4; break;
                            default: sb.append(e);
                        }
                    } else sb.append(c);
                }
                i++;
                return sb.toString();
            }
            if (s.startsWith("true", i)) { i += 4; return Boolean.TRUE; }
            if (s.startsWith("false", i)) { i += 5; return Boolean.FALSE; }
            if (s.startsWith("null", i)) { i += 4; return null; }
            int j = i;
            while (i < s.length() && "+-0123456789.eE".indexOf(s.charAt(i)) >= 0) i++;
            String n = s.substring(j, i);
            if (n.contains(".") || n.contains("e") || n.contains("E")) return Double.parseDouble(n);
            return Long.parseLong(n);
        }

        void ws() { while (i < s.length() && Character.isWhitespace(s.charAt(i))) i++; }
    }
}
