# SPDX-License-Identifier: MIT
# Helpers for the integration tests: a private softibd per test (own socket
# in a temp dir, stopped by PID on exit), free TCP ports on loopback, and
# bounded waits.  Sourced by the test scripts; never waits without a limit.
#
# Environment from CTest: SIB_BIN (build/bin), SIB_LIB (build/lib),
# SIB_SANITIZE (ON/OFF), and optionally SIB_TOPOLOGY (a topology file).

set -u
SIB_TMP=$(mktemp -d /tmp/softib-test.XXXXXX)
SIB_PIDS=()
export SOFTIB_SOCKET=$SIB_TMP/softib.sock
export SOFTIB_NO_AUTOSTART=1
export LD_LIBRARY_PATH=$SIB_LIB

# Unmodified clients load an ASan-built libibverbs only if the runtime
# comes first.  Their own leaks are not ours to report.
if [ "${SIB_SANITIZE:-OFF}" = ON ]; then
	SIB_PRELOAD=$(gcc -print-file-name=libasan.so)
	export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
else
	SIB_PRELOAD=
fi

sib_cleanup() {
	for p in "${SIB_PIDS[@]}"; do
		kill -TERM "$p" 2>/dev/null
	done
	for p in "${SIB_PIDS[@]}"; do
		for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$p" 2>/dev/null
	done
	rm -rf "$SIB_TMP"
}
trap sib_cleanup EXIT

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

# Run an unmodified client against the build.
client() {
	LD_PRELOAD=$SIB_PRELOAD "$@"
}

# wait_until SECONDS COMMAND...: poll every 50 ms.
wait_until() {
	local limit=$(($1 * 20)); shift
	for _ in $(seq "$limit"); do
		"$@" && return 0
		sleep 0.05
	done
	return 1
}

start_daemon() {
	"$SIB_BIN/softibd" --foreground --socket "$SOFTIB_SOCKET" \
		${SIB_TOPOLOGY:+--topology "$SIB_TOPOLOGY"} "$@" >"$SIB_TMP/softibd.log" 2>&1 &
	SIB_DAEMON_PID=$!
	SIB_PIDS+=("$SIB_DAEMON_PID")
	wait_until 10 test -S "$SOFTIB_SOCKET" || fail "softibd did not start: $(cat "$SIB_TMP/softibd.log")"
}

# True while PID runs (a zombie waiting for its reaper does not count).
alive() {
	[ -r "/proc/$1/stat" ] && ! grep -Eq '^[0-9]+ \(.*\) Z ' "/proc/$1/stat"
}

status() {
	"$SIB_BIN/softib" status
}

