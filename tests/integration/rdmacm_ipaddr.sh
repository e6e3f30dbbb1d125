#!/bin/bash
# SPDX-License-Identifier: MIT
# IP addresses of CA ports at run time (docs/rdmacm.md "Addresses"): `softib
# ipoib DEV PORT add|del ADDR[/PREFIX]` and `addrs` against a private
# softibd, every process bounded by `timeout` and stopped by PID (lib.sh).
# Usage: rdmacm_ipaddr.sh CASE
#   tool     add 10.9.0.1/24 to softib0:1 (no root: only softibd's table),
#            `addrs` and `softib status` list it, the errors `ip addr` gives
#            (EEXIST, EADDRNOTAVAIL, EPERM for a default, EINVAL), rping
#            -s -a 10.9.0.1 with a client rping -c -a 10.9.0.1 -C 5, IPv6
#            add/del; after del a new rdma_bind_addr to it fails
#            (EADDRNOTAVAIL) and `addrs` no longer lists it
#   up_addr  `softib ipoib softib0 1 up --tun ib0 --addr 10.9.1.1/24` in a
#            network namespace puts 10.9.1.1/24 in the table while it runs
#            and deletes it at `down`; an address added before `up` stays
#            (root and /dev/net/tun, else 77)
#   topology caip= lines in the topology file (docs/topology.md): softib1
#            port 1 has their addresses from the start
. "$(dirname "$0")/lib.sh"
case=${1:?usage: rdmacm_ipaddr.sh CASE}
SOFTIB=("$SIB_BIN/softib")

# has ADDR/PREFIX: softib0 port 1 lists it
has() { "${SOFTIB[@]}" ipoib softib0 1 addrs | grep -qx "$1"; }
# expect_fail WHAT ERRTEXT CMD...: CMD exits 1 and says ERRTEXT
expect_fail() {
	local what=$1 text=$2 rc; shift 2
	"$@" >"$SIB_TMP/err.out" 2>&1
	rc=$?
	[ $rc = 1 ] && grep -q "$text" "$SIB_TMP/err.out" ||
		fail "$what: exit $rc, wanted 1 and '$text': $(cat "$SIB_TMP/err.out")"
}

case $case in
tool)
	[ -e "$SIB_LIB/librdmacm.so.1" ] || fail "no $SIB_LIB/librdmacm.so.1"
	command -v rping >/dev/null || { echo "SKIP: no rping (rdmacm-utils)"; exit 77; }
	start_daemon
	"${SOFTIB[@]}" ipoib softib0 1 add 10.9.0.1/24 || fail "add 10.9.0.1/24"
	"${SOFTIB[@]}" ipoib softib0 1 addrs >"$SIB_TMP/addrs" || fail "addrs"
	cat "$SIB_TMP/addrs"
	[ "$(sed -n 1p "$SIB_TMP/addrs")" = 127.1.0.1/8 ] || fail "first address not 127.1.0.1/8"
	grep -Eqx 'fe80::[0-9a-f:]+/64' "$SIB_TMP/addrs" || fail "no GID address"
	[ "$(sed -n 3p "$SIB_TMP/addrs")" = 10.9.0.1/24 ] || fail "10.9.0.1/24 not listed third"
	status | grep -qx 'rdma_cm_addr softib0:1 10.9.0.1/24' || fail "status: $(status | grep rdma_cm)"
	status | grep -qx 'rdma_cm_addrs added=1' || fail "status: $(status | grep rdma_cm)"
	# the errors `ip addr` gives
	expect_fail "add twice" "already assigned" "${SOFTIB[@]}" ipoib softib0 1 add 10.9.0.1/24
	expect_fail "add to softib1" "already assigned" "${SOFTIB[@]}" ipoib softib1 1 add 10.9.0.1
	expect_fail "del the default" "cannot be deleted" "${SOFTIB[@]}" ipoib softib0 1 del 127.1.0.1
	expect_fail "del from softib1" "no such address" "${SOFTIB[@]}" ipoib softib1 1 del 10.9.0.1/24
	expect_fail "del /16" "no such address" "${SOFTIB[@]}" ipoib softib0 1 del 10.9.0.1/16
	expect_fail "port 2" "bad port" "${SOFTIB[@]}" ipoib softib0 2 add 10.9.0.2/24
	expect_fail "no device" "no such device" "${SOFTIB[@]}" ipoib nosuch 1 add 10.9.0.2/24
	"${SOFTIB[@]}" ipoib softib0 1 add 10.9.0.1/33 >/dev/null 2>&1
	[ $? = 2 ] || fail "prefix 33 is not a usage error"
	# IPv6
	"${SOFTIB[@]}" ipoib softib1 1 add 2001:db8::1/64 || fail "add 2001:db8::1/64"
	"${SOFTIB[@]}" ipoib softib1 1 addrs | grep -qx 2001:db8::1/64 || fail "no 2001:db8::1/64"
	"${SOFTIB[@]}" ipoib softib1 1 del 2001:db8::1 || fail "del 2001:db8::1"
	# rping on the added address, server and client (softibd resolves it)
	S=$SIB_TMP/server.out C=$SIB_TMP/client.out
	client timeout 60 rping -s -a 10.9.0.1 -v -C 5 >"$S" 2>&1 &
	srv=$!
	SIB_PIDS+=("$srv")
	listen_ge() { status | grep -Eq '^rdma_cm .* listening=[1-9]'; }
	wait_until 10 listen_ge || fail "rping -s did not listen: $(cat "$S")"
	client timeout 60 rping -c -a 10.9.0.1 -C 5 -v -V >"$C" 2>&1 ||
		fail "rping -c: $(cat "$C"; cat "$S")"
	[ "$(grep -c 'ping data: rdma-ping-' "$C")" = 5 ] || fail "client did not print 5 pings: $(cat "$C")"
	wait "$srv" || fail "rping -s exited $?: $(cat "$S")"
	cat "$C"
	# del: gone from the list; a new bind to it fails
	"${SOFTIB[@]}" ipoib softib0 1 del 10.9.0.1/24 || fail "del 10.9.0.1/24"
	has 10.9.0.1/24 && fail "10.9.0.1/24 still listed"
	status | grep -qx 'rdma_cm_addrs added=0' || fail "status: $(status | grep rdma_cm)"
	client timeout 20 rping -s -a 10.9.0.1 -C 1 >"$S" 2>&1
	rc=$?
	[ $rc != 0 ] && grep -q 'rdma_bind_addr: Cannot assign requested address' "$S" ||
		fail "bind after del: exit $rc: $(cat "$S")"
	expect_fail "del twice" "no such address" "${SOFTIB[@]}" ipoib softib0 1 del 10.9.0.1/24
	grep -q 'softib0 port 1: address 10.9.0.1/24 deleted' "$SIB_TMP/softibd.log" ||
		fail "softibd did not log the delete"
	;;
