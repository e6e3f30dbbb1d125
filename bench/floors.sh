#!/bin/bash
# SPDX-License-Identifier: MIT
# Issue 8's table in one run: softib against UCX shared memory and the
# machine's floors.  Every row through softib is unmodified perftest,
# softib0 (server) to softib1 (client), against a private softibd from
# BUILD_DIR; the same measures through UCX (`ucx_perftest`, Debian's
# ucx-utils, UCX_TLS=sm,self, server and client on loopback); the floors
# are bench/cacheline_rtt, bench/memcpy_bw and bench/spsc_ring (8-byte
# messages through a shared ring between two processes, unbatched, batched
# by 32 and with slot flags; and 64 KiB messages copied in and out of a
# 2 MiB shared ring; half a second each).  The cache-line round trip
# (where the host put the VM's CPUs: ~27 ns same core, ~66 ns fast, ~300 ns
# far; ../shared/research/limits.md) is printed before and after.
# Each figure is the median of RUNS runs; a run whose tool is missing,
# fails or times out makes its cell say why instead of a number.
# Latencies are perftest's t_typical and ucx_perftest's 50th percentile
# (both one-way for ping-pong tests; ib_read_lat is a full read);
# GB/s are 10^9 bytes/s (both tools print MiB/s; converted).
# Prints one Markdown table: figure | softib | UCX sm | goal.
# Usage: bench/floors.sh [BUILD_DIR]   (default build; -h, --help: this text)
#   FLOORS_RUNS=N   runs per figure (default 5)
#   FLOORS_TIMEOUT=S bound on every process (default 60 s)
set -uo pipefail
case ${1:-} in -h | --help) sed -n '3,/^set -uo/{/^set -uo/d; s/^# \{0,1\}//; p}' "$0"; exit 0 ;; esac
build=$(cd "${1:-build}" && pwd) || exit 1
runs=${FLOORS_RUNS:-5}
limit=${FLOORS_TIMEOUT:-60}
for f in "$build/bin/softibd" "$build/bin/cacheline_rtt" "$build/bin/memcpy_bw" "$build/bin/spsc_ring" \
	"$build/lib/libibverbs.so.1"; do
	[ -e "$f" ] || { echo "$0: $f missing: build softib first (cmake --build $build)" >&2; exit 1; }
done

tmp=$(mktemp -d /tmp/softib-floors.XXXXXX)
pids=()
. "$(dirname "$0")/lib.sh"
cleanup() {
	local p
	for p in "${pids[@]}"; do stop "$p"; done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

listening() { [ -n "$(ss -Htln "sport = :$1" 2>/dev/null)" ]; }
# free_port: a TCP port nobody listens on (the kernel's pick, else a random one ss says is free).
free_port() {
	local p
	p=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null)
	while [ -z "$p" ] || listening "$p"; do p=$((20000 + RANDOM % 30000)); done
	echo "$p"
}
# median: the middle of the numbers on stdin ("" when none).
median() {
	sort -g | awk '{v[NR] = $1} END {if (NR) print v[int((NR + 1) / 2)]}'
}

gone() { ! kill -0 "$1" 2>/dev/null; }
ready() { listening "$1" || gone "$2"; } # PORT PID: the server listens, or it has ended
# run_pair NAME PORT: start server_cmd (an array, with env_side before it) and
# wait until it listens on PORT, then run client_cmd; the client's output goes
# to $tmp/NAME.out, the server's to $tmp/NAME.srv. Status: the client's
# (124 on timeout), 200 when the server never listened (its output then in NAME.out).
run_pair() {
	local name=$1 port=$2 server rc
	env "${env_side[@]}" timeout "$limit" "${server_cmd[@]}" >"$tmp/$name.srv" 2>&1 &
	server=$!
	pids+=("$server")
	wait_for 10 ready "$port" "$server"
	if ! listening "$port"; then
		stop "$server"
		cp "$tmp/$name.srv" "$tmp/$name.out"
		return 200
	fi
	env "${env_side[@]}" timeout "$limit" "${client_cmd[@]}" >"$tmp/$name.out" 2>&1
	rc=$?
	wait_for 5 gone "$server" # the server ends by itself once the client is done
	stop "$server"
	return "$rc"
}

