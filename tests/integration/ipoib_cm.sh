#!/bin/bash
# SPDX-License-Identifier: MIT
# IPoIB connected mode (RFC 4755, docs/ipoib.md "Connected mode"): two network
# namespaces made here (unique names, removed on exit), softibd on the host,
# `softib ipoib softib0 1 up --tun ib0 --mode connected` in one and softib1 in
# the other.  Checks: the up line says the mode and MTU 65520, ib0 has MTU
# 65520, ping both ways (a 30000-byte ping too: one RC message), 100 MB over
# TCP checked end to end by SHA-256, `softib capture` of softib0's port decoded
# by tshark as IB CM REQ (ServiceID 0x1000000000000000 | QPN), REP and RTU and
# IPoIB over RC SENDs, both bridges' counters (a connection each way, no QP
# left); then softib1 again in datagram mode: the connected side sends to it
# over UD (no RC flag in its address), ping both ways, a 3000-byte ping
# answered after the ICMP "fragmentation needed" lowered the path MTU, 10 MB
# over TCP checked by SHA-256.
# Usage: ipoib_cm.sh [builtin|external]: the built-in SM's SA (default), or
# OpenSM's (softibd --sm external: its PathRecords for the rdma_cm's routes).
# Exit 77 without root, /dev/net/tun or `ip netns`.
. "$(dirname "$0")/mgmt_lib.sh"
mode=${1:-builtin}
MB=${SIB_IPOIB_MB:-100}
netns_pair sib

if [ "$mode" = external ]; then
	need_umad
	mgmt_start "" external
	opensm_start
else
	start_daemon
fi
SOFTIB=("$SIB_BIN/softib")

CAP=$SIB_TMP/cm.pcap
capture_start "$CAP" softib0 1000

up() { # NS DEV ADDR MODE
	ip netns exec "$1" env LD_PRELOAD="$SIB_PRELOAD" "${SOFTIB[@]}" ipoib "$2" 1 up --tun ib0 \
		--addr "$3" --mode "$4" >"$SIB_TMP/$2.log" 2>&1 &
	SIB_PIDS+=("$!")
	eval "pid_$2=$!"
	wait_until 30 grep -q " up on " "$SIB_TMP/$2.log" ||
		fail "$2 did not come up: $(cat "$SIB_TMP/$2.log")"
}
down() { # NS DEV
	inns "$1" "${SOFTIB[@]}" ipoib "$2" 1 down || fail "down $2"
	local p
	eval "p=\$pid_$2"
	wait "$p" || fail "the $2 bridge exited with $?: $(cat "$SIB_TMP/$2.log")"
	! grep -Eq "AddressSanitizer|runtime error|LeakSanitizer" "$SIB_TMP/$2.log" ||
		fail "sanitizer report: $(cat "$SIB_TMP/$2.log")"
}
ping_ok() { # NS ARGS...
	local ns=$1; shift
	timeout 40 ip netns exec "$ns" ping -W 5 "$@" >"$SIB_TMP/ping.out" 2>&1 ||
		fail "ping $*: $(cat "$SIB_TMP/ping.out") $(cat "$SIB_TMP"/softib*.log)"
	grep -E "rtt" "$SIB_TMP/ping.out"
}

tcp_cm() { tcp_check "$NSB" "$NSA" 10.78.0.2 "$1" 150 "$SIB_TMP"/softib*.log; }

# ---- both sides connected ----
up "$NSA" softib0 10.78.0.1/24 connected
up "$NSB" softib1 10.78.0.2/24 connected
cat "$SIB_TMP/softib0.log" "$SIB_TMP/softib1.log"
grep -q "connected mode, QPN 0x[0-9a-f]*, MTU 65520" "$SIB_TMP/softib0.log" ||
	fail "up line: $(cat "$SIB_TMP/softib0.log")"
inns "$NSA" ip link show ib0 | grep -q "mtu 65520" || fail "MTU is not 65520: $(inns "$NSA" ip link show ib0)"
qpn_b=$(sed -n 's/.*connected mode, QPN 0x\([0-9a-f]*\),.*/\1/p' "$SIB_TMP/softib1.log")

ping_ok "$NSA" -c 3 10.78.0.2
ping_ok "$NSB" -c 3 10.78.0.1
ping_ok "$NSA" -c 2 -s 30000 10.78.0.2	# one 30028-byte RC message each way
# IPv6 (ND over UD, the datagrams over the same RC connections)
inns "$NSA" ip -6 addr add fd78::1/64 dev ib0 nodad || fail "ip -6 addr add"
inns "$NSB" ip -6 addr add fd78::2/64 dev ib0 nodad || fail "ip -6 addr add"
ping_ok "$NSA" -6 -c 3 fd78::2
ping_ok "$NSB" -6 -c 3 -s 20000 fd78::1
tcp_cm "$MB"

