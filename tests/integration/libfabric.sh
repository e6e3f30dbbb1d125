#!/bin/bash
# SPDX-License-Identifier: MIT
# libfabric's verbs provider (Debian libfabric-bin 1.17: fi_info,
# fi_pingpong) over softib's libibverbs.so.1 and librdmacm.so.1 through
# LD_LIBRARY_PATH, a server and a client process each against a private
# softibd (docs/rdmacm.md "libfabric").  Every process is bounded by
# `timeout` and stopped by PID (lib.sh).
# Usage: libfabric.sh CASE
#   msg   fi_pingpong -p verbs -e msg, control connection on 127.0.0.1.
#         libfabric skips loopback interfaces, so with no IPoIB interface
#         the verbs provider names each port by its GID (AF_IB, RDMA_PS_IB:
#         vrb_get_sib); no root needed.
#   dgram fi_info -p verbs lists the msg, rdm and dgram domains of every
#         device; fi_pingpong -p verbs -e dgram (UD QPs through the verbs
#         provider's dgram domain "softibN-dgram"), control connection on
#         127.0.0.1: dgram names ports by GID and needs no IP address, so
#         no namespace and no root.  Messages up to the 4096-byte MTU.
#   rdm   fi_pingpong -p "verbs;ofi_rxm" -e rdm (and -e msg) between two
#         network namespaces, each with an IPoIB interface (softib ipoib
#         ... up --tun ib0) whose address softibd gives the port (--ip):
#         server on softib0 (10.77.0.1), client on softib1 (10.77.0.2).
#         RDM needs IP addresses: libfabric 1.17's rxm opens its verbs
#         domain with rdma_resolve_addr(src, NULL) on AF_IB addresses,
#         EINVAL on Linux too.  77 without root, /dev/net/tun or ip netns.
# Checks: exit codes, and one result line per size with the iteration
# count acknowledged ("4k  50  =50 ...") on both sides.
. "$(dirname "$0")/lib.sh"
case=${1:?usage: libfabric.sh CASE}
command -v fi_pingpong >/dev/null || { echo "SKIP: no fi_pingpong (Debian libfabric-bin)"; exit 77; }
[ -e "$SIB_LIB/librdmacm.so.1" ] || fail "no $SIB_LIB/librdmacm.so.1"
S=$SIB_TMP/server.out
C=$SIB_TMP/client.out

show() {
	echo "--- server"; cat "$S"
	echo "--- client"; cat "$C"
	echo "--- softibd"; tail -20 "$SIB_TMP/softibd.log"
	status 2>/dev/null | grep -Ei 'cm'
}

# pingpong NAME SERVER_PREFIX CLIENT_PREFIX DST SERVER_OPTS CLIENT_OPTS ARGS...:
# one server and one client fi_pingpong with ARGS and each side's own
# options (each side's prefix runs it, e.g. in a namespace); the client retries while the server's control port is not
# up yet (connection refused), at most 50 times 0.2 s apart.
pingpong() {
	local name=$1 sp=$2 cp=$3 dst=$4 so=$5 co=$6 port crc src n
	shift 6
	port=$(free_port) || fail "no free port"
	echo "== $name: fi_pingpong $*"
	# shellcheck disable=SC2086
	$sp env LD_PRELOAD="$SIB_PRELOAD" timeout 60 fi_pingpong -B "$port" $so "$@" >"$S" 2>&1 &
	srv=$!
	SIB_PIDS+=("$srv")
	for _ in $(seq 50); do
		# shellcheck disable=SC2086
		$cp env LD_PRELOAD="$SIB_PRELOAD" timeout 60 fi_pingpong -P "$port" $co "$@" "$dst" >"$C" 2>&1
		crc=$?
		grep -q 'failed to connect' "$C" || break
		alive "$srv" || break
		sleep 0.2
	done
	for _ in $(seq 200); do alive "$srv" || break; sleep 0.1; done
	wait "$srv"
	src=$?
	[ "$crc" = 0 ] || { show; fail "$name: client exited $crc"; }
	[ "$src" = 0 ] || { show; fail "$name: server exited $src"; }
	cat "$C"
	n=$(grep -cE '^[0-9]+[kmg]? +[0-9]+ += ?[0-9]+ ' "$C")
	[ "$n" -ge 1 ] || { show; fail "$name: no result line"; }
	[ "$(grep -cE '^[0-9]+[kmg]? +[0-9]+ += ?[0-9]+ ' "$S")" = "$n" ] ||
		{ show; fail "$name: the server printed other results"; }
	# every line: sent = acknowledged
	awk '/^[0-9]+[kmg]? +[0-9]+ += ?[0-9]+ / { a = $3; sub(/^=/, "", a); if (a != $2) bad = 1 }
	     END { exit bad }' "$C" || { show; fail "$name: not every message was acknowledged"; }
}

# expect_line NAME SIZE ITERS: the client printed SIZE with ITERS both ways
expect_line() {
	grep -Eq "^$2 +$3 +=$3 " "$C" || { show; fail "$1: no '$2 $3 =$3' line"; }
}

