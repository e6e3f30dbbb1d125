#!/bin/bash
# SPDX-License-Identifier: MIT
# Unmodified `ucx_info -d` (Debian ucx-utils) in the uverbs view
# (softib run): every softib device is a UCX memory domain whose port 1
# offers rc_verbs and ud_verbs.  Outside the view UCX lists none of them
# (it needs /dev/infiniband/<dev_name>).  Needs root (exit 77 otherwise).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ucx_lib.sh"
set -o pipefail   # lib.sh sets -u; every failure is checked (fail)
command -v ucx_info >/dev/null || skip "no ucx_info (Debian package ucx-utils)"
ucx_view_setup
devs=$(run_client "$SIB_BIN/ibv_devnames" | awk '{ print $1 }')
timeout 30 "${VIEW[@]}" ucx_info -d >"$SIB_TMP/info.out" 2>&1 || { cat "$SIB_TMP/info.out"; fail "ucx_info -d in the view failed"; }
# "tl dev" pairs, e.g. "rc_verbs softib0:1".
awk '/^# +Transport:/ { tl = $3 } /^# +Device:/ { print tl, $3 }' "$SIB_TMP/info.out" >"$SIB_TMP/pairs"
for d in $devs; do
	for tl in rc_verbs ud_verbs; do
		grep -qx "$tl $d:1" "$SIB_TMP/pairs" || { cat "$SIB_TMP/info.out"; fail "ucx_info -d lists no $tl on $d:1"; }
	done
	echo "ok: $d:1 rc_verbs ud_verbs"
done
# Outside the view the same UCX sees no softib device.
client timeout 30 ucx_info -d >"$SIB_TMP/plain.out" 2>&1 || true
if grep -q 'Device: softib' "$SIB_TMP/plain.out"; then
	[ -e /dev/infiniband ] || fail "ucx_info lists softib without /dev/infiniband"
fi
echo PASS
