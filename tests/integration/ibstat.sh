#!/bin/bash
# SPDX-License-Identifier: MIT
# Unmodified ibstat (infiniband-diags) on softib's libibumad.so.3 through
# LD_LIBRARY_PATH, against a private softibd on the default fabric: CA
# list, port GUIDs, one port, and values that follow the fabric live.
. "$(dirname "$0")/lib.sh"
start_daemon

out=$(client timeout 20 ibstat -l) || fail "ibstat -l exited $?"
echo "$out"
[ "$out" = "$(printf 'softib0\nsoftib1\nsoftib2\nsoftib3')" ] || fail "ibstat -l: wrong CA list"

out=$(client timeout 20 ibstat -p) || fail "ibstat -p exited $?"
echo "$out"
[ "$out" = "$(printf '0x5eed000000000011\n0x5eed000000000021\n0x5eed000000000031\n0x5eed000000000041')" ] ||
	fail "ibstat -p: wrong port GUIDs"

out=$(client timeout 20 ibstat) || fail "ibstat exited $?"
echo "$out" | head -20
[ "$(echo "$out" | grep -c "^CA 'softib")" = 4 ] || fail "not 4 CAs"
[ "$(echo "$out" | grep -c 'State: Active')" = 4 ] || fail "not 4 active ports"
[ "$(echo "$out" | grep -c 'Physical state: LinkUp')" = 4 ] || fail "not 4 LinkUp ports"
[ "$(echo "$out" | grep -c 'SM lid: 1$')" = 4 ] || fail "SM LID"
[ "$(echo "$out" | grep -c 'Link layer: InfiniBand')" = 4 ] || fail "link layer"
for i in 0 1 2 3; do
	echo "$out" | grep -q "Node GUID: 0x5eed0000000000$((i + 1))0" || fail "node GUID of softib$i"
	echo "$out" | grep -q "Base lid: $((i + 2))$" || fail "LID of softib$i"
done

out=$(client timeout 20 ibstat softib2 1) || fail "ibstat softib2 1 exited $?"
echo "$out"
echo "$out" | grep -q "^CA: 'softib2'" || fail "ibstat softib2 1: CA"
echo "$out" | grep -q 'Base lid: 4$' || fail "ibstat softib2 1: LID"
echo "$out" | grep -q 'Port GUID: 0x5eed000000000031' || fail "ibstat softib2 1: port GUID"
echo "$out" | grep -q 'Rate: 40$' || fail "ibstat softib2 1: rate (4X QDR)"

# Live: a port taken down is Down/Disabled at once, and back up.
"$SIB_BIN/softib" port softib2 1 down || fail "softib port down"
out=$(client timeout 20 ibstat softib2 1) || fail "ibstat after down exited $?"
echo "$out" | grep -q 'State: Down' || fail "port down not seen: $out"
echo "$out" | grep -q 'Physical state: Disabled' || fail "port disabled not seen"
"$SIB_BIN/softib" port softib2 1 up || fail "softib port up"
client timeout 20 ibstat softib2 1 | grep -q 'State: Active' || fail "port up not seen"

client timeout 20 ibstat nosuch0 >/dev/null 2>&1 && fail "unknown CA accepted"
client timeout 20 ibstat softib0 2 >/dev/null 2>&1 && fail "port 2 of a 1-port CA accepted"
alive "$SIB_DAEMON_PID" || fail "softibd died"
echo PASS
