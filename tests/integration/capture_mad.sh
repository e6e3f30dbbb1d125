#!/bin/bash
# SPDX-License-Identifier: MIT
# QP0/QP1 traffic is captured (issue 16: "make QP0/QP1 traffic capturable"):
# `softib capture -d softib1 -p 1` started before unmodified saquery,
# perfquery and smpquery on softib1 shows their MADs as the packets on that
# port's link, decoded by tshark: the SA GetTable and its RMPP segments
# (QP1, VL0, Q_Key 0x80010000), the PMA's requests and answers, and the
# LID-routed SMP to the SM's LID and its answer (QP0, VL15,
# Q_Key 0); every record's ICRC and VCRC are valid (test_capture --check).
# Exit 77 (skipped) only if tshark is not installed.
. "$(dirname "$0")/mgmt_lib.sh"
command -v tshark >/dev/null || { echo "SKIP: tshark not installed (Debian package tshark)"; exit 77; }
command -v saquery >/dev/null || fail "saquery not installed (Debian package infiniband-diags)"
start_daemon
cap=$SIB_TMP/mad.pcap
"$SIB_BIN/softib" capture -w "$cap" -d softib1 -p 1 2>"$SIB_TMP/tool.err" &
tool=$!
SIB_PIDS+=("$tool")
wait_until 10 grep -q capturing "$SIB_TMP/tool.err" || fail "softib capture: $(cat "$SIB_TMP/tool.err")"
lid=$(port_field softib1 1 lid)
client timeout 20 saquery -C softib1 NR >"$SIB_TMP/nr.out" 2>&1 || fail "saquery: $(cat "$SIB_TMP/nr.out")"
client timeout 20 perfquery -C softib1 >"$SIB_TMP/pq.out" 2>&1 || fail "perfquery: $(cat "$SIB_TMP/pq.out")"
client timeout 20 smpquery -C softib1 nodeinfo 1 >"$SIB_TMP/sq.out" 2>&1 || fail "smpquery: $(cat "$SIB_TMP/sq.out")"
kill -INT "$tool"
wait "$tool" || fail "softib capture after SIGINT: $(cat "$SIB_TMP/tool.err")"
tshark -r "$cap" -T fields -E separator='|' -e infiniband.lrh.vl -e infiniband.lrh.slid \
	-e infiniband.lrh.dlid -e infiniband.bth.destqp -e infiniband.deth.q_key -e _ws.col.Info \
	2>/dev/null >"$SIB_TMP/mads" || fail "tshark could not read $cap"
cat "$SIB_TMP/mads"
has() { # REGEX: a line of the decode matches
	grep -Eq "$1" "$SIB_TMP/mads" || fail "no MAD like /$1/ in the capture: $(cat "$SIB_TMP/mads")"
}
[ -n "$lid" ] || fail "no LID for softib1: $(status)"
has "^0x00\|$lid\|1\|0x0*1\|0x0*80010000\|.*SubnAdmGetTable\(NodeRecord\)"
has "^0x00\|1\|$lid\|0x0*1\|0x0*80010000\|.*SubnAdmGetTableResp\(NodeRecord\)"
has "^0x0f\|$lid\|1\|0x0*0\|0x0*\|.*SubnGet\(NodeInfo\)"
has "^0x0f\|1\|$lid\|0x0*0\|0x0*\|.*SubnGetResp\(NodeInfo\)"
has "PERF \(PortCounters\)"
# the request before its answer
[ "$(grep -n 'SubnAdmGetTable(' "$SIB_TMP/mads" | head -1 | cut -d: -f1)" -lt \
  "$(grep -n 'SubnAdmGetTableResp' "$SIB_TMP/mads" | head -1 | cut -d: -f1)" ] || fail "answer before request"
"$SIB_BIN/test_capture" --check "$cap" || fail "bad ICRC/VCRC in the MAD capture"
echo PASS
