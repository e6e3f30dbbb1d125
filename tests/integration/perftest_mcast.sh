#!/bin/bash
# SPDX-License-Identifier: MIT
# perftest's multicast mode (ib_send_bw -c UD -g, unmodified) joins its
# group through the SA (a SubnAdmSet of an MCMemberRecord that creates it),
# the SM programs the MFTs from the membership and the sender's packets
# reach the receiver: under the built-in SM's SA (default mode) and under
# OpenSM's (external mode; skipped without umad support, as the other
# OpenSM tests).  Usage: perftest_mcast.sh builtin|external
. "$(dirname "$0")/mgmt_lib.sh"
mode=${1:-builtin}
need_tool ib_send_bw perftest
if [ "$mode" = external ]; then
	need_umad
	mgmt_start "" external
	opensm_start
else
	mgmt_start "" default
fi
pair_run softib0 softib1 ib_send_bw -c UD -g
grep -Eq 'remote address: LID 0xc0[0-9a-f]{2} QPN 0xffffff' "$SIB_TMP/client.out" ||
	fail "the client did not send to a multicast LID: $(cat "$SIB_TMP/client.out")"
echo PASS