kill -INT "$cap" 2>/dev/null
wait_until 10 bash -c "! kill -0 $cap 2>/dev/null" || fail "softib capture did not stop"
tshark -r "$CAP" 2>/dev/null | head -40 >"$SIB_TMP/cap.txt"
cat "$SIB_TMP/cap.txt"
grep -q "ConnectRequest" "$SIB_TMP/cap.txt" || fail "tshark shows no CM REQ"
grep -q "ConnectReply" "$SIB_TMP/cap.txt" || fail "tshark shows no CM REP"
grep -q "ReadyToUse" "$SIB_TMP/cap.txt" || fail "tshark shows no CM RTU"
tshark -r "$CAP" -V -Y 'infiniband.cm.req' 2>/dev/null >"$SIB_TMP/req.txt"
grep -iq "ServiceID: 0x1000000000$(printf %06x $((16#$qpn_b)))" "$SIB_TMP/req.txt" ||
	fail "the REQ to B has not ServiceID 0x1000000000000000|0x$qpn_b: $(grep -i service "$SIB_TMP/req.txt")"
tshark -r "$CAP" -Y 'infiniband.bth.opcode == 4 || infiniband.bth.opcode == 0' -V 2>/dev/null |
	grep -q "Internet Protocol Version 4" || fail "tshark shows no IPv4 over RC SENDs"

# A's LID changes (built-in SM: under OpenSM softib0's port is the SM's):
# connections on the old path fail and are made again on the new one
if [ "$mode" != external ]; then
	"${SOFTIB[@]}" port softib0 1 lid 77 || fail "port lid"
	wait_until 20 grep -q "rejoined.*LID 0x004d" "$SIB_TMP/softib0.log" ||
		fail "no rejoin after the LID change: $(cat "$SIB_TMP/softib0.log")"
	timeout 60 ip netns exec "$NSB" ping -c 5 -W 5 10.78.0.1 >"$SIB_TMP/ping.out" 2>&1 ||
		fail "ping B->A after A's LID changed: $(cat "$SIB_TMP/ping.out") $(cat "$SIB_TMP"/softib*.log)"
	timeout 60 ip netns exec "$NSA" ping -c 5 -W 5 -s 20000 10.78.0.2 >"$SIB_TMP/ping.out" 2>&1 ||
		fail "ping A->B after A's LID changed: $(cat "$SIB_TMP/ping.out")"
	grep -E "received" "$SIB_TMP/ping.out"
fi
down "$NSA" softib0
down "$NSB" softib1
for d in softib0 softib1; do
	grep "connected mode:" "$SIB_TMP/$d.log"
	grep -Eq "cm connections tx [1-9][0-9]* rx [1-9]" "$SIB_TMP/$d.log" ||
		fail "$d: no connection each way: $(cat "$SIB_TMP/$d.log")"
	grep -q "qps 0 live" "$SIB_TMP/$d.log" || fail "$d: QPs left: $(cat "$SIB_TMP/$d.log")"
done

# ---- A connected, B datagram: UD between them ----
up "$NSA" softib0 10.78.0.1/24 connected
up "$NSB" softib1 10.78.0.2/24 datagram
grep -q "datagram mode, QPN 0x[0-9a-f]*, MTU 2044" "$SIB_TMP/softib1.log" ||
	fail "up line: $(cat "$SIB_TMP/softib1.log")"
ping_ok "$NSA" -c 3 10.78.0.2
ping_ok "$NSB" -c 3 10.78.0.1
# 3028 bytes > 2044: the first gets ICMP "fragmentation needed" (MTU 2044)
# from the bridge; then the kernel fragments.
timeout 40 ip netns exec "$NSA" ping -W 5 -c 4 -i 0.5 -s 3000 10.78.0.2 >"$SIB_TMP/ping.out" 2>&1
cat "$SIB_TMP/ping.out"
grep -Eq "[1-9] received" "$SIB_TMP/ping.out" || fail "no answer to a 3000-byte ping over UD"
tcp_cm 10
down "$NSA" softib0
down "$NSB" softib1
grep "connected mode:" "$SIB_TMP/softib0.log"
grep -q "cm connections tx 0 rx 0" "$SIB_TMP/softib0.log" ||
	fail "a connection to a datagram-mode peer: $(cat "$SIB_TMP/softib0.log")"
grep -Eq "too big [1-9]" "$SIB_TMP/softib0.log" || fail "no ICMP too-big: $(cat "$SIB_TMP/softib0.log")"
grep -q "qps 0 live" "$SIB_TMP/softib0.log" || fail "QPs left: $(cat "$SIB_TMP/softib0.log")"
echo PASS
