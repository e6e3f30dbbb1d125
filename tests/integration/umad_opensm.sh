#!/bin/bash
# SPDX-License-Identifier: MIT
# Unmodified OpenSM on softib's libibumad.so.3 against softibd --sm external:
# `opensm -o` brings the default fabric to SUBNET UP (CA ports ACTIVE with
# the LIDs it chose), then a running OpenSM holds the ISSM file (IsSM seen
# by ibstat and `saquery -s`) and answers saquery with whole RMPP tables.
. "$(dirname "$0")/lib.sh"
start_daemon --sm external
export OSM_CACHE_DIR=$SIB_TMP/osm-cache OSM_TMP_DIR=$SIB_TMP
mkdir -p "$OSM_CACHE_DIR"

client timeout 20 ibstat softib0 1 | grep -q 'State: Initializing' || fail "ports not waiting in INIT"

client timeout 60 opensm -o -f "$SIB_TMP/osm-once.log" >"$SIB_TMP/osm-once.out" 2>&1 ||
	fail "opensm -o exited $?: $(tail -5 "$SIB_TMP/osm-once.log")"
grep -q 'SUBNET UP' "$SIB_TMP/osm-once.log" || fail "opensm -o: no SUBNET UP: $(grep ERR "$SIB_TMP/osm-once.log" | head)"
out=$(client timeout 20 ibstat) || fail "ibstat exited $?"
[ "$(echo "$out" | grep -c 'State: Active')" = 4 ] || fail "not 4 ACTIVE ports after opensm -o: $out"
[ "$(echo "$out" | grep -Ec 'Base lid: [1-9]')" = 4 ] || fail "LIDs not assigned"

# not through client(): $! must be opensm itself, stopped by PID
LD_PRELOAD=$SIB_PRELOAD opensm -d2 -f "$SIB_TMP/osm.log" >"$SIB_TMP/osm.out" 2>&1 &
osm=$!
SIB_PIDS+=("$osm")
has_sm_bit() { client ibstat softib0 1 | grep -Eq 'Capability mask: 0x[0-9a-f]*[2367abef]$'; }
wait_until 30 grep -q 'SUBNET UP' "$SIB_TMP/osm.log" || fail "running opensm: no SUBNET UP"
wait_until 10 has_sm_bit || fail "IsSM not set while OpenSM holds the ISSM file"
grep -q 'ERR 5431' "$SIB_TMP/osm.log" && fail "OpenSM could not open the ISSM file"

out=$(client timeout 20 saquery -s) || fail "saquery -s exited $?"
echo "$out" | grep -q 'capability_mask' || fail "saquery -s: no IsSM port"
n=$(client timeout 20 saquery | grep -c '^NodeRecord dump') || fail "saquery"
[ "$n" = 5 ] || fail "saquery: $n NodeRecords, want 5 (4 CAs, 1 switch)"
n=$(client timeout 20 saquery PR | grep -c '^PathRecord dump') || fail "saquery PR"
[ "$n" -ge 16 ] || fail "saquery PR: $n PathRecords (RMPP table cut short?)"
echo "NodeRecords 5, PathRecords $n"
out=$(client timeout 20 sminfo) || fail "sminfo exited $?"
echo "$out" | grep -q 'SMINFO_MASTER' || fail "sminfo: $out"

no_sm_bit() { ! has_sm_bit; }
kill -TERM "$osm"
wait_until 20 bash -c "! kill -0 $osm 2>/dev/null" || fail "opensm did not stop"
wait_until 10 no_sm_bit || fail "IsSM still set after OpenSM exited: $(client ibstat softib0 1 | grep Capab)"
alive "$SIB_DAEMON_PID" || fail "softibd died"
echo PASS
