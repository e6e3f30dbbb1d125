# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# bench/lib.sh: process helpers the benchmark scripts share; sourced, not
# run.  The caller keeps the PIDs it started in the array `pids`.

# stop PID [SECONDS]: TERM, up to SECONDS (default 3), then KILL; reap it and
# drop it from `pids`.
stop() {
	local p=$1 q keep=()
	kill -TERM "$p" 2>/dev/null
	for _ in $(seq $((${2:-3} * 10))); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
	kill -KILL "$p" 2>/dev/null
	wait "$p" 2>/dev/null
	for q in "${pids[@]}"; do [ "$q" = "$p" ] || keep+=("$q"); done
	pids=("${keep[@]}")
}

# wait_for SECONDS COMMAND...: poll every 50 ms; 1 on timeout.
wait_for() {
	local n=$(($1 * 20)); shift
	for _ in $(seq "$n"); do "$@" && return 0; sleep 0.05; done
	return 1
}
