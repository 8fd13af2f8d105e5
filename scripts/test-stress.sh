#!/bin/sh
# test-stress.sh N: runs the whole test suite N times exactly as `make test`
# does (never from Go's test cache) and prints every test that failed, with
# its failure rate, so a flaky test is found before CI finds it.
#
# Each run's full output is kept in $OUT/run-K.log (default: a fresh
# directory under /tmp). With FRESH=1 each run is `make test` in a fresh
# clone of the committed HEAD ($OUT/clone-K, removed after a passing run):
# what CI does on a clean checkout, vet included. Exit status: 0 when no
# run failed, 1 otherwise.
set -u
N=${1:-10}
OUT=${OUT:-$(mktemp -d /tmp/locklab-stress.XXXXXX)}
mkdir -p "$OUT"
GO=${GO:-go}
TESTFLAGS=${TESTFLAGS:-}
FRESH=${FRESH:-}
REPO=$(git rev-parse --show-toplevel 2>/dev/null || pwd)
failed_runs=0
echo "test-stress: $N runs of the whole suite${FRESH:+, each in a fresh clone of the HEAD of $REPO}, logs in $OUT"
run() {
	if [ -n "$FRESH" ]; then
		rm -rf "$OUT/clone-$1" && git clone -q "$REPO" "$OUT/clone-$1" &&
			echo "commit $(git -C "$OUT/clone-$1" rev-parse HEAD)" && make -C "$OUT/clone-$1" test GO="$GO"
	else
		# shellcheck disable=SC2086
		$GO test $TESTFLAGS ./...
	fi
}
for k in $(seq 1 "$N"); do
	start=$(date +%s)
	if run "$k" >"$OUT/run-$k.log" 2>&1; then
		[ -n "$FRESH" ] && rm -rf "$OUT/clone-$k"
		status=ok
	else
		status=FAIL
		failed_runs=$((failed_runs + 1))
	fi
	secs=$(( $(date +%s) - start ))
	nfail=$(grep -c -- '--- FAIL:' "$OUT/run-$k.log")
	at=""
	[ -n "$FRESH" ] && at=" on $(grep -m1 '^commit ' "$OUT/run-$k.log" | cut -c8-14)"
	printf 'run %d/%d%s: %s in %dm%02ds (%d failed tests)\n' "$k" "$N" "$at" "$status" $((secs / 60)) $((secs % 60)) "$nfail"
done
echo
echo "summary: $failed_runs of $N runs failed"
# A failed test prints "--- FAIL: Name (time)" (subtests indented); a package
# that panicked or timed out prints "FAIL<tab>pkg" without a test line.
grep -h -- '--- FAIL:' "$OUT"/run-*.log | sed 's/^ *--- FAIL: //; s/ (.*//' | sort | uniq -c |
	awk -v n="$N" '{printf "  %-70s failed %d/%d (%.0f%%)\n", $2, $1, n, 100*$1/n}'
grep -h '^FAIL	' "$OUT"/run-*.log | sort | uniq -c |
	awk -v n="$N" '{printf "  package %-62s failed %d/%d\n", $3, $1, n}'
[ "$failed_runs" -eq 0 ]
