#!/bin/bash
# SPDX-License-Identifier: MIT
# Unmodified ibping on two_switch.topo under a running OpenSM: a server
# (`ibping -S`, vendor class 0x32 registered through umad_register_oui) on
# softib3 answers a client on softib0 across both switches, by LID and by
# port GUID (-G, resolved through the SA); a LID with no server answers
# nothing.
. "$(dirname "$0")/mgmt_lib.sh"
need_tool ibping infiniband-diags
two_switch_sm
lid3=$(lid_of softib3)

# The server is ready once its agent is registered: one more MAI filter in
# softibd (a fixed sleep lost the first ping on a loaded machine).
mai_filters() { status | sed -n 's/^mai .* filters=\([0-9]*\).*/\1/p'; }
f0=$(mai_filters)
LD_PRELOAD=$SIB_PRELOAD timeout 60 ibping -C softib3 -P 1 -S >"$SIB_TMP/server.out" 2>&1 &
srv=$!
SIB_PIDS+=("$srv")
wait_until 20 eval '[ "$(mai_filters)" -gt "$f0" ]' ||
	fail "ibping -S registered no agent: $(cat "$SIB_TMP/server.out"); $(status)"
alive "$srv" || fail "ibping -S exited: $(cat "$SIB_TMP/server.out")"

client timeout 20 ibping -C softib0 -P 1 -c 3 "$lid3" >"$SIB_TMP/ping.out" 2>&1 || fail "ibping $lid3: $(cat "$SIB_TMP/ping.out")"
[ "$(grep -c "^Pong from .*(Lid $lid3)" "$SIB_TMP/ping.out")" = 3 ] || fail "ibping: not 3 pongs from LID $lid3: $(cat "$SIB_TMP/ping.out")"
grep -q '3 packets transmitted, 3 received, 0% packet loss' "$SIB_TMP/ping.out" || fail "ibping: $(cat "$SIB_TMP/ping.out")"

client timeout 20 ibping -C softib0 -P 1 -c 2 -G "$(port_guid softib3 1)" >"$SIB_TMP/pingg.out" 2>&1 ||
	fail "ibping -G: $(cat "$SIB_TMP/pingg.out")"
[ "$(grep -c "^Pong from .*(Lid $lid3)" "$SIB_TMP/pingg.out")" = 2 ] || fail "ibping -G: $(cat "$SIB_TMP/pingg.out")"

# No server on softib2: no pong, and ibping says so.
client timeout 20 ibping -C softib0 -P 1 -c 1 "$(lid_of softib2)" >"$SIB_TMP/none.out" 2>&1
! grep -q '^Pong' "$SIB_TMP/none.out" || fail "a pong without a server: $(cat "$SIB_TMP/none.out")"
grep -q '1 packets transmitted, 0 received' "$SIB_TMP/none.out" || fail "ibping without a server: $(cat "$SIB_TMP/none.out")"
alive "$srv" || fail "the ibping server died: $(cat "$SIB_TMP/server.out")"
echo PASS
