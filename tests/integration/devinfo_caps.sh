#!/bin/bash
# SPDX-License-Identifier: MIT
# Unmodified ibv_devinfo -v reports the device attributes of issue 6's
# features truthfully (rdma-core 44 names; ibv_devinfo prints max_srq_wr and
# max_srq_sge only when max_srq is set).  Usage: devinfo_caps.sh AREA...
# with AREA one of ud mcast srq xrc atomic mw; each must show its feature.
. "$(dirname "$0")/lib.sh"
[ $# -gt 0 ] || fail "usage: devinfo_caps.sh AREA..."
start_daemon
out=$(client timeout 20 ibv_devinfo -v -d softib1) || fail "ibv_devinfo exited $?"

# The value of "NAME: value" (the first line that has it).
field() {
	echo "$out" | awk -v f="$1:" '$1 == f { print $2; exit }'
}
positive() {
	local v
	for f in "$@"; do
		v=$(field "$f")
		[[ "$v" =~ ^[0-9]+$ ]] && [ "$v" -gt 0 ] || fail "$f is '$v', expected > 0"
	done
}
flag() {
	echo "$out" | grep -Eq "^[[:space:]]+$1\$" || fail "device_cap_flags lacks $1"
}

for area; do
	case $area in
	ud)
		positive max_ah
		# A real port's GID table (e.g. 128 entries, index 0 populated).
		[ "$(field gid_tbl_len)" -gt 1 ] || fail "gid_tbl_len is $(field gid_tbl_len)"
		echo "$out" | grep -Eq 'GID\[ *0\]:' || fail "GID 0 not listed" ;;
	mcast)
		positive max_mcast_grp max_mcast_qp_attach max_total_mcast_qp_attach
		[ "$(field max_total_mcast_qp_attach)" -ge "$(field max_mcast_qp_attach)" ] ||
			fail "max_total_mcast_qp_attach below max_mcast_qp_attach" ;;
	srq)
		positive max_srq max_srq_wr max_srq_sge ;;
	xrc)
		flag XRC ;;
	atomic)
		[ "$(field atomic_cap)" = ATOMIC_HCA ] || fail "atomic_cap is $(field atomic_cap)" ;;
	mw)
		positive max_mw
		flag MEM_WINDOW
		echo "$out" | grep -Eq '^[[:space:]]+MEM_WINDOW_TYPE_2[AB]$' ||
			fail "device_cap_flags lacks MEM_WINDOW_TYPE_2A/2B" ;;
	*)
		fail "unknown area $area" ;;
	esac
	echo "ok $area"
done
echo PASS
