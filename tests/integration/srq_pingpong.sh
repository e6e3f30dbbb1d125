#!/bin/bash
# SPDX-License-Identifier: MIT
# Unmodified ibv_srq_pingpong (RC QPs on one SRQ) between two processes:
# server on softib0, client on softib1.  Arguments go to both sides
# (e.g. -q 4, -e).
. "$(dirname "$0")/lib.sh"
command -v ibv_srq_pingpong >/dev/null || fail "ibv_srq_pingpong not installed (ibverbs-utils)"
start_daemon
start_server "$SIB_TMP/server.out" timeout 120 ibv_srq_pingpong -d softib0 -p PORT -n 500 "$@"
client timeout 120 ibv_srq_pingpong -d softib1 -p "$port" -n 500 "$@" 127.0.0.1 >"$SIB_TMP/client.out" 2>&1
crc=$?
wait "$srv"
src=$?
cat "$SIB_TMP/server.out" "$SIB_TMP/client.out"
[ "$crc" = 0 ] || fail "client exited $crc"
[ "$src" = 0 ] || fail "server exited $src"
grep -q '500 iters in' "$SIB_TMP/client.out" || fail "client did not finish 500 iterations"
grep -q '500 iters in' "$SIB_TMP/server.out" || fail "server did not finish 500 iterations"
# Every resource of both programs was released, the SRQs too.
wait_until 5 sh -c "\"$SIB_BIN/softib\" status | grep -Eq '^totals devices=0 pd=0 mr=0 cq=0 qp=0 srq=0 '" ||
	fail "resources left: $(status)"
echo PASS
