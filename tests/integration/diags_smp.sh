#!/bin/bash
# SPDX-License-Identifier: MIT
# The SMP diags, unmodified, on two_switch.topo under a running OpenSM:
# ibstat, smpquery (nodeinfo, portinfo, nodedesc, switchinfo, pkeys, sl2vl,
# and a directed-route nodedesc), sminfo, ibaddr, ibroute and ibtracert,
# each checked against the topology file and the LIDs OpenSM
# gave (values, not exit codes).  ibportstate: diags_ibportstate.sh.
. "$(dirname "$0")/mgmt_lib.sh"
need_tool smpquery infiniband-diags
two_switch_sm

lid0=$(lid_of softib0)
lid3=$(lid_of softib3)
pg3=$(port_guid softib3 1)
ng3=$(node_guid softib3)
sw0=0x5eed020000000010 # "chain 0": softib0, softib1 on ports 1, 2; links to sw1 on 3, 4
sw1=0x5eed020000000020 # "chain 1": softib2, softib3 on ports 1, 2; links to sw0 on 5, 6
swlid0=$(osm_lid $sw0)
swlid1=$(osm_lid $sw1)
[ -n "$swlid0" ] && [ -n "$swlid1" ] || fail "OpenSM gave the switches no LID: $(cat "$OSM_CACHE_DIR/guid2lid")"

# ibstat: the CAs, and one port's live values.
run ibstat_l ibstat -l
[ "$(tr '\n' ' ' <"$SIB_TMP/ibstat_l.out")" = "$(ca_devs | tr '\n' ' ')" ] ||
	fail "ibstat -l: $(cat "$SIB_TMP/ibstat_l.out"), devices: $(ca_devs)"
run ibstat ibstat softib3 1
want ibstat "^CA: 'softib3'"
want ibstat "^State: Active"
want ibstat "^Physical state: LinkUp"
want ibstat "^Base lid: $lid3\$"
want ibstat "^SM lid: $lid0\$"
want ibstat "^Port GUID: $pg3\$"
run ibstat_p ibstat -p softib3
want ibstat_p "^$pg3\$"

# smpquery, LID-routed through OpenSM's LFTs.
run ni_sw smpquery nodeinfo "$swlid1"
want ni_sw '^NodeType:\.+Switch$'
want ni_sw '^NumPorts:\.+8$'
want ni_sw "^Guid:\.+$sw1\$"
run ni_ca smpquery nodeinfo "$lid3"
want ni_ca '^NodeType:\.+Channel Adapter$'
want ni_ca "^Guid:\.+$ng3\$"
want ni_ca "^PortGuid:\.+$pg3\$"
want ni_ca '^LocalPort:\.+1$'
run pi smpquery portinfo "$lid3" 1
want pi "^Lid:\.+$lid3\$"
want pi "^SMLid:\.+$lid0\$"
want pi '^LinkState:\.+Active$'
want pi '^PhysLinkState:\.+LinkUp$'
run pi_sw smpquery portinfo "$swlid0" 3
want pi_sw '^LinkState:\.+Active$'
run nd_sw smpquery nodedesc "$swlid0"
want nd_sw '^Node Description:\.+chain 0$'
run nd_ca smpquery nodedesc "$lid3"
want nd_ca '^Node Description:\.+softib HCA softib3$'
run nd_dr smpquery -D nodedesc 0,1,3
want nd_dr '^Node Description:\.+chain 1$'
run si smpquery switchinfo "$swlid0"
want si '^LinearFdbCap:\.+[1-9]'
top=$(awk -F. '/^LinearFdbTop:/ { print $NF }' "$SIB_TMP/si.out")
maxlid=$(for d in $(ca_devs); do lid_of "$d"; done | sort -n | tail -1)
for l in "$maxlid" "$swlid0" "$swlid1"; do
	[ "${top:-0}" -ge "$l" ] || fail "switchinfo: LinearFdbTop '$top' below LID $l: $(cat "$SIB_TMP/si.out")"
done
run pk smpquery pkeys "$lid3" 1
want pk '^ +0: 0xffff '
run sl smpquery sl2vl "$lid3" 1
want sl '^ports: in +0, out +0: (\| *[0-9]+){16}\|$'

# sminfo: OpenSM is the master on softib0 port 1.
run sminfo sminfo
want sminfo "sm lid $lid0 sm guid $(port_guid softib0 1), .*SMINFO_MASTER"

# ibaddr: GID (subnet prefix + port GUID) and LID range of softib3.
gid=$(python3 -c "import ipaddress, sys; print(ipaddress.IPv6Address((0xfe80 << 112) | int(sys.argv[1], 16)))" "$pg3")
run addr ibaddr "$lid3"
want addr "^GID $gid LID start 0x$(printf %x "$lid3") end 0x$(printf %x "$lid3")\$"

# ibroute: switch chain 0 sends softib0, softib1 out of ports 1, 2, itself
# to port 0, and softib2, softib3, chain 1 over the links (ports 3, 4).
run route ibroute "$swlid0"
route_port() { awk -v l="$(printf '0x%04x' "$1")" '$1 "" == l "" { print $2 + 0 }' "$SIB_TMP/route.out"; }
[ "$(route_port "$lid0")" = 1 ] || fail "ibroute: LID $lid0 not out of port 1: $(cat "$SIB_TMP/route.out")"
[ "$(route_port "$(lid_of softib1)")" = 2 ] || fail "ibroute: softib1 not out of port 2: $(cat "$SIB_TMP/route.out")"
[ "$(route_port "$swlid0")" = 0 ] || fail "ibroute: own LID not to port 0: $(cat "$SIB_TMP/route.out")"
for l in "$(lid_of softib2)" "$lid3" "$swlid1"; do
	case $(route_port "$l") in 3|4) ;; *) fail "ibroute: LID $l not over the links: $(cat "$SIB_TMP/route.out")" ;; esac
done
want route "^0x$(printf %04x "$lid3") 00[34] : \(Channel Adapter portguid $pg3: 'softib HCA softib3'\)"
want route "[0-9]+ valid lids dumped"

# ibtracert softib0 -> softib3: both switches, the right ports.
run trace ibtracert "$lid0" "$lid3"
want trace "^From ca \{$(node_guid softib0)\} portnum 1 lid $lid0-$lid0 "
want trace "^\[1\] -> switch port \{$sw0\}\[1\] lid $swlid0-$swlid0 \"chain 0\""
want trace "^\[[34]\] -> switch port \{$sw1\}\[[56]\] lid $swlid1-$swlid1 \"chain 1\""
want trace "^\[2\] -> ca port \{$pg3\}\[1\] lid $lid3-$lid3 "
want trace "^To ca \{$ng3\} portnum 1 lid $lid3-$lid3 "

echo PASS
