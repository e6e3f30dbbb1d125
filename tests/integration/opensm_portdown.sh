#!/bin/bash
# SPDX-License-Identifier: MIT
# `softib port DEV 1 down` under a running unmodified OpenSM, on
# two_switch.topo: RC traffic from softib0 to the downed softib3 (across
# both switches) ends in "transport retry counter exceeded"; OpenSM sees the
# change (trap 128 or light sweep: a new SUBNET UP, and its SA drops the
# node); `up` brings the port back to ACTIVE with its old LID, and RC runs
# again.
. "$(dirname "$0")/mgmt_lib.sh"
need_tool ibv_rc_pingpong ibverbs-utils
need_tool saquery infiniband-diags
two_switch_sm
lid3=$(lid_of softib3)
node3=$(node_guid softib3)
client timeout 20 saquery NR >"$SIB_TMP/nr0.out" 2>&1 || fail "saquery: $(cat "$SIB_TMP/nr0.out")"
grep -qi "node_guid\.*$node3" "$SIB_TMP/nr0.out" || fail "SA has no NodeRecord of $node3: $(cat "$SIB_TMP/nr0.out")"

# A ping-pong that runs until the link goes away.
start_server "$SIB_TMP/server.out" timeout 60 ibv_rc_pingpong -d softib3 -p PORT -n 100000000
LD_PRELOAD=$SIB_PRELOAD timeout 60 ibv_rc_pingpong -d softib0 -p "$port" -n 100000000 127.0.0.1 \
	>"$SIB_TMP/client.out" 2>&1 &
cli=$!
SIB_PIDS+=("$cli")
sleep 1
alive "$cli" || fail "ping-pong ended before the port went down: $(cat "$SIB_TMP/client.out" "$SIB_TMP/server.out")"
ups=$(subnet_ups)
"$SIB_BIN/softib" port softib3 1 down || fail "softib port softib3 1 down"
wait_until 30 sh -c "! kill -0 $cli 2>/dev/null" || fail "RC traffic still runs 30 s after the port went down"
wait "$cli"
grep "retry counter exceeded" "$SIB_TMP/client.out" "$SIB_TMP/server.out" ||
	fail "no retry exceeded: $(cat "$SIB_TMP/client.out" "$SIB_TMP/server.out")"
[ "$(port_field softib3 1 state)" != ACTIVE ] || fail "softib3 port 1 still ACTIVE: $(status)"

# OpenSM re-sweeps and forgets the node.
opensm_wait_up $((ups + 1)) 30
nr_lacks() {
	client timeout 20 saquery NR >"$SIB_TMP/nr1.out" 2>&1 && ! grep -qi "node_guid\.*$node3" "$SIB_TMP/nr1.out"
}
wait_until 20 nr_lacks || fail "OpenSM's SA still lists $node3 after the port went down"
pg3=$(port_guid softib3 1)
grep -q "Removed port with GUID:$pg3" "$OSM_LOG" || fail "OpenSM did not drop $pg3: $(tail -20 "$OSM_LOG")"
grep -Eo "Received Generic Notice .*num:128.*|Removed port with GUID:$pg3.*" "$OSM_LOG" | head -3

# Back up: OpenSM brings it to ACTIVE again, with the same LID.
ups=$(subnet_ups)
"$SIB_BIN/softib" port softib3 1 up || fail "softib port softib3 1 up"
port_active() { [ "$(port_field softib3 1 state)" = ACTIVE ]; }
wait_until 30 port_active || fail "softib3 port 1 not ACTIVE 30 s after up: $(status)"
[ "$(lid_of softib3)" = "$lid3" ] || fail "softib3 came back with LID $(lid_of softib3), had $lid3"
grep -q "Discovered new port with GUID:$pg3" "$OSM_LOG" || fail "OpenSM did not find $pg3 again: $(tail -20 "$OSM_LOG")"
check_ports_active
rc_pingpong softib0 softib3
echo PASS
