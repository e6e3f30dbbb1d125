#!/bin/bash
# SPDX-License-Identifier: MIT
# Unmodified perftest through softib: server on softib0, client on softib1.
# Usage: perftest.sh TOOL [ARGS...]   e.g. perftest.sh ib_write_bw -s 65536
. "$(dirname "$0")/lib.sh"
tool=$1; shift
command -v "$tool" >/dev/null || fail "$tool not installed (Debian package perftest)"
start_daemon
start_server "$SIB_TMP/server.out" timeout 120 "$tool" -d softib0 -p PORT -n 500 "$@"
client timeout 120 "$tool" -d softib1 -p "$port" -n 500 "$@" 127.0.0.1 >"$SIB_TMP/client.out" 2>&1
crc=$?
wait "$srv"
src=$?
cat "$SIB_TMP/client.out"
[ "$crc" = 0 ] || { cat "$SIB_TMP/server.out"; fail "client exited $crc"; }
[ "$src" = 0 ] || { cat "$SIB_TMP/server.out"; fail "server exited $src"; }
# The result table: a line that starts with the message size.
grep -Eq '^ *[0-9]+ +500 ' "$SIB_TMP/client.out" || fail "no result line"
echo PASS
