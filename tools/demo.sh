#!/bin/bash
# SPDX-License-Identifier: MIT
# The main job on the embedded default fabric: unmodified ibv_devices,
# ibv_devinfo and ibv_rc_pingpong (server on softib0, client on softib1)
# run through softib.  The daemon is the user's own, as a new user meets it:
# $SOFTIB_SOCKET if set, else the default socket ($XDG_RUNTIME_DIR/softib.sock
# or /tmp/softib-<uid>/softib.sock); the verbs library starts it on demand,
# and this script stops it at the end only if it was not running before.
# Usage: tools/demo.sh [BUILD_DIR]
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
tmp=$(mktemp -d /tmp/softib-demo.XXXXXX)
export LD_LIBRARY_PATH=$build/lib
started=1
"$build/bin/softib" status >/dev/null 2>&1 && started=0 # status never starts one
trap '[ "$started" = 0 ] || "$build/bin/softib" stop >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT

echo "== ibv_devices"
ibv_devices
echo "== ibv_devinfo -d softib0"
ibv_devinfo -d softib0
echo "== ibv_rc_pingpong -s 65536 -m 4096 -n 1000: server on softib0, client on softib1"
port=$((20000 + RANDOM % 40000))
ibv_rc_pingpong -d softib0 -s 65536 -m 4096 -n 1000 -p "$port" >"$tmp/server.out" 2>&1 &
server=$!
# Start the client once the server listens (read from /proc: a ping-pong
# server takes one connection only), or say why the server did not.
listening() {
	awk -v p=":$(printf '%04X' "$port")" '$4 == "0A" && substr($2, length($2) - 4) == p { f = 1 } END { exit !f }' \
		/proc/net/tcp /proc/net/tcp6 2>/dev/null
}
for _ in $(seq 200); do
	listening && break
	kill -0 "$server" 2>/dev/null || { cat "$tmp/server.out" >&2; echo "ibv_rc_pingpong server exited" >&2; exit 1; }
	sleep 0.05
done
listening || { kill "$server"; echo "ibv_rc_pingpong server not listening after 10 s" >&2; exit 1; }
ibv_rc_pingpong -d softib1 -s 65536 -m 4096 -n 1000 -p "$port" 127.0.0.1
wait "$server"
echo "== softib status (after both programs exited)"
"$build/bin/softib" status
