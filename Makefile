# luaworker: run Laravel Redis queue jobs with Lua handlers.
#
#   make            build ./luaworker
#   make demo       install what is missing, start a private redis-server when no
#                   Redis is configured, push sample jobs and run the worker on them
#   make test       install what is missing, build, run every spec
#   make deps       install the Debian packages the build and the tests need
#   make clean
#
# SANITIZER=address|undefined builds with that sanitizer; WERROR=1 (set in CI)
# turns warnings into errors.

CC      ?= cc
LUAJIT  ?= luajit
PREFIX  ?= /usr/local

PKGS     = luajit hiredis libev libcrypto
CFLAGS  ?= -O2 -g
CFLAGS  += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wpedantic -Wshadow \
           -Wstrict-prototypes -Wmissing-prototypes -Wformat=2 -Wvla \
           -MMD -MP -DLUAWORKER_SHARE='"$(PREFIX)/share/luaworker"'
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null || \
                echo -I/usr/include/luajit-2.1)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null || \
                echo -lluajit-5.1 -lhiredis -lev -lcrypto)
CFLAGS  += $(PKG_CFLAGS)
LDFLAGS += -Wl,-E
LDLIBS  += -l:liblua5.1-cjson.a $(PKG_LIBS) -lm -ldl

ifeq ($(WERROR),1)
CFLAGS  += -Werror
endif
ifneq ($(SANITIZER),)
CFLAGS  += -fsanitize=$(SANITIZER) -fno-omit-frame-pointer -fno-sanitize-recover=all
LDFLAGS += -fsanitize=$(SANITIZER)
endif

OBJ      = obj
C_SRC    = $(wildcard runtime/*.c)
LUA_SRC  = $(wildcard runtime/*.lua)
C_OBJ    = $(C_SRC:runtime/%.c=$(OBJ)/%.o)
LUA_OBJ  = $(LUA_SRC:runtime/%.lua=$(OBJ)/%.lua.o)

# Debian packages: build, tests, and the Laravel 8 app the interop specs drive.
DEB_BUILD = build-essential pkg-config luajit libluajit-5.1-dev libhiredis-dev \
            libev-dev lua-cjson lua-cjson-dev libssl-dev
DEB_TEST  = redis-server lua5.2 lua-busted lua-socket lua-posix lua-redis \
            php-cli php-redis php-sqlite3 php-laravel-framework

.PHONY: all deps test demo bench clean install

all: luaworker

luaworker: $(C_OBJ) $(LUA_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(OBJ)/%.o: runtime/%.c | $(OBJ)
	$(CC) $(CFLAGS) -c -o $@ $<

# Host-side Lua is compiled into the binary: runtime/worker.lua is module
# "luaworker.worker", runtime/luaworker.lua is "luaworker".
$(OBJ)/%.lua.o: runtime/%.lua | $(OBJ)
	$(LUAJIT) -b -n $(if $(filter luaworker,$*),luaworker,luaworker.$*) $< $@

$(OBJ):
	mkdir -p $@

deps:
	@missing=""; for p in $(DEB_BUILD) $(DEB_TEST); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

test: deps
	$(MAKE) luaworker
	spec/run

demo: deps
	$(MAKE) luaworker
	examples/demo.sh

install: luaworker
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/luaworker/scripts
	install -m 755 luaworker $(DESTDIR)$(PREFIX)/bin/luaworker
	install -m 644 scripts/*.lua $(DESTDIR)$(PREFIX)/share/luaworker/scripts

clean:
	rm -rf $(OBJ) luaworker

-include $(C_OBJ:.o=.d)
