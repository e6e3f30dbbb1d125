#!/bin/bash
# SPDX-License-Identifier: MIT
# UCX and Open MPI over softib beside what a user would pick instead on one
# machine, in one run (a benchmark, never a test; issue 17):
#   ucx_perftest tag_lat 8 B and tag_bw 1 MiB through `softib run` with
#   UCX_TLS=rc_verbs,ud_verbs (softib0 <-> softib1) beside UCX's own shared
#   memory (UCX_TLS=sm: posix/sysv + cma) and beside perftest through softib
#   (ib_send_lat -s 8, ib_send_bw -s 1048576);
#   an MPI ping-pong (bench/mpi_lat_bw.c: 8 B latency, 1 MiB bandwidth)
#   over pml ucx on softib beside Open MPI's shared-memory path (pml ob1,
#   btl vader).
# The variants run interleaved, RUNS times, medians printed, so that a
# change of the VM's CPU placement hits all alike; the cache-line round trip
# before and after says which placement the run had (README).
# Usage: bench/ucx_mpi.sh [BUILD] [RUNS]   (BUILD default build)
set -uo pipefail
b=$(cd "${1:-build}" && pwd)
runs=${2:-3}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
tmp=$(mktemp -d /tmp/softib-ucxmpi.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do stop "$p"; done
	rm -rf "$tmp"
}
trap cleanup EXIT
export SOFTIB_SOCKET=$tmp/softib.sock SOFTIB_NO_AUTOSTART=1 SOFTIB_MEMLOCK=0 TMPDIR=$tmp
"$b/bin/softibd" --foreground --socket "$SOFTIB_SOCKET" >"$tmp/softibd.log" 2>&1 &
pids+=($!)
wait_for 10 test -S "$SOFTIB_SOCKET" || { echo "softibd did not start"; exit 1; }
RUN=("$b/bin/softib" run --quiet --)
root=()
[ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
rtt() { "$b/bin/cacheline_rtt" 2>/dev/null | awk '/ns/ {print; exit}'; }
port() { echo $((20000 + RANDOM % 12000)); }
median() { sort -g | sed -n "$(((runs + 1) / 2))p"; }

# ucx TLS TEST SIZE COLUMN [SERVER_DEV CLIENT_DEV]: a figure of the Final line
ucx() {
	local p s
	p=$(port)
	env UCX_TLS="$1" ${5:+UCX_NET_DEVICES=$5} timeout 60 "${RUN[@]}" ucx_perftest -p "$p" >"$tmp/us.out" 2>&1 &
	s=$!
	sleep 0.5
	env UCX_TLS="$1" ${6:+UCX_NET_DEVICES=$6} timeout 60 "${RUN[@]}" ucx_perftest 127.0.0.1 -p "$p" \
		-t "$2" -s "$3" -n $(( $3 > 65536 ? 2000 : 20000 )) >"$tmp/uc.out" 2>&1
	wait "$s"
	awk -v c="$4" '/^Final:/ {v = $c} END {print (v == "" ? "fail" : v)}' "$tmp/uc.out"
}

# perftest TOOL SIZE COLUMN
perf() {
	local p s
	p=$(port)
	timeout 60 "${RUN[@]}" "$1" -d softib0 -s "$2" -n 5000 -p "$p" >"$tmp/ps.out" 2>&1 &
	s=$!
	sleep 0.5
	timeout 60 "${RUN[@]}" "$1" -d softib1 -s "$2" -n 5000 -p "$p" 127.0.0.1 >"$tmp/pc.out" 2>&1
	wait "$s"
	awk -v size="$2" -v c="$3" '$1 == size && $2 ~ /^[0-9]+$/ {v = $c} END {print (v == "" ? "fail" : v)}' "$tmp/pc.out"
}

# mpi PML_ARGS... -- SIZE: lat_us and bw_MBps of mpi_lat_bw
mpi() {
	local args=() size
	while [ "$1" != -- ]; do args+=("$1"); shift; done
	size=$2
	timeout 120 "${RUN[@]}" mpirun "${root[@]}" --oversubscribe --bind-to none -np 2 \
		--mca oob_tcp_if_include lo "${args[@]}" "$b/bin/mpi_lat_bw" "$size" \
		$(( size > 65536 ? 2000 : 20000 )) >"$tmp/mpi.out" 2>&1
	sed -n 's/.*lat_us=\([0-9.]*\) bw_MBps=\([0-9.]*\).*/\1 \2/p' "$tmp/mpi.out" | tail -1
}

echo "cache-line round trip before: $(rtt)"
declare -A r
for i in $(seq "$runs"); do
	r[ucx_lat_softib]+="$(ucx rc_verbs,ud_verbs tag_lat 8 3 softib0:1 softib1:1) "
	r[ucx_lat_sm]+="$(ucx sm tag_lat 8 3) "
	r[ucx_bw_softib]+="$(ucx rc_verbs,ud_verbs tag_bw 1048576 6 softib0:1 softib1:1) "
	r[ucx_bw_sm]+="$(ucx sm tag_bw 1048576 6) "
	r[perf_lat]+="$(perf ib_send_lat 8 5) "
	r[perf_bw]+="$(perf ib_send_bw 1048576 4) "
	set -- $(mpi --mca pml ucx -x UCX_TLS=rc_verbs,ud_verbs,self -- 8); r[mpi_lat_ucx]+="${1:-fail} "
	set -- $(mpi --mca pml ucx -x UCX_TLS=rc_verbs,ud_verbs,self -- 1048576); r[mpi_bw_ucx]+="${2:-fail} "
	set -- $(mpi --mca pml ob1 --mca btl vader,self -- 8); r[mpi_lat_sm]+="${1:-fail} "
	set -- $(mpi --mca pml ob1 --mca btl vader,self -- 1048576); r[mpi_bw_sm]+="${2:-fail} "
done
echo "cache-line round trip after: $(rtt)"
m() { echo "${r[$1]}" | tr ' ' '\n' | grep -v '^$' | median; }
cat <<T
| what | softib | instead (same machine) |
|---|---|---|
| ucx_perftest tag_lat 8 B, usec (typical) | $(m ucx_lat_softib) (rc_verbs) | $(m ucx_lat_sm) (UCX sm) |
| ucx_perftest tag_bw 1 MiB, MB/s | $(m ucx_bw_softib) (rc_verbs) | $(m ucx_bw_sm) (UCX sm) |
| perftest through softib: ib_send_lat 8 B usec (t_typical), ib_send_bw 1 MiB MB/s | $(m perf_lat), $(m perf_bw) | - |
| MPI ping-pong 8 B, usec one way | $(m mpi_lat_ucx) (pml ucx, rc_verbs) | $(m mpi_lat_sm) (ob1 vader) |
| MPI ping-pong 1 MiB, MB/s | $(m mpi_bw_ucx) (pml ucx, rc_verbs) | $(m mpi_bw_sm) (ob1 vader) |
T
echo "medians of $runs runs: $(for k in "${!r[@]}"; do printf '%s=[%s] ' "$k" "${r[$k]% }"; done)"
