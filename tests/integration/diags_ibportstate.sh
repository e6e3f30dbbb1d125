#!/bin/bash
# SPDX-License-Identifier: MIT
# Unmodified ibportstate on two_switch.topo under a running OpenSM.
# Usage: diags_ibportstate.sh ca|switch
#   ca: query softib3's port (LID-routed PortInfo): Active, its LID, the SM
#   LID.  switch: query port 5 of switch "chain 1" (its link to "chain 0"):
#   ibportstate then reads the peer through a directed-route SMP whose
#   first part is LID-routed (DrSLID = our LID, IBA 14.2.2.2), and prints
#   both ends' state, width and speed.
. "$(dirname "$0")/mgmt_lib.sh"
need_tool ibportstate infiniband-diags
two_switch_sm
lid0=$(lid_of softib0)
lid3=$(lid_of softib3)
if [ "${1:-ca}" = ca ]; then
	run ps ibportstate "$lid3" 1
	want ps '^CA/RT PortInfo:'
	want ps '^LinkState:\.+Active$'
	want ps '^PhysLinkState:\.+LinkUp$'
	want ps "^Lid:\.+$lid3\$"
	want ps "^SMLid:\.+$lid0\$"
else
	swlid1=$(osm_lid 0x5eed020000000020)
	[ -n "$swlid1" ] || fail "OpenSM gave switch chain 1 no LID"
	run ps ibportstate "$swlid1" 5
	want ps '^Switch PortInfo:'
	want ps '^LinkState:\.+Active$'
	want ps '^PhysLinkState:\.+LinkUp$'
	# The peer, "chain 0" port 3, through the mixed LID/DR path.
	want ps '^Peer PortInfo:'
	[ "$(grep -Ec '^LinkState:\.+Active$' "$SIB_TMP/ps.out")" = 2 ] || fail "both ends not Active: $(cat "$SIB_TMP/ps.out")"
fi
echo PASS
