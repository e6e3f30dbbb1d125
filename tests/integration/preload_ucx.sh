#!/bin/bash
# SPDX-License-Identifier: MIT
# Unmodified `ucx_info -d` (Debian ucx-utils) through the interposer
# (libsoftib_view.so, docs/clients.md "The interposer"), no root, no
# namespace: a tree with /dev/infiniband/uverbsN -> /dev/null for each
# softib device, SOFTIB_VIEW on it, and UCX lists rc_verbs and ud_verbs on
# port 1 of every device.  Exit 77 without ucx_info.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ucx_lib.sh"
set -o pipefail
command -v ucx_info >/dev/null || skip "no ucx_info (Debian package ucx-utils)"
LIB=$SIB_LIB/libsoftib_view.so
[ -f "$LIB" ] || fail "no $LIB (build first)"
start_daemon
V=$SIB_TMP/view
mkdir -p "$V/dev/infiniband"
devs=()
while read -r dev uverbs; do
	ln -s /dev/null "$V/dev/infiniband/$uverbs"
	devs+=("$dev")
done < <(client "$SIB_BIN/ibv_devnames")
[ ${#devs[@]} -gt 0 ] || fail "ibv_devnames listed no device"
# The ASan runtime first when softib's libibverbs has it (SIB_PRELOAD).
timeout 60 env LD_PRELOAD="${SIB_PRELOAD:+$SIB_PRELOAD }$LIB" SOFTIB_VIEW="$V" \
	ucx_info -d >"$SIB_TMP/info.out" 2>&1 || { cat "$SIB_TMP/info.out"; fail "ucx_info -d failed"; }
awk '/^# +Transport:/ { tl = $3 } /^# +Device:/ { print tl, $3 }' "$SIB_TMP/info.out" >"$SIB_TMP/pairs"
for d in "${devs[@]}"; do
	for tl in rc_verbs ud_verbs; do
		grep -qx "$tl $d:1" "$SIB_TMP/pairs" || { cat "$SIB_TMP/info.out"; fail "ucx_info -d lists no $tl on $d:1"; }
	done
	echo "ok: $d:1 rc_verbs ud_verbs"
done
echo PASS