# why FILE RC TOOL: one short reason a run produced no number.
why() {
	local last
	last=$(grep -v '^\s*$' "$1" 2>/dev/null | grep -v -- '^-\{10,\}' | tail -n1 | tr -s ' \t|' ' ' | cut -c1-60)
	case $2 in
	124) echo "$3 timed out (${limit} s)" ;;
	127) echo "$3 not found" ;;
	200) echo "$3 server did not listen: ${last:-no output}" ;;
	*) echo "$3 failed (exit $2): ${last:-no output}" ;;
	esac
}

# ---- softib through perftest -------------------------------------------------
export SOFTIB_SOCKET=$tmp/softib.sock SOFTIB_NO_AUTOSTART=1
softibd_ok=1
"$build/bin/softibd" --foreground --socket "$SOFTIB_SOCKET" >"$tmp/softibd.log" 2>&1 &
pids+=($!)
wait_for 10 test -S "$SOFTIB_SOCKET" || softibd_ok=0

# perftest KIND TOOL SIZE ITERS EXTRA...: one run; prints the figure or
# "!reason". KIND lat: t_typical µs; mr: MsgRate in M msg/s; bw: BW average in GB/s.
perftest() {
	local kind=$1 tool=$2 size=$3 iters=$4 port rc; shift 4
	command -v "$tool" >/dev/null || { echo "!$tool not installed (perftest)"; return; }
	[ "$softibd_ok" = 1 ] || { echo "!softibd did not start: $(tail -n1 "$tmp/softibd.log")"; return; }
	port=$(free_port)
	env_side=(LD_LIBRARY_PATH="$build/lib")
	server_cmd=("$tool" -d softib0 -s "$size" -n "$iters" -p "$port" "$@")
	client_cmd=("$tool" -d softib1 -s "$size" -n "$iters" -p "$port" "$@" 127.0.0.1)
	run_pair perftest "$port"
	rc=$?
	awk -v kind="$kind" -v size="$size" -v rc="$rc" '
		/t_typical/ {hdr = "lat"} /MsgRate/ {hdr = "bw"}
		hdr != "" && $1 == size && $2 ~ /^[0-9]+$/ && NF >= 5 {
			if (kind == "lat" && hdr == "lat") v = $5
			if (kind == "mr" && hdr == "bw") v = $5
			if (kind == "bw" && hdr == "bw") v = $4 * 1048576 / 1e9
		}
		END { if (v != "" && rc == 0) print v; else exit 1 }' "$tmp/perftest.out" ||
		echo "!$(why "$tmp/perftest.out" "$rc" "$tool")"
}

# ---- UCX shared memory through ucx_perftest ------------------------------------
# ucx KIND TEST SIZE ITERS [ENV...]: one run; lat: 50th percentile µs; mr: M msg/s; bw: GB/s.
ucx() {
	local kind=$1 test=$2 size=$3 iters=$4 port rc; shift 4
	command -v ucx_perftest >/dev/null ||
		{ echo "!ucx_perftest not installed (apt-get install ucx-utils)"; return; }
	port=$(free_port)
	env_side=("UCX_TLS=sm,self" "$@")
	server_cmd=(ucx_perftest -t "$test" -s "$size" -n "$iters" -p "$port" -f -v)
	client_cmd=(ucx_perftest 127.0.0.1 -t "$test" -s "$size" -n "$iters" -p "$port" -f -v)
	run_pair ucx "$port"
	rc=$?
	awk -F, -v kind="$kind" -v rc="$rc" '
		$1 == "iterations" { for (i = 1; i <= NF; i++) col[$i] = i; next }
		("iterations" in col) && $1 ~ /^[0-9]+$/ {
			for (c in col) if (c ~ /_percentile_lat$/) lat = $col[c]
			mr = $col["overall_mr"] / 1e6
			bw = $col["overall_bw"] * 1048576 / 1e9
		}
		END {
			v = kind == "lat" ? lat : kind == "mr" ? mr : bw
			if (v != "" && rc == 0) print v; else exit 1
		}' "$tmp/ucx.out" || echo "!$(why "$tmp/ucx.out" "$rc" "ucx_perftest $test")"
}

