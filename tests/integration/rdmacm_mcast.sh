#!/bin/bash
# SPDX-License-Identifier: MIT
# Unmodified mckey (rdmacm-utils) through softib's librdmacm.so.1
# (docs/rdmacm.md "Multicast"): a receiver `mckey -m 224.0.0.1 -b 127.0.0.1`
# joins first (its output says so), then `mckey ... -s` joins and sends 10
# datagrams to the group; both exit 0 and the receiver got them.  The joins
# are SubnAdmSet(MCMemberRecord) of softibd's rdma_cm to the SM's SA, which
# programs the MFTs; every process bounded by `timeout`, stopped by PID.
# Usage: rdmacm_mcast.sh builtin|external
#   builtin   the built-in SM's SA
#   external  OpenSM's SA (softibd --sm external; skipped, 77, without umad)
. "$(dirname "$0")/mgmt_lib.sh"
mode=${1:-builtin}
need_tool mckey rdmacm-utils
[ -e "$SIB_LIB/librdmacm.so.1" ] || fail "no $SIB_LIB/librdmacm.so.1"
if [ "$mode" = external ]; then
	need_umad
	mgmt_start "" external
	opensm_start
else
	mgmt_start "" default
fi
S=$SIB_TMP/receiver.out
C=$SIB_TMP/sender.out

show() {
	echo "--- receiver"; cat "$S"
	echo "--- sender"; cat "$C"
	echo "--- softibd"; tail -20 "$SIB_TMP/softibd.log"
	status 2>/dev/null | grep -E '^rdma_cm|^multicast'
}

# line-buffered, so that "receiving data transfers" shows once joined
client timeout 60 stdbuf -oL mckey -m 224.0.0.1 -b 127.0.0.1 >"$S" 2>&1 &
rcv=$!
SIB_PIDS+=("$rcv")
wait_until 30 grep -q 'receiving data transfers' "$S" || { show; fail "receiver: never joined"; }
client timeout 60 mckey -m 224.0.0.1 -b 127.0.0.1 -s >"$C" 2>&1
crc=$?
[ "$crc" = 0 ] || { show; fail "sender exited $crc"; }
grep -q 'joined dgid: ff12:4001:ffff::1 mlid 0xc' "$C" || { show; fail "sender: not the MGID of 224.0.0.1"; }
wait_until 30 bash -c "! kill -0 $rcv 2>/dev/null" || { show; fail "receiver did not finish"; }
wait "$rcv"
rrc=$?
[ "$rrc" = 0 ] || { show; fail "receiver exited $rrc"; }
grep -q 'data transfers complete' "$S" || { show; fail "receiver: no 'data transfers complete'"; }
# Both bound to 127.0.0.1, both on one port: the SA holds one membership
# for the port, and only the last of the two to go sends its Delete.
status | grep -q '^rdma_cm_mcast joins=2 joined=2 .*leaves=1 ' ||
	{ show; fail "softibd: not two joins and one leave"; }
echo PASS
