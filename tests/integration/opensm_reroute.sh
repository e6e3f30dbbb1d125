#!/bin/bash
# SPDX-License-Identifier: MIT
# A running unmodified OpenSM routes around a cut link: on two_switch.topo
# (two links between the switches), `softib port S-... 3 down` takes one
# inter-switch link down; OpenSM hears of it (trap 128 or light sweep),
# sweeps, and programs the LFTs over the other link, so that switch chain 0
# sends every LID of chain 1 out of port 4 (ibroute) and ibv_rc_pingpong
# between softib0 and softib3 runs again.  `up` brings the link back.
. "$(dirname "$0")/mgmt_lib.sh"
need_tool ibroute infiniband-diags
two_switch_sm
sw0=S-5eed020000000010 # "chain 0": ports 3, 4 cabled to "chain 1" ports 5, 6
swlid0=$(osm_lid 0x5eed020000000010)
[ -n "$swlid0" ] || fail "OpenSM gave switch chain 0 no LID"
remote="$(lid_of softib2) $(lid_of softib3) $(osm_lid 0x5eed020000000020)"

# route_ports: the out-ports chain 0's LFT gives chain 1's LIDs, sorted.
route_ports() {
	client timeout 20 ibroute "$swlid0" >"$SIB_TMP/route.out" 2>&1 || return 1
	for l in $remote; do
		awk -v l="$(printf '0x%04x' "$l")" '$1 "" == l "" { print $2 + 0 }' "$SIB_TMP/route.out"
	done | sort -u | tr '\n' ' '
}
rc_pingpong softib0 softib3
# minhop spreads chain 1's LIDs over both links
[ "$(route_ports)" = "3 4 " ] || fail "chain 0 does not use both links: $(cat "$SIB_TMP/route.out")"

ups=$(subnet_ups)
"$SIB_BIN/softib" port "$sw0" 3 down || fail "softib port $sw0 3 down"
opensm_wait_up $((ups + 1)) 30
only4() { [ "$(route_ports)" = "4 " ]; }
wait_until 20 only4 || fail "chain 0 still routes over port 3: $(route_ports) $(cat "$SIB_TMP/route.out")"
rc_pingpong softib0 softib3

ups=$(subnet_ups)
"$SIB_BIN/softib" port "$sw0" 3 up || fail "softib port $sw0 3 up"
opensm_wait_up $((ups + 1)) 30
both_active() { [ "$(client timeout 20 iblinkinfo 2>/dev/null | grep -c 'Active/ *LinkUp')" = 12 ]; }
wait_until 20 both_active || fail "the link did not come back: $(client iblinkinfo 2>&1)"
rc_pingpong softib0 softib3
echo PASS
