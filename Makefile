# luaworker: run Laravel Redis queue jobs with Lua handlers.
#
#   make            build ./luaworker
#   make demo       install what is missing, start a private redis-server when no
#                   Redis is configured, push sample jobs and run the worker on them
#   make test       install what is missing, build, run every spec
#   make bench      luaworker against php artisan queue:work (examples/bench/)
#   make chaos      the chaos soak, long: CHAOS_JOBS (50000) jobs while workers and
#                   whole process groups are killed and the supervisor and
#                   redis-server restarted (spec/chaos/)
#   make fuzz       libFuzzer targets for outside input, FUZZ_SECONDS each (60)
#   make valgrind   memcheck over 1,000 jobs: no definite leak, no error (spec/valgrind/)
#   make deps       install the Debian packages the build and the tests need
#   make clean
#
# SANITIZER=address, undefined, or both as address,undefined (CI's: one build for
# AddressSanitizer and UBSan) builds with those sanitizers, any error fatal;
# WERROR=1 (set in CI) turns warnings into errors.

CC      ?= cc
LUAJIT  ?= luajit
PREFIX  ?= /usr/local
# what `luaworker --version` says
VERSION  = 0.9.0

PKGS     = luajit hiredis libev libssl libcrypto
CFLAGS  ?= -O2 -g
CFLAGS  += -std=c11 -D_GNU_SOURCE -pthread -Wall -Wextra -Wpedantic -Wshadow \
           -Wstrict-prototypes -Wmissing-prototypes -Wformat=2 -Wvla \
           -MMD -MP -DLUAWORKER_SHARE='"$(PREFIX)/share/luaworker"'
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null || \
                echo -I/usr/include/luajit-2.1)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null || \
                echo -lluajit-5.1 -lhiredis -lev -lssl -lcrypto)
# libpq's header only: libpq itself is loaded when a connection is first made
PQ_CFLAGS := $(shell pkg-config --cflags libpq 2>/dev/null || echo -I/usr/include/postgresql)
# Connector/C's header only: libmariadb is loaded when a connection is first made
MY_CFLAGS := $(shell pkg-config --cflags libmariadb 2>/dev/null || echo -I/usr/include/mariadb)
CFLAGS  += -Iruntime $(PKG_CFLAGS) $(PQ_CFLAGS) $(MY_CFLAGS)
LDFLAGS += -Wl,-E
LDLIBS  += -l:liblua5.1-cjson.a $(PKG_LIBS) -lm -ldl -pthread

ifeq ($(WERROR),1)
CFLAGS  += -Werror
endif
ifneq ($(SANITIZER),)
CFLAGS  += -fsanitize=$(SANITIZER) -fno-omit-frame-pointer -fno-sanitize-recover=all
LDFLAGS += -fsanitize=$(SANITIZER)
endif

OBJ      = obj
C_SRC    = $(wildcard runtime/*.c runtime/*/*.c)
LUA_SRC  = $(wildcard runtime/*.lua runtime/*/*.lua)
C_OBJ    = $(C_SRC:runtime/%.c=$(OBJ)/%.o) $(OBJ)/supervisor/live_page_html.o
LUA_OBJ  = $(LUA_SRC:runtime/%.lua=$(OBJ)/%.lua.o)

# Debian packages: build, tests, and the Laravel 8 app the interop specs drive.
DEB_BUILD = build-essential pkg-config luajit libluajit-5.1-dev libhiredis-dev \
            libev-dev lua-cjson lua-cjson-dev libssl-dev libcurl4-openssl-dev libpq-dev \
            libsqlite3-dev libmariadb-dev libmicrohttpd-dev libxxhash-dev
DEB_TEST  = redis-server lua5.2 lua-busted lua-socket lua-sec lua-posix lua-redis openssl postgresql sqlite3 mariadb-server libfaketime supervisor prometheus curl chromium \
            php-cli php-redis php-sqlite3 php-mysql php-pgsql php-laravel-framework php-guzzlehttp-guzzle
# what `make demo` needs (a private redis-server, the Laravel app that pushes its jobs)
DEB_DEMO  = redis-server php-cli php-redis php-sqlite3 php-mysql php-pgsql php-laravel-framework \
            php-guzzlehttp-guzzle
DEB_FUZZ  = clang libclang-rt-14-dev
DEB_VALGRIND = valgrind

.PHONY: all deps test demo bench chaos clean install fuzz fuzz-run valgrind

all: luaworker

