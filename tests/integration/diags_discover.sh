#!/bin/bash
# SPDX-License-Identifier: MIT
# Unmodified ibnetdiscover prints the same nodes (type, GUID, port count)
# and links (GUID[port] to GUID[port]) as the topology file softibd was
# started on, and iblinkinfo shows every link from both ends as
# Active/LinkUp, in the built-in mode (MODE default) or after `opensm -o`
# (MODE external).  Both tools walk the fabric with directed-route SMPs.
# Usage: diags_discover.sh default|TOPOLOGY default|external
. "$(dirname "$0")/mgmt_lib.sh"
topo=${1:-default}
[ "$topo" = default ] && topo=
mode=${2:-default}
need_umad
need_tool ibnetdiscover infiniband-diags
mgmt_start "$topo" "$mode"
if [ "$mode" = external ]; then opensm_once; fi
file=$(topo_file)
client timeout 30 ibnetdiscover >"$SIB_TMP/disc.out" 2>"$SIB_TMP/disc.err" ||
	fail "ibnetdiscover: $(cat "$SIB_TMP/disc.err")"
topo_norm "$file" >"$SIB_TMP/want"
topo_norm "$SIB_TMP/disc.out" >"$SIB_TMP/got"
grep -q '^node' "$SIB_TMP/want" || fail "nothing parsed from $file"
diff -u "$SIB_TMP/want" "$SIB_TMP/got" || fail "ibnetdiscover differs from $file: $(cat "$SIB_TMP/disc.out")"

# iblinkinfo: each link twice (one line per end), all Active/LinkUp, and
# every CA port GUID of the file on an Active line.
links=$(grep -c '^link' "$SIB_TMP/want")
client timeout 30 iblinkinfo >"$SIB_TMP/link.out" 2>&1 || fail "iblinkinfo: $(cat "$SIB_TMP/link.out")"
active=$(grep -c 'Active/ *LinkUp' "$SIB_TMP/link.out")
[ "$active" = $((2 * links)) ] || fail "iblinkinfo: $active Active/LinkUp ends, want $((2 * links)): $(cat "$SIB_TMP/link.out")"
for dev in $(ca_devs); do
	[ -n "$(port_field "$dev" 1 peer)" ] || continue
	g=$(port_guid "$dev" 1)
	grep -Eq "^ *$g .*Active/ *LinkUp" "$SIB_TMP/link.out" || fail "iblinkinfo: no Active line for $dev ($g)"
done
echo PASS
