#!/bin/bash
# SPDX-License-Identifier: MIT
# softib against the machine: unmodified ibv_rc_pingpong through softib at
# 64 B and 64 KiB (path MTU 4096, server on softib0, client on softib1, one
# host), perftest's ib_send_lat over RC and UD and ib_atomic_lat (FETCH_AND_ADD)
# (when perftest is installed), single-thread memcpy bandwidth at 64 KiB,
# and the cache-line round trip between two threads (how far apart the
# host put the CPUs), side by side.
# Each ping-pong runs RUNS times (default 3) and the median run is shown:
# on a small shared VM single runs vary with the host's scheduling.
# Usage: bench/pingpong.sh [BUILD_DIR] [ITERS] [RUNS]
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
iters=${2:-20000}
runs=${3:-3}
tmp=$(mktemp -d /tmp/softib-bench.XXXXXX)
export SOFTIB_SOCKET=$tmp/softib.sock SOFTIB_NO_AUTOSTART=1
export LD_LIBRARY_PATH=$build/lib
"$build/bin/softibd" --foreground --socket "$SOFTIB_SOCKET" >"$tmp/softibd.log" 2>&1 &
daemon=$!
trap 'kill $daemon 2>/dev/null; wait $daemon 2>/dev/null; rm -rf "$tmp"' EXIT
for _ in $(seq 100); do [ -S "$SOFTIB_SOCKET" ] && break; sleep 0.05; done

pingpong() { # SIZE -> "Mbit/s usec/iter"
	local port=$((20000 + RANDOM % 40000))
	ibv_rc_pingpong -d softib0 -s "$1" -m 4096 -n "$iters" -p "$port" >"$tmp/server.out" 2>&1 &
	local server=$!
	sleep 0.3
	ibv_rc_pingpong -d softib1 -s "$1" -m 4096 -n "$iters" -p "$port" 127.0.0.1 >"$tmp/client.out"
	wait "$server"
	awk '/Mbit\/sec/ {mb=$(NF-1)} /usec\/iter/ {us=$(NF-1)} END {print mb, us}' "$tmp/client.out"
}

perftest_lat() { # TOOL ARGS... -> "- t_typical" (usec), "- -" without perftest
	command -v "$1" >/dev/null || { echo "- -"; return; }
	local port=$((20000 + RANDOM % 40000))
	"$@" -d softib0 -n "$iters" -p "$port" >"$tmp/server.out" 2>&1 &
	local server=$!
	sleep 0.3
	"$@" -d softib1 -n "$iters" -p "$port" 127.0.0.1 >"$tmp/client.out"
	wait "$server"
	awk '/^ *[0-9]+ +[0-9]+ / {t=$5} END {print "-", t}' "$tmp/client.out"
}

median() { # SIZE -> the median (by usec/iter) of $runs runs
	for _ in $(seq "$runs"); do pingpong "$1"; done | tee -a "$tmp/runs" | sort -k2 -g | sed -n "$(((runs + 1) / 2))p"
}

read -r small_mb small_us < <(median 64)
read -r big_mb big_us < <(median 65536)
read -r _ rc_us < <(for _ in $(seq "$runs"); do perftest_lat ib_send_lat; done |
	sort -k2 -g | sed -n "$(((runs + 1) / 2))p")
read -r _ ud_us < <(for _ in $(seq "$runs"); do perftest_lat ib_send_lat -c UD; done |
	sort -k2 -g | sed -n "$(((runs + 1) / 2))p")
read -r _ atomic_us < <(for _ in $(seq "$runs"); do perftest_lat ib_atomic_lat; done |
	sort -k2 -g | sed -n "$(((runs + 1) / 2))p")
copy_mb=$("$build/bin/memcpy_bw" 65536 1 | awk '{print $(NF-1)}')
rtt_ns=$("$build/bin/cacheline_rtt" | awk '{print $1}')

printf '%-44s %14s %12s\n' "what ($(nproc) cores, $iters iterations, median of $runs)" "Mbit/s" "usec/iter"
printf '%-44s %14s %12s\n' "ibv_rc_pingpong -s 64 (softib0 <-> softib1)" "$small_mb" "$small_us"
printf '%-44s %14s %12s\n' "ibv_rc_pingpong -s 65536" "$big_mb" "$big_us"
printf '%-44s %14s %12s\n' "ib_send_lat RC, 2 B (t_typical, one way)" "-" "$rc_us"
printf '%-44s %14s %12s\n' "ib_send_lat -c UD, 2 B (t_typical, one way)" "-" "$ud_us"
printf '%-44s %14s %12s\n' "ib_atomic_lat FETCH_AND_ADD (t_typical)" "-" "$atomic_us"
printf '%-44s %14s %12s\n' "memcpy 64 KiB, one thread" "$copy_mb" "-"
printf '%-44s %14s %12s\n' "cache-line round trip, two threads (ns)" "-" "$rtt_ns"
[ -z "${BENCH_VERBOSE:-}" ] || { echo "every run (Mbit/s usec/iter):"; cat "$tmp/runs"; }
