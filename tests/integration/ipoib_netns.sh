#!/bin/bash
# SPDX-License-Identifier: MIT
# IPoIB interfaces (docs/ipoib.md): two network namespaces made here (unique
# names, removed on exit), softibd on the host (its socket reachable from
# both through SOFTIB_SOCKET), `softib ipoib softib0 1 up --tun ib0 --addr
# 10.77.0.1/24` in one and softib1 / 10.77.0.2 (with --daemon) in the other.  Checks: the
# address and MTU 2044 on ib0, `ping -c 3` both ways (IPv4, and IPv6 through
# neighbour discovery), UDP to an IPv4 multicast group (its own MGID), 100 MB over TCP checked
# end to end by SHA-256, `softib capture` of softib0's port decoded by tshark
# as InfiniBand carrying ARP and IPv4, the bridge follows a port down/up and
# a LID change (rejoin, stale paths dropped), `softib ipoib ... down` stops the
# bridge, and without CAP_NET_ADMIN a clear error and exit 1.
# Usage: ipoib_netns.sh [builtin|external]: the built-in SM's SA (default),
# or OpenSM's (softibd --sm external; OpenSM makes the broadcast group).
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

# Capture softib0's port from the start (ARP, then IPv4 and IPv6 pings).
CAP=$SIB_TMP/ipoib.pcap
capture_start "$CAP" softib0 2000

up() { # NS DEV ADDR
	ip netns exec "$1" env LD_PRELOAD="$SIB_PRELOAD" "${SOFTIB[@]}" ipoib "$2" 1 up --tun ib0 \
		--addr "$3" >"$SIB_TMP/$2.log" 2>&1 &
	SIB_PIDS+=("$!")
	eval "pid_$2=$!"
}
up "$NSA" softib0 10.77.0.1/24
# softib1 with --daemon: the command returns 0 once the interface is up and
# the bridge goes on in the background (its PID in the pid file).
timeout 60 ip netns exec "$NSB" env LD_PRELOAD="$SIB_PRELOAD" "${SOFTIB[@]}" ipoib softib1 1 up \
	--tun ib0 --addr 10.77.0.2/24 --daemon >"$SIB_TMP/softib1.log" 2>&1 ||
	fail "softib1 --daemon: $(cat "$SIB_TMP/softib1.log")"
pid_softib1=$(cat "$SIB_TMP/ipoib-softib1-1.pid") || fail "no pid file for softib1"
SIB_PIDS+=("$pid_softib1")
alive "$pid_softib1" || fail "the softib1 bridge is not running"
# One bridge per port: a second `up` on softib1 port 1 is refused, and the
# first keeps its pid file (a newcomer's second bridge once took it).
inns "$NSA" env LD_PRELOAD="$SIB_PRELOAD" "${SOFTIB[@]}" ipoib softib1 1 up --tun ib7 \
	--addr 10.77.7.1/24 >"$SIB_TMP/dup.out" 2>&1
rc=$?
[ $rc = 1 ] && grep -q "already has an interface" "$SIB_TMP/dup.out" ||
	fail "a second bridge on softib1 port 1: rc $rc: $(cat "$SIB_TMP/dup.out")"
[ "$(cat "$SIB_TMP/ipoib-softib1-1.pid")" = "$pid_softib1" ] || fail "the pid file changed"
wait_until 20 grep -q " up on " "$SIB_TMP/softib0.log" ||
	fail "softib0 did not come up: $(cat "$SIB_TMP/softib0.log")"
cat "$SIB_TMP/softib0.log" "$SIB_TMP/softib1.log"
inns "$NSA" ip addr show ib0 | grep -q "inet 10.77.0.1/24" || fail "no address: $(inns "$NSA" ip addr show ib0)"
inns "$NSA" ip link show ib0 | grep -q "mtu 2044" || fail "MTU is not 2044: $(inns "$NSA" ip link show ib0)"
inns "$NSA" ip link show ib0 | grep -q "UP" || fail "ib0 is not up"

timeout 30 ip netns exec "$NSA" ping -c 3 -W 5 10.77.0.2 >"$SIB_TMP/pingA" 2>&1 ||
	fail "ping A->B: $(cat "$SIB_TMP/pingA") $(cat "$SIB_TMP"/softib*.log)"
timeout 30 ip netns exec "$NSB" ping -c 3 -W 5 10.77.0.1 >"$SIB_TMP/pingB" 2>&1 ||
	fail "ping B->A: $(cat "$SIB_TMP/pingB")"
