#!/bin/bash
# SPDX-License-Identifier: MIT
# Unmodified perftest with --use-srq (the responder's QPs receive from one
# SRQ): server on softib0, client on softib1.
# Usage: perftest_srq.sh TOOL [ARGS...]   e.g. perftest_srq.sh ib_send_bw -q 4
. "$(dirname "$0")/lib.sh"
tool=$1; shift
command -v "$tool" >/dev/null || fail "$tool not installed (Debian package perftest)"
start_daemon
start_server "$SIB_TMP/server.out" timeout 120 "$tool" -d softib0 -p PORT -n 500 --use-srq "$@"
client timeout 120 "$tool" -d softib1 -p "$port" -n 500 --use-srq "$@" 127.0.0.1 >"$SIB_TMP/client.out" 2>&1
crc=$?
wait "$srv"
src=$?
cat "$SIB_TMP/client.out"
[ "$crc" = 0 ] || { cat "$SIB_TMP/server.out"; fail "client exited $crc"; }
[ "$src" = 0 ] || { cat "$SIB_TMP/server.out"; fail "server exited $src"; }
grep -q 'Using SRQ' "$SIB_TMP/client.out" "$SIB_TMP/server.out" || fail "perftest did not use an SRQ"
grep -Eq '^ *[0-9]+ +[0-9]+ ' "$SIB_TMP/client.out" || fail "no result line"
echo PASS
