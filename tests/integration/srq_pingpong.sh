#!/bin/bash
# SPDX-License-Identifier: MIT
# Unmodified ibv_srq_pingpong (RC QPs on one SRQ) or ibv_xsrq_pingpong
# (XRC_SEND -> XRC_RECV QPs, XRC SRQs in a domain opened on a file) between
# two processes: server on softib0, client on softib1.
# Usage: srq_pingpong.sh TOOL [ARGS...]   (ARGS go to both sides: -q 4, -e, ...;
# for ibv_xsrq_pingpong, -c N goes to the server and N clients run at once)
. "$(dirname "$0")/lib.sh"
tool=$1; shift
command -v "$tool" >/dev/null || fail "$tool not installed (ibverbs-utils)"
clients=1
args=()
while [ $# -gt 0 ]; do
	if [ "$1" = -c ]; then clients=$2; shift 2; else args+=("$1"); shift; fi
done
case $tool in
ibv_srq_pingpong) iters=(-n 500); server_only=(); done_re='500 iters in' ;;
ibv_xsrq_pingpong) iters=(-n 50); server_only=(-c "$clients"); done_re='^success' ;;
*) fail "unknown tool $tool" ;;
esac
start_daemon
cd "$SIB_TMP" || fail "no temp dir"
export SOFTIB_STATS=1 # each context prints its drop counters at close
start_server "$SIB_TMP/server.out" timeout 120 "$tool" -d softib0 -p PORT "${iters[@]}" "${server_only[@]}" \
	"${args[@]}"
cpids=()
for i in $(seq "$clients"); do
	client timeout 120 "$tool" -d softib1 -p "$port" "${iters[@]}" "${args[@]}" 127.0.0.1 \
		>"$SIB_TMP/client$i.out" 2>&1 &
	cpids+=($!)
done
crc=0
for p in "${cpids[@]}"; do
	wait "$p" || crc=$?
done
wait "$srv"
src=$?
cat "$SIB_TMP/server.out" "$SIB_TMP"/client*.out
[ "$crc" = 0 ] || fail "a client exited $crc"
[ "$src" = 0 ] || fail "server exited $src"
for i in $(seq "$clients"); do
	grep -q "$done_re" "$SIB_TMP/client$i.out" || fail "client $i did not finish"
	grep -q 'rx_drop:' "$SIB_TMP/client$i.out" || fail "no SOFTIB_STATS line"
done
grep -q "$done_re" "$SIB_TMP/server.out" || fail "the server did not finish"
# No packet was of the wrong transport (XRC answers with XRC opcodes) or
# named a wrong SRQ.  (Late packets of a QP being torn down, and retries
# on a loaded machine, are normal.)
if grep -E 'rx_drop:' "$SIB_TMP/server.out" "$SIB_TMP"/client*.out | grep -Eq ' (type|xrc_srqn)=[1-9]'; then
	fail "packets dropped as the wrong transport or SRQ"
fi
# Every resource of both programs was released, SRQs and XRC domains too.
wait_until 5 sh -c "\"$SIB_BIN/softib\" status | grep -Eq '^totals devices=0 pd=0 mr=0 cq=0 qp=0 srq=0 .* xrcd=0$'" ||
	fail "resources left: $(status)"
echo PASS