grep -E "rtt|packets" "$SIB_TMP/pingA" "$SIB_TMP/pingB"
# IPv6: neighbour discovery with the IPoIB link-layer option (RFC 4391 §5).
inns "$NSA" ip -6 addr add fd77::1/64 dev ib0 nodad || fail "ip -6 addr add"
inns "$NSB" ip -6 addr add fd77::2/64 dev ib0 nodad || fail "ip -6 addr add"
timeout 30 ip netns exec "$NSA" ping -6 -c 3 -W 5 fd77::2 >"$SIB_TMP/ping6" 2>&1 ||
	fail "ping -6 A->B: $(cat "$SIB_TMP/ping6")"
timeout 30 ip netns exec "$NSB" ping -6 -c 3 -W 5 fd77::1 >>"$SIB_TMP/ping6" 2>&1 ||
	fail "ping -6 B->A: $(cat "$SIB_TMP/ping6")"
grep -E "rtt" "$SIB_TMP/ping6"

# The capture of the pings: stop it (SIGINT; one capture per port at a
# time) and decode.
kill -INT "$cap" 2>/dev/null
wait_until 10 bash -c "! kill -0 $cap 2>/dev/null" || fail "softib capture did not stop"
out=$(tshark -r "$CAP" 2>/dev/null | head -100)
echo "$out" | head -8
echo "$out" | grep -q "ARP" || fail "tshark shows no ARP: $out"
echo "$out" | grep -q "ICMP" || fail "tshark shows no IPv4: $out"
tshark -r "$CAP" -V 2>/dev/null | grep -q "InfiniBand" || fail "tshark shows no InfiniBand"
tshark -r "$CAP" -V 2>/dev/null | grep -q "Internet Protocol Version 4" || fail "tshark shows no IPv4"

# IPv4 multicast (RFC 4391 §4): B's kernel joins 239.1.2.3 on ib0, its
# bridge joins ff12:401b:ffff::f01:203 through the SA; A's datagrams to the
# group go to that MGID (a send-only join), as the capture shows.
CAP2=$SIB_TMP/mcast.pcap
"${SOFTIB[@]}" capture -w "$CAP2" -d softib0 -p 1 -c 1000 2>"$SIB_TMP/cap2.err" &
cap2=$!
SIB_PIDS+=("$cap2")
wait_until 10 grep -q capturing "$SIB_TMP/cap2.err" || fail "softib capture: $(cat "$SIB_TMP/cap2.err")"
cat >"$SIB_TMP/mc.py" <<'PY'
import socket, struct, sys, time
if sys.argv[1] == "recv":
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("239.1.2.3", 5003))
    s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP,
                 socket.inet_aton("239.1.2.3") + socket.inet_aton("10.77.0.2"))
    print("joined", flush=True); s.settimeout(30)
    for _ in range(3):
        print("got", s.recv(100).decode(), flush=True)
else:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton("10.77.0.1"))
    for i in range(100):
        s.sendto(b"mc%d" % i, ("239.1.2.3", 5003)); time.sleep(0.2)
PY
ip netns exec "$NSB" timeout 40 python3 "$SIB_TMP/mc.py" recv >"$SIB_TMP/mcr.out" 2>&1 &
mcr=$!
SIB_PIDS+=("$mcr")
wait_until 10 grep -qs joined "$SIB_TMP/mcr.out" || fail "multicast receiver: $(cat "$SIB_TMP/mcr.out")"
sleep 1.5	# the bridge reads the kernel's groups each second
ip netns exec "$NSA" timeout 30 python3 "$SIB_TMP/mc.py" send >/dev/null 2>&1 &
mcs=$!
SIB_PIDS+=("$mcs")
wait "$mcr" || fail "multicast receiver: $(cat "$SIB_TMP/mcr.out")"
kill "$mcs" 2>/dev/null
grep -c got "$SIB_TMP/mcr.out" | grep -q 3 || fail "multicast: $(cat "$SIB_TMP/mcr.out")"
kill -INT "$cap2" 2>/dev/null
wait_until 10 bash -c "! kill -0 $cap2 2>/dev/null" || fail "softib capture did not stop"
tshark -r "$CAP2" -T fields -e infiniband.grh.dgid -e ip.dst 2>/dev/null | sort | uniq -c |
	tee "$SIB_TMP/mc.dgids"
grep -Eq "ff12:401b:ffff::f01:203[[:space:]]+239.1.2.3" "$SIB_TMP/mc.dgids" ||
	fail "no datagram to the group's MGID"

