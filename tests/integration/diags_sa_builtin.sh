#!/bin/bash
# SPDX-License-Identifier: MIT
# Unmodified saquery against the built-in SM's SA (src/subnet/sa_agent.c),
# default mode, on the embedded fabric and on two_switch.topo: NodeRecords
# (every end port once), PortInfoRecords (each CA LID; one per port),
# PathRecords (every pair of LIDs, and one by --src-to-dst with its GIDs,
# MTU, rate and Reversible as OpenSM prints them), smpquery -G (a GUID
# resolved by PathRecord), ClassPortInfo, IsSM ports
# (the SM's own port only).  The tables span several MADs, so the counts
# show that RMPP delivered them whole; LinkRecords (each link both ways),
# SwitchInfoRecords, GUIDInfoRecords, MCMemberRecords (the IPoIB broadcast
# group); ServiceRecords and an InformInfo subscription a umad client set
# (sa_client), printed as under OpenSM (diags_sa.sh checks the same), and
# a Report of trap 64 when a port comes back, one of the switch's trap
# 128 forwarded, PathRecords with NumbPath 4 and 0 as OpenSM answers them.  A record the SA does not
# serve (LFTRecord) answers "MAD Method/Attribute combination is not
# supported".
# Usage: diags_sa_builtin.sh [TOPOLOGY]
. "$(dirname "$0")/mgmt_lib.sh"
. "$(dirname "$0")/sa_records.sh"
need_tool saquery infiniband-diags
need_umad
mgmt_start "${1:-}" default
for dev in $(ca_devs); do
	[ -z "$(port_field "$dev" 1 peer)" ] || [ "$(port_field "$dev" 1 state)" = ACTIVE ] ||
		fail "$dev port 1 not ACTIVE under the built-in SM: $(status)"
done

count() {
	grep -c "$2" "$SIB_TMP/$1.out"
}

