#!/bin/bash
# SPDX-License-Identifier: MIT
# SIGKILL the server of a running ibv_rc_pingpong: softibd stays up and
# frees every resource of the dead process, and the client ends with an
# error instead of hanging: "transport retry counter exceeded" when it had
# a send outstanding, else its receives are flushed by dead peer detection
# (docs/transport.md).  Repeated so that both cases are likely to be seen.
. "$(dirname "$0")/lib.sh"
start_daemon
start_server "$SIB_TMP/server.out" timeout 60 ibv_rc_pingpong -d softib0 -p PORT -n 100000000 -s 4096
client timeout 60 ibv_rc_pingpong -d softib1 -p "$port" -n 100000000 -s 4096 127.0.0.1 >"$SIB_TMP/client.out" 2>&1 &
cli=$!
SIB_PIDS+=("$cli")

# Both programs hold a context, PD, MR, CQ and QP while they run.
wait_until 10 sh -c "[ \$(\"$SIB_BIN/softib\" status | grep -c '^client .*qp=1') = 2 ]" ||
	fail "ping-pong did not start: $(status)"
sleep 0.5
# $srv is the subshell above timeout(1): kill the ping-pong process itself.
srv_real=$(pgrep -f "^ibv_rc_pingpong -d softib0 -p $port ") || fail "server process not found"
kill -KILL "$srv_real"

wait_until 20 sh -c "! kill -0 $cli 2>/dev/null" || fail "client hangs after the server died"
wait "$cli"
rc=$?
cat "$SIB_TMP/client.out"
[ "$rc" != 0 ] || fail "client reported success"
grep -Eiq 'Failed status (transport retry counter exceeded|work request flushed error)' "$SIB_TMP/client.out" ||
	fail "client did not see retry exceeded or a flush"

kill -0 "$SIB_DAEMON_PID" || fail "softibd died"
out=$(status) || fail "softibd does not answer"
echo "$out"
echo "$out" | grep -q "^client pid=$srv_real " && fail "dead server still holds resources"
echo "$out" | grep -Eq '^totals devices=0 pd=0 mr=0 cq=0 qp=0' || fail "resources leaked"
echo PASS
