#!/bin/sh
# deploy/build.sh builds the locklab image (`make image`):
#
#   locklab/locklab:<version>   locklab/base:<suite> (images/build.sh: Debian
#                               root filesystem with the servers, made offline)
#                               + the library clients' Debian packages
#                               + bench and chaos (CGO_ENABLED=0, built here)
#                               + libclockshim.so beside them (gcc, here)
#                               + deploy/entrypoint.sh as locklab-shard
#
# <version> is the git tag at HEAD, else "dev"; the image is also tagged
# locklab/locklab:dev, the tag deploy/k8s/*.yaml name. Nothing is pulled:
# the base is built with images/build.sh when missing (a few minutes, root),
# and the packages come from the Debian mirror of the base's apt sources
# (the build uses the host's network). Idempotent: docker's build cache
# keeps every layer whose input did not change, so a second build with the
# same sources takes seconds.
#
# Environment: SUITE (default: this machine's VERSION_CODENAME), VERSION,
# GO (default go).
set -eu

log() { printf '%s image: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

cd "$(dirname "$0")/.."
command -v docker >/dev/null 2>&1 || die "docker not found"
docker version --format '{{.Server.Version}}' >/dev/null 2>&1 || die "no Docker engine answers (docker version)"
GO=${GO:-go}
SUITE=${SUITE:-$(. /etc/os-release && echo "${VERSION_CODENAME:-}")}
[ -n "$SUITE" ] || die "cannot tell the Debian suite: set SUITE=bookworm"
BASE=locklab/base:$SUITE
VERSION=${VERSION:-$(git describe --tags --exact-match 2>/dev/null || echo dev)}
IMAGE=locklab/locklab:$VERSION

t0=$(date +%s)
if ! docker image inspect "$BASE" >/dev/null 2>&1; then
	log "$BASE is missing: images/build.sh (a few minutes, once)"
	LOCKLAB_IMAGE_BACKENDS=$("$GO" run ./cmd/bench deps --images) || die "bench deps --images failed"
	SUITE=$SUITE LOCKLAB_IMAGE_BACKENDS=$LOCKLAB_IMAGE_BACKENDS sh images/build.sh
fi

CTX=$(mktemp -d "${TMPDIR:-/tmp}/locklab-image.XXXXXX")
trap 'rm -rf "$CTX"' EXIT
trap 'exit 130' INT TERM
log "go build bench chaos (CGO_ENABLED=0, no symbol tables: --version reads the build info, which stays)"
for cmd in bench chaos; do
	CGO_ENABLED=0 "$GO" build -buildvcs=auto -trimpath -ldflags='-s -w' -o "$CTX/$cmd" "./cmd/$cmd"
done
# The clock shim, beside chaos where the harness looks for it: the clock
# faults' preload library (package clockshim), built with the host's gcc
# against the same Debian suite's glibc as the base.
command -v gcc >/dev/null 2>&1 || die "gcc not found (make deps installs it): the clock shim needs it"
gcc -O2 -Wall -fPIC -shared -o "$CTX/libclockshim.so" clockshim/src/clockshim.c
cp deploy/Dockerfile "$CTX/"
cp deploy/entrypoint.sh "$CTX/locklab-shard"
chmod 0755 "$CTX/locklab-shard"

log "docker build $IMAGE FROM $BASE"
# The legacy builder: it builds FROM a local image without asking a
# registry, and needs no buildx plugin. --network host: apt-get reaches the
# mirror the way the host does.
DOCKER_BUILDKIT=0 docker build -q --network host --build-arg "BASE=$BASE" --build-arg "VERSION=$VERSION" \
	-t "$IMAGE" "$CTX" >/dev/null || die "docker build failed"
[ "$VERSION" = dev ] || docker tag "$IMAGE" locklab/locklab:dev
log "built $IMAGE in $(( $(date +%s) - t0 ))s: $(docker image inspect -f '{{.Size}}' "$IMAGE" | awk '{printf "%.0f MB", $1/1e6}')"