# figure VAR FUNC ARGS...: VAR = the median of $runs runs of FUNC, or the
# last run's "!reason" when no run gave a number.  FUNC runs in this shell
# (no command substitution), so the EXIT trap knows every PID it starts.
figure() {
	local var=$1 r; shift
	: >"$tmp/runs"
	for _ in $(seq "$runs"); do "$@" >>"$tmp/runs"; done
	r=$(grep -v '^!' "$tmp/runs" | median)
	[ -n "$r" ] || r=$(tail -n1 "$tmp/runs")
	printf -v "$var" '%s' "$r"
	echo "  $*: $(paste -sd' ' "$tmp/runs")" >&2
}

# spsc ARGS...: one run of bench/spsc_ring for half a second; its figure
# (M msg/s or GB/s) or "!reason".
spsc() {
	local out rc
	out=$(timeout "$limit" "$build/bin/spsc_ring" -t 0.5 "$@" 2>&1)
	rc=$?
	awk -v rc="$rc" '$1 ~ /^[0-9.]+$/ && $2 ~ /^(M|GB\/s:)$/ {v = $1} END {if (v != "" && rc == 0) print v; else exit 1}' \
		<<<"$out" || echo "!spsc_ring $* failed (exit $rc): $(tail -n1 <<<"$out" | cut -c1-60)"
}

rtt() {
	"$build/bin/cacheline_rtt" 2>/dev/null | awk '$1 ~ /^[0-9.]+$/ {print $1}'
}
placement() { # NS -> the placement name (limits.md)
	awk -v v="$1" 'BEGIN { if (v == "") print "unknown"; else if (v < 45) print "same core";
		else if (v <= 150) print "fast"; else print "far" }'
}
# fmt VALUE DIGITS UNIT: the number with its unit, or the reason as is.
fmt() {
	case $1 in
	'!'*) echo "${1#!}" ;;
	'') echo "no result" ;;
	*) printf "%.${2}f %s" "$1" "$3" ;;
	esac
}
# verdict VALUE OP GOAL: "met" / "missed" ("" when either side is not a number).
verdict() {
	case "$1$3" in *'!'*) return ;; esac
	[ -n "$1" ] && [ -n "$3" ] || return
	awk -v v="$1" -v g="$3" -v op="$2" 'BEGIN { ok = op == "<=" ? v <= g : v >= g; print ok ? " (met)" : " (missed)" }'
}

before=$(rtt)
echo "placement probe before: cache-line round trip ${before:-?} ns ($(placement "$before"))"
echo "measuring ($runs runs per figure, median; $(nproc) CPUs; $(date -u '+%Y-%m-%d %H:%M UTC'))..." >&2

s_send_lat='' s_write_lat='' s_read_lat='' s_mr8='' s_bw64k='' s_bw1m='' s_read64k='' s_send64k=''
u_tag_lat='' u_put_lat='' u_tag_mr='' u_put_mr='' u_tag64k='' u_put64k='' u_heap64k='' u_tag1m='' u_put1m='' u_heap1m=''
figure s_send_lat perftest lat ib_send_lat 2 10000
figure s_write_lat perftest lat ib_write_lat 2 10000
figure s_read_lat perftest lat ib_read_lat 2 10000
figure s_mr8 perftest mr ib_write_bw 8 100000
figure s_bw64k perftest bw ib_write_bw 65536 10000
figure s_bw1m perftest bw ib_write_bw 1048576 1000
figure s_read64k perftest bw ib_read_bw 65536 10000
figure s_send64k perftest bw ib_send_bw 65536 10000

