#!/bin/bash
# SPDX-License-Identifier: MIT
# Unmodified ibv_xsrq_pingpong (XRC_SEND -> XRC_RECV QPs, XRC SRQs in an
# XRC domain opened on a file) between two processes: server on softib0,
# client on softib1.  Arguments go to both sides (e.g. -e, -s 65536); the
# server serves one client.
. "$(dirname "$0")/lib.sh"
command -v ibv_xsrq_pingpong >/dev/null || fail "ibv_xsrq_pingpong not installed (ibverbs-utils)"
start_daemon
cd "$SIB_TMP" || fail "no temp dir" # the tool's domain file (/tmp/xrc_domain) stays shared
export SOFTIB_STATS=1 # each context prints its drop counters at close
start_server "$SIB_TMP/server.out" timeout 120 ibv_xsrq_pingpong -d softib0 -p PORT -c 1 -n 50 "$@"
client timeout 120 ibv_xsrq_pingpong -d softib1 -p "$port" -n 50 "$@" 127.0.0.1 >"$SIB_TMP/client.out" 2>&1
crc=$?
wait "$srv"
src=$?
cat "$SIB_TMP/server.out" "$SIB_TMP/client.out"
[ "$crc" = 0 ] || fail "client exited $crc"
[ "$src" = 0 ] || fail "server exited $src"
grep -q 'success' "$SIB_TMP/client.out" || fail "client did not report success"
# No packet was of the wrong transport (XRC ACKs carry XRC opcodes) or
# named a wrong SRQ.  (Late packets of a QP being torn down, and retries
# on a loaded machine, are normal.)
grep -q 'rx_drop:' "$SIB_TMP/client.out" || fail "no SOFTIB_STATS line"
if grep -E 'rx_drop:' "$SIB_TMP/server.out" "$SIB_TMP/client.out" | grep -Eq ' (type|xrc_srqn)=[1-9]'; then
	fail "packets dropped as the wrong transport or SRQ"
fi
wait_until 5 sh -c "\"$SIB_BIN/softib\" status | grep -Eq '^totals devices=0 pd=0 mr=0 cq=0 qp=0 srq=0 .* xrcd=0'" ||
	fail "resources left: $(status)"
echo PASS
