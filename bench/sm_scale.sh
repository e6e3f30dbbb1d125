#!/bin/bash
# SPDX-License-Identifier: MIT
# Subnet manager scale: unmodified `opensm -o` (one heavy sweep, then exit)
# brings a generated fabric to SUBNET UP through ibsim (Debian ibsim-utils
# + libumad2sim0, the SM attached at the file's first node) and through
# softib (softibd --sm external + our libibumad.so.3), on the same file in
# one run, then ibnetdiscover walks it; printed side by side with the
# cache-line round trip (where the host put the VM's CPUs) before and after.
# Columns: opensm -o wall time, its log's first line to SUBNET UP,
# ibnetdiscover's wall time and node count, and the CPU seconds the fabric
# process (ibsim or softibd) and OpenSM spent during the sweep.
# Usage: bench/sm_scale.sh [BUILD_DIR] [FABRIC...]
#   FABRIC is gen_fabric.py's arguments in one word, e.g. "fattree 8 4 16 36";
#   default: the issue's two sizes, "fattree 180 20 8 36" (200 switches,
#   1,440 CAs) and "fattree 400 50 25 36" (450 switches, 10,000 CAs).
# SM_SCALE_RUNS=N repeats each measurement N times (default 1) and shows the
# median; SM_SCALE_TIMEOUT bounds every step (default 600 s).
# A side that cannot run (not built, fabric too big, no SUBNET UP) prints why.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-build}" && pwd) || exit 1
[ $# -gt 0 ] && shift
if [ $# -gt 0 ]; then fabrics=("$@"); else fabrics=("fattree 180 20 8 36" "fattree 400 50 25 36"); fi
runs=${SM_SCALE_RUNS:-1}
limit=${SM_SCALE_TIMEOUT:-600}
umad2sim=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so

tmp=$(mktemp -d /tmp/softib-smscale.XXXXXX)
pids=()
. "$here/lib.sh"
# tree PID: PID and its descendants (found by parent PID), deepest first.
tree() {
	local c
	for c in $(pgrep -P "$1"); do tree "$c"; done
	echo "$1"
}
# killtree PID: TERM to the whole tree, KILL to what is left after 3 s.
killtree() {
	local all p
	all=$(tree "$1")
	for p in $all; do kill -TERM "$p" 2>/dev/null; done
	for _ in $(seq 30); do
		for p in $all; do kill -0 "$p" 2>/dev/null && break; done || break
		sleep 0.1
	done
	for p in $all; do kill -KILL "$p" 2>/dev/null; done
}
cleanup() {
	local p
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do
		for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	pids=()
}
trap 'cleanup; rm -rf "$tmp"' EXIT
# A measurement runs in a background subshell (its fabric, OpenSM and
# ibnetdiscover are its children): on a signal, stop that whole tree.
measuring=
trap '[ -z "$measuring" ] || killtree "$measuring"; exit 130' INT TERM

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

# CPU seconds (user + system) PID has used so far, from /proc.
cpu_of() {
	awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%.2f", ($12 + $13) / hz }' \
		"/proc/$1/stat" 2>/dev/null || echo 0
}

# Seconds from the first line of an OpenSM log to its first SUBNET UP
# (timestamps "Mon DD HH:MM:SS USEC"), or "-" when it never came up.
log_to_up() {
	awk '
	function t(  h) { split($3, h, ":"); return h[1] * 3600 + h[2] * 60 + h[3] + $4 / 1e6 }
	NR == 1 { t0 = t() }
	/SUBNET UP/ { d = t() - t0; if (d < 0) d += 86400; printf "%.3f", d; up = 1; exit }
	END { if (!up) printf "-" }' "$1"
}

# Node count of an ibnetdiscover print-out.
disc_nodes() { grep -Ec '^(Switch|Ca|Hca)[[:space:]]' "$1" 2>/dev/null || echo 0; }

probe() { [ -x "$build/bin/cacheline_rtt" ] && "$build/bin/cacheline_rtt" 200000 | awk '{print $1}' || echo -; }

# run_side SIDE FILE GUID -> "opensm_wall log_to_up disc_wall disc_nodes fabric_cpu"
# or "! reason".  The fabric (ibsim or softibd) is started fresh for every run.
run_side() {
	local side=$1 file=$2 guid=$3 dir fab t0 t1 t2 c0 c1 rc up
	dir=$(mktemp -d "$tmp/$side.XXXX")
	mkdir -p "$dir/cache" "$dir/tmp"
	local env=(OSM_CACHE_DIR="$dir/cache" OSM_TMP_DIR="$dir/tmp")
	if [ "$side" = ibsim ]; then
		# ibsim's tables are sized by -N/-S/-P (defaults: 2048 nodes,
		# 256 switches, 13312 ports); its socket names must be unique.
		local sizes
		sizes=$(awk '$1 == "Switch" { s++ } $1 ~ /^(Switch|Ca|Hca)$/ { n++; p += $2 + 1 }
			END { printf "-N %d -S %d -P %d", n + 16, s + 16, p + 64 }' "$file")
		export IBSIM_SOCKNAME=smscale$$
		# shellcheck disable=SC2086
		(cd "$dir" && exec ibsim -s -n $sizes "$file") >"$dir/fabric.log" 2>&1 &
		fab=$!
		pids+=("$fab")
		wait_for "$limit" grep -q "simulator ready" "$dir/fabric.log" ||
			{ stop "$fab" 5; echo "! ibsim did not start: $(grep -v 'cannot parse' "$dir/fabric.log" | tail -1)"; return; }
		env+=(LD_PRELOAD="$umad2sim")
	else
		SOFTIB_SOCKET=$dir/softib.sock SOFTIB_NO_AUTOSTART=1 \
			"$build/bin/softibd" --foreground --socket "$dir/softib.sock" --sm external \
			--topology "$file" >"$dir/fabric.log" 2>&1 &
		fab=$!
		pids+=("$fab")
		wait_for "$limit" test -S "$dir/softib.sock" ||
			{ stop "$fab" 5; echo "! softibd did not start: $(tail -1 "$dir/fabric.log")"; return; }
		env+=(SOFTIB_SOCKET="$dir/softib.sock" SOFTIB_NO_AUTOSTART=1
			LD_LIBRARY_PATH="$umad_dir:$build/lib")
	fi
	c0=$(cpu_of "$fab")
	t0=$(now)
	(cd "$dir" && env "${env[@]}" /usr/bin/time -f '%U %S' -o "$dir/osm.time" \
		timeout "$limit" opensm -o -e -g "$guid" -f "$dir/osm.log") >"$dir/osm.out" 2>&1
	rc=$?
	t1=$(now)
	c1=$(cpu_of "$fab")
	up=$(log_to_up "$dir/osm.log" 2>/dev/null || echo -)
	if [ "$up" = - ]; then
		stop "$fab" 5
		echo "! opensm -o: no SUBNET UP (rc $rc): $(grep -m1 -E 'ERR|No local' "$dir/osm.log" "$dir/osm.out" 2>/dev/null | cut -c1-100)"
		return
	fi
	(cd "$dir" && env "${env[@]}" timeout "$limit" ibnetdiscover) >"$dir/disc.out" 2>"$dir/disc.err"
	t2=$(now)
	stop "$fab" 5
	echo "$(elapsed "$t0" "$t1") $up $(elapsed "$t1" "$t2") $(disc_nodes "$dir/disc.out")" \
		"$(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.2f", b - a }')" \
		"$(awk 'NF == 2 && $1 ~ /^[0-9.]+$/ { printf "%.2f", $1 + $2 }' "$dir/osm.time" 2>/dev/null)"
}

# median of RUNS runs of run_side, by the opensm wall time (errors sort last).
measure() {
	for _ in $(seq "$runs"); do run_side "$@"; done |
		awk '{ print (/^!/ ? 1e99 : $1), $0 }' | sort -g -k1,1 | cut -d' ' -f2- |
		sed -n "$(((runs + 1) / 2))p"
}

# Where our libibumad.so.3 is (helper C's src/umad), if built.
umad_dir=
for d in "$build/lib" "$build/src/umad"; do
	[ -e "$d/libibumad.so.3" ] && { umad_dir=$d; break; }
done
softib_why=
if [ -z "$umad_dir" ]; then
	softib_why="libibumad.so.3 not built in $build"
elif ! "$build/bin/softibd" --help 2>&1 | grep -q -- '--sm'; then
	softib_why="softibd has no --sm external"
fi
command -v opensm >/dev/null || { echo "opensm not installed (Debian package opensm)" >&2; exit 1; }
ibsim_why=
command -v ibsim >/dev/null && [ -e "$umad2sim" ] ||
	ibsim_why="ibsim not installed (Debian ibsim-utils, libumad2sim0)"

rtt_before=$(probe)
rows=()
ratios=()
for spec in "${fabrics[@]}"; do
	file=$tmp/$(echo "$spec" | tr ' ' _).topo
	# shellcheck disable=SC2086
	python3 "$here/gen_fabric.py" -o "$file" $spec || exit 1
	read -r nsw nca < <(awk '$1 == "Switch" { s++ } $1 == "Ca" { c++ } END { print s + 0, c + 0 }' "$file")
	# SM on port 1 of the file's first node, a CA (gen_fabric.py puts host 0 first).
	guid=$(sed -n 's/^caguid=//p' "$file" | head -1)
	[ -n "$guid" ] || { echo "$spec: no CA for the SM" >&2; exit 1; }
	guid=$(printf '0x%x' $((guid + 1)))
	for side in ibsim softib; do
		why=$ibsim_why
		[ "$side" = softib ] && why=$softib_why
		if [ -n "$why" ]; then
			res="! $why"
		else
			measure "$side" "$file" "$guid" >"$tmp/res" &
			measuring=$!
			wait "$measuring"
			measuring=
			res=$(cat "$tmp/res")
		fi
		rows+=("$spec|$nsw|$nca|$side|$res")
	done
done
rtt_after=$(probe)

printf '%-22s %5s %6s  %-6s %11s %9s %10s %6s %10s %10s\n' fabric sw CAs via "opensm -o s" "log->UP s" \
	"ibnetdisc s" nodes "fabric CPU" "opensm CPU"
for r in "${rows[@]}"; do
	IFS='|' read -r spec nsw nca side res <<<"$r"
	if [ "${res:0:1}" = '!' ]; then
		printf '%-22s %5s %6s  %-6s %s\n' "$spec" "$nsw" "$nca" "$side" "n/a: ${res:2}"
	else
		read -r wall up dwall dn cpu ocpu <<<"$res"
		[ "$dn" = "$((nsw + nca))" ] || dn="$dn (of $((nsw + nca)))"
		printf '%-22s %5s %6s  %-6s %11s %9s %10s %6s %10s %10s\n' "$spec" "$nsw" "$nca" "$side" "$wall" "$up" \
			"$dwall" "$dn" "$cpu" "${ocpu:--}"
		if [ "$side" = ibsim ]; then
			ibsim_up=$up
		elif [ -n "${ibsim_up:-}" ]; then
			ratios+=("$spec: log->UP ibsim/softib = $(awk -v a="$ibsim_up" -v b="$up" 'BEGIN { printf "%.1f", (b > 0 ? a / b : 0) }')x")
		fi
	fi
	[ "$side" = softib ] && ibsim_up=
done
[ ${#ratios[@]} -eq 0 ] || printf '%s\n' "${ratios[@]}"
echo "cache-line round trip (ns, VM placement probe): before $rtt_before, after $rtt_after; $(nproc) cores; median of $runs run(s)"