figure u_tag_lat ucx lat tag_lat 8 100000
figure u_put_lat ucx lat ucp_put_lat 8 100000
figure u_tag_mr ucx mr tag_bw 8 1000000
figure u_put_mr ucx mr ucp_put_bw 8 1000000
figure u_tag64k ucx bw tag_bw 65536 20000
figure u_put64k ucx bw ucp_put_bw 65536 20000
figure u_heap64k ucx bw ucp_put_bw 65536 20000 UCX_ALLOC_PRIO=heap
figure u_tag1m ucx bw tag_bw 1048576 2000
figure u_put1m ucx bw ucp_put_bw 1048576 2000
figure u_heap1m ucx bw ucp_put_bw 1048576 2000 UCX_ALLOC_PRIO=heap

f_copy=$("$build/bin/memcpy_bw" 65536 1 2>/dev/null | awk '/Mbit\/sec/ {print $(NF-1) / 8000}')
f_ring1='' f_ring32='' f_ringf='' f_ring2c=''
figure f_ring1 spsc msgs
figure f_ring32 spsc -b 32 msgs
figure f_ringf spsc flags
figure f_ring2c spsc copy
after=$(rtt)

echo
echo "| figure | softib | UCX sm | goal |"
echo "|---|---|---|---|"
echo "| \`ib_send_lat -s 2\`, typical one-way | $(fmt "$s_send_lat" 2 µs) | tag_lat 8 B $(fmt "$u_tag_lat" 3 µs) | <= UCX tag_lat$(verdict "$s_send_lat" "<=" "$u_tag_lat") |"
echo "| \`ib_write_lat -s 2\` | $(fmt "$s_write_lat" 2 µs) | ucp_put_lat 8 B $(fmt "$u_put_lat" 3 µs) | <= 0.3 µs$(verdict "$s_write_lat" "<=" 0.3) |"
echo "| \`ib_read_lat -s 2\` | $(fmt "$s_read_lat" 2 µs) | - | <= 0.5 µs$(verdict "$s_read_lat" "<=" 0.5) |"
echo "| \`ib_write_bw -s 8\`, msg/s | $(fmt "$s_mr8" 2 M) | tag_bw $(fmt "$u_tag_mr" 1 M); ucp_put_bw $(fmt "$u_put_mr" 1 M) | >= UCX ucp_put_bw$(verdict "$s_mr8" ">=" "$u_put_mr") |"
echo "| \`ib_write_bw -s 65536\` | $(fmt "$s_bw64k" 1 GB/s) | tag_bw $(fmt "$u_tag64k" 1 GB/s); ucp_put_bw $(fmt "$u_put64k" 1 GB/s) (its own shm buffers), $(fmt "$u_heap64k" 1 GB/s) on heap memory | >= 30 GB/s$(verdict "$s_bw64k" ">=" 30) |"
echo "| \`ib_write_bw -s 1048576\` | $(fmt "$s_bw1m" 1 GB/s) | tag_bw $(fmt "$u_tag1m" 1 GB/s); ucp_put_bw $(fmt "$u_put1m" 1 GB/s) (shm), $(fmt "$u_heap1m" 1 GB/s) on heap | >= 30 GB/s$(verdict "$s_bw1m" ">=" 30) |"
echo "| \`ib_read_bw -s 65536\` | $(fmt "$s_read64k" 1 GB/s) | - | >= 30 GB/s$(verdict "$s_read64k" ">=" 30) |"
echo "| \`ib_send_bw -s 65536\` | $(fmt "$s_send64k" 1 GB/s) | - | >= 30 GB/s$(verdict "$s_send64k" ">=" 30) |"
echo "| floor: cache-line round trip, two threads (before / after) | ${before:-?} / ${after:-?} ns | - | the machine |"
echo "| floor: memcpy 64 KiB, one thread, hot | $(fmt "$f_copy" 1 GB/s) | - | the machine |"
echo "| floor: SPSC shared ring, 8-byte messages, two processes: unbatched / batch 32 / slot flags | $(fmt "$f_ring1" 0 M) / $(fmt "$f_ring32" 0 M) / $(fmt "$f_ringf" 0 M) msg/s | - | the machine |"
echo "| floor: two copies through a 2 MiB shared ring (memcpy in, memcpy out), 64 KiB messages | $(fmt "$f_ring2c" 1 GB/s) | - | the machine |"
echo
echo "placement probe after: cache-line round trip ${after:-?} ns ($(placement "$after"))"
