# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# ljprof: LuaJIT with built-in profilers, and the tool that reads them.
#
#   make                  build build/bin/luajit, its library and headers
#   make demo             build, then run the bundled example
#   make test             build, then run every test (TAP, prove)
#   make test-vm          only the tests of the VM side (what the tree changes)
#   make test-reference   the reference's own profiler tests on our build
#   make bench            benchmarks (see bench/README.md)
#   make install PREFIX=/usr/local [DESTDIR=/staging/root]
#   make deb              build/ljprof_VERSION_ARCH.deb: the install under
#                         /usr/lib/ljprof, OpenResty's flavour for nginx under
#                         /usr/lib/ljprof/openresty, and /usr/bin/ljprof
#                         (scripts/build-deb)
#
# Each target installs the Debian packages it lacks (as root; otherwise it
# prints the apt-get line): building and running need scripts/apt-packages,
# the test targets add scripts/apt-packages-test, make bench
# bench/apt-packages.
#
# Options (make VAR=value):
#   LUAJIT_SRC=/path      build against this LuaJIT tree (or tarball) instead of
#                         Debian's: LuaJIT 2.1 rolling, OpenResty's luajit2;
#                         debian:luajit2 fetches Debian's source package luajit2
#   BUILD=dir             build directory (default: build)
#   ASSERT=1              VM with assertions and API checks
#   CC=clang              compiler for the VM
#   XCFLAGS=...           extra VM defines, e.g. -DLUAJIT_DISABLE_JIT
#   ARCH=arm64            cross-build the VM for Linux ARM64 (AArch64) into
#                         build-arm64/ (scripts/deps-arm64); its programs
#                         run under qemu-aarch64, ljprof stays a host tool

