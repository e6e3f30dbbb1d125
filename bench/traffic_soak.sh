#!/bin/bash
# SPDX-License-Identifier: MIT
# Soak of the randomized, model-checked traffic test (tests/traffic/,
# docs/testing.md): runs of build/bin/test_traffic over every transport, one
# seed after another (BASE, BASE+1, ...), for SECONDS without faults and then
# SECONDS with SOFTIB_FAULTS (1% loss, duplication, reordering and corruption
# on every link, or the faults given in SOFTIB_FAULTS).  Each run is
# replayable from the seed it prints; the first failing run stops the soak
# and prints its replay command.  Prints runs, WRs, completions, messages and
# bytes checked per half.
# Usage: bench/traffic_soak.sh [BUILD_DIR] [SECONDS] [BASE_SEED] [OPS]
#        (default: build 300 1 3000: ten minutes in all);
#        TRAFFIC_SOAK_ONLY=clean or faults runs one half.
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
seconds=${2:-300}
seed=${3:-1}
ops=${4:-3000}
faults=${SOFTIB_FAULTS:-seed=42,loss=0.01,dup=0.01,reorder=0.01,corrupt=0.01}
unset SOFTIB_FAULTS

# soak LABEL FAULTS: runs until $seconds have passed; sets $seed past the last.
soak() {
	local label=$1 f=$2 end=$((SECONDS + seconds)) runs=0 wrs=0 comps=0 msgs=0 bytes=0 out line
	while [ $SECONDS -lt "$end" ]; do
		if ! out=$(SOFTIB_FAULTS=$f timeout 600 "$build/bin/test_traffic" --seed "$seed" --ops "$ops" \
			--transport all 2>&1); then
			grep -m1 'FAIL' <<<"$out" || true
			echo "$out" | tail -40
			echo "traffic_soak: $label: run $((runs + 1)) (seed $seed) FAILED${f:+ under SOFTIB_FAULTS=$f}"
			exit 1
		fi
		line=$(grep '^traffic: OK' <<<"$out")
		wrs=$((wrs + $(sed -E 's/.*queues, ([0-9]+) WRs.*/\1/' <<<"$line")))
		comps=$((comps + $(sed -E 's/.* ([0-9]+) completions.*/\1/' <<<"$line")))
		msgs=$((msgs + $(sed -E 's/.* ([0-9]+) messages.*/\1/' <<<"$line")))
		bytes=$((bytes + $(sed -E 's/.* ([0-9]+) bytes checked.*/\1/' <<<"$line")))
		runs=$((runs + 1))
		seed=$((seed + 1))
	done
	printf '%-14s %4d runs (seeds up to %d), %9d WRs, %9d completions, %9d messages, %6.1f GB checked: 0 wrong\n' \
		"$label:" "$runs" $((seed - 1)) "$wrs" "$comps" "$msgs" "$(awk -v b="$bytes" 'BEGIN { print b / 1e9 }')"
}

echo "traffic_soak: $seconds s without faults, then $seconds s with SOFTIB_FAULTS=$faults; $ops WRs per endpoint per run"
case ${TRAFFIC_SOAK_ONLY:-} in
faults) soak "under faults" "$faults" ;;
clean) soak "no faults" "" ;;
*) soak "no faults" ""; soak "under faults" "$faults" ;;
esac
