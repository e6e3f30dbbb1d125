#!/bin/bash
# SPDX-License-Identifier: MIT
# Soak of RC under link faults: tests/unit/test_faults.c with many more
# messages (3000-byte SENDs, 3 packets each at MTU 1024, every byte checked
# exactly once and in order, then a 1 MiB RDMA WRITE), under 1% loss, 1%
# duplication, 1% reordering and 1% corruption with a fixed seed, or the
# faults given in SOFTIB_FAULTS.  Prints the counters and the goodput.
# Usage: bench/faults_soak.sh [BUILD_DIR] [MESSAGES]   (default: build 100000)
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
messages=${2:-100000}
export SOFTIB_FAULTS=${SOFTIB_FAULTS:-seed=42,loss=0.01,dup=0.01,reorder=0.01,corrupt=0.01}
start=$(date +%s.%N)
out=$("$build/bin/test_faults" "$messages" 2>&1) || { echo "$out"; exit 1; }
end=$(date +%s.%N)
line=$(grep '^messages=' <<<"$out")
echo "faults: $SOFTIB_FAULTS"
echo "$line"
awk -v s="$start" -v e="$end" -v m="$messages" 'BEGIN {
	t = e - s; printf "%.1f s, %.0f messages/s, %.1f Mbit/s of checked payload\n", t, m / t, m * 3000 * 8 / t / 1e6 }'