luaworker: $(C_OBJ) $(LUA_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# The live page (runtime/supervisor/live_page.h) as a C array of its bytes.
$(OBJ)/supervisor/live_page_html.c: runtime/supervisor/live_page.html Makefile
	@mkdir -p $(dir $@)
	{ echo '#include "supervisor/live_page.h"'; echo 'const unsigned char live_page_html[] = {'; \
	  od -An -v -tx1 runtime/supervisor/live_page.html | sed 's/\([0-9a-f][0-9a-f]\)/0x\1,/g'; echo '0};'; } > $@
$(OBJ)/supervisor/live_page_html.o: $(OBJ)/supervisor/live_page_html.c
	$(CC) $(CFLAGS) -c -o $@ $<

# runtime/version.c says VERSION: rebuilt when this file changes.
$(OBJ)/version.o: CFLAGS += -DLUAWORKER_VERSION='"$(VERSION)"'
$(OBJ)/version.o: Makefile

# runtime/ has a folder per concept; headers are included by their path below
# runtime/ ("redis/redis_conn.h").
$(OBJ)/%.o: runtime/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<

# C specs (spec/unit/*_spec.c): programs printing TAP, each linked with the part of
# the host it checks; spec/run runs them.
C_SPEC = $(OBJ)/spec/slot_spec $(OBJ)/spec/reply_limits_spec $(OBJ)/spec/key_slot_spec \
         $(OBJ)/spec/handles_spec
$(OBJ)/spec/slot_spec: spec/unit/slot_spec.c $(OBJ)/supervisor/slot.o
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^
$(OBJ)/spec/reply_limits_spec: spec/unit/reply_limits_spec.c $(OBJ)/redis/reply_limits.o
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ -lhiredis
$(OBJ)/spec/key_slot_spec: spec/unit/key_slot_spec.c $(OBJ)/redis/key_slot.o
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^
$(OBJ)/spec/handles_spec: spec/unit/handles_spec.c $(OBJ)/lib/handles.o
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^

# Host-side Lua is compiled into the binary, each file a module named after its
# folder and file, so that a require says where the file is:
# runtime/queue/dispatch.lua is "luaworker.queue.dispatch", a folder's own file
# runtime/db/db.lua is "luaworker.db", runtime/start.lua "luaworker.start",
# runtime/luaworker.lua "luaworker". LUAJIT_BFLAGS=-g keeps file and line
# information (for jit.p profiles and tracebacks).
lua_module = $(strip $(if $(filter luaworker,$(1)),luaworker,\
    $(if $(findstring /,$(1)),\
        $(if $(filter $(notdir $(1)),$(patsubst %/,%,$(dir $(1)))),luaworker.$(notdir $(1)),\
            luaworker.$(subst /,.,$(1))),\
        luaworker.$(1))))

$(OBJ)/%.lua.o: runtime/%.lua
	@mkdir -p $(dir $@)
	$(LUAJIT) -b $(LUAJIT_BFLAGS) -n $(call lua_module,$*) $< $@

deps:
	@missing=""; for p in $(DEB_BUILD) $(DEB_TEST) $(EXTRA_DEBS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

test: deps
	$(MAKE) luaworker $(C_SPEC)
	spec/run

demo:
	$(MAKE) deps DEB_TEST="$(DEB_DEMO)"
	$(MAKE) luaworker
	examples/demo.sh

# make bench: luaworker against php artisan queue:work on a private redis-server;
# prints a table and writes examples/bench/RESULTS.md (examples/bench/README.md).
bench: deps
	$(MAKE) luaworker
	examples/bench/bench.sh

# make chaos: the long run of the chaos soak (spec/chaos/driver.lua; make test has a
# short one in spec/chaos_spec.lua). The Laravel app dispatches CHAOS_JOBS jobs in
# 10 waves onto a redis-server of the driver's own; 4 worker processes, each running
# CHAOS_CONCURRENCY (1) jobs at once, run them while the driver, from CHAOS_SEED,
# kill -9's workers 12 times, kill -9's the supervisor's whole process group twice
# (each time starting it again and restarting redis-server), restarts the supervisor
# with TERM 3 times and redis-server once more. Ends with one
# JSON summary line; fails when a job was lost, charged an attempt it did not run,
# failed unexpectedly or ran more often than the kills and the restarts explain.
CHAOS_JOBS ?= 50000
CHAOS_SEED ?= 1
CHAOS_CONCURRENCY ?= 1
chaos: deps
	$(MAKE) luaworker
	lua5.2 spec/chaos/driver.lua --jobs=$(CHAOS_JOBS) --seed=$(CHAOS_SEED) --processes=4 \
	    --concurrency=$(CHAOS_CONCURRENCY) --kills=12 --group-kills=2 --supervisor-restarts=3 --redis-restarts=1 --waves=10 --work-ms=3

# make valgrind: every process of a run over 1,000 jobs (the supervisor, its
# workers, the commands) under memcheck on a private redis-server; fails on a
# definite leak or any memcheck error (spec/valgrind/run). Needs a build without
# a sanitizer: run make clean first after a SANITIZER build.
valgrind:
	$(MAKE) deps EXTRA_DEBS="$(DEB_VALGRIND)"
	$(MAKE) luaworker
	spec/valgrind/run

install: luaworker
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/luaworker/scripts \
	  $(DESTDIR)$(PREFIX)/share/luaworker/types
	install -m 755 luaworker $(DESTDIR)$(PREFIX)/bin/luaworker
	install -m 644 scripts/*.lua $(DESTDIR)$(PREFIX)/share/luaworker/scripts
	install -m 644 types/luaworker.lua $(DESTDIR)$(PREFIX)/share/luaworker/types

# make fuzz: libFuzzer targets for the input that comes from outside
# (spec/fuzz/README.md), built with clang into $(OBJ)/fuzz/ apart from the
# normal build.  Each runs FUZZ_SECONDS from a working corpus in
# $(OBJ)/fuzz/corpus/<target> (seeded from spec/fuzz/corpus/<target>, kept
# between runs) and prints libFuzzer's last line; a crash, leak or timeout
# leaves its input in $(OBJ)/fuzz/crashes/<target>/ and fails the target.
# LeakSanitizer cannot follow GC64 LuaJIT's tagged pointers, so the targets
# holding a Lua state skip libFuzzer's per-input leak check; they close the
# state at exit, where the usual leak check still runs.
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_OBJ      = $(OBJ)/fuzz
FUZZ_TARGETS  = php_unserialize payload dotenv
FUZZ_LUA      = php_unserialize payload
FUZZ_BIN      = $(FUZZ_TARGETS:%=$(FUZZ_OBJ)/fuzz_%)
FUZZ_CFLAGS   = -std=c11 -D_GNU_SOURCE -g -O1 -fno-omit-frame-pointer -Wall -Wextra \
                -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
                -Iruntime $(PKG_CFLAGS)
FUZZ_PHP_SRC  = $(addprefix runtime/php/,php_value.c php_unserialize.c php_serialize.c \
                  php_meta.c php_scan.c php_float.c)

$(FUZZ_OBJ)/fuzz_php_unserialize $(FUZZ_OBJ)/fuzz_payload: $(FUZZ_PHP_SRC) spec/fuzz/fuzz_lua.c
$(FUZZ_OBJ)/fuzz_dotenv: runtime/config/dotenv.c runtime/lib/buffer.c

$(FUZZ_OBJ)/fuzz_%: spec/fuzz/fuzz_%.c $(wildcard runtime/*/*.h)
	@mkdir -p $(FUZZ_OBJ)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $(filter %.c,$^) $(LDLIBS)

fuzz:
	$(MAKE) deps EXTRA_DEBS="$(DEB_FUZZ)"
	$(MAKE) fuzz-run

fuzz-run: $(FUZZ_BIN)
	@failed=""; for t in $(FUZZ_TARGETS); do \
	  corpus=$(FUZZ_OBJ)/corpus/$$t; crashes=$(FUZZ_OBJ)/crashes/$$t; log=$(FUZZ_OBJ)/$$t.log; \
	  rm -rf $$crashes; mkdir -p $$corpus $$crashes && cp spec/fuzz/corpus/$$t/* $$corpus/ || exit 1; \
	  case " $(FUZZ_LUA) " in *" $$t "*) leaks=0 ;; *) leaks=1 ;; esac; \
	  echo "fuzz_$$t: $(FUZZ_SECONDS)s, corpus $$corpus, log $$log"; \
	  $(FUZZ_OBJ)/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -timeout=10 -print_final_stats=1 \
	    -detect_leaks=$$leaks \
	    -dict=spec/fuzz/$$t.dict -artifact_prefix=$$crashes/ $$corpus >$$log 2>&1; rc=$$?; \
	  grep -E '^#[0-9]+[[:space:]]+DONE' $$log | tail -n 1; \
	  if [ $$rc -ne 0 ]; then \
	    failed="$$failed $$t"; tail -n 40 $$log; ls -d $$crashes/* 2>/dev/null; \
	  fi; \
	done; \
	if [ -n "$$failed" ]; then echo "fuzz: failed:$$failed"; exit 1; fi

clean:
	rm -rf $(OBJ) luaworker

-include $(C_OBJ:.o=.d)