up_addr)
	netns_pair sibip
	start_daemon
	"${SOFTIB[@]}" ipoib softib1 1 add 10.9.2.1/24 || fail "add 10.9.2.1/24"
	upd() { # NS DEV ADDR: a bridge with --daemon
		timeout 60 ip netns exec "$1" env LD_PRELOAD="$SIB_PRELOAD" "${SOFTIB[@]}" ipoib "$2" 1 \
			up --tun ib0 --addr "$3" --daemon >"$SIB_TMP/$2.log" 2>&1 ||
			fail "$2 up: $(cat "$SIB_TMP/$2.log")"
		SIB_PIDS+=("$(cat "$SIB_TMP/ipoib-$2-1.pid")")
	}
	upd "$NSA" softib0 10.9.1.1/24
	upd "$NSB" softib1 10.9.2.1/24
	has 10.9.1.1/24 || fail "up --addr did not add 10.9.1.1/24: $("${SOFTIB[@]}" ipoib softib0 1 addrs)"
	"${SOFTIB[@]}" ipoib softib0 1 down || fail "softib0 down"
	"${SOFTIB[@]}" ipoib softib1 1 down || fail "softib1 down"
	has 10.9.1.1/24 && fail "10.9.1.1/24 still listed after down"
	"${SOFTIB[@]}" ipoib softib1 1 addrs | grep -qx 10.9.2.1/24 ||
		fail "10.9.2.1/24 (added before up) went with the bridge"
	;;
topology)
	# caip= lines give softib1 port 1 two addresses at start
	topo=$SIB_TMP/caip.topo
	cat >"$topo" <<-'EOF'
	Switch	4 "S-5eed000000000100"
	[1]	"H-5eed000000000010"[1]
	[2]	"H-5eed000000000020"[1]

	Ca	1 "H-5eed000000000010"
	[1]	"S-5eed000000000100"[1]

	caip=1:10.9.3.1/24
	caip=1:2001:db8::3/64
	Ca	1 "H-5eed000000000020"
	[1]	"S-5eed000000000100"[2]
	EOF
	SIB_TOPOLOGY=$topo start_daemon
	"${SOFTIB[@]}" ipoib softib1 1 addrs >"$SIB_TMP/addrs" || fail "addrs"
	cat "$SIB_TMP/addrs"
	[ "$(sed -n 3,4p "$SIB_TMP/addrs" | tr '\n' ' ')" = "10.9.3.1/24 2001:db8::3/64 " ] ||
		fail "softib1 port 1 lacks the topology's addresses"
	status | grep -qx 'rdma_cm_addr softib1:1 10.9.3.1/24' || fail "status: $(status | grep rdma_cm)"
	;;
*)
	fail "unknown case $case"
	;;
esac
echo PASS