# True once something listens on TCP port $1 (IPv4 or IPv6), read from
# /proc so that the check does not connect (a ping-pong server takes one
# connection only).
port_listening() {
	local hex
	hex=$(printf '%04X' "$1")
	awk -v p=":$hex" '$4 == "0A" && substr($2, length($2) - 4) == p { found = 1 } END { exit !found }' \
		/proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# A TCP port that no socket on this host uses, below the ephemeral range
# (so that no outgoing connection can take it meanwhile).
free_port() {
	local p hex lo
	lo=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
	for _ in $(seq 100); do
		p=$((10000 + RANDOM % (lo - 10000)))
		hex=$(printf '%04X' "$p")
		if ! awk -v p=":$hex" 'substr($2, length($2) - 4) == p { found = 1 } END { exit !found }' \
			/proc/net/tcp /proc/net/tcp6 2>/dev/null; then
			echo "$p"
			return 0
		fi
	done
	return 1
}

# start_server OUTFILE CMD...: run a client-server test's server on a free
# port (substituted for the word PORT in CMD) and wait until it listens.
# Another test may take the same port between our check and its bind: then
# try another one.  Sets $port and $srv.
server_ready() {
	port_listening "$port" || ! alive "$srv"
}

start_server() {
	local out=$1; shift
	for _ in 1 2 3 4 5; do
		port=$(free_port) || fail "no free port"
		client "${@//PORT/$port}" >"$out" 2>&1 &
		srv=$!
		SIB_PIDS+=("$srv")
		wait_until 30 server_ready
		port_listening "$port" && return 0
		wait "$srv" 2>/dev/null
		grep -q "Couldn't listen" "$out" || break
	done
	fail "server did not listen: $(cat "$out")"
}

# netns_pair TAG: two fresh network namespaces, $NSA and $NSB (named
# TAG{A,B}PID_RANDOM), deleted at exit after sib_cleanup.  Exits 77 (skip)
# without root, /dev/net/tun, ip(8) or the right to make namespaces.
netns_pair() {
	[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (network namespaces)"; exit 77; }
	[ -c /dev/net/tun ] || { echo "SKIP: no /dev/net/tun"; exit 77; }
	command -v ip >/dev/null || { echo "SKIP: no ip (iproute2)"; exit 77; }
	NSA=${1}A$$_$RANDOM
	NSB=${1}B$$_$RANDOM
	ip netns add "$NSA" 2>/dev/null || { echo "SKIP: cannot make network namespaces"; exit 77; }
	ip netns add "$NSB" || { ip netns del "$NSA"; fail "ip netns add $NSB"; }
	trap netns_cleanup EXIT
}
netns_cleanup() {
	sib_cleanup
	ip netns del "$NSA" 2>/dev/null
	ip netns del "$NSB" 2>/dev/null
}
# inns NS CMD...: CMD in namespace NS.  Foreground only: a function sent to
# the background is a subshell, whose PID is not the program's (stopping it
# would orphan the program).
inns() { local ns=$1; shift; ip netns exec "$ns" "$@"; }

# capture_start FILE DEV COUNT: `softib capture` of DEV port 1 into FILE (at
# most COUNT packets) in the background, once it says it is capturing.
capture_start() {
	"$SIB_BIN/softib" capture -w "$1" -d "$2" -p 1 -c "$3" 2>"$SIB_TMP/cap.err" &
	cap=$!
	SIB_PIDS+=("$cap")
	wait_until 10 grep -q capturing "$SIB_TMP/cap.err" || fail "softib capture: $(cat "$SIB_TMP/cap.err")"
}

# pair_try DEV_A DEV_B TOOL ARGS...: TOOL's server on DEV_A and client on
# DEV_B (to 127.0.0.1), 500 iterations, each side bounded by 60 s; sets crc
# and src (their exit codes), the output in $SIB_TMP/{server,client}.out.
# A perftest pair that could not measure its clock goes again, at most 3 times.
pair_try() {
	local a=$1 b=$2 tool=$3 try
	shift 3
	for try in 1 2 3; do
		start_server "$SIB_TMP/server.out" timeout 60 "$tool" -d "$a" -p PORT -n 500 "$@"
		client timeout 60 "$tool" -d "$b" -p "$port" -n 500 "$@" 127.0.0.1 >"$SIB_TMP/client.out" 2>&1
		crc=$?
		wait "$srv"
		src=$?
		perftest_unmeasured "$SIB_TMP/client.out" "$SIB_TMP/server.out" || break
		echo "try $try: perftest could not measure its clock (a loaded machine); again"
	done
}

# perftest_unmeasured FILE...: did perftest give up on its own clock ("Can't
# produce a report": its CPU-frequency sampling found r^2 < 0.9, which a
# loaded machine causes)?  Its exchange then fails on the other side too;
# the run says nothing about softib and is worth one more try.
perftest_unmeasured() {
	grep -q "Can't produce a report" "$@" 2>/dev/null
}

# tcp_check NS_RECV NS_SEND ADDR MB SECONDS [CONTEXT...]: MB MiB over TCP from
# namespace NS_SEND to ADDR in NS_RECV (tcp_sha.py), each side bounded by
# SECONDS; the byte count and SHA-256 of what was sent must be what arrived.
# CONTEXT (files) is shown on a failure.
tcp_check() {
	local nr=$1 ns=$2 addr=$3 mb=$4 t=$5 py rcv sent got
	shift 5
	py=$(dirname "${BASH_SOURCE[0]}")/tcp_sha.py
	ip netns exec "$nr" timeout "$t" python3 "$py" recv "$addr" "$mb" >"$SIB_TMP/recv.out" 2>&1 &
	rcv=$!
	SIB_PIDS+=("$rcv")
	wait_until 10 grep -qs listening "$SIB_TMP/recv.out" || fail "receiver: $(cat "$SIB_TMP/recv.out")"
	ip netns exec "$ns" timeout "$t" python3 "$py" send "$addr" "$mb" >"$SIB_TMP/send.out" 2>&1 ||
		fail "sender: $(cat "$SIB_TMP/send.out") $(cat "$SIB_TMP/recv.out") $(cat "$@" 2>/dev/null)"
	wait "$rcv" || fail "receiver: $(cat "$SIB_TMP/recv.out")"
	sent=$(cut -d' ' -f1,2 "$SIB_TMP/send.out")
	got=$(tail -1 "$SIB_TMP/recv.out" | cut -d' ' -f1,2)
	echo "sent: $sent"
	echo "recv: $(tail -1 "$SIB_TMP/recv.out")"
	[ "$sent" = "$got" ] && [ "${sent%% *}" = $((mb * 1048576)) ] || fail "TCP data differ: $sent vs $got"
}
