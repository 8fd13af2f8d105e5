# locklab — see README.md. `make bench` and `make test` do all set-up on a
# fresh Debian machine (they call `make deps`, which needs root for apt-get).

export PATH := /usr/local/go/bin:$(HOME)/go/bin:$(PATH)
GO       ?= go
BIN      := bin
PKGS     := ./...
# The servers the local provider and the tests run are the rows of the
# backend table: `bin/bench deps --missing` prints the Debian packages of
# those not installed, which apt-install installs. Besides them, tools
# (binary -> the package that provides it; gcc builds the clock shim, below):
NEED_BINS := redis-cli:redis-tools redis-benchmark:redis-tools etcdctl:etcd-client gcc:gcc
# What only the tests need besides the servers: Chromium loads report.html;
# the netns tests list namespaces with ip (iproute2).
TEST_BINS := chromium:chromium ip:iproute2
TEST_TIMEOUT ?= 60m
# Package parallelism of `make test`: 2 (one package per core), chosen by
# measurement on a 2-core machine. The packages' own times in one -p 2 run
# add up to 11 min 45 s, which is what -p 1 would take at least; -p 2 took
# 8 min 7 s wall, and holds since the tests that depend on the machine's
# speed take their bounds from what they measure (lease TTLs far above a
# loaded machine's stalls where loss is not the subject, latencies in units
# of the toxic or the round trip). `make test-stress N=10` runs the suite
# with these flags and must report no failure. -count=1: server-backed
# tests must never be answered from Go's test cache.
TEST_P ?= 2
TEST_FLAGS = -race -count=1 -p $(TEST_P) -timeout $(TEST_TIMEOUT)
N ?= 10

.PHONY: all deps test-deps apt-install clients FORCE build test test-short test-stress bench calibrate report lint clean help images image deploy-local

all: build

help:
	@echo "make bench      default comparison of the Redis locks on local servers (installs deps)"
	@echo "make test       the whole test suite on real servers (installs deps)"
	@echo "make test-stress N=10  the whole suite N times, each failed test with its failure rate"
	@echo "make calibrate  the harness against each backend's own limit (mem ceiling, redis-benchmark, commit cost)"
	@echo "make atlas      every lock against every fault family, ATLAS_RUNS=5 runs per cell (over an hour on 2 cores)"
	@echo "make report     regenerate results/reference/ (compare-all + fault library, ~20 min)"
	@echo "make deps       apt-get install the servers when missing"
	@echo "make build      bin/bench, bin/chaos and bin/libclockshim.so (the clock faults' preload library)"
	@echo "make lint       gofmt and go vet"
	@echo "make image      the locklab image (servers, clients, bench, chaos, shard entry point), offline"
	@echo "make deploy-local  deploy/k8s/atlas-job.yaml run on the local Docker engine, shards merged"

# deps installs the Debian packages whose binaries are missing (ZooKeeper's
# jar is checked too: the java binary alone does not prove it is there) and
# what the library clients need (clients); test-deps also what only the
# tests need.
deps:
	@$(MAKE) --no-print-directory apt-install BINS="$(NEED_BINS)"
	@$(MAKE) --no-print-directory clients $(CLOCKSHIM)

test-deps:
	@$(MAKE) --no-print-directory apt-install BINS="$(NEED_BINS) $(TEST_BINS)"
	@$(MAKE) --no-print-directory clients $(CLOCKSHIM)

# The clock shim (clockshim/src/clockshim.c), the preload library that
# gives a server its own wall clock for the clock faults, built with the
# system's gcc beside bin/chaos, where the harness looks first (package
# clockshim builds the same source into the user's cache otherwise).
CLOCKSHIM := $(BIN)/libclockshim.so
$(CLOCKSHIM): clockshim/src/clockshim.c
	@mkdir -p $(BIN)
	gcc -O2 -Wall -fPIC -shared -o $@ $<

# APT_INSTALL installs the Debian packages the recipe collected in the
# shell variable missing (nothing when it is empty), with sudo unless root.
APT_INSTALL = if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi

