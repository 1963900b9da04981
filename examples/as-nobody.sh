#!/bin/sh
# Runs COMMAND as the user nobody from / : PostgreSQL's and MariaDB's programs
# refuse root, and the caller's directory (a checkout under /root or in a mktemp -d,
# mode 0700) may be one nobody cannot enter (psql: 'could not change directory to
# "...": Permission denied' on stderr). The paths COMMAND is given are absolute and
# in directories nobody can reach (the servers' own, under /tmp, chowned to it).
# Its status is COMMAND's. Used by examples/private-postgresql.sh,
# examples/private-mariadb.sh and the specs (H.as_nobody in spec/helpers.lua).
#   examples/as-nobody.sh COMMAND [ARG...]
cd / && exec runuser -u nobody -- "$@"
