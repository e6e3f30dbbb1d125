#!/bin/bash
# SPDX-License-Identifier: MIT
# An MPI ping-pong that checks every byte (mpi_pingpong.c, or the mpi4py
# program mpi_pingpong.py) under unmodified Open MPI `mpirun` over pml ucx
# on softib: rank 0 on softib0:1, rank 1 on softib1:1 (UCX_NET_DEVICES per
# rank), UCX_TLS allowing only the given verbs transports and pml ucx
# forced (its device check reads a driver link in sysfs that softib has
# not, so pml_ucx_devices/tls say "any").  Both ranks' UCX logs must show
# every endpoint lane on softib.  Runs under softib run (run_lib.sh): root, or SIB_RUN_MODE=user.
# With -n NP (mpi_allreduce.c), NP ranks, rank N on softib(N mod the
# number of devices):1; every rank's log must show its endpoints.
# Usage: ucx_mpi.sh [-n NP] TLS PROGRAM [ARGS...]   (PROGRAM "none": skip)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ucx_lib.sh"
set -o pipefail   # lib.sh sets -u; every failure is checked (fail)
np=2
if [ "${1:-}" = -n ]; then np=$2; shift 2; fi
[ $# -ge 2 ] || fail "usage: ucx_mpi.sh [-n NP] TLS PROGRAM [ARGS...]"
tls=$1; shift
[ "$1" != none ] || skip "the MPI program was not built (no MPI found by CMake: Debian libopenmpi-dev)"
command -v mpirun >/dev/null || skip "no mpirun (Debian package openmpi-bin)"
case $1 in
*python3)
	"$1" -c 'import importlib.util as u, sys; sys.exit(u.find_spec("mpi4py") is None)' ||
		skip "no mpi4py (Debian package python3-mpi4py)" ;;
esac
ucx_view_setup
# As root mpirun itself runs without the ASan runtime (VIEW_BARE), the
# ranks get it with -x; as a user (softib run's interposer) mpirun has it
# and the interposer after it, and the ranks inherit both.
xs=(-x UCX_TLS="$tls" -x UCX_LOG_LEVEL=info -x LD_LIBRARY_PATH)
if [ "$SIB_RUN_MODE" = root ]; then
	xs+=(-x SOFTIB_SOCKET -x SOFTIB_NO_AUTOSTART)
	[ -z "$SIB_PRELOAD" ] || xs+=(-x LD_PRELOAD="$SIB_PRELOAD" -x ASAN_OPTIONS)
	# Open MPI's session directory goes with the test's.
	export TMPDIR=$SIB_TMP
fi
ndev=$(run_client "$SIB_BIN/ibv_devnames" | wc -l)
apps=()
for ((i = 0; i < np; i++)); do
	[ "$i" = 0 ] || apps+=(:)
	apps+=(-np 1 "${xs[@]}" -x UCX_NET_DEVICES=softib$((i % ndev)):1 "$@")
done
rc=0
# Open MPI's own out-of-band channel stays on loopback too.
timeout 100 "${VIEW_BARE[@]}" mpirun --allow-run-as-root --oversubscribe --bind-to none \
	--mca oob_tcp_if_include lo \
	--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any --mca btl self \
	"${apps[@]}" >"$SIB_TMP/mpi.out" 2>&1 || rc=$?
grep -v ' UCX  INFO ' "$SIB_TMP/mpi.out"
[ "$rc" = 0 ] || { grep ' UCX  INFO ' "$SIB_TMP/mpi.out"; fail "mpirun exited $rc"; }
case ${1##*/} in
mpi_allreduce) total="^mpi_allreduce: $np ranks, [0-9]+ elements checked, 0 wrong\$" ;;
*) total='^mpi_pingpong: [0-9]+ bytes checked, 0 wrong messages, 0 wrong bytes$' ;;
esac
grep -Eq "$total" "$SIB_TMP/mpi.out" || fail "no clean total line"
check_lanes "$SIB_TMP/mpi.out" "$tls" 'softib[0-9]+:1'
# Every rank printed its endpoints (NP processes' UCX logs).
# A line starts "[time] [host:pid:thread]", the pid padded with blanks.
n=$(grep -E 'ep_cfg\[[0-9]+\]:' "$SIB_TMP/mpi.out" | grep -oE '^\[[0-9.]+\] +\[[^]]*\]' |
	sed 's/^\[[0-9.]*\] *//' | sort -u | wc -l)
[ "$n" -ge "$np" ] || fail "UCX endpoint configurations from $n process(es), not all $np ranks"
check_released
echo PASS
