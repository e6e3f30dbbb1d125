#!/bin/bash
# SPDX-License-Identifier: MIT
# Unmodified ucx_perftest (Debian ucx-utils) over softib: the server on
# softib0:1, the client on softib1:1 (UCX_NET_DEVICES), with UCX_TLS
# allowing only the given verbs transports, so UCX cannot fall back to
# tcp or shared memory; both logs must show every endpoint lane on softib
# with those transports.  Runs under softib run (run_lib.sh): root, or SIB_RUN_MODE=user.
# Usage: ucx_perftest.sh TLS TEST SIZE [ITERS]
#   e.g. ucx_perftest.sh rc_verbs,ud_verbs tag_bw 65536
# Each side is bounded by a 60 s timeout.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ucx_lib.sh"
set -o pipefail   # lib.sh sets -u; every failure is checked (fail)
[ $# -ge 3 ] || fail "usage: ucx_perftest.sh TLS TEST SIZE [ITERS]"
tls=$1 test=$2 size=$3 iters=${4:-1000}
command -v ucx_perftest >/dev/null || skip "no ucx_perftest (Debian package ucx-utils)"
ucx_view_setup
export UCX_TLS=$tls UCX_LOG_LEVEL=info
warm=$((iters / 10))
start_server "$SIB_TMP/server.out" env -u LD_PRELOAD UCX_NET_DEVICES=softib0:1 \
	timeout 60 "${VIEW[@]}" ucx_perftest -p PORT
rc=0
UCX_NET_DEVICES=softib1:1 timeout 60 "${VIEW[@]}" \
	ucx_perftest 127.0.0.1 -p "$port" -t "$test" -s "$size" -n "$iters" -w "$warm" \
	>"$SIB_TMP/client.out" 2>&1 || rc=$?
src=0
wait "$srv" || src=$?
cat "$SIB_TMP/client.out"
[ "$rc" = 0 ] || { cat "$SIB_TMP/server.out"; fail "client exited $rc"; }
[ "$src" = 0 ] || { cat "$SIB_TMP/server.out"; fail "server exited $src"; }
grep -Eq "^Final: +$iters " "$SIB_TMP/client.out" || fail "no Final line with $iters iterations"
check_lanes "$SIB_TMP/client.out" "$tls" 'softib1:1'
check_lanes "$SIB_TMP/server.out" "$tls" 'softib0:1'
check_released
echo PASS
