#!/bin/bash
# SPDX-License-Identifier: MIT
# Unmodified infiniband-diags over softib's libibumad.so.3 (LD_LIBRARY_PATH)
# and softibd's MAD router, on the default fabric with the built-in SM:
# smpquery (LID routed and directed route), perfquery, ibping (server and
# client), ibnetdiscover, sminfo (the built-in SM at LID 1 is visible),
# ibportstate speed + reset (training honours LinkSpeedEnabled); values
# checked against the fabric.
. "$(dirname "$0")/lib.sh"
start_daemon

out=$(client timeout 20 smpquery nodeinfo 3 2>&1) || fail "smpquery nodeinfo 3 exited $?: $out; $(status)"
echo "$out"
echo "$out" | grep -q 'NodeType:\.*Channel Adapter' || fail "nodeinfo: node type"
echo "$out" | grep -q 'Guid:\.*0x5eed000000000020' || fail "nodeinfo: node GUID of LID 3"
echo "$out" | grep -q 'PortGuid:\.*0x5eed000000000021' || fail "nodeinfo: port GUID of LID 3"

out=$(client timeout 20 smpquery -D nodedesc 0 2>&1) || fail "smpquery -D nodedesc 0 exited $?: $out"
echo "$out"
echo "$out" | grep -q 'softib HCA softib0' || fail "nodedesc of the local node"

out=$(client timeout 20 smpquery -D nodeinfo 0,1) || fail "smpquery -D nodeinfo 0,1 exited $?"
echo "$out" | grep -q 'NodeType:\.*Switch' || fail "DR one hop: not the switch"

out=$(client timeout 20 smpquery portinfo 5 1) || fail "smpquery portinfo 5 1 exited $?"
echo "$out" | grep -Eq '^Lid:\.+5$' || fail "portinfo: LID"
echo "$out" | grep -Eq '^SMLid:\.+1$' || fail "portinfo: SM LID"
echo "$out" | grep -q 'LinkState:\.*Active' || fail "portinfo: state"

# sminfo: the built-in SM answers SMInfo on the switch's port 0 (LID 1)
out=$(client timeout 20 sminfo 2>&1) || fail "sminfo exited $?: $out; $(status)"
echo "$out"
echo "$out" | grep -Eq '^sminfo: sm lid 1 sm guid 0x5eed000000000100, activity count [1-9][0-9]* priority 15 state 3 SMINFO_MASTER$' ||
	fail "sminfo: $out"
out=$(client timeout 20 smpquery portinfo 1 0) || fail "smpquery portinfo 1 0 exited $?"
cap=$(echo "$out" | sed -n 's/^CapMask:\.*\(0x[0-9a-f]*\).*/\1/p')
[ -n "$cap" ] && (( cap & 0x2 )) || fail "portinfo of LID 1: no IsSM (0x2): $out"

# PMA: counters that move with MAD traffic to the port
a=$(client timeout 20 perfquery -x 4 1 | sed -n 's/^PortRcvPkts:\.*//p') || fail "perfquery -x"
client timeout 20 smpquery nodeinfo 4 >/dev/null || fail "smpquery nodeinfo 4"
b=$(client timeout 20 perfquery -x 4 1 | sed -n 's/^PortRcvPkts:\.*//p') || fail "perfquery -x"
echo "PortRcvPkts of LID 4 port 1: $a -> $b"
[ -n "$a" ] && [ -n "$b" ] && [ "$b" -gt "$a" ] || fail "PortRcvPkts did not move ($a -> $b)"

# ibping: a server on softib1 answers a client on softib0
client timeout 60 ibping -S -C softib1 >"$SIB_TMP/ibping_srv" 2>&1 &
SIB_PIDS+=("$!")
ok=
for _ in $(seq 20); do
	out=$(client timeout 20 ibping -C softib0 -c 3 3 2>&1) && echo "$out" | grep -q '3 received' && { ok=1; break; }
	sleep 0.2 # the server may not have registered yet
done
echo "$out"
[ -n "$ok" ] || fail "ibping: $out / server: $(cat "$SIB_TMP/ibping_srv")"

out=$(client timeout 20 ibnetdiscover) || fail "ibnetdiscover exited $?"
for g in 10 20 30 40; do
	echo "$out" | grep -q "caguid=0x5eed0000000000$g" || fail "ibnetdiscover: CA $g missing"
done
echo "$out" | grep -q 'switchguid=0x5eed000000000100' || fail "ibnetdiscover: switch missing"
# LinkSpeedEnabled SDR on the switch's port 4 (to softib3), then reset:
# the link trains at 2.5 Gbps (the highest both ends enable), both ends
out=$(client timeout 20 ibportstate 1 4 speed 1 2>&1) || fail "ibportstate 1 4 speed 1 exited $?: $out"
out=$(client timeout 20 ibportstate 1 4 reset 2>&1) || fail "ibportstate 1 4 reset exited $?: $out"
ok=
for _ in $(seq 50); do
	out=$(client timeout 20 ibportstate 1 4 2>&1) &&
		[ "$(echo "$out" | grep -Ec '^LinkSpeedActive:\.+2\.5 Gbps$')" = 2 ] &&
		echo "$out" | grep -Eq '^LinkState:\.+Active$' && { ok=1; break; }
	sleep 0.1 # the built-in SM makes it Active again
done
echo "$out"
[ -n "$ok" ] || fail "ibportstate 1 4 after speed 1 + reset: not Active at 2.5 Gbps: $out"
out=$(client ibv_devinfo -v -d softib3 2>&1)
echo "$out" | grep -Eq 'active_speed:[[:space:]]+2\.5 Gbps' || fail "ibv_devinfo softib3: $out"

alive "$SIB_DAEMON_PID" || fail "softibd died"
echo PASS
