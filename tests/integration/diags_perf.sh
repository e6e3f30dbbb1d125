#!/bin/bash
# SPDX-License-Identifier: MIT
# Unmodified perfquery on two_switch.topo under a running OpenSM: the PMA
# counters of softib0's and softib3's ports move with an ibv_rc_pingpong
# between them across both switches (at least the packets and 4-byte words
# it sent); -x shows the extended counters and agrees; -R and -x -R reset
# them; a fresh fabric has LinkDownedCounter 0 and no ibqueryerrors
# findings.  (Switch ports count only the MADs they forward, not data packets:
# not checked here.)
. "$(dirname "$0")/mgmt_lib.sh"
need_tool perfquery infiniband-diags
two_switch_sm
lid0=$(lid_of softib0)
lid3=$(lid_of softib3)

# counter OUTPUT NAME: a counter's value from a perfquery print-out.
counter() {
	awk -F. -v k="$2:" 'index($0, k) == 1 { print $NF; exit }' "$1"
}
# query NAME ARGS...: perfquery ARGS into $SIB_TMP/NAME.out.
query() {
	local name=$1; shift
	client timeout 20 perfquery "$@" >"$SIB_TMP/$name.out" 2>&1 || fail "perfquery $*: $(cat "$SIB_TMP/$name.out")"
	grep -q '^PortXmitData:' "$SIB_TMP/$name.out" || fail "perfquery $*: no counters: $(cat "$SIB_TMP/$name.out")"
}
# A fresh fabric under OpenSM has no errors: OpenSM's first sweep retrains
# links (PortState Down for its op-VL change), which is no LinkDowned.
client timeout 60 ibqueryerrors >"$SIB_TMP/qe.out" 2>&1 || fail "ibqueryerrors: $(cat "$SIB_TMP/qe.out")"
grep -q '^## Summary: .* 0 bad nodes found' "$SIB_TMP/qe.out" || fail "ibqueryerrors on a fresh fabric: $(cat "$SIB_TMP/qe.out")"
query a0 # the local port: softib0 port 1
grep -Eq '^LinkDownedCounter:\.+0$' "$SIB_TMP/a0.out" || fail "LinkDownedCounter of a fresh port: $(cat "$SIB_TMP/a0.out")"
grep -Eq "^# Port counters: Lid $lid0 port 1" "$SIB_TMP/a0.out" || fail "perfquery: $(head -1 "$SIB_TMP/a0.out")"
query b0 "$lid3" 1
rc_pingpong softib0 softib3 -s 4096
query a1
query b1 "$lid3" 1
# 500 iterations of 4096 bytes each way: 512,000 words and 500 packets at
# least (headers, ACKs and MADs only add).
words=$((500 * 4096 / 4))
for c in PortXmitData:a PortRcvData:b; do
	k=${c%%:*}; f=${c##*:}
	v0=$(counter "$SIB_TMP/${f}0.out" "$k"); v1=$(counter "$SIB_TMP/${f}1.out" "$k")
	[ $((v1 - v0)) -ge "$words" ] || fail "$k ($f: a = softib0, b = softib3) grew by $((v1 - v0)) words, want >= $words"
done
for c in PortXmitPkts:a PortRcvPkts:a PortXmitPkts:b PortRcvPkts:b; do
	k=${c%%:*}; f=${c##*:}
	v0=$(counter "$SIB_TMP/${f}0.out" "$k"); v1=$(counter "$SIB_TMP/${f}1.out" "$k")
	[ $((v1 - v0)) -ge 500 ] || fail "$k ($f: a = softib0, b = softib3) grew by $((v1 - v0)), want >= 500"
done

# -x: the 64-bit counters of the same port, at least the 32-bit ones.
query x0 -x
grep -Eq "^# Port extended counters: Lid $lid0 port 1" "$SIB_TMP/x0.out" || fail "perfquery -x: $(head -1 "$SIB_TMP/x0.out")"
[ "$(counter "$SIB_TMP/x0.out" PortXmitData)" -ge "$(counter "$SIB_TMP/a1.out" PortXmitData)" ] ||
	fail "perfquery -x PortXmitData below the 32-bit counter"
grep -q '^PortUnicastXmitPkts:' "$SIB_TMP/x0.out" || fail "perfquery -x: no PortUnicastXmitPkts"

# -R: reset softib3's counters; then they hold only the few MADs since.
client timeout 20 perfquery -R "$lid3" 1 >"$SIB_TMP/r.out" 2>&1 || fail "perfquery -R: $(cat "$SIB_TMP/r.out")"
query b2 "$lid3" 1
[ "$(counter "$SIB_TMP/b2.out" PortXmitPkts)" -lt 20 ] || fail "perfquery -R did not reset: $(cat "$SIB_TMP/b2.out")"
[ "$(counter "$SIB_TMP/b2.out" PortRcvData)" -lt 2000 ] || fail "perfquery -R did not reset PortRcvData: $(cat "$SIB_TMP/b2.out")"
client timeout 20 perfquery -x -R "$lid3" 1 >"$SIB_TMP/rx.out" 2>&1 || fail "perfquery -x -R: $(cat "$SIB_TMP/rx.out")"
query bx2 -x "$lid3" 1
[ "$(counter "$SIB_TMP/bx2.out" PortXmitData)" -lt "$words" ] ||
	fail "perfquery -x -R did not reset the extended counters: $(cat "$SIB_TMP/bx2.out")"
echo PASS
