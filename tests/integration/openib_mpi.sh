#!/bin/bash
# SPDX-License-Identifier: MIT
# An MPI program that checks its data (mpi_pingpong.c, mpi_allreduce.c)
# under unmodified Open MPI 4.1 `mpirun` over pml ob1 and btl openib on
# softib (issue 17): the UDCM connection manager (UD QPs), SRQs (the
# default receive queues) or per-peer QPs (-q), eager RDMA and RDMA
# put/get.  Rank N uses softib(N mod the number of devices) port 1 only
# (btl_openib_if_include per app context).  btl openib needs a non-empty
# /sys/class/infiniband (opal_common_verbs_check_basics): mpirun runs
# under `softib run` (run_lib.sh), as root or, with SIB_RUN_MODE=user, as
# a fresh uid with no namespaces (the interposer).  (Without softib run,
# SYSFS_PATH naming a tree with class/infiniband/<dev> also does: softib's
# ibv_get_sysfs_path honours it as rdma-core's does.)  Proof that softib
# carried it: each used port's PortXmitPkts (perfquery, through softib's
# libibumad) grew, or without perfquery softibd's count of pair rings made.
# Usage: openib_mpi.sh [-n NP] [-q RECEIVE_QUEUES] [-m NAME=VALUE]... PROGRAM [ARGS...]
#   -m: one more MCA parameter (e.g. mpi_leave_pinned=0: the RDMA pipeline
#   protocol, which registers and deregisters each fragment)
#   (PROGRAM "none": skip)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ucx_lib.sh"
set -o pipefail   # lib.sh sets -u; every failure is checked (fail)
np=2 rq= more=()
while [ $# -gt 0 ]; do
	case $1 in
	-n) np=$2; shift 2 ;;
	-q) rq=$2; shift 2 ;;
	-m) more+=(--mca "${2%%=*}" "${2#*=}"); shift 2 ;;
	*) break ;;
	esac
done
[ $# -ge 1 ] || fail "usage: openib_mpi.sh [-n NP] [-q RECEIVE_QUEUES] [-m NAME=VALUE]... PROGRAM [ARGS...]"
[ "$1" != none ] || skip "the MPI program was not built (no MPI found by CMake: Debian libopenmpi-dev)"
command -v mpirun >/dev/null || skip "no mpirun (Debian package openmpi-bin)"
client ompi_info --param btl openib 2>/dev/null | grep -q 'MCA btl: openib' ||
	skip "this Open MPI has no btl openib (gone in Open MPI 5)"
ucx_view_setup
mapfile -t devs < <(run_client "$SIB_BIN/ibv_devnames" | cut -d' ' -f1)
[ ${#devs[@]} -gt 0 ] || fail "ibv_devnames listed no device"

# xmit_pkts DEV: the port's PortXmitPkts, or softibd's pair rings made.
xmit_pkts() {
	# perfquery needs umad's privilege, as on a host (/dev/infiniband/umadN is root's)
	if command -v perfquery >/dev/null && [ "$SIB_RUN_MODE" = root ]; then
		run_client timeout 10 perfquery -C "$1" -P 1 | sed -n 's/^PortXmitPkts:\.*//p'
	else
		run_admin status | sed -n 's/^pairs made=\([0-9]*\) .*/\1/p'
	fi
}
declare -A before
for ((i = 0; i < np; i++)); do
	d=${devs[$((i % ${#devs[@]}))]}
	before[$d]=$(xmit_pkts "$d") || fail "perfquery -C $d failed"
done

# /sys/class/infiniband comes from softib run's view (btl openib wants it
# non-empty); btl_openib_allow_ib is softib run's default, set here too
xs=(-x LD_LIBRARY_PATH -x SOFTIB_MEMLOCK)
[ "$SIB_RUN_MODE" = root ] && xs+=(-x SOFTIB_SOCKET -x SOFTIB_NO_AUTOSTART)
mca=()
if [ -n "$SIB_PRELOAD" ]; then
	[ "$SIB_RUN_MODE" = root ] && xs+=(-x LD_PRELOAD="$SIB_PRELOAD" -x ASAN_OPTIONS)
	# Under ASan every rank died at exit, after its data was checked, with
	# a SEGV in mca_btl_openib.so's deregistration function once that
	# component was unloaded (Open MPI's registration cache calling it from
	# its memory hooks; SOFTIB_DIRECT=0 changed nothing): without Open MPI's
	# memory patcher it does not happen (nor with mpi_leave_pinned 0).
	mca+=(--mca memory ^patcher)
fi
apps=()
for ((i = 0; i < np; i++)); do
	[ "$i" = 0 ] || apps+=(:)
	apps+=(-np 1 "${xs[@]}" -x OMPI_MCA_btl_openib_if_include="${devs[$((i % ${#devs[@]}))]}:1" "$@")
done
opts=(--mca pml ob1 --mca btl openib,self --mca btl_openib_allow_ib 1
	--mca btl_openib_warn_no_device_params_found 0 --mca btl_openib_warn_default_gid_prefix 0)
[ -z "$rq" ] || opts+=(--mca btl_openib_receive_queues "$rq")
opts+=("${mca[@]}" "${more[@]}")
# Open MPI's session directory goes with the test's.
[ "$SIB_RUN_MODE" = root ] && export TMPDIR=$SIB_TMP
root=()
[ "$(id -u)" != 0 ] || root=(--allow-run-as-root)
rc=0
# Open MPI's own out-of-band channel stays on loopback.
timeout 100 "${VIEW_BARE[@]}" mpirun "${root[@]}" --oversubscribe --bind-to none --mca oob_tcp_if_include lo \
	"${opts[@]}" "${apps[@]}" >"$SIB_TMP/mpi.out" 2>&1 || rc=$?
cat "$SIB_TMP/mpi.out"
[ "$rc" = 0 ] || fail "mpirun exited $rc"
case ${1##*/} in
mpi_allreduce) total="^mpi_allreduce: $np ranks, [0-9]+ elements checked, 0 wrong\$" ;;
*) total='^mpi_pingpong: [0-9]+ bytes checked, 0 wrong messages, 0 wrong bytes$' ;;
esac
grep -Eq "$total" "$SIB_TMP/mpi.out" || fail "no clean total line"
for d in "${!before[@]}"; do
	after=$(xmit_pkts "$d")
	echo "$d: PortXmitPkts (or pairs made) ${before[$d]} -> $after"
	[ "$after" -gt "${before[$d]}" ] || fail "$d carried nothing"
done
check_released
echo PASS
