#!/bin/bash
# SPDX-License-Identifier: MIT
# A running unmodified OpenSM (light sweep every 2 s) brings a fabric in the
# external-SM mode to SUBNET UP: every cabled CA port ACTIVE with OpenSM's
# LID, ibv_devinfo agrees, sminfo finds OpenSM as the master, the LIDs stay
# put over a few light sweeps, and ibv_rc_pingpong runs between the first
# and the last CA over OpenSM's LFTs.
# Usage: opensm_daemon.sh default|TOPOLOGY
. "$(dirname "$0")/mgmt_lib.sh"
topo=${1:-default}
[ "$topo" = default ] && topo=
need_umad
mgmt_start "$topo" external
opensm_start
check_ports_active
smguid=$(port_guid softib0 1)
smlid=$(lid_of softib0)
client timeout 20 sminfo >"$SIB_TMP/sminfo.out" 2>&1 || fail "sminfo: $(cat "$SIB_TMP/sminfo.out")"
grep -Eq "sm lid $smlid sm guid $smguid, .* SMINFO_MASTER" "$SIB_TMP/sminfo.out" ||
	fail "sminfo does not show OpenSM (lid $smlid guid $smguid) as master: $(cat "$SIB_TMP/sminfo.out")"
mapfile -t devs < <(ca_devs)
before=$(for d in "${devs[@]}"; do echo "$d $(lid_of "$d")"; done)
sleep 5 # two light sweeps
after=$(for d in "${devs[@]}"; do echo "$d $(lid_of "$d")"; done)
[ "$before" = "$after" ] || fail "LIDs moved under a running SM: $before / $after"
alive "$OSM_PID" || fail "opensm exited: $(tail -5 "$OSM_DIR/opensm.out")"
check_ports_active
rc_pingpong "${devs[0]}" "${devs[-1]}"
echo PASS
