#!/bin/bash
# SPDX-License-Identifier: MIT
# Unmodified ibv_devices and ibv_devinfo on the embedded default fabric.
. "$(dirname "$0")/lib.sh"
start_daemon

out=$(client timeout 20 ibv_devices) || fail "ibv_devices exited $?"
echo "$out"
for i in 0 1 2 3; do
	echo "$out" | grep -Eq "softib$i[[:space:]]+5eed0000000000$((i + 1))0" || fail "softib$i missing or wrong GUID"
done

out=$(client timeout 20 ibv_devinfo -v) || fail "ibv_devinfo exited $?"
echo "$out" | head -5
[ "$(echo "$out" | grep -c 'PORT_ACTIVE (4)')" = 4 ] || fail "not 4 active ports"
for lid in 2 3 4 5; do
	echo "$out" | grep -Eq "port_lid:[[:space:]]+$lid\$" || fail "LID $lid missing"
done
[ "$(echo "$out" | grep -Ec 'active_mtu:[[:space:]]+4096 \(5\)')" = 4 ] || fail "active MTU not 4096"
[ "$(echo "$out" | grep -c 'link_layer:.*InfiniBand')" = 4 ] || fail "link layer"
echo "$out" | grep -q 'GID\[  0\]:.*fe80:0000:0000:0000:5eed:0000:0000:0011' || fail "GID of softib0"

out=$(client timeout 20 ibv_devinfo -d softib2) || fail "ibv_devinfo -d"
echo "$out" | grep -q 'hca_id:.*softib2' || fail "devinfo -d softib2"
client timeout 20 ibv_devinfo -d nosuchdev >/dev/null 2>&1 && fail "unknown device accepted"
echo PASS
