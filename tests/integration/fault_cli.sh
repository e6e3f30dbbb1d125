#!/bin/bash
# SPDX-License-Identifier: MIT
# `softib fault` on programs that know nothing of it (docs/link.md): bad
# requests are refused with a message; 5% loss and corruption on softib1's
# port show in `softib status` while unmodified ibv_rc_pingpong still
# completes; a downed port makes it fail (retry exceeded); after `off` it
# works again.
. "$(dirname "$0")/lib.sh"
start_daemon
sib=$SIB_BIN/softib

for bad in "softib1 1 bogus=1" "softib1 1 loss=2" "nosuch 1 loss=0.1" "softib1 9 loss=0.1" \
	"softib1 1 loss=0.1,dev=softib0" "softib1 1 loss=0.1,port=2" "softib1 1 loss=0.0000001"; do
	# shellcheck disable=SC2086
	"$sib" fault $bad 2>"$SIB_TMP/err" && fail "softib fault $bad was accepted"
	grep -Eq 'malformed|no device' "$SIB_TMP/err" || fail "softib fault $bad: $(cat "$SIB_TMP/err")"
done
"$sib" fault softib1 1 2>/dev/null && fail "softib fault without a SPEC was accepted"

"$sib" fault softib1 1 seed=3,loss=0.05,corrupt=0.05 || fail "softib fault refused a good SPEC"
status | grep -q '^link_port dev=softib1 port=1 capture=0 faults=seed=3,loss=0.05,dup=0,reorder=0,corrupt=0.05' ||
	fail "faults not shown: $(status)"
start_server "$SIB_TMP/server.out" timeout 60 ibv_rc_pingpong -d softib0 -p PORT -n 200 -s 4096
client timeout 60 ibv_rc_pingpong -d softib1 -p "$port" -n 200 -s 4096 127.0.0.1 >"$SIB_TMP/client.out" 2>&1 &
cl=$!
SIB_PIDS+=("$cl")
# While it runs: softib1's context counts the faults, softib0's the ICRC drops.
seen=
for _ in $(seq 200); do
	st=$(status)
	if grep -Eq '^link inbox=.* dev=softib1 .*faults=1 .* fault_loss=[1-9]' <<<"$st" &&
	   grep -Eq '^link inbox=.* dev=softib0 .* rx_icrc_drops=[1-9]' <<<"$st"; then
		seen=1
		break
	fi
	alive "$cl" || break
	sleep 0.05
done
wait "$cl" || fail "client under 5% loss/corruption: $(cat "$SIB_TMP/client.out")"
wait "$srv" || fail "server under 5% loss/corruption: $(cat "$SIB_TMP/server.out")"
[ -n "$seen" ] || fail "fault counters never showed: $st"
echo "5% loss + corruption: 200 iterations completed; counters seen"

"$sib" fault softib1 1 down=1 || fail "softib fault down=1 refused"
start_server "$SIB_TMP/server.out" timeout 5 ibv_rc_pingpong -d softib0 -p PORT -n 5
client timeout 30 ibv_rc_pingpong -d softib1 -p "$port" -n 5 127.0.0.1 >"$SIB_TMP/client.out" 2>&1 &&
	fail "ibv_rc_pingpong worked over a downed port"
grep -qi 'retry' "$SIB_TMP/client.out" || fail "no retry-exceeded error: $(cat "$SIB_TMP/client.out")"
wait "$srv"
echo "down=1: $(grep -i retry "$SIB_TMP/client.out" | head -1)"

"$sib" fault softib1 1 off || fail "softib fault off refused"
status | grep -q '^link_port' && fail "faults still shown after off: $(status)"
start_server "$SIB_TMP/server.out" timeout 60 ibv_rc_pingpong -d softib0 -p PORT -n 100
client timeout 60 ibv_rc_pingpong -d softib1 -p "$port" -n 100 127.0.0.1 >"$SIB_TMP/client.out" 2>&1 ||
	fail "client after off: $(cat "$SIB_TMP/client.out")"
wait "$srv" || fail "server after off: $(cat "$SIB_TMP/server.out")"
echo PASS