# ARM64: LuaJIT's cross-build (its doc/install.html), buildvm on the host.
# CC names the compiler without its prefix, as LuaJIT's make wants it.
ifeq ($(ARCH),arm64)
BUILD      ?= build-arm64
CROSS      := aarch64-linux-gnu-
ifeq ($(origin CC),default)
CC         := gcc
endif
else ifneq ($(ARCH),)
$(error ARCH=$(ARCH): only ARCH=arm64 is known (the default is the host's))
endif
BUILD      ?= build
# What runs on the target: the VM's programs and the tests' C code. A
# cross-built program is staged as NAME.aarch64 beside scripts/qemu-wrapper
# as NAME (stage_exe), which runs it under qemu-aarch64.
TARGET_CC  := $(CROSS)$(CC)
ifdef CROSS
stage_exe = install -D -m 0755 $(1) $(2).aarch64 && \
	    install -m 0755 scripts/qemu-wrapper $(2)
else
stage_exe = install -D -m 0755 $(1) $(2)
endif
override BUILD := $(abspath $(BUILD))
UPSTREAM   := $(BUILD)/upstream
TREE       := $(BUILD)/luajit
PREFIX     ?= /usr/local
CC         ?= cc
FUZZ_TIME  ?= 30

LJ_XCFLAGS := $(XCFLAGS)
ifeq ($(ASSERT),1)
LJ_XCFLAGS += -DLUA_USE_ASSERT -DLUA_USE_APICHECK
endif
# With debug information and unstripped, as Debian's and OpenResty's trees
# build by themselves (rolling's would strip): the samplers name the
# interpreter's code (lj_BC_*, lj_vm_*, lj_ff_*) from its symbols.
LJ_BUILDOPTS = CC="$(CC)" CCDEBUG=-g BUILDMODE=mixed Q=@ E=@: \
	       $(if $(CROSS),HOST_CC=gcc CROSS=$(CROSS) TARGET_SYS=Linux)
LJ_MAKE = $(MAKE) --no-print-directory -C $(TREE)/src $(LJ_BUILDOPTS) \
	  XCFLAGS="$(LJ_XCFLAGS)"

HEADERS    := lua.h lualib.h lauxlib.h luaconf.h luajit.h lua.hpp lmisclib.h
STAGED     := $(BUILD)/bin/luajit $(BUILD)/lib/libluajit-5.1.a \
	      $(BUILD)/lib/libluajit-5.1.so $(addprefix $(BUILD)/include/,$(HEADERS)) \
	      $(BUILD)/share/.jit-staged

.PHONY: all vm ljprof embed noprof asan demo test test-vm test-reference bench \
	bench-nginx install install-vm clean distclean deps FORCE

all: vm ljprof embed

vm: $(STAGED)

# -- examples/embed: a host program with two VMs, profiled through LJPROF ----

EMBED := $(BUILD)/examples/embed/host
embed: $(EMBED)
$(EMBED): examples/embed/host.c examples/embed/Makefile $(STAGED)
	@$(MAKE) --no-print-directory -C examples/embed BUILD=$(BUILD) \
	  CC="$(TARGET_CC)"
	$(if $(CROSS),@mv $@ $@.aarch64 && install -m 0755 scripts/qemu-wrapper $@)

# -- ljprof: the reader library and the command-line tool --------------------

LJPROF_MAKE = $(MAKE) --no-print-directory -C tools/ljprof BUILD_DIR=$(BUILD)

ljprof: $(BUILD)/.deps
	@$(LJPROF_MAKE) all

# -- System packages ---------------------------------------------------------

# What building and running need (scripts/apt-packages); the tests add
# scripts/apt-packages-test, the benchmarks bench/apt-packages.
$(BUILD)/.deps: scripts/apt-packages scripts/deps \
		$(if $(CROSS),scripts/apt-packages-arm64 scripts/deps-arm64)
	@scripts/deps
	$(if $(CROSS),@scripts/deps-arm64)
	@mkdir -p $(@D) && touch $@

$(BUILD)/.deps-test: scripts/apt-packages-test scripts/deps | $(BUILD)/.deps
	@scripts/deps scripts/apt-packages-test
	@mkdir -p $(@D) && touch $@

deps:
	@scripts/deps
	$(if $(CROSS),@scripts/deps-arm64)

# -- The LuaJIT tree: upstream + patches/ + src/ -----------------------------

# The stamp names where the tree came from: fetch again when that changes.
UPSTREAM_ID := $(strip $(if $(filter debian:%,$(LUAJIT_SRC)),$(LUAJIT_SRC),\
		 $(if $(LUAJIT_SRC),$(abspath $(LUAJIT_SRC)),debian)))
ifneq ($(UPSTREAM_ID),$(shell cat $(UPSTREAM)/.fetched 2>/dev/null))
$(UPSTREAM)/.fetched: FORCE
endif
$(UPSTREAM)/.fetched: scripts/fetch-luajit | $(BUILD)/.deps
	@echo "==== Fetching LuaJIT $(if $(filter debian:%,$(LUAJIT_SRC)),(Debian source package\
	  $(LUAJIT_SRC:debian:%=%)),$(if $(LUAJIT_SRC),from $(LUAJIT_SRC),(Debian source package luajit)))"
	@scripts/fetch-luajit $(UPSTREAM)
	@echo "==== LuaJIT flavour: $$(scripts/luajit-flavour $(UPSTREAM))"
	@echo "$(UPSTREAM_ID)" >$@
FORCE:

$(TREE)/.prepared: $(UPSTREAM)/.fetched scripts/prepare-tree scripts/luajit-flavour \
		   patches/series $(wildcard patches/*.patch patches/*/*.patch \
		   src/*.c src/*.h src/*.mk)
	@scripts/prepare-tree $(UPSTREAM) $(TREE)
	@touch $@

# LuaJIT's own make decides what to rebuild; PREFIX is where the jit.*
# modules are looked up, so the staged luajit finds them under $(BUILD).
$(TREE)/src/luajit: $(TREE)/.prepared
	@echo "==== Building LuaJIT with ljprof in $(TREE)"
	+@$(LJ_MAKE) PREFIX=$(BUILD)
	@touch $@

# -- Staging: bin/, lib/, include/, share/ under $(BUILD) --------------------

$(BUILD)/bin/luajit: $(TREE)/src/luajit scripts/qemu-wrapper
	@$(call stage_exe,$<,$@)

$(BUILD)/lib/libluajit-5.1.a: $(TREE)/src/luajit
	@mkdir -p $(@D) && cp $(TREE)/src/libluajit.a $@

$(BUILD)/lib/libluajit-5.1.so: $(TREE)/src/luajit
	@mkdir -p $(@D) && cp $(TREE)/src/libluajit.so $@.2 && ln -sf libluajit-5.1.so.2 $@

$(BUILD)/include/%.h: $(TREE)/src/luajit
	@mkdir -p $(@D) && cp $(TREE)/src/$*.h $@

$(BUILD)/include/lua.hpp: $(TREE)/src/luajit
	@mkdir -p $(@D) && cp $(TREE)/src/lua.hpp $@

# Where the tree's luajit looks for them (luaconf.h): luajit-2.1.0-beta3/,
# luajit-2.1/ ...
$(BUILD)/share/.jit-staged: $(TREE)/src/luajit
	@d=$(@D)/$$(scripts/luajit-flavour --jitdir $(TREE))/jit && \
	  mkdir -p $$d && cp $(TREE)/src/jit/*.lua $$d/ && touch $@

# -- Demo, tests, benchmarks -------------------------------------------------

demo: all
	@echo "==== ljprof record --mem -- examples/cache.lua"
	@$(BUILD)/bin/ljprof record --mem -o $(BUILD)/demo-memprof.bin --top 8 \
	  --human-readable -- examples/cache.lua
	@echo "==== ljprof record --cpu --format=html -- examples/cache.lua"
	@$(BUILD)/bin/ljprof record --cpu --interval=1 -o $(BUILD)/demo-sysprof.bin \
	  --format=html --report-out=$(BUILD)/demo-flamegraph.html -- examples/cache.lua
	@echo "Flame graph: $(BUILD)/demo-flamegraph.html (open it in a browser)"

TEST_CFLAGS := -O1 -g -Wall -Wextra -I$(BUILD)/include
# LuaJIT's own test suite: test/vm/luajit_suite.t runs it under each
# profiler, bench/lines.lua profiles its bench/ programs.
LJ_TESTS_TGZ ?= $(firstword $(wildcard ../shared/upstreams/luajit-test-cleanup-*.tar.gz))
TEST_C      := $(wildcard test/c/*.c)
TEST_BIN    := $(patsubst test/c/%.c,$(BUILD)/test/%.t,$(TEST_C))

# C tests are compiled into $(BUILD)/test/*.t; prove runs them like scripts.
TEST_LIBS   := $(BUILD)/lib/libluajit-5.1.a -ljansson -lelf -llzma -lpthread \
	       -lm -ldl
$(BUILD)/test/%.t: test/c/%.c test/c/tap.h $(STAGED)
	@mkdir -p $(@D)
	@$(TARGET_CC) $(TEST_CFLAGS) -o $@.x $< $(TEST_LDFLAGS) $(TEST_LIBS)
	@$(call stage_exe,$@.x,$@) && rm $@.x

# A host that forks while a thread of ours walks the loaded objects: the
# walk pauses in a hook of the test's own, around the library's calls.
$(BUILD)/test/forksafe.t: TEST_LDFLAGS := -Wl,--wrap=dl_iterate_phdr

ifdef CROSS
# ARM64: the unwinder's test again with its own return addresses signed
# (pointer authentication, which qemu-aarch64's default CPU has): the
# unwinder strips the signatures before it looks them up.
TEST_BIN    += $(BUILD)/test/profunwind_pac.t
$(BUILD)/test/profunwind_pac.t: test/c/profunwind.c test/c/tap.h $(STAGED)
	@mkdir -p $(@D)
	@$(TARGET_CC) $(TEST_CFLAGS) -mbranch-protection=pac-ret+leaf -o $@.x $< \
	  $(TEST_LIBS)
	@$(call stage_exe,$@.x,$@) && rm $@.x
endif

# Before the TAP tests: a bounded fuzz run of the stream decoder, and its
# seed corpus replayed under AddressSanitizer (log in $(BUILD)/fuzz.log).
# A C module that Lua tests require (found through LUA_CPATH).
TEST_CMOD := $(BUILD)/test/cmod.so
$(TEST_CMOD): test/cmod/cmod.c $(STAGED)
	@mkdir -p $(@D)
	@$(TARGET_CC) $(TEST_CFLAGS) -shared -fPIC -o $@ $<

# Preloaded by test/env/ondemand.t: the threads of a process start late.
TEST_LATE := $(BUILD)/test/latethreads.so
$(TEST_LATE): test/cmod/latethreads.c $(STAGED)
	@mkdir -p $(@D)
	@$(TARGET_CC) $(TEST_CFLAGS) -shared -fPIC -o $@ $< -ldl

# The VM built without the profilers, for the tests of those switches.
noprof: $(STAGED)
	@$(MAKE) --no-print-directory BUILD=$(BUILD)/noprof LUAJIT_SRC=$(UPSTREAM) \
	  XCFLAGS="$(XCFLAGS) -DLUAJIT_DISABLE_MEMPROF -DLUAJIT_DISABLE_SYSPROF" vm

# The VM under AddressSanitizer (system malloc, so ASan sees Lua's memory
# too), for the sampler's stress tests; memprof checks each call stack it
# finds against a whole walk (test/memprof/stackcheck.t). buildvm leaks by
# design.
asan: $(STAGED)
	@ASAN_OPTIONS=detect_leaks=0 $(MAKE) --no-print-directory BUILD=$(BUILD)/asan \
	  LUAJIT_SRC=$(UPSTREAM) CC="$(CC) -fsanitize=address -fno-omit-frame-pointer" \
	  XCFLAGS="$(XCFLAGS) -DLUAJIT_USE_SYSMALLOC -DLJ_MEMPROF_CHECKSTACKS" vm

# Delivers the sampler's signal at chosen instructions (ptrace, x86-64;
# qemu-user has none: test/sysprof/sigstep.t skips without it).
ifndef CROSS
TEST_SIGSTEP := $(BUILD)/test/sigstep
$(TEST_SIGSTEP): test/sysprof/sigstep.c $(STAGED)
	@mkdir -p $(@D)
	@$(CC) $(TEST_CFLAGS) -o $@ $<
endif

# What the tests run from the npm registry (test/npm: memlab, which reads
# our .heapsnapshot), installed as locked into $(BUILD)/npm, without
# install scripts (puppeteer's would download a browser). Without the
# registry the tests that need it skip and say so.
NPM_TEST := $(BUILD)/npm/.installed
$(NPM_TEST): test/npm/package.json test/npm/package-lock.json | $(BUILD)/.deps-test
	@echo "==== npm ci: test/npm into $(@D)"
	@mkdir -p $(@D) && cp test/npm/package.json test/npm/package-lock.json $(@D)/
	@cd $(@D) && PUPPETEER_SKIP_DOWNLOAD=1 npm ci --ignore-scripts --no-audit \
	  --no-fund --loglevel=error && touch $@ || \
	  echo "ljprof: npm ci failed: the tests that run memlab will skip"

PROVE = PATH="$(BUILD)/bin:$$PATH" LUA_PATH="$(CURDIR)/test/lib/?.lua;;" \
	LUA_CPATH="$(BUILD)/test/?.so;;" \
	LJPROF_BUILD_DIR="$(BUILD)" LJPROF_LUAJIT_TESTS="$(LJ_TESTS_TGZ)" \
	LJPROF_CROSS="$(CROSS)" prove

test: all noprof asan $(TEST_BIN) $(TEST_CMOD) $(TEST_LATE) $(TEST_SIGSTEP) \
	 $(BUILD)/.deps-test $(NPM_TEST)
	@echo "==== Fuzzing the stream decoder ($(FUZZ_TIME) s), ASan replay of the corpus"
	@$(LJPROF_MAKE) fuzz-run FUZZ_TIME=$(FUZZ_TIME) >$(BUILD)/fuzz.log 2>&1 || \
	  { tail -n 30 $(BUILD)/fuzz.log; exit 1; }
	@grep -E '^(Done|ASan replay)' $(BUILD)/fuzz.log | tail -n 2
	@$(PROVE) -r test/ $(BUILD)/test/
	@$(MAKE) --no-print-directory test-reference

# The tests of what the LuaJIT tree changes: the tree and its patches, the
# VM, its profilers, LJPROF, the C API and the reference's tests (the
# reader's own tests, test/ljprof and test/formats, and the fuzzing do not
# depend on the tree).
# ARCH=arm64 runs the same tests under qemu-aarch64. What qemu-user lacks
# skips with the reason: ptrace (sigstep.t: its program is not built),
# perf's samples of the emulated code (perfmap.t), a thread started in a
# forked child of a threaded process (fork.t, env/signal.t); the ASan VM
# with the stack check (stackcheck.t) is not built for ARM64.
VM_TESTS := test/setup test/vm test/memprof test/sysprof test/env test/heap \
	     $(BUILD)/test/
test-vm: all noprof $(if $(CROSS),,asan) $(TEST_BIN) $(TEST_CMOD) $(TEST_LATE) \
	 $(TEST_SIGSTEP) \
	 $(BUILD)/.deps-test $(NPM_TEST)
	$(if $(CROSS),@echo "==== ARM64 under qemu-aarch64 (Makefile: VM_TESTS)")
	@$(PROVE) -r $(VM_TESTS)
	@$(MAKE) --no-print-directory test-reference

# The reference's own tests of its profilers and misc library (Tarantool's
# LuaJIT fork), unpacked into $(REF) and run the way its SOURCE file says
# upstream runs them, through test/reference/run: what that changes, and
# why, is in test/reference/skips.
REF_TESTS_TGZ ?= $(firstword $(wildcard ../shared/upstreams/tarantool-luajit-tests-*.tar.gz))
REF      := $(BUILD)/reference
REF_T    := $(REF)/test/tarantool-tests
# gh-5813's C modules: res<dir>.so from <dir>/, linked with each ELF hash
# style, and stripped.
REF_CMODS := both:-Wl,--hash-style=both gnuhash:-Wl,--hash-style=gnu \
	     hash:-Wl,--hash-style=sysv stripped:-s

ifeq ($(wildcard $(REF_TESTS_TGZ)),)
test-reference:
	@echo "==== The reference's tests: skipped, no $(or $(REF_TESTS_TGZ),../shared/upstreams/tarantool-luajit-tests-*.tar.gz)"
else
test-reference: all $(BUILD)/.deps-test
	@echo "==== The reference's tests ($(notdir $(REF_TESTS_TGZ))) on $(BUILD)/bin/luajit"
	@rm -rf $(REF) && mkdir -p $(REF)/cmod $(REF)/var
	@tar -xzf $(REF_TESTS_TGZ) -C $(REF) --strip-components=1
	@for m in $(REF_CMODS); do dir=$${m%%:*}; \
	  $(TARGET_CC) -I$(BUILD)/include -shared -fPIC $${m#*:} -o $(REF)/cmod/res$$dir.so \
	    $(REF_T)/profilers/gh-5813-resolving-of-c-symbols/$$dir/res$$dir.c || exit 1; \
	done
	@cd $(REF_T) && \
	  LUA_PATH="$(REF_T)/?.lua;$(REF_T)/?/init.lua;$(REF)/tools/?.lua;;" \
	  LUA_CPATH="$(REF)/cmod/?.so;;" LUAJIT_TEST_VARDIR="$(REF)/var" \
	  prove --exec "$(CURDIR)/test/reference/run $(BUILD)/bin/luajit" \
	    $$(find . -name '*.test.lua' | sed 's|^\./||' | sort)
endif

# The same upstream tree built the same way, without our patches: the
# baseline that shows what the patches themselves cost.
PRISTINE := $(BUILD)/pristine
$(PRISTINE)/src/luajit: $(UPSTREAM)/.fetched
	@echo "==== Building unpatched LuaJIT in $(PRISTINE) (bench baseline)"
	@rm -rf $(PRISTINE) && cp -a $(UPSTREAM) $(PRISTINE)
	@$(MAKE) --no-print-directory -C $(PRISTINE)/src $(LJ_BUILDOPTS) \
	  PREFIX=$(PRISTINE) 2>/dev/null

BENCH_LUA = LUA_PATH="$(CURDIR)/bench/lib/?.lua;;" $(BUILD)/bin/luajit

# sysprof's sample and start costs, measured inside the sampled thread.
BENCH_PROBE := $(BUILD)/bench/sysprof_probe.so
$(BENCH_PROBE): bench/probe/sysprof_probe.c $(STAGED)
	@mkdir -p $(@D)
	@$(CC) -O2 -Wall -I$(BUILD)/include -shared -fPIC -o $@ $<

# bench/idle.lua: LuaJIT's PRNG seeded alike in every run (the file says why).
BENCH_SEED := $(BUILD)/bench/fixedseed.so
$(BENCH_SEED): bench/probe/fixedseed.c
	@mkdir -p $(@D)
	@$(CC) -O2 -Wall -shared -fPIC -o $@ $< -ldl

bench: all $(PRISTINE)/src/luajit $(BENCH_PROBE) $(BENCH_SEED)
	@scripts/deps bench/apt-packages
	@echo "## VM: ours against Debian's and unpatched upstream"
	@$(BENCH_LUA) bench/vm.lua $(BUILD)/bin/luajit $(PRISTINE)/src/luajit
	@echo "## VM: ours against unpatched, instructions, no profile (bench/idle.lua)"
	@$(BENCH_LUA) bench/idle.lua $(BUILD)/bin/luajit $(PRISTINE)/src/luajit \
	  $(BUILD)/bench $(BENCH_SEED)
	@echo "## Memory profiler: profiled against unprofiled"
	@$(BENCH_LUA) bench/memprof.lua $(BUILD)/bin/luajit $(BUILD)/bin/ljprof $(BUILD)/bench
	@echo "## Memory profiler: call stacks and sampling, steady cost"
	@$(BUILD)/bin/luajit bench/memprof_steady.lua $(BUILD)/bench
	@echo "## Memory profiler: an event's instructions, part by part (callgrind)"
	@$(BUILD)/bin/luajit bench/memprof_cost.lua $(BUILD)/bench
	@echo "## Platform profiler: overhead and cost per sample"
	@LUA_CPATH="$(BUILD)/bench/?.so;;" \
	  $(BENCH_LUA) bench/sysprof.lua $(BUILD)/bin/luajit $(BUILD)/bench
	@echo "## Real programs: sysprof's stacks in the JIT's machinery"
	@$(BENCH_LUA) bench/real.lua $(BUILD)/bin/luajit $(BUILD)/bin/ljprof $(BUILD)/bench
	@echo "## Real programs: what the compiler's events cost (callgrind)"
	@$(BENCH_LUA) bench/jitevents_cost.lua $(BUILD)/bin/luajit $(BUILD)/bench
	@rm -rf $(BUILD)/ljbench
	@if [ -n "$(LJ_TESTS_TGZ)" ] && [ -f "$(LJ_TESTS_TGZ)" ]; then \
	  mkdir -p $(BUILD)/ljbench && \
	  tar -xzf $(LJ_TESTS_TGZ) -C $(BUILD)/ljbench --strip-components=1; fi
	@echo "## ljprof: reader throughput"
	@LJBENCH=$(BUILD)/ljbench/bench \
	  bench/reader/run.sh $(BUILD)/bin/ljprof $(BUILD)/bench
	@echo "## Heap snapshots: the pause, their size, the reader"
	@bench/heapsnap.sh $(BUILD)/bin/luajit $(BUILD)/bin/ljprof $(BUILD)/bench
	@echo "## Lines: sysprof against -jp=l on LuaJIT's bench programs"
	@if [ -d $(BUILD)/ljbench/bench ]; then \
	  $(BENCH_LUA) bench/lines.lua $(BUILD)/bin/luajit $(BUILD)/bin/ljprof \
	    $(BUILD)/ljbench/bench $(BUILD)/bench && \
	  echo "## Trace maps: size, and instructions to compile traces" && \
	  $(BENCH_LUA) bench/traces.lua $(BUILD)/bin/luajit $(PRISTINE)/src/luajit \
	    $(BUILD)/ljbench/bench $(BUILD)/bench; \
	else echo "(skipped: no $(LJ_TESTS_TGZ))"; fi
	@$(MAKE) --no-print-directory bench-nginx

# What profiling costs a server (bench/nginx.lua): nginx's Lua module loads
# only the OpenResty-flavour library, NGINX_LIB (default: that of the
# OpenResty tree's build, docs/building.md).
NGINX_LIB ?= build-openresty/lib
bench-nginx: all
	@scripts/deps bench/apt-packages
	@echo "## nginx under wrk: what profiling costs a server"
	@$(BENCH_LUA) bench/nginx.lua $(abspath $(NGINX_LIB)) $(BUILD)/bench

# -- Install: rebuilt for PREFIX, so luajit finds its jit.* modules there ----

install: all install-vm
	@install -m 0755 $(BUILD)/bin/ljprof $(DESTDIR)$(PREFIX)/bin/ljprof
	@echo "==== Installed luajit, ljprof, libluajit-5.1, headers, jit/* and ljprof/* to $(DESTDIR)$(PREFIX)"

# The VM alone (luajit, libluajit-5.1, headers, jit/*, and our Lua modules,
# ljprof.*, beside jit/*), as make deb takes the OpenResty flavour's.
install-vm: vm
	@rm -rf $(BUILD)/install-tree && cp -a $(TREE) $(BUILD)/install-tree
	@rm -f $(BUILD)/install-tree/src/lib_package*.o
	+@$(MAKE) --no-print-directory -C $(BUILD)/install-tree/src $(LJ_BUILDOPTS) \
	  XCFLAGS="$(LJ_XCFLAGS)" PREFIX=$(PREFIX)
	@$(MAKE) --no-print-directory -C $(BUILD)/install-tree PREFIX=$(PREFIX) \
	  DESTDIR=$(DESTDIR) install >/dev/null
	@ln -sf $$($(MAKE) -s --no-print-directory -C $(BUILD)/install-tree \
	  --eval 'ljprof-tname: ; @echo $$(INSTALL_TNAME)' ljprof-tname) \
	  $(DESTDIR)$(PREFIX)/bin/luajit
	@d=$$(dirname $$($(MAKE) -s --no-print-directory -C $(BUILD)/install-tree \
	  PREFIX=$(PREFIX) DESTDIR=$(DESTDIR) \
	  --eval 'ljprof-jitlib: ; @echo $$(INSTALL_JITLIB)' \
	  ljprof-jitlib))/ljprof && install -d $$d && \
	  install -m 0644 lua/ljprof/*.lua $$d/
	@rm -rf $(BUILD)/install-tree

# -- Debian package: the install above under DEB_PREFIX, beside Debian's own
# luajit (scripts/build-deb says what goes where, and why) -----------------

DEB_PREFIX  := /usr/lib/ljprof
DEB_VERSION ?= 0.1+git$(shell git log -1 --format=%cd.%h \
		 --date=format:%Y%m%d 2>/dev/null)
DEB_ROOT    := $(BUILD)/deb/debian/ljprof

# nginx's Lua module (Debian's libnginx-mod-http-lua, OpenResty) links
# OpenResty's luajit2 and loads only that flavour of our library, which
# has the same soname: the package holds it in a directory of its own,
# $(DEB_PREFIX)/openresty, VM only (the reader is the one above). It is
# built in DEB_OPENRESTY from OPENRESTY_SRC, a tree or tarball of
# OpenResty's luajit2, by default the one in ../shared/upstreams, else
# Debian's source package luajit2 (apt-get source); when this build is
# OpenResty's flavour already, from this build.
OPENRESTY_SRC ?= $(firstword $(wildcard ../shared/upstreams/luajit2-openresty-*.tar.gz))
DEB_OPENRESTY ?= $(BUILD)/openresty
DEB_OR_SRC    := $(or $(OPENRESTY_SRC),debian:luajit2)

.PHONY: deb
deb: all
	@rm -rf $(BUILD)/deb $(BUILD)/ljprof_*.deb
	+@$(MAKE) --no-print-directory install PREFIX=$(DEB_PREFIX) DESTDIR=$(DEB_ROOT)
	+@if [ "$$(scripts/luajit-flavour $(UPSTREAM))" = openresty ]; then \
	  b=$(BUILD) src="$(LUAJIT_SRC)"; \
	else \
	  b=$(abspath $(DEB_OPENRESTY)) src="$(DEB_OR_SRC)"; \
	  echo "==== OpenResty's flavour for nginx, in $$b from $$src"; \
	fi; \
	$(MAKE) --no-print-directory BUILD=$$b LUAJIT_SRC="$$src" install-vm \
	  PREFIX=$(DEB_PREFIX)/openresty DESTDIR=$(DEB_ROOT) || { \
	  echo "make deb: OpenResty's flavour, the library nginx loads, did not build in" \
	    "$$b from $$src. It needs a tree of OpenResty's luajit2: set OPENRESTY_SRC to" \
	    "one (a directory or tarball), or let apt fetch Debian's source package" \
	    "luajit2 (a deb-src entry; docs/installing.md)" >&2; exit 1; }; \
	echo "$$b" >$(BUILD)/deb/openresty-build
	@scripts/build-deb $(DEB_ROOT) $(DEB_PREFIX) $(DEB_VERSION) $(BUILD) \
	  "$$(cat $(BUILD)/deb/openresty-build)"

clean:
	rm -rf $(TREE) $(PRISTINE) $(BUILD)/bin $(BUILD)/lib $(BUILD)/include \
	  $(BUILD)/share $(BUILD)/test

distclean:
	rm -rf $(BUILD)
