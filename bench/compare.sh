#!/bin/bash
# SPDX-License-Identifier: MIT
# Two builds of softib side by side in one run: unmodified ibv_rc_pingpong at
# 64 B and 64 KiB (path MTU 4096, softib0 <-> softib1), and perftest's
# ib_send_lat -s 2 (t_typical, usec) and ib_write_bw -s 8 (MsgRate, Mpps)
# when perftest is installed, through build A and
# build B, their runs interleaved (A, B, A, B, ...) so that a change of the
# VM's CPU placement hits both alike.  The cache-line round trip is printed
# before and after: it says which placement the run had (docs: README).
# Each build runs its own softibd on a private socket.
# Usage: bench/compare.sh OLD_BUILD NEW_BUILD [ITERS] [RUNS]
#   e.g. git worktree add /tmp/old <commit> && cmake -S /tmp/old -B /tmp/old/build
#        && cmake --build /tmp/old/build && bench/compare.sh /tmp/old/build build
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 OLD_BUILD NEW_BUILD [ITERS] [RUNS]" >&2; exit 2; }
builds=("$(cd "$1" && pwd)" "$(cd "$2" && pwd)")
iters=${3:-20000}
runs=${4:-5}
tmp=$(mktemp -d /tmp/softib-compare.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

for i in 0 1; do
	"${builds[$i]}/bin/softibd" --foreground --socket "$tmp/s$i.sock" >"$tmp/softibd$i.log" 2>&1 &
	pids+=($!)
done
for _ in $(seq 100); do [ -S "$tmp/s0.sock" ] && [ -S "$tmp/s1.sock" ] && break; sleep 0.05; done

pingpong() { # BUILD_INDEX SIZE -> "usec/iter"
	local b=${builds[$1]} port=$((20000 + RANDOM % 12000)) server
	SOFTIB_SOCKET=$tmp/s$1.sock SOFTIB_NO_AUTOSTART=1 LD_LIBRARY_PATH=$b/lib \
		timeout 120 ibv_rc_pingpong -d softib0 -s "$2" -m 4096 -n "$iters" -p "$port" \
		>"$tmp/server.out" 2>&1 &
	server=$!
	sleep 0.3
	SOFTIB_SOCKET=$tmp/s$1.sock SOFTIB_NO_AUTOSTART=1 LD_LIBRARY_PATH=$b/lib \
		timeout 120 ibv_rc_pingpong -d softib1 -s "$2" -m 4096 -n "$iters" -p "$port" 127.0.0.1 \
		>"$tmp/client.out" 2>&1 || true
	wait "$server" || true
	awk '/usec\/iter/ {us=$(NF-1)} END {print (us == "" ? "fail" : us)}' "$tmp/client.out"
}

median() { sort -g | sed -n "$(((runs + 1) / 2))p"; }

perftest() { # BUILD_INDEX TOOL SIZE ITERS COLUMN -> the figure in that column of the size's row
	local b=${builds[$1]} port=$((20000 + RANDOM % 12000)) server
	SOFTIB_SOCKET=$tmp/s$1.sock SOFTIB_NO_AUTOSTART=1 LD_LIBRARY_PATH=$b/lib \
		timeout 120 "$2" -d softib0 -s "$3" -n "$4" -p "$port" >"$tmp/pserver.out" 2>&1 &
	server=$!
	sleep 0.3
	SOFTIB_SOCKET=$tmp/s$1.sock SOFTIB_NO_AUTOSTART=1 LD_LIBRARY_PATH=$b/lib \
		timeout 120 "$2" -d softib1 -s "$3" -n "$4" -p "$port" 127.0.0.1 >"$tmp/pclient.out" 2>&1 || true
	wait "$server" || true
	awk -v size="$3" -v col="$5" '$1 == size && $2 ~ /^[0-9]+$/ && NF >= col {v = $col}
		END {print (v == "" ? "fail" : v)}' "$tmp/pclient.out"
}

rtt() { "${builds[1]}/bin/cacheline_rtt" | awk '{print $1}'; }
echo "placement probe before: cache-line round trip $(rtt) ns"
for size in 64 65536; do
	: >"$tmp/a"; : >"$tmp/b"
	for _ in $(seq "$runs"); do
		pingpong 0 "$size" >>"$tmp/a"
		pingpong 1 "$size" >>"$tmp/b"
	done
	printf 'ibv_rc_pingpong -s %-6s usec/iter  old %-8s new %-8s  (old runs: %s; new runs: %s)\n' \
		"$size" "$(median <"$tmp/a")" "$(median <"$tmp/b")" \
		"$(paste -sd' ' "$tmp/a")" "$(paste -sd' ' "$tmp/b")"
done
if command -v ib_send_lat >/dev/null && command -v ib_write_bw >/dev/null; then
	for fig in "ib_send_lat 2 10000 5 t_typical-usec" "ib_write_bw 8 100000 5 MsgRate-Mpps"; do
		read -r tool size n col what <<<"$fig"
		: >"$tmp/a"; : >"$tmp/b"
		for _ in $(seq "$runs"); do
			perftest 0 "$tool" "$size" "$n" "$col" >>"$tmp/a"
			perftest 1 "$tool" "$size" "$n" "$col" >>"$tmp/b"
		done
		printf '%s -s %-6s %s  old %-8s new %-8s  (old runs: %s; new runs: %s)\n' "$tool" "$size" \
			"$what" "$(median <"$tmp/a")" "$(median <"$tmp/b")" \
			"$(paste -sd' ' "$tmp/a")" "$(paste -sd' ' "$tmp/b")"
	done
fi
echo "placement probe after: cache-line round trip $(rtt) ns"