case $case in
msg)
	start_daemon
	client timeout 30 fi_info -p verbs -t FI_EP_MSG >"$SIB_TMP/fi_info.out" 2>&1 ||
		{ cat "$SIB_TMP/fi_info.out"; fail "fi_info -p verbs -t FI_EP_MSG failed"; }
	grep -q 'domain: softib0$' "$SIB_TMP/fi_info.out" ||
		{ cat "$SIB_TMP/fi_info.out"; fail "fi_info: no MSG domain softib0"; }
	grep -q 'FI_PROTO_RDMA_CM_IB_RC' "$SIB_TMP/fi_info.out" || fail "fi_info: no RDMA_CM_IB_RC"
	pingpong "msg 64 B x 100" "" "" 127.0.0.1 "" "" -p verbs -e msg -I 100 -S 64
	expect_line msg 64 100
	pingpong "msg 4 KiB x 500" "" "" 127.0.0.1 "" "" -p verbs -e msg -I 500 -S 4096
	expect_line msg 4k 500
	pingpong "msg all sizes x 10" "" "" 127.0.0.1 "" "" -p verbs -e msg -I 10 -S all
	expect_line msg 1m 10
	pingpong "msg 64 KiB x 50, data checked" "" "" 127.0.0.1 "" "" -p verbs -e msg -I 50 -S 65536 -c
	expect_line msg 64k 50
	;;
dgram)
	start_daemon
	client timeout 30 fi_info -p verbs >"$SIB_TMP/fi_info.out" 2>&1 ||
		{ cat "$SIB_TMP/fi_info.out"; fail "fi_info -p verbs failed"; }
	for t in FI_EP_MSG FI_EP_RDM FI_EP_DGRAM; do
		grep -q "type: $t\$" "$SIB_TMP/fi_info.out" || { cat "$SIB_TMP/fi_info.out"; fail "fi_info: no $t"; }
	done
	for d in softib0 softib1; do
		grep -q "domain: $d\$" "$SIB_TMP/fi_info.out" || fail "fi_info: no domain $d"
		grep -q "domain: $d-dgram\$" "$SIB_TMP/fi_info.out" || fail "fi_info: no domain $d-dgram"
	done
	grep -q 'FI_PROTO_IB_UD' "$SIB_TMP/fi_info.out" || fail "fi_info: no FI_PROTO_IB_UD"
	pingpong "dgram 64 B x 100" "" "" 127.0.0.1 "" "" -p verbs -e dgram -I 100 -S 64
	expect_line dgram 64 100
	pingpong "dgram 4 KiB x 500, softib0 <- softib1, data checked" "" "" 127.0.0.1 \
		"-d softib0-dgram" "-d softib1-dgram" -p verbs -e dgram -I 500 -S 4096 -c
	expect_line dgram 4k 500
	pingpong "dgram all sizes x 10, data checked" "" "" 127.0.0.1 "" "" -p verbs -e dgram -I 10 -S all -c
	expect_line dgram 4k 10
	;;
rdm)
	netns_pair sibf
	start_daemon --ip softib0:1=10.77.0.1/24 --ip softib1:1=10.77.0.2/24
	up() { # NS DEV ADDR
		ip netns exec "$1" env LD_PRELOAD="$SIB_PRELOAD" "$SIB_BIN/softib" ipoib "$2" 1 up \
			--tun ib0 --addr "$3" >"$SIB_TMP/$2.log" 2>&1 &
		SIB_PIDS+=("$!")
	}
	up "$NSA" softib0 10.77.0.1/24
	up "$NSB" softib1 10.77.0.2/24
	for d in softib0 softib1; do
		wait_until 30 grep -q " up on " "$SIB_TMP/$d.log" ||
			fail "$d's IPoIB interface did not come up: $(cat "$SIB_TMP/$d.log")"
	done
	timeout 30 ip netns exec "$NSB" ping -c 1 -W 10 10.77.0.1 >/dev/null ||
		fail "no IP between the namespaces"
	# each namespace's provider sees its own port's address
	ip netns exec "$NSB" env LD_PRELOAD="$SIB_PRELOAD" FI_LOG_LEVEL=info timeout 30 \
		fi_info -p verbs -t FI_EP_MSG >"$SIB_TMP/fi_info.out" 2>&1
	grep -A1 'softib1 - IPoIB addresses' "$SIB_TMP/fi_info.out" | grep -q '10.77.0.2' ||
		{ grep -i ipoib "$SIB_TMP/fi_info.out"; fail "fi_info in $NSB: softib1 has no 10.77.0.2"; }
	A="ip netns exec $NSA"
	B="ip netns exec $NSB"
	pingpong "rdm 64 B x 100" "$A" "$B" 10.77.0.1 "" "" -p "verbs;ofi_rxm" -e rdm -I 100 -S 64
	expect_line rdm 64 100
	# the client's -d softib1 holds only if its id resolved from softib1
	pingpong "rdm 4 KiB x 200, softib0 <- softib1" "$A" "$B" 10.77.0.1 "-d softib0" "-d softib1" \
		-p "verbs;ofi_rxm" -e rdm -I 200 -S 4096
	expect_line rdm 4k 200
	pingpong "rdm all sizes x 10, tagged, data checked" "$A" "$B" 10.77.0.1 "" "" \
		-p "verbs;ofi_rxm" -e rdm -I 10 -S all -m tagged -c
	expect_line rdm 1m 10
	pingpong "msg 4 KiB x 200 on IP addresses, softib0 <- softib1" "$A" "$B" 10.77.0.1 \
		"-d softib0" "-d softib1" -p verbs -e msg -I 200 -S 4096
	expect_line msg 4k 200
	;;
*)
	fail "unknown case $case"
	;;
esac
echo PASS
