#!/bin/bash
# SPDX-License-Identifier: MIT
# The data path through two switches (docs/subnet.md "Routes of the data
# path"), softibd in its default mode (the built-in SM programs min-hop
# LFTs) on tests/data/route-2sw.topo: softib0 (a1) is on switch A, softib2
# (b1) and softib3 (b2) on switch B, joined by two links (A ports 3, 4).
# Unmodified ibv_rc_pingpong and ib_send_bw run across the switches; then,
# while a ping-pong runs, both links between the switches go down
# (`softib port S-... 3|4 down`): the tables lead nowhere, traffic stops,
# the RC QPs end in retry exceeded, the sender's PMA counts the discards
# (status link line no_route); links back up, traffic flows again.
. "$(dirname "$0")/lib.sh"
SW_A=S-5eed000000000a00
SIB_TOPOLOGY=$(dirname "$0")/../data/route-2sw.topo
command -v ibv_rc_pingpong >/dev/null || fail "ibv_rc_pingpong not installed (ibverbs-utils)"
command -v ib_send_bw >/dev/null || fail "ib_send_bw not installed (perftest)"
start_daemon
softib() { "$SIB_BIN/softib" "$@"; }

# pingpong SERVER_DEV CLIENT_DEV ITERS: both sides finish.
pingpong() {
	start_server "$SIB_TMP/pp_s.out" timeout 60 ibv_rc_pingpong -d "$1" -p PORT -n "$3"
	client timeout 60 ibv_rc_pingpong -d "$2" -p "$port" -n "$3" 127.0.0.1 >"$SIB_TMP/pp_c.out" 2>&1 ||
		fail "ibv_rc_pingpong $2 -> $1 exited $?: $(cat "$SIB_TMP/pp_c.out" "$SIB_TMP/pp_s.out")"
	wait "$srv" || fail "ibv_rc_pingpong server on $1 exited $?: $(cat "$SIB_TMP/pp_s.out")"
	grep -q "^$3 iters in" "$SIB_TMP/pp_c.out" || fail "no $3 iterations: $(cat "$SIB_TMP/pp_c.out")"
}

pingpong softib0 softib3 1000
pingpong softib3 softib0 1000
pingpong softib2 softib3 100 # same switch

start_server "$SIB_TMP/bw_s.out" timeout 60 ib_send_bw -d softib0 -p PORT -n 500 -s 65536
client timeout 60 ib_send_bw -d softib2 -p "$port" -n 500 -s 65536 127.0.0.1 >"$SIB_TMP/bw_c.out" 2>&1 ||
	fail "ib_send_bw exited $?: $(cat "$SIB_TMP/bw_c.out" "$SIB_TMP/bw_s.out")"
wait "$srv" || fail "ib_send_bw server exited $?: $(cat "$SIB_TMP/bw_s.out")"
grep -Eq '^ *65536 +500 ' "$SIB_TMP/bw_c.out" || fail "no result line: $(cat "$SIB_TMP/bw_c.out")"

# A ping-pong that would run for long; cut both links under it.
start_server "$SIB_TMP/cut_s.out" timeout 60 ibv_rc_pingpong -d softib0 -p PORT -n 100000000
client timeout 60 ibv_rc_pingpong -d softib3 -p "$port" -n 100000000 127.0.0.1 >"$SIB_TMP/cut_c.out" 2>&1 &
cli=$!
SIB_PIDS+=("$cli")
# Traffic flows: the client's context sends (its status link line moves).
wait_until 20 sh -c "\"$SIB_BIN/softib\" status | grep -q 'dev=softib3 .* tx=[1-9]'" ||
	fail "no traffic: $(status)"
softib port "$SW_A" 3 down || fail "port $SW_A 3 down"
softib port "$SW_A" 4 down || fail "port $SW_A 4 down"
status | grep -q "no_route=[1-9]" || wait_until 10 sh -c "\"$SIB_BIN/softib\" status | grep -q 'no_route=[1-9]'" ||
	fail "no route drops counted: $(status)"
wait "$cli"
crc=$?
wait "$srv"
src=$?
[ "$crc" != 0 ] && [ "$crc" != 124 ] || fail "client exited $crc: $(cat "$SIB_TMP/cut_c.out")"
[ "$src" != 0 ] && [ "$src" != 124 ] || fail "server exited $src: $(cat "$SIB_TMP/cut_s.out")"
grep -q "retry counter exceeded" "$SIB_TMP/cut_c.out" "$SIB_TMP/cut_s.out" ||
	fail "no retry exceeded: $(cat "$SIB_TMP/cut_c.out" "$SIB_TMP/cut_s.out")"

# A bad switch or port is refused; the links come back and carry traffic.
softib port S-5eed00000000ffff 3 down 2>/dev/null && fail "an unknown switch accepted"
softib port "$SW_A" 9 down 2>/dev/null && fail "switch port 9 accepted"
softib port "$SW_A" 3 up || fail "port $SW_A 3 up"
softib port "$SW_A" 4 up || fail "port $SW_A 4 up"
wait_until 20 sh -c "\"$SIB_BIN/softib\" status | grep -A1 'name=softib3' | grep -q 'state=ACTIVE'" ||
	fail "softib3 not ACTIVE: $(status)"
pingpong softib0 softib3 100
echo PASS
