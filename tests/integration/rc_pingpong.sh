#!/bin/bash
# SPDX-License-Identifier: MIT
# Unmodified ibv_rc_pingpong between two processes: server on softib0,
# client on softib1.  Arguments are passed to both sides (e.g. -s 4096 -e).
# SIB_PINGPONG names another ibverbs-utils ping-pong (uc_pingpong.sh, ud_pingpong.sh).
. "$(dirname "$0")/lib.sh"
pp=${SIB_PINGPONG:-ibv_rc_pingpong}
command -v "$pp" >/dev/null || fail "$pp not installed (Debian package ibverbs-utils)"
start_daemon
start_server "$SIB_TMP/server.out" timeout 120 "$pp" -d softib0 -p PORT -n 1000 "$@"
client timeout 120 "$pp" -d softib1 -p "$port" -n 1000 "$@" 127.0.0.1 >"$SIB_TMP/client.out" 2>&1
crc=$?
wait "$srv"
src=$?
cat "$SIB_TMP/server.out" "$SIB_TMP/client.out"
[ "$crc" = 0 ] || fail "client exited $crc"
[ "$src" = 0 ] || fail "server exited $src"
grep -q '1000 iters in' "$SIB_TMP/client.out" || fail "client did not finish 1000 iterations"
grep -q '1000 iters in' "$SIB_TMP/server.out" || fail "server did not finish 1000 iterations"
# Every resource of both programs was released.
wait_until 5 sh -c "\"$SIB_BIN/softib\" status | grep -Eq '^totals devices=0 pd=0 mr=0 cq=0 qp=0 '" ||
	fail "resources left: $(status)"
echo PASS
