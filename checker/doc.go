// Package checker is the shared resource every locklab client touches inside
// its critical section, and the ground truth of a run.
//
// The resource has one clock (monotonic, from the run's base time) and sees
// every visit: Enter, Read, Write, Exit. From that it records
//
//   - violations: a client enters a lock's resource while another client is
//     inside it, i.e. both believe they hold the lock. Each is recorded with
//     both clients, their tokens, the lock name, the time, and how long the
//     two visits overlapped;
//   - lost updates: each lock name guards a counter that clients update by
//     read, hold, write(value+1). Overlapping visits overwrite each other, so
//     the counters end below the number of accepted writes;
//   - stale fencing tokens: a write carrying a token lower than one the
//     resource has already seen for that lock (at an Enter or a Write, both
//     requests that carry the token, as in Kleppmann's fencing scheme).
//     With fencing observe the write is applied and counted; with enforce it
//     is rejected with ErrStaleToken and counted as rejected. Token 0 means
//     the lock gives no token: such visits are never called stale.
//
// Beyond those counts it groups overlapping visits into
// incidents (a maximal group of overlapping visits counts once) and
// classifies each as a lock fault (both holders entered within their own
// promises, and the lock certainly granted the later one while the earlier
// one's promise still ran, judged from each grant's [request, reply]
// window: Visit carries them and the promise the holder measured) or a
// client fault (not provably the lock's: a holder entered or stayed inside
// after its promise ran out, or promised nothing); docs/verdicts.md states
// the rule for users. It measures the time two or
// more were inside, and from every grant (whether or not a write carried
// its token) counts duplicate tokens and token regressions, and from the
// promises, the lost lines and the faults that took the lock state, the
// lost leases and how long each holder went on unaware (Zombies). With a History
// set, every operation streams to history.jsonl in the resource's order;
// Replay recomputes all figures from those lines alone, and CheckTokenOrder
// asks porcupine for a second opinion on the token sequence.
//
// The checker does not import the lock packages: it knows clients by index
// and locks by name only. Remote clients (one OS process per client) reach it
// through the Server and Dial in this package.
// It is a leaf: it imports nothing of locklab (docs/architecture.md).
package checker