# 100 MB over TCP, SHA-256 of what was sent against what arrived.
tcp_check "$NSB" "$NSA" 10.77.0.2 "$MB" 120

# Port events (the kernel's ipoib_flush_dev): softib0's port goes down and
# up, then changes its LID; its bridge rejoins the broadcast group each time
# (the SA forgets a port that went down) and announces itself, so that a new
# address of A is found by ARP through the group, and B drops its path to
# A's old LID.
"${SOFTIB[@]}" port softib0 1 down || fail "port down"
"${SOFTIB[@]}" port softib0 1 up || fail "port up"
wait_until 20 grep -q "rejoined" "$SIB_TMP/softib0.log" || fail "no rejoin: $(cat "$SIB_TMP/softib0.log")"
inns "$NSA" ip addr add 10.77.0.3/24 dev ib0 || fail "ip addr add"
timeout 30 ip netns exec "$NSB" ping -c 2 -W 5 10.77.0.3 >"$SIB_TMP/ping3" 2>&1 ||
	fail "ping B->A's new address after port down/up: $(cat "$SIB_TMP/ping3")"
# (Under OpenSM, softib0's port is the SM's and OpenSM owns the LIDs: no
# LID set by hand there.)
if [ "$mode" != external ]; then
	"${SOFTIB[@]}" port softib0 1 lid 77 || fail "port lid"
	wait_until 20 grep -q "rejoined.*LID 0x004d" "$SIB_TMP/softib0.log" ||
		fail "no rejoin after the LID change: $(cat "$SIB_TMP/softib0.log")"
	timeout 30 ip netns exec "$NSB" ping -c 2 -W 5 10.77.0.1 >"$SIB_TMP/ping4" 2>&1 ||
		fail "ping B->A after A's LID changed: $(cat "$SIB_TMP/ping4")"
fi

# down stops each bridge (the pid file in softib's runtime dir).
inns "$NSA" "${SOFTIB[@]}" ipoib softib0 1 down || fail "down softib0"
inns "$NSB" "${SOFTIB[@]}" ipoib softib1 1 down || fail "down softib1"
wait_until 10 bash -c "! kill -0 $pid_softib1 2>/dev/null" || fail "the softib1 bridge did not stop"
[ ! -e "$SIB_TMP/ipoib-softib1-1.pid" ] || fail "the pid file stayed"
wait "$pid_softib0" || fail "the softib0 bridge exited with $?: $(cat "$SIB_TMP/softib0.log")"
! grep -Eq "AddressSanitizer|runtime error|LeakSanitizer" "$SIB_TMP/softib0.log" ||
	fail "sanitizer report: $(cat "$SIB_TMP/softib0.log")"
grep " down: " "$SIB_TMP/softib0.log" || fail "no statistics at exit: $(cat "$SIB_TMP/softib0.log")"
grep -Eq "nd rx [1-9][0-9]* tx [1-9]" "$SIB_TMP/softib0.log" || fail "no ND counted: $(cat "$SIB_TMP/softib0.log")"
"${SOFTIB[@]}" ipoib softib0 1 down 2>/dev/null && fail "down of a stopped bridge succeeded"

# Without CAP_NET_ADMIN: a clear error, exit 1.
if command -v setpriv >/dev/null; then
	inns "$NSA" setpriv --inh-caps=-all --bounding-set=-net_admin "${SOFTIB[@]}" ipoib softib0 1 up \
		--tun ib9 >"$SIB_TMP/nocap.out" 2>&1
	rc=$?
	[ $rc = 1 ] && grep -q CAP_NET_ADMIN "$SIB_TMP/nocap.out" ||
		fail "without CAP_NET_ADMIN: rc $rc: $(cat "$SIB_TMP/nocap.out")"
fi

# softibd dies: a running bridge stops with its device (DEVICE_FATAL), as the
# kernel's interface goes with its HCA; it must not run on, forwarding nothing.
# (a fresh log first: the old one's " up on " must not count for the new bridge)
rm -f "$SIB_TMP/softib0.log"
up "$NSA" softib0 10.77.0.1/24
wait_until 20 grep -q " up on " "$SIB_TMP/softib0.log" ||
	fail "softib0 did not come up again: $(cat "$SIB_TMP/softib0.log")"
kill -KILL "$SIB_DAEMON_PID"
wait_until 15 bash -c "! kill -0 $pid_softib0 2>/dev/null" || fail "the bridge outlived softibd"
grep -q "the device is gone" "$SIB_TMP/softib0.log" || fail "bridge exit: $(cat "$SIB_TMP/softib0.log")"
echo PASS
