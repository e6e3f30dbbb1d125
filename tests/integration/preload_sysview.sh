#!/bin/bash
# SPDX-License-Identifier: MIT
# The interposer (libsoftib_view.so) over the live system view (src/sysview,
# kept by tests/integration/sysview_tree.c): what `softib run` does for an
# ordinary user, without root or a namespace.  Unmodified /usr/sbin/ibstatus
# prints the same as the copy pointed at the tree; ibstat through the
# system's own libibumad (rdma-core's, which reads /sys/class/infiniband)
# prints what ibstat through softib's libibumad prints; python3 finds the
# port's IPoIB interface under device/net as rdma-core's tests/base.py does;
# ucx_info -d lists rc_verbs and ud_verbs on every device; a port taken down
# and up with `softib port` shows through the interposer within a deadline.
# 77 without ibstatus (infiniband-diags).
. "$(dirname "$0")/lib.sh"
set -o pipefail
IBSTATUS=/usr/sbin/ibstatus
[ -r "$IBSTATUS" ] || exit 77
LIB=$SIB_LIB/libsoftib_view.so
[ -f "$LIB" ] && [ -x "$SIB_BIN/sysview_tree" ] || fail "no $LIB or sysview_tree (build first)"
start_daemon
ROOT=$(mktemp -d /dev/shm/preload_view.XXXXXX 2>/dev/null) || ROOT=$(mktemp -d "$SIB_TMP/root.XXXXXX")
trap 'rm -rf "$ROOT"; sib_cleanup' EXIT
LD_PRELOAD=$SIB_PRELOAD "$SIB_BIN/sysview_tree" "$ROOT" softib0:1:ib0 >"$SIB_TMP/tree.out" 2>"$SIB_TMP/tree.err" &
SIB_PIDS+=("$!")
wait_until 20 grep -q ready "$SIB_TMP/tree.out" || fail "sysview_tree did not start: $(cat "$SIB_TMP/tree.err")"

# view CMD...: CMD through the interposer (the ASan runtime first when
# softib's libraries have it), as `softib run` would start it.
view() { timeout 60 env LD_PRELOAD="${SIB_PRELOAD:+$SIB_PRELOAD }$LIB" SOFTIB_VIEW="$ROOT" "$@"; }

# ibstatus, unmodified, against the same script pointed at the tree.
sed "s|^infiniband_base=.*|infiniband_base=\"$ROOT/sys/class/infiniband\"|" "$IBSTATUS" >"$SIB_TMP/ibstatus"
same_ibstatus() {
	view sh "$IBSTATUS" >"$SIB_TMP/got" 2>&1 && sh "$SIB_TMP/ibstatus" >"$SIB_TMP/want" 2>&1 &&
		cmp -s "$SIB_TMP/want" "$SIB_TMP/got"
}
same_ibstatus || wait_until 10 same_ibstatus || fail "ibstatus through the interposer: $(diff "$SIB_TMP/want" "$SIB_TMP/got")"
n=$(grep -c '^Infiniband device' "$SIB_TMP/got")
[ "$n" -gt 0 ] || fail "ibstatus lists no port: $(cat "$SIB_TMP/got")"
echo "ok: unmodified ibstatus through the interposer, $n ports, as over the tree"

# A port down and up shows (the view is live, the interposer caches nothing).
state() { view cat /sys/class/infiniband/softib1/ports/1/state; }
"$SIB_BIN/softib" port softib1 1 down >/dev/null || fail "softib port down"
wait_until 10 sh -c "[ \"\$(LD_PRELOAD=$LIB SOFTIB_VIEW=$ROOT cat /sys/class/infiniband/softib1/ports/1/state)\" = '1: DOWN' ]" ||
	fail "port down not seen: $(state)"
"$SIB_BIN/softib" port softib1 1 up >/dev/null || fail "softib port up"
wait_until 10 sh -c "[ \"\$(LD_PRELOAD=$LIB SOFTIB_VIEW=$ROOT cat /sys/class/infiniband/softib1/ports/1/state)\" = '4: ACTIVE' ]" ||
	fail "port up not seen: $(state)"
echo "ok: softib1 port 1 down and up seen through the interposer"

# python3, as rdma-core's tests/base.py finds a device's interface.
if command -v python3 >/dev/null; then
	got=$(view python3 -c 'import os; print(os.listdir("/sys/class/infiniband/softib0/device/net/")[0])')
	[ "$got" = ib0 ] || fail "device/net through the interposer: [$got]"
	echo "ok: python3 device/net: ib0"
fi

# ibstat through the system's libibumad (no LD_LIBRARY_PATH) reads sysfs.
if command -v ibstat >/dev/null; then
	client ibstat >"$SIB_TMP/our_ibstat" 2>&1 || fail "ibstat: $(cat "$SIB_TMP/our_ibstat")"
	same_ibstat() {
		env -u LD_LIBRARY_PATH LD_PRELOAD="$LIB" SOFTIB_VIEW="$ROOT" timeout 30 ibstat >"$SIB_TMP/sys_ibstat" 2>&1 &&
			cmp -s "$SIB_TMP/our_ibstat" "$SIB_TMP/sys_ibstat"
	}
	same_ibstat || wait_until 10 same_ibstat ||
		fail "system ibstat through the interposer differs from softib's: $(diff "$SIB_TMP/our_ibstat" "$SIB_TMP/sys_ibstat")"
	echo "ok: system ibstat (rdma-core's libibumad) through the interposer: $(grep -c '^CA ' "$SIB_TMP/sys_ibstat") CAs, as softib's"
fi

# UCX finds every device's /dev/infiniband/uverbsN in the view.
if command -v ucx_info >/dev/null; then
	view ucx_info -d >"$SIB_TMP/info.out" 2>&1 || fail "ucx_info -d: $(cat "$SIB_TMP/info.out")"
	awk '/^# +Transport:/ { tl = $3 } /^# +Device:/ { print tl, $3 }' "$SIB_TMP/info.out" >"$SIB_TMP/pairs"
	for d in $(cd "$ROOT/sys/class/infiniband" && echo *); do
		for tl in rc_verbs ud_verbs; do
			grep -qx "$tl $d:1" "$SIB_TMP/pairs" || fail "ucx_info -d lists no $tl on $d:1: $(cat "$SIB_TMP/info.out")"
		done
	done
	echo "ok: ucx_info -d through the interposer over the view"
fi
echo PASS