nsw=$(switch_guids | wc -l)
nca=0
for dev in $(ca_devs); do [ -z "$(port_field "$dev" 1 peer)" ] || nca=$((nca + 1)); done
nlid=$((nsw + nca))
devs=($(ca_devs))
first=${devs[0]} last=${devs[$((${#devs[@]} - 1))]}
lid0=$(lid_of "$first")
lid3=$(lid_of "$last")

# NodeRecord (saquery's default query): switches once, CAs once per cabled port.
run nr saquery
[ "$(count nr 'NodeRecord dump')" = "$nlid" ] ||
	fail "saquery: $(count nr 'NodeRecord dump') records, the fabric has $nlid: $(cat "$SIB_TMP/nr.out")"
for g in $(switch_guids) $(for d in $(ca_devs); do node_guid "$d"; done); do
	grep -Eqi "node_guid\.+$g\$" "$SIB_TMP/nr.out" || fail "saquery: no NodeRecord of $g"
done
grep -Eq "NodeDescription\.+softib HCA $last\$" "$SIB_TMP/nr.out" || fail "saquery: no NodeDescription of $last"
run nr1 saquery NR "$lid3"
[ "$(count nr1 'NodeRecord dump')" = 1 ] && grep -Eq "^\s+lid\.+$lid3\$" "$SIB_TMP/nr1.out" ||
	fail "saquery NR $lid3: $(cat "$SIB_TMP/nr1.out")"

# PortInfoRecord: every port (switch ports 0..N, CA ports), each CA LID's.
run pir saquery PIR
[ "$(count pir 'PortInfoRecord dump')" -ge "$nlid" ] ||
	fail "saquery PIR: $(count pir 'PortInfoRecord dump') records, fewer than $nlid ports with a LID"
for dev in $(ca_devs); do
	l=$(lid_of "$dev")
	[ "$l" = 0 ] || grep -Eq "EndPortLid\.+$l\$" "$SIB_TMP/pir.out" || fail "saquery PIR: no record of LID $l ($dev)"
done
run pir1 saquery PIR "$lid3"
[ "$(count pir1 'PortInfoRecord dump')" = 1 ] && grep -Eq "^\s+Lid:\.+$lid3\$" "$SIB_TMP/pir1.out" &&
	grep -Eq 'LinkState:\.+Active' "$SIB_TMP/pir1.out" || fail "saquery PIR $lid3: $(cat "$SIB_TMP/pir1.out")"

# PathRecord: one for every pair of LIDs (LMC 0), and lid0 -> lid3.
run pr saquery PR
n=$(count pr 'PathRecord dump')
[ "$n" = $((nlid * nlid)) ] || fail "saquery PR: $n records for $nlid LIDs, want $((nlid * nlid)): $(cat "$SIB_TMP/pr.out")"
run p saquery -p
[ "$(count p 'PathRecord dump')" = "$n" ] || fail "saquery -p: $(count p 'PathRecord dump') records, PR gave $n"
run pr03 saquery PR --src-to-dst "$lid0:$lid3"
[ "$(count pr03 'PathRecord dump')" = 1 ] || fail "saquery PR $lid0 -> $lid3: $(cat "$SIB_TMP/pr03.out")"
want pr03 "dlid\.+$lid3\$"
want pr03 "slid\.+$lid0\$"
want pr03 "dgid\.+$(python3 -c "import ipaddress, sys; print(ipaddress.IPv6Address((0xfe80 << 112) | int(sys.argv[1], 16)))" "$(port_guid "$last" 1)")\$"
want pr03 'num_path_revers\.+0x80$'	# Reversible
want pr03 'pkey\.+0xFFFF$'
want pr03 'mtu\.+0x85$'			# exactly 4096
want pr03 'rate\.+0x87$'		# exactly 40 Gb/s (4x QDR)
want pr03 'pkt_life\.+0x92$'		# exactly 18

# The diags' GUID lookups (-G: a PathRecord by DGID) resolve through the SA.
run sg smpquery -G nodeinfo "$(port_guid "$last" 1)"
want sg "^# Node info: Lid $lid3\$"

# ClassPortInfo of the SA.
run cpi saquery CPI
want cpi 'Class version\.+2$'

# IsSM ports: the built-in SM's port (LID 1) only.
run issm saquery -s
[ "$(sed -n '/^IsSM ports/,/^IsSMdisabled/p' "$SIB_TMP/issm.out" | grep -c 'PortInfoRecord dump')" = 1 ] &&
	grep -Eq 'EndPortLid\.+1$' "$SIB_TMP/issm.out" || fail "saquery -s: $(cat "$SIB_TMP/issm.out")"

# LinkRecord: each link of the file once per direction.
links=$(topo_norm "$(topo_file)" | grep -c '^link')
run lr saquery LR
[ "$(count lr 'LinkRecord dump')" = $((2 * links)) ] ||
	fail "saquery LR: $(count lr 'LinkRecord dump') records for $links links: $(cat "$SIB_TMP/lr.out")"

# SwitchInfoRecord: one per switch; GUIDInfoRecord: one per end port.
run swi saquery SWIR
[ "$(count swi 'SwitchInfoRecord dump')" = "$nsw" ] || fail "saquery SWIR: $(cat "$SIB_TMP/swi.out")"
run gir saquery GIR
[ "$(count gir 'GUIDInfo Record dump')" = "$nlid" ] || fail "saquery GIR: $(cat "$SIB_TMP/gir.out")"

# MCMemberRecord: the IPoIB broadcast group the SM made, as OpenSM's SA
# shows it (saquery MCMR and -g; no member has joined).
run mcmr saquery MCMR
for f in 'MGID\.+ff12:401b:ffff::ffff:ffff' 'PortGid\.+::$' 'qkey\.+0xb1b$' 'mlid\.+0xc000$' \
	'mtu\.+0x84$' 'rate\.+0x83$' 'pkt_life\.+0x92$' 'Scope\.+0x2$' 'JoinState\.+0x0$'; do
	grep -Eq "$f" "$SIB_TMP/mcmr.out" || fail "saquery MCMR: no $f: $(cat "$SIB_TMP/mcmr.out")"
done
run mcg saquery -g
grep -Eq 'Mlid\.+0xC000$' "$SIB_TMP/mcg.out" || fail "saquery -g: $(cat "$SIB_TMP/mcg.out")"

# ServiceRecords and InformInfo (set by sa_client), a Report of trap 64.
sa_records_check "${devs[1]}" "${devs[2]}" "${devs[3]}" builtin

# Not served (LFTRecord): a clear status, not a hang.
if client timeout 20 saquery LFTR >"$SIB_TMP/lftr.out" 2>&1; then
	fail "saquery LFTR succeeded: the SA serves LFTRecords now, extend this test: $(cat "$SIB_TMP/lftr.out")"
fi
want lftr 'MAD Method/Attribute combination is not supported'
# softib status counts what the SA answered (and the errors above).
st=$("$SIB_BIN/softib" status) || fail "softibd died"
answers=$(echo "$st" | sed -n 's/^subnet .* sa_answers=\([0-9]*\) sa_errors=\([0-9]*\) .*/\1/p')
errors=$(echo "$st" | sed -n 's/^subnet .* sa_errors=\([0-9]*\) .*/\1/p')
[ "${answers:-0}" -ge 10 ] && [ "${errors:-0}" -ge 1 ] || fail "softib status: SA counters: $st"
echo PASS
