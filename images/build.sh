#!/bin/sh
# images/build.sh builds locklab's server images from Debian packages, for
# machines whose Docker engine cannot reach a container registry:
#
#   locklab/base:<suite>        Debian root filesystem (debootstrap, minbase)
#                               with every backend's Debian packages and
#                               redis-tools, default-jre-headless,
#                               etcd-client, libfaketime and procps, made
#                               with `docker import` (nothing is pulled)
#   locklab/<backend>:<x.y>     the same filesystem, labelled per backend
#                               (a `docker commit` of it: no extra layer
#                               data), also tagged with the full version
#                               (locklab/redis:7.0 and locklab/redis:7.0.15)
#
# The backends are the rows of locklab's backend table that run under
# provider docker, given in LOCKLAB_IMAGE_BACKENDS, a line each: "name
# version-package port command package..." (`bench deps --images` prints
# them; `make images` and the docker provider pass them). The versions are
# those of the suite's packages (bookworm: Redis 7.0, ZooKeeper 3.8, etcd
# 3.4, PostgreSQL 15, MariaDB 10.11, NATS 2.9, memcached 1.6). The Debian
# mirror and suite are the machine's own apt configuration
# (/etc/apt/sources.list, /etc/apt/sources.list.d/*), so the build works
# wherever apt-get does.
#
# Idempotent: images that exist are kept (FORCE=1 rebuilds everything); when
# only the base exists, the per-backend tags are made from it in seconds; a
# base without the label of a backend (one added since) is built again.
# Needs root (debootstrap, chroot); installs debootstrap with apt-get when it
# is missing. Progress goes to stderr.
#
# Environment: SUITE (default: this machine's VERSION_CODENAME), MIRROR
# (default: from the apt sources), FORCE=1, WORKDIR (default /var/tmp).
set -eu

log() { printf '%s images: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

command -v docker >/dev/null 2>&1 || die "docker not found"
docker version --format '{{.Server.Version}}' >/dev/null 2>&1 || die "no Docker engine answers (docker version)"

SUITE=${SUITE:-$(. /etc/os-release && echo "${VERSION_CODENAME:-}")}
[ -n "$SUITE" ] || die "cannot tell the Debian suite: set SUITE=bookworm"
BASE=locklab/base:$SUITE
FORCE=${FORCE:-0}
BACKENDS=${LOCKLAB_IMAGE_BACKENDS:-}
[ -n "$BACKENDS" ] || die "LOCKLAB_IMAGE_BACKENDS is empty: run this through 'make images' (bin/bench deps --images lists the backends)"
NAMES=$(printf '%s\n' "$BACKENDS" | awk 'NF { print $1 }')
PACKAGES="$(printf '%s\n' "$BACKENDS" | awk 'NF { for (i = 5; i <= NF; i++) printf "%s ", $i }')redis-tools default-jre-headless etcd-client libfaketime procps"

have_image() { docker image inspect "$1" >/dev/null 2>&1; }
have_repo() { [ -n "$(docker images -q --filter "reference=$1:*" 2>/dev/null)" ]; }

# One build at a time on this machine: test packages running in parallel
# (the docker provider's tests, the locklab image's) may all find the base
# missing; the later ones wait here and then find it built.
if command -v flock >/dev/null 2>&1; then
	exec 9>"${WORKDIR:-/var/tmp}/locklab-images.lock"
	flock 9
fi

all_repos() {
	for n in $NAMES; do have_repo "locklab/$n" || return 1; done
}

if [ "$FORCE" != 1 ] && have_image "$BASE" && all_repos; then
	log "up to date: $BASE, $(docker images --format '{{.Repository}}:{{.Tag}}' --filter 'reference=locklab/*' | grep -v base | sort | tr '\n' ' ')(FORCE=1 rebuilds)"
	exit 0
fi

# apt_sources prints the deb822 stanzas (from .sources files, or converted
# from one-line .list entries) of this machine's apt configuration whose
# suites are $SUITE or $SUITE-*: the Debian archive and its security and
# updates suites, not third-party repositories.
apt_sources() {
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -f "$f" ] || continue
		awk -v suite="$SUITE" '
			$1 == "deb" {
				i = 2; opts = ""
				if ($2 ~ /^\[/) { while ($i !~ /\]$/) { opts = opts " " $i; i++ } opts = opts " " $i; i++ }
				uri = $i; s = $(i+1); comps = ""
				for (j = i+2; j <= NF; j++) comps = comps " " $j
				if (s != suite && index(s, suite "-") != 1) next
				print "Types: deb"; print "URIs: " uri; print "Suites: " s; print "Components:" comps
				if (match(opts, /signed-by=[^] ]+/)) print "Signed-By: " substr(opts, RSTART+10, RLENGTH-10)
				print ""
			}' "$f"
	done
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		awk -v suite="$SUITE" '
			function flush() {
				if (st != "" && keep && deb) printf "%s\n", st
				st = ""; keep = 0; deb = 0
			}
			/^[ \t]*#/ { next }
			/^[ \t]*$/ { flush(); next }
			{
				st = st $0 "\n"
				if ($1 == "Types:") for (i = 2; i <= NF; i++) if ($i == "deb") deb = 1
				if ($1 == "Suites:") for (i = 2; i <= NF; i++) if ($i == suite || index($i, suite "-") == 1) keep = 1
				if ($1 == "Enabled:" && $2 == "no") { keep = 0; st = "" }
			}
			END { flush() }' "$f"
	done
}