apt-install: $(BIN)/bench
	@missing="$$($(BIN)/bench deps --missing)" || exit 1; \
	for pair in $(BINS); do \
	  bin=$${pair%%:*}; pkg=$${pair##*:}; \
	  command -v $$bin >/dev/null 2>&1 || missing="$$missing $$pkg"; \
	done; \
	[ -n "$$(ls /usr/include/sys/syscall.h /usr/include/*/sys/syscall.h 2>/dev/null)" ] || missing="$$missing libc6-dev"; \
	$(APT_INSTALL); \
	echo "deps: ok ($$(redis-server --version | cut -d' ' -f3), etcd $$(etcd --version 2>/dev/null | head -1 | awk '{print $$3}'), zookeeper $$(ls /usr/share/java/zookeeper-3*.jar 2>/dev/null | sed 's/.*zookeeper-//;s/.jar//' | head -1))"

# clients installs the Debian packages the reference library clients need
# when missing: the Python lock modules (for /usr/bin/python3), Curator's
# jars and a JDK (javac compiles CuratorClient on first use).
clients:
	@missing=""; \
	for m in redis:python3-redis kazoo:python3-kazoo etcd3:python3-etcd3 tooz:python3-tooz psycopg2:python3-psycopg2 pymysql:python3-pymysql pymemcache:python3-pymemcache; do \
	  /usr/bin/python3 -c "import $${m%%:*}" 2>/dev/null || missing="$$missing $${m##*:}"; \
	done; \
	[ -f /usr/share/java/curator-recipes.jar ] || missing="$$missing libcurator-recipes-java"; \
	command -v javac >/dev/null 2>&1 || missing="$$missing default-jdk-headless"; \
	$(APT_INSTALL); \
	echo "clients: ok (redis-py $$(/usr/bin/python3 -c 'import redis; print(redis.__version__)'), $$(javac -version 2>&1))"

# images builds the docker provider's server images from Debian packages
# (locklab/base and a locklab/<backend> for each row of the backend table
# that runs under docker, as `bench deps --images` lists them) with
# debootstrap + docker import, for engines that cannot pull: see
# images/build.sh. Skips images that exist (FORCE=1 rebuilds); needs root.
images: $(BIN)/bench
	LOCKLAB_IMAGE_BACKENDS="$$($(BIN)/bench deps --images)" sh images/build.sh

# image builds locklab/locklab:<tag or dev>: locklab/base (built with
# images/build.sh when missing) + the library clients' Debian packages +
# static bench and chaos + deploy/entrypoint.sh, which runs one shard of an
# Indexed Job (deploy/build.sh, docs/deploy.md). Idempotent; needs root
# when the base must be built.
image:
	GO="$(GO)" sh deploy/build.sh

# deploy-local runs DEPLOY_MANIFEST (an Indexed Job) on the local Docker
# engine exactly as written, one container per index, into a fresh
# DEPLOY_VOLUME, and merges the shards there with bin/chaos.
DEPLOY_MANIFEST ?= deploy/k8s/atlas-job.yaml
DEPLOY_VOLUME   ?= results/deploy-local
deploy-local: image $(BIN)/chaos
	rm -rf $(DEPLOY_VOLUME)
	$(GO) run ./deploy/runlocal --manifest $(DEPLOY_MANIFEST) --volume $(DEPLOY_VOLUME) --chaos $(BIN)/chaos

build: $(BIN)/bench $(BIN)/chaos $(CLOCKSHIM)

# Always rebuilt (go's cache makes that cheap); separate so `make bench`
# compiles only what it runs.
$(BIN)/bench $(BIN)/chaos: FORCE
	$(GO) build -buildvcs=auto -o $@ ./cmd/$(notdir $@)

FORCE:

test: test-deps
	$(GO) vet $(PKGS)
	$(GO) test $(TEST_FLAGS) $(PKGS)

# test-stress runs the whole suite N times exactly as `make test` does and
# prints every test that failed with its failure rate (scripts/test-stress.sh);
# FRESH=1 runs each time `make test` in a fresh clone of HEAD, as CI does.
test-stress: test-deps
	GO="$(GO)" TESTFLAGS="$(TEST_FLAGS)" sh scripts/test-stress.sh $(N)

# test-short runs the tests that need no server.
test-short:
	$(GO) test -short $(PKGS)

bench: deps $(BIN)/bench
	$(BIN)/bench run redis-baseline

# report regenerates results/reference/: a full compare-all, hand-off, the
# library clients and the fault library, each with its report, a
# side-by-side summary (about 25 min), and check.txt: `bench check` of every
# result against its history.jsonl.
REFERENCE := results/reference
FAULT_SCENARIOS := pause-holder partition-holder zk-minority-partition etcd-minority-partition \
                   redis-failover redlock-restart redlock-restart-safe redlock-clock-jump
report: deps build
	rm -rf $(REFERENCE) && mkdir -p $(REFERENCE)/faults
	$(BIN)/bench run -q --out $(REFERENCE)/compare-all compare-all
	$(BIN)/bench run -q --out $(REFERENCE)/handoff handoff
	$(BIN)/bench run -q --out $(REFERENCE)/compare-libraries compare-libraries
	$(BIN)/chaos run -q --out $(REFERENCE)/faults $(FAULT_SCENARIOS) | tee $(REFERENCE)/faults/matrix.txt
	$(BIN)/bench report --out $(REFERENCE)/summary $(addprefix $(REFERENCE)/faults/,$(FAULT_SCENARIOS)) > $(REFERENCE)/summary.txt
	find $(REFERENCE) -name '*.svg' -delete
	find $(REFERENCE) -type d -name logs -prune -exec rm -rf {} +
	find $(REFERENCE) -name history.jsonl -exec gzip -9f {} +
	$(BIN)/bench check $$(find $(REFERENCE) -name result.json -path '*/*/result.json' -exec dirname {} \; | sort) > $(REFERENCE)/check.txt

calibrate: deps $(BIN)/bench
	$(BIN)/bench calibrate

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

clean:
	rm -rf $(BIN)

# atlas runs every registered lock against every fault family, ATLAS_RUNS
# seeded runs per cell, into $(ATLAS_OUT) (resumable: run it again after an
# interruption and finished runs are kept). Shards: ATLAS_SHARD=i/n.
ATLAS_RUNS  ?= 5
ATLAS_OUT   ?= results/atlas
ATLAS_FLAGS ?=
.PHONY: atlas
atlas: deps $(BIN)/chaos
	$(BIN)/chaos atlas --runs $(ATLAS_RUNS) --out $(ATLAS_OUT) $(if $(wildcard $(ATLAS_OUT)/plan.json),--resume $(ATLAS_OUT)) $(if $(ATLAS_SHARD),--shard $(ATLAS_SHARD)) $(ATLAS_FLAGS)
