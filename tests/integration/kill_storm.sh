#!/bin/bash
# SPDX-License-Identifier: MIT
# Kill storm (DESIGN principle 6): SIGKILL at least 300 verbs clients
# (storm_client) at random points of their lives, a few at a time, then
# check that softibd holds no client, object, inbox or QPN, has as many fds
# as before, has grown its memory by no more than a small bound, still
# answers, and that a fresh ibv_rc_pingpong works.  $SIB_STORM_KILLS sets
# the number of kills (default 600; the ASan build may lower it, never
# below 300; $SIB_STORM_RSS_KB the allowed VmRSS growth, default 2048).
# Usage: kill_storm.sh STORM_CLIENT
. "$(dirname "$0")/lib.sh"

STORM_CLIENT=$1
KILLS=${SIB_STORM_KILLS:-600}
WORKERS=4
RSS_SLACK_KB=${SIB_STORM_RSS_KB:-2048}
[ "$KILLS" -ge 300 ] || fail "SIB_STORM_KILLS=$KILLS: at least 300"

start_daemon --dumpable # its /proc/<pid>/fd is counted below
dpid=$SIB_DAEMON_PID

fds() { ls "/proc/$dpid/fd" | wc -l; }
# The daemon closes a finished `softib status` connection when it next runs,
# so a count taken just after one may be one high: wait for the count to
# settle (equal to $1, or, with no argument, the same twice 0.3 s apart).
fds_is() { [ "$(fds)" = "$1" ]; }
fds_settled() {
	local a b
	for _ in $(seq 30); do
		a=$(fds); sleep 0.3; b=$(fds)
		[ "$a" = "$b" ] && break
	done
	echo "$b"
}
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$dpid/status"; }
idle() { status | grep -q "^softibd pid=$dpid .* clients=1 "; } # only our status connection

# count KEY on the status line starting with PREFIX
stat_num() { status | sed -n "s/^$1.* $2=\([0-9]*\).*/\1/p"; }

# One worker: start a client, let it live 0-40 ms, SIGKILL it, reap it.
worker() {
	local w=$1 n=$2 pid
	for i in $(seq "$n"); do
		# a simple command: the background child execs the client itself
		LD_PRELOAD=$SIB_PRELOAD "$STORM_CLIENT" $(((w + i) % 4)) >/dev/null 2>>"$SIB_TMP/client.err" &
		pid=$!
		sleep "$(printf '0.%03d' $((RANDOM % 40)))"
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		[ $? = 137 ] || echo "client $pid ended by itself" >>"$SIB_TMP/client.err"
	done
}

storm() {
	local per=$(( ($1 + WORKERS - 1) / WORKERS )) pids=()
	for w in $(seq "$WORKERS"); do
		worker "$w" "$per" &
		pids+=("$!")
	done
	for p in "${pids[@]}"; do wait "$p"; done
}

# Warm-up: the first clients grow tables once (handle slots, malloc arenas).
fd0=$(fds_settled)
storm 20
wait_until 10 idle || fail "clients still listed after the warm-up: $(status)"
rss0=$(rss_kb)
wait_until 10 fds_is "$fd0" || fail "fds after the warm-up: $fd0 -> $(fds)"

t0=$SECONDS
storm "$KILLS"
echo "$KILLS kills in $((SECONDS - t0)) s"

wait_until 10 idle || fail "clients left after the storm: $(status)"
st=$(status)
echo "$st"
[ -s "$SIB_TMP/client.err" ] && fail "a client failed before it was killed: $(sort "$SIB_TMP/client.err" | uniq -c | head)"
echo "$st" | grep -q "^totals devices=0 pd=0 mr=0 cq=0 qp=0 srq=0 ah=0 channel=0 xrcd=0$" ||
	fail "objects leaked: $(echo "$st" | grep ^totals)"
echo "$st" | grep -q "^resources inboxes=0 .* qpns=0 " || fail "resources leaked: $(echo "$st" | grep ^resources)"
# some clients die before they connect; most must have been killed while connected
conns=$(stat_num counters connections)
[ "${conns:-0}" -ge $((KILLS / 2)) ] || fail "only $conns connections for $KILLS kills"
wait_until 10 fds_is "$fd0" || fail "fds: $fd0 before, $(fds) after the storm: $(ls -l /proc/$dpid/fd)"
fd2=$(fds)
rss1=$(rss_kb)
echo "VmRSS ${rss0} kB -> ${rss1} kB, fds $fd0 -> $fd2"
[ "$rss1" -le $((rss0 + RSS_SLACK_KB)) ] || fail "VmRSS grew from $rss0 kB to $rss1 kB"

# A fresh ping-pong works.
start_server "$SIB_TMP/server.out" timeout 60 ibv_rc_pingpong -d softib0 -n 100 -p PORT
client timeout 60 ibv_rc_pingpong -d softib1 -n 100 -p "$port" 127.0.0.1 >"$SIB_TMP/client.out" 2>&1 ||
	fail "ping-pong after the storm: $(cat "$SIB_TMP/client.out")"
wait "$srv" || fail "ping-pong server after the storm: $(cat "$SIB_TMP/server.out")"
grep -q "100 iters" "$SIB_TMP/client.out" || fail "no ping-pong result"

# The daemon exits cleanly; under ASan, LeakSanitizer finds nothing.
kill -TERM "$dpid"
wait_until 10 eval "! alive $dpid" || fail "softibd did not exit on SIGTERM"
wait "$dpid" || fail "softibd exited $?: $(tail -5 "$SIB_TMP/softibd.log")"
grep -q "ERROR: \(Leak\|Address\)Sanitizer" "$SIB_TMP/softibd.log" && fail "$(cat "$SIB_TMP/softibd.log")"
echo PASS
