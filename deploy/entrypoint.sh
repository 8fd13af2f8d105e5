#!/bin/sh
# deploy/entrypoint.sh is the locklab image's entry point
# (/usr/local/bin/locklab-shard): it runs ONE shard of a sharded chaos verb
# (atlas, explore) and writes it to the results volume.
#
#   locklab-shard [--index I] [--shards N] VERB [FLAGS...]
#
# runs `chaos VERB --shard K/N --out $LOCKLAB_RESULTS/shard-K FLAGS...`
# where K = I + 1: Kubernetes numbers an Indexed Job's pods from 0
# (JOB_COMPLETION_INDEX), chaos numbers shards from 1 (--shard 1/N is the
# first). VERB is passed through unchanged, so any verb that takes --shard
# and --out works.
#
# Environment:
#   JOB_COMPLETION_INDEX  the pod's index, 0-based (set by Kubernetes);
#                         --index I or LOCKLAB_SHARD_INDEX overrides it
#   LOCKLAB_SHARDS        the shard count N, the Job's completions;
#                         --shards N overrides it
#   LOCKLAB_RESULTS       the results folder (default /results)
#   LOCKLAB_CHAOS         the chaos binary (default chaos on PATH)
#
# A shard whose folder exists continues where it stopped (chaos keeps
# finished runs), so a pod the Job restarts does not redo them. Exit codes
# are chaos's; 2 for bad input here.
set -eu

usage='usage: locklab-shard [--index I] [--shards N] VERB [FLAGS...]   (VERB: atlas, explore)'
die() {
	printf 'locklab-shard: %s\n%s\n' "$*" "$usage" >&2
	exit 2
}

index=${LOCKLAB_SHARD_INDEX:-${JOB_COMPLETION_INDEX:-}}
shards=${LOCKLAB_SHARDS:-}
while [ $# -gt 0 ]; do
	case $1 in
	--index) [ $# -ge 2 ] || die "--index needs a value"; index=$2; shift 2 ;;
	--index=*) index=${1#--index=}; shift ;;
	--shards) [ $# -ge 2 ] || die "--shards needs a value"; shards=$2; shift 2 ;;
	--shards=*) shards=${1#--shards=}; shift ;;
	-h | --help) printf '%s\n' "$usage"; exit 0 ;;
	-*) die "unknown option $1 before the verb" ;;
	*) break ;;
	esac
done
[ $# -ge 1 ] || die "no verb given"
verb=$1
shift

is_count() { case $1 in '' | *[!0-9]*) return 1 ;; esac; }
[ -n "$shards" ] || die "no shard count: set LOCKLAB_SHARDS (the Job's completions) or pass --shards N"
is_count "$shards" && [ "$shards" -ge 1 ] || die "shard count \"$shards\" (LOCKLAB_SHARDS or --shards): want an integer >= 1"
[ -n "$index" ] || die "no shard index: JOB_COMPLETION_INDEX is unset (not an Indexed Job?): pass --index I (0-based)"
is_count "$index" && [ "$index" -lt "$shards" ] ||
	die "shard index \"$index\" (JOB_COMPLETION_INDEX, LOCKLAB_SHARD_INDEX or --index): want 0 <= index < $shards, 0-based"

shard=$((index + 1))
out=${LOCKLAB_RESULTS:-/results}/shard-$shard
printf 'locklab-shard: index %s -> %s %s --shard %s/%s --out %s\n' "$index" "${LOCKLAB_CHAOS:-chaos}" "$verb" "$shard" "$shards" "$out" >&2
exec "${LOCKLAB_CHAOS:-chaos}" "$verb" --shard "$shard/$shards" --out "$out" "$@"
