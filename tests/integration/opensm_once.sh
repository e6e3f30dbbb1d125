#!/bin/bash
# SPDX-License-Identifier: MIT
# Unmodified `opensm -o` (one heavy sweep, then exit) brings a fabric in the
# external-SM mode to SUBNET UP.  Before it every CA port waits without a
# LID and is not ACTIVE; after it every cabled CA port is ACTIVE with the
# LID OpenSM chose (its guid2lid), the SM's LID as SM LID, ibv_devinfo shows
# both, and ibv_rc_pingpong and ib_send_bw run between the first and the
# last CA (on different switches for two_switch.topo) over OpenSM's LFTs.
# Usage: opensm_once.sh default|TOPOLOGY
. "$(dirname "$0")/mgmt_lib.sh"
topo=${1:-default}
[ "$topo" = default ] && topo=
need_umad
mgmt_start "$topo" external
for dev in $(ca_devs); do
	[ "$(port_field "$dev" 1 state)" != ACTIVE ] || fail "$dev port 1 ACTIVE before any SM ran: $(status)"
	[ "$(port_field "$dev" 1 lid)" = 0 ] || fail "$dev port 1 has a LID before any SM ran: $(status)"
done
opensm_once
check_ports_active
mapfile -t devs < <(ca_devs)
rc_pingpong "${devs[0]}" "${devs[-1]}"
pair_run "${devs[0]}" "${devs[-1]}" ib_send_bw
echo PASS
