#!/bin/bash
# SPDX-License-Identifier: MIT
# Unmodified saquery against OpenSM's SA on two_switch.topo: NodeRecord
# (one per switch and per cabled CA port, exactly), PortInfoRecord,
# PathRecord (every pair of LIDs, and softib0 -> softib3), LinkRecord
# (each link both ways), MCMemberRecord (the IPoIB broadcast group OpenSM
# creates) and the IsSM ports.  The tables span
# several MADs, so the counts show that RMPP delivered them whole.
# ServiceRecords and an InformInfo subscription a umad client set, and a
# Report of trap 64, a Report of a switch's trap 128 OpenSM forwards, and
# PathRecords with NumbPath 4 and 0 (sa_records.sh: the built-in SA is
# held to the same).
. "$(dirname "$0")/mgmt_lib.sh"
. "$(dirname "$0")/sa_records.sh"
need_tool saquery infiniband-diags
two_switch_sm

count() {
	grep -c "$2" "$SIB_TMP/$1.out"
}

nsw=$(switch_guids | wc -l)
nca=0
for dev in $(ca_devs); do [ -z "$(port_field "$dev" 1 peer)" ] || nca=$((nca + 1)); done
nlid=$((nsw + nca))
lid0=$(lid_of softib0)
lid3=$(lid_of softib3)

# NodeRecord: switches once (port 0), CAs once per cabled port.
run nr saquery NR
[ "$(count nr 'NodeRecord dump')" = "$nlid" ] ||
	fail "saquery NR: $(count nr 'NodeRecord dump') records, the fabric has $nlid: $(cat "$SIB_TMP/nr.out")"
for g in $(switch_guids) $(for d in $(ca_devs); do node_guid "$d"; done); do
	grep -Eqi "node_guid\.+$g\$" "$SIB_TMP/nr.out" || fail "saquery NR: no record of $g"
done
grep -Eq 'NodeDescription\.+softib HCA softib3$' "$SIB_TMP/nr.out" || fail "saquery NR: no NodeDescription of softib3"

# PortInfoRecord: at least every LID's port, each CA LID among them.
run pir saquery PIR
[ "$(count pir 'PortInfoRecord dump')" -ge "$nlid" ] ||
	fail "saquery PIR: $(count pir 'PortInfoRecord dump') records, fewer than $nlid ports with a LID"
for dev in $(ca_devs); do
	l=$(lid_of "$dev")
	[ "$l" = 0 ] || grep -Eq "EndPortLid\.+$l\$" "$SIB_TMP/pir.out" || fail "saquery PIR: no record of LID $l ($dev)"
done

# PathRecord: one for every pair of LIDs (LMC 0), and the one from
# softib0 to softib3.
run pr saquery PR
n=$(count pr 'PathRecord dump')
[ "$n" = $((nlid * nlid)) ] || fail "saquery PR: $n records for $nlid LIDs, want $((nlid * nlid)): $(cat "$SIB_TMP/pr.out")"
run pr03 saquery PR --src-to-dst "$lid0:$lid3"
grep -Eq "dlid\.+$lid3\$" "$SIB_TMP/pr03.out" && grep -Eq "slid\.+$lid0\$" "$SIB_TMP/pr03.out" ||
	fail "saquery PR $lid0 -> $lid3: $(cat "$SIB_TMP/pr03.out")"
grep -Eq "dgid\.+$(python3 -c "import ipaddress, sys; print(ipaddress.IPv6Address((0xfe80 << 112) | int(sys.argv[1], 16)))" "$(port_guid softib3 1)")\$" \
	"$SIB_TMP/pr03.out" || fail "saquery PR $lid0 -> $lid3: wrong DGID: $(cat "$SIB_TMP/pr03.out")"

# LinkRecord: each link of the file once per direction.
links=$(topo_norm "$(topo_file)" | grep -c '^link')
run lr saquery LR
[ "$(count lr 'LinkRecord dump')" = $((2 * links)) ] ||
	fail "saquery LR: $(count lr 'LinkRecord dump') records for $links links: $(cat "$SIB_TMP/lr.out")"

# MCMemberRecord: OpenSM's IPoIB broadcast group of the default partition.
run mcg saquery -g
grep -q 'MGID\.*ff12:401b:ffff::ffff:ffff' "$SIB_TMP/mcg.out" || fail "saquery -g: no broadcast group: $(cat "$SIB_TMP/mcg.out")"
grep -Eq 'Mlid\.+0xC000$' "$SIB_TMP/mcg.out" || fail "saquery -g: broadcast group not at MLID 0xC000: $(cat "$SIB_TMP/mcg.out")"
run mcm saquery MCMR

# IsSM ports: OpenSM's own port, which holds the ISSM device.
run issm saquery -s
grep -Eq "EndPortLid\.+$lid0\$" "$SIB_TMP/issm.out" || fail "saquery -s: the SM port (LID $lid0) is not IsSM: $(cat "$SIB_TMP/issm.out")"

# ServiceRecords and InformInfo (set by sa_client), a Report of trap 64.
devs=($(ca_devs))
sa_records_check "${devs[1]}" "${devs[2]}" "${devs[3]}" opensm
echo PASS
