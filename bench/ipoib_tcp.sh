#!/bin/bash
# SPDX-License-Identifier: MIT
# IPoIB against veth, in one run (issue 16 "Performance"; docs/ipoib.md):
# two network namespaces joined by `softib ipoib` in datagram mode (MTU 2044),
# two joined by `softib ipoib --mode connected` (MTU 65520, RC connections
# through the CM) and two joined by a veth pair at each MTU,
# each measured the same way: `ping -c 20 -i 0.05` (avg RTT) and a python3
# TCP stream of MB megabytes (sendall of 64 KiB zeros, recv 64 KiB, bytes
# counted), MB/s as the receiver saw them.  Needs root.  Usage: bench/ipoib_tcp.sh [BUILD_DIR] [MB]
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
mb=${2:-200}
[ "$(id -u)" = 0 ] || { echo "needs root (network namespaces)"; exit 1; }
. "$(dirname "$0")/lib.sh"
pids=()
tmp=$(mktemp -d /tmp/softib-bench.XXXXXX)
export SOFTIB_SOCKET=$tmp/softib.sock SOFTIB_NO_AUTOSTART=1
export LD_LIBRARY_PATH=$build/lib
tag=$$
ns=(ibA$tag ibB$tag veA$tag veB$tag cmA$tag cmB$tag vfA$tag vfB$tag)
cleanup() {
	set +e	# a stopped program's status must not end the cleanup (set -e)
	for p in "${pids[@]}"; do stop "$p"; done
	for n in "${ns[@]}"; do ip netns del "$n" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT
for n in "${ns[@]}"; do ip netns add "$n"; done
"$build/bin/softibd" --foreground --socket "$SOFTIB_SOCKET" >"$tmp/softibd.log" 2>&1 &
pids+=($!)
wait_for 10 test -S "$SOFTIB_SOCKET"
ip netns exec "${ns[0]}" "$build/bin/softib" ipoib softib0 1 up --tun ib0 --addr 10.78.0.1/24 \
	>"$tmp/a.log" 2>&1 &
pids+=($!)
ip netns exec "${ns[1]}" "$build/bin/softib" ipoib softib1 1 up --tun ib0 --addr 10.78.0.2/24 \
	>"$tmp/b.log" 2>&1 &
pids+=($!)
# connected mode between the default fabric's two other CAs
ip netns exec "${ns[4]}" "$build/bin/softib" ipoib softib2 1 up --tun ib0 --addr 10.80.0.1/24 \
	--mode connected >"$tmp/c.log" 2>&1 &
pids+=($!)
ip netns exec "${ns[5]}" "$build/bin/softib" ipoib softib3 1 up --tun ib0 --addr 10.80.0.2/24 \
	--mode connected >"$tmp/d.log" 2>&1 &
pids+=($!)
for l in a b c d; do wait_for 20 grep -q " up on " "$tmp/$l.log"; done
vpair() { # NS0 NS1 NET MTU
	ip link add ve0 netns "$1" type veth peer name ve1 netns "$2"
	ip -n "$1" addr add "$3.1/24" dev ve0
	ip -n "$2" addr add "$3.2/24" dev ve1
	ip -n "$1" link set ve0 mtu "$4" up
	ip -n "$2" link set ve1 mtu "$4" up
}
vpair "${ns[2]}" "${ns[3]}" 10.79.0 2044
vpair "${ns[6]}" "${ns[7]}" 10.81.0 65520

cat >"$tmp/tcp.py" <<'PY'
import socket, sys, time
mode, addr, mb = sys.argv[1], sys.argv[2], int(sys.argv[3])
if mode == "recv":
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, 5002)); s.listen(1); s.settimeout(60)
    print("listening", flush=True)
    c, _ = s.accept(); n = 0; t0 = time.time()
    while True:
        b = c.recv(1 << 16)
        if not b: break
        n += len(b)
    print("%.1f" % (n / (time.time() - t0) / 1e6), flush=True)
else:
    c = socket.create_connection((addr, 5002), timeout=60); b = bytes(1 << 16)
    for _ in range(mb * 16): c.sendall(b)
    c.close()
PY
measure() { # NS_SERVER NS_CLIENT ADDR
	local rtt out
	rtt=$(ip netns exec "$2" ping -q -c 20 -i 0.05 "$3" | awk -F/ '/rtt/ { print $5 }')
	ip netns exec "$1" timeout 120 python3 "$tmp/tcp.py" recv "$3" "$mb" >"$tmp/r.out" 2>&1 &
	local r=$!
	wait_for 10 grep -qs listening "$tmp/r.out"
	ip netns exec "$2" timeout 120 python3 "$tmp/tcp.py" send "$3" "$mb"
	wait "$r"
	out=$(tail -1 "$tmp/r.out")
	printf '%-24s %10s %12s\n' "$4" "$rtt" "$out"
}
printf '%-24s %10s %12s\n' link "RTT ms" "TCP MB/s"
measure "${ns[1]}" "${ns[0]}" 10.78.0.2 "softib ipoib (2044)"
measure "${ns[5]}" "${ns[4]}" 10.80.0.2 "softib ipoib cm (65520)"
measure "${ns[3]}" "${ns[2]}" 10.79.0.2 "veth (2044)"
measure "${ns[7]}" "${ns[6]}" 10.81.0.2 "veth (65520)"