# mirror is the first URI serving $SUITE itself.
mirror() {
	apt_sources | awk -v suite="$SUITE" '
		$1 == "URIs:" { uri = $2 }
		$1 == "Suites:" { for (i = 2; i <= NF; i++) if ($i == suite && uri != "") { print uri; exit } }'
}

version_of() { # major.minor.patch of an installed package (epoch and Debian revision dropped)
	chroot "$ROOT" dpkg-query -W -f='${Status} ${Version}\n' "$1" | awk '$3 == "installed" { print $4; exit }' |
		sed 's/^[0-9]*://; s/[-+~].*//'
}

# A base built before a backend was added lacks its packages (and its
# version label): it is built again.
base_label() { docker image inspect -f "{{index .Config.Labels \"org.locklab.$1\"}}" "$BASE" 2>/dev/null; }
unlabelled() { # the first backend the base has no version label for
	for n in $NAMES; do [ -n "$(base_label "$n")" ] || { echo "$n"; return; }; done
}
LACKS=""
have_image "$BASE" && LACKS=$(unlabelled)
if [ "$FORCE" = 1 ] || ! have_image "$BASE" || [ -n "$LACKS" ]; then
	[ -n "$LACKS" ] && [ "$FORCE" != 1 ] && log "$BASE lacks a backend's packages ($LACKS): building it again"
	FORCE=1 # the per-backend tags are made again from the new base
	[ "$(id -u)" = 0 ] || die "building $BASE needs root (debootstrap, chroot)"
	MIRROR=${MIRROR:-$(mirror)}
	[ -n "$MIRROR" ] || die "no apt source serves suite $SUITE (/etc/apt/sources.list*): set MIRROR=http://deb.debian.org/debian"
	if ! command -v debootstrap >/dev/null 2>&1; then
		log "installing debootstrap (apt-get)"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null 2>&1 ||
			{ DEBIAN_FRONTEND=noninteractive apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null; } ||
			die "apt-get install debootstrap failed"
	fi
	WORK=$(mktemp -d "${WORKDIR:-/var/tmp}/locklab-images.XXXXXX")
	ROOT=$WORK/rootfs
	cleanup() {
		umount "$ROOT/proc" 2>/dev/null || true
		rm -rf "$WORK"
	}
	trap cleanup EXIT
	trap 'exit 130' INT TERM
	t0=$(date +%s)
	log "debootstrap $SUITE (minbase) from $MIRROR into $ROOT"
	debootstrap --variant=minbase "$SUITE" "$ROOT" "$MIRROR" >"$WORK/debootstrap.log" 2>&1 ||
		{ tail -20 "$WORK/debootstrap.log" >&2; die "debootstrap failed (log above)"; }
	log "debootstrap done in $(( $(date +%s) - t0 ))s"

	# The chroot uses the same Debian sources as this machine (security
	# and updates included).
	rm -f "$ROOT/etc/apt/sources.list"
	apt_sources >"$ROOT/etc/apt/sources.list.d/debian.sources"
	printf 'Acquire::Check-Valid-Until "false";\nAPT::Install-Recommends "false";\n' >"$ROOT/etc/apt/apt.conf.d/90locklab"
	printf '#!/bin/sh\nexit 101\n' >"$ROOT/usr/sbin/policy-rc.d" # no service starts in the chroot
	chmod +x "$ROOT/usr/sbin/policy-rc.d"
	mount -t proc proc "$ROOT/proc"
	t1=$(date +%s)
	log "apt-get install $PACKAGES"
	{ chroot "$ROOT" apt-get update -q && chroot "$ROOT" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q $PACKAGES; } \
		>"$WORK/apt.log" 2>&1 || { tail -30 "$WORK/apt.log" >&2; die "apt-get install in the chroot failed (log above)"; }
	log "packages installed in $(( $(date +%s) - t1 ))s"
	umount "$ROOT/proc"
	chroot "$ROOT" apt-get clean
	rm -rf "$ROOT"/var/lib/apt/lists/* "$ROOT"/usr/share/doc/* "$ROOT"/usr/share/man/* "$ROOT"/var/log/*.log \
		"$ROOT"/var/cache/debconf/*-old "$ROOT/usr/sbin/policy-rc.d"
	# Debian's packages created data dirs owned by their service users; the
	# containers run the servers as root in /data.
	mkdir -p "$ROOT/data" "$ROOT/conf"

	printf '%s\n' "$BACKENDS" | while read -r name vpkg _; do
		if [ -n "$name" ]; then printf '%s=%s\n' "$name" "$(version_of "$vpkg")"; fi
	done >"$ROOT/etc/locklab-versions"
	grep -q '=$' "$ROOT/etc/locklab-versions" && die "a backend's version package is not installed: $(tr '\n' ' ' <"$ROOT/etc/locklab-versions")"
	LABELS=$(sed 's/^/org.locklab./' "$ROOT/etc/locklab-versions" | tr '\n' ' ')
	log "versions: $(tr '\n' ' ' <"$ROOT/etc/locklab-versions")"
	# The table backends' servers find their programs on PATH, as on the
	# host (postgres's are in /usr/lib/postgresql/<major>/bin).
	PG_MAJOR=$(ls "$ROOT/usr/lib/postgresql" 2>/dev/null | sort -n | tail -1)
	[ -z "$PG_MAJOR" ] || for f in "$ROOT/usr/lib/postgresql/$PG_MAJOR/bin/"*; do
		[ -e "$ROOT/usr/bin/$(basename "$f")" ] || ln -s "${f#"$ROOT"}" "$ROOT/usr/bin/$(basename "$f")"
	done

	t2=$(date +%s)
	log "docker import -> $BASE ($(du -sh "$ROOT" | cut -f1))"
	tar -C "$ROOT" --numeric-owner -cf - . | docker import \
		-c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
		-c 'ENV LANG=C.UTF-8' \
		-c 'WORKDIR /data' \
		-c "LABEL org.locklab.flavor=debian org.locklab.suite=$SUITE $LABELS" \
		-m "locklab base: Debian $SUITE minbase + $PACKAGES" \
		- "$BASE" >/dev/null
	log "imported in $(( $(date +%s) - t2 ))s"
	cleanup
	trap - EXIT INT TERM
fi

# Per-backend images: the base with a label and a default command, made by
# committing an unstarted container (no layer data is copied).
label() { base_label "$1"; }
tag_backend() { # name version cmd expose
	name=$1; full=$2; short=$(echo "$full" | cut -d. -f1-2)
	if [ "$FORCE" != 1 ] && have_image "locklab/$name:$short" && have_image "locklab/$name:$full"; then
		log "locklab/$name:$short exists"
		return
	fi
	cid=$(docker create --label org.locklab.build=1 "$BASE" true)
	docker commit -c "LABEL org.locklab.backend=$name org.locklab.version=$full" -c "CMD $3" -c "EXPOSE $4" \
		"$cid" "locklab/$name:$short" >/dev/null
	docker rm "$cid" >/dev/null
	docker tag "locklab/$name:$short" "locklab/$name:$full"
	log "tagged locklab/$name:$short and locklab/$name:$full"
}
printf '%s\n' "$BACKENDS" | while read -r name _ port cmd _; do
	if [ -n "$name" ]; then tag_backend "$name" "$(label "$name")" "[\"$cmd\"]" "$port"; fi
done
log "done: $(docker images --format '{{.Repository}}:{{.Tag}} {{.Size}}' --filter 'reference=locklab/*' | sort | tr '\n' ';' | sed 's/;/; /g')"
