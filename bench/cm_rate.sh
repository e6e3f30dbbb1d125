#!/bin/bash
# SPDX-License-Identifier: MIT
# rdma_cm connections per second beside TCP's, in one run (issue 16
# "Performance"; docs/rdmacm.md): bench/cm_rate (one process, a server and a
# client thread) makes N connections and tears them down, through softib's
# librdmacm.so.1 and softibd's rdma_cm and IB CM (REQ/REP/RTU, DREQ/DREP as
# MADs), then through TCP on the same address; RUNS rounds, interleaved.
# Usage: bench/cm_rate.sh [BUILD_DIR] [N] [RUNS]
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
n=${2:-500}
runs=${3:-3}
. "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d /tmp/softib-bench.XXXXXX)
export SOFTIB_SOCKET=$tmp/softib.sock SOFTIB_NO_AUTOSTART=1 LD_LIBRARY_PATH=$build/lib
"$build/bin/softibd" --foreground --socket "$SOFTIB_SOCKET" >"$tmp/softibd.log" 2>&1 &
dpid=$!
trap 'stop $dpid; rm -rf "$tmp"' EXIT
wait_for 10 test -S "$SOFTIB_SOCKET"
echo "# cm_rate: $n connections per round, $runs rounds; CPUs: $(nproc), load: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-8s %8s %10s %12s\n' kind conns seconds conns/s
for r in $(seq "$runs"); do
	for kind in rdma tcp; do
		port=$((20000 + RANDOM % 10000))
		"$build/bin/cm_rate" "$kind" 127.0.0.1 "$port" "$n" |
			awk '{ printf "%-8s %8d %10.3f %12d\n", $1, $2, $3, $4 }'
	done
done
