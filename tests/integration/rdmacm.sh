#!/bin/bash
# SPDX-License-Identifier: MIT
# Unmodified rdmacm-utils and perftest clients through softib's
# librdmacm.so.1 (docs/rdmacm.md), a server and a client process each
# against a private softibd, every process bounded by `timeout`, stopped
# by PID (lib.sh).  Checks exit codes and the lines research/rdmacm.md §5
# lists.
# Usage: rdmacm.sh CASE
#   rping          rping -s -v / rping -c -C 10 -v -V on 127.0.0.1
#   rping_two      one rping -s -P server, two clients connected at once
#   rping_reject   rping -c to a port nobody listens on: "REJECTED, error 8"
#   rping_q        rping -q (rdma_init_qp_attr, rdma_establish)
#   rping_dev      server on softib0's default address 127.1.0.1, client from
#                  softib1's 127.1.1.1 (per-device addresses)
#   ucmatose       ucmatose -b 127.0.0.1 -c 2 / -s 127.0.0.1 -c 2 -C 100
#   ucmatose_migrate  ucmatose -b -m (rdma_migrate_id) / -s -a 18 (ACK timeout)
#   pyverbs_cmid   a pyverbs CMID server and client (rdmacm_cmid.py, synchronous ids)
#   pyverbs_async, pyverbs_reject, pyverbs_udp, pyverbs_extqp, pyverbs_mcast
#                  the other rdmacm_cmid.py cases (event channel, reject, the
#                  UDP port space, an external QP, multicast); each CASE_dev
#                  with the server on 127.1.0.1 (softib0), the client on
#                  127.1.1.1 (softib1)
#   fault_server_dies, fault_client_dies_req, fault_client_dies_rep (and _dev)
#                  a peer SIGKILLed mid-handshake: the survivor sees the
#                  connection end, never hangs; softibd comes back to 0 ids
#   rdma_server    rdma_server / rdma_client ("end 0")
#   udaddy         udaddy -b / -s (SIDR, UD)
#   send_bw        ib_send_bw -R -d softib0
#   send_bw_ud     ib_send_bw -R -c UD -d softib0 (the UDP port space: SIDR)
#   write_lat      ib_write_lat -R -d softib0
#   rstream        rstream's default run (every size, latency and bandwidth,
#                  nonblocking): rsockets (docs/rdmacm.md "rsockets")
#   rstream_b      rstream -T b -T v (blocking, data verified), four sizes
#   rstream_nb     rstream -T n -T v, 64 KiB, the server bound (-b 127.0.0.1)
#   rstream_async  rstream -T a -T v (rpoll), 1 MB
#   riostream      riostream -T v (riomap/riowrite), 4 KiB
#   riostream_b    riostream -T b -T v, 100 KB
#   riostream_async riostream -T a -T v, 64 KiB
#   riostream_small riostream -S 64 -C 1 -I 2000: each side spins on the last
#                  byte of one 64-byte window that is also its source (issue
#                  16: a marker undone by the placing memcpy hung it)
. "$(dirname "$0")/lib.sh"
case=${1:?usage: rdmacm.sh CASE}

# The Debian clients find librdmacm.so.1 in $SIB_LIB before the system's.
[ -e "$SIB_LIB/librdmacm.so.1" ] || fail "no $SIB_LIB/librdmacm.so.1"

# run_pair TIMEOUT SERVER_OUT "SERVER CMD" CLIENT_OUT CLIENT CMD...: start
# the server, then the client; a client refused because the server does not
# listen yet (its output says REJECTED or refused, or rstream's rpoll
# failed on the refused nonblocking connect) is run again, at most 50
# times 0.2 s apart.  Sets crc (the client's exit code) and srv (the
# server's PID, still to be waited for).
# listening: softibd's ids in LISTEN now; wait_listen N: until N (10 s).
listening() { status | sed -n 's/^rdma_cm .* listening=\([0-9]*\).*/\1/p'; }
listen_ge() { [ "$(listening)" -ge "$1" ]; }
wait_listen() { wait_until 10 listen_ge "$1"; }

run_pair() {
	local t=$1 sout=$2 scmd=$3 cout=$4 l0; shift 4
	l0=$(listening)
	# shellcheck disable=SC2086
	client timeout "$t" $scmd >"$sout" 2>&1 &
	srv=$!
	SIB_PIDS+=("$srv")
	wait_listen $((l0 + 1)) || true # then the retries below say what is wrong
	for _ in $(seq 50); do
		client timeout "$t" "$@" >"$cout" 2>&1
		crc=$?
		[ "$crc" = 0 ] && return 0
		alive "$srv" || return 0
		# rstream/riostream refused while connecting nonblocking: POLLERR,
		# then perror("rpoll") with rconnect's EINPROGRESS
		grep -Eqi 'REJECTED|refused|UNREACHABLE|rpoll: Operation now in progress' "$cout" || return 0
		sleep 0.2
	done
}

# wait_server SECONDS: the server's exit code in src (124 on its timeout).
wait_server() {
	local n=$(($1 * 10))
	for _ in $(seq "$n"); do
		alive "$srv" || break
		sleep 0.1
	done
	if alive "$srv"; then
		kill -TERM "$srv" 2>/dev/null
		src=124
		wait "$srv" 2>/dev/null
		return
	fi
	wait "$srv"
	src=$?
}

show() {
	echo "--- server"; cat "$SIB_TMP/server.out"
	echo "--- client"; cat "$SIB_TMP/client.out"
	echo "--- softibd"; tail -20 "$SIB_TMP/softibd.log"
	status 2>/dev/null | grep -Ei 'cm'
}

check_pair() {
	[ "$crc" = 0 ] || { show; fail "client exited $crc"; }
	wait_server 20
	[ "$src" = 0 ] || { show; fail "server exited $src"; }
}

# pyverbs' CMEvent has no status: softibd's trace shows the one it wrote
case $case in pyverbs_reject*) export SOFTIBD_CM_TRACE=1 ;; esac
# rs_pair SECONDS TOOL ARGS...: TOOL's server (-b $RS_BIND when set) and
# client (-s 127.0.0.1) on a fresh port with ARGS; both must exit 0 and the
# client print a result line (name bytes xfers ...).
rs_pair() {
	local t=$1 tool=$2 port; shift 2
	port=$(free_port) || fail "no free port"
	run_pair "$t" "$S" "$tool ${RS_BIND:+-b $RS_BIND} -p $port $*" "$C" "$tool" -s 127.0.0.1 -p "$port" "$@"
	check_pair
	grep -Eq '^[0-9a-z_.]+ +[0-9.]+[kmg]? +[0-9.]+[kmg]? ' "$C" || { show; fail "$tool: no result line"; }
	grep -q 'verification failed' "$C" "$S" && { show; fail "$tool: data verification failed"; }
	cat "$C"
}

start_daemon
S=$SIB_TMP/server.out
C=$SIB_TMP/client.out
case $case in
rping)
	run_pair 60 "$S" "rping -s -a 127.0.0.1 -v -C 10" "$C" rping -c -a 127.0.0.1 -C 10 -v -V
	check_pair
	[ "$(grep -c 'ping data: rdma-ping-' "$C")" = 10 ] || { show; fail "client did not print 10 ping lines"; }
	grep -q 'ping data: rdma-ping-9' "$S" || { show; fail "server did not print ping 9"; }
	;;
rping_two)
	# a persistent server (-P: a thread per connection) and two clients at
	# once.  rping -P hands each CONNECT_REQUEST to its main thread through
	# one shared slot (listening_cb->child_cm_id), so two requests that come
	# together are a race in rping: the second client starts once the first
	# is connected (it pings 500 times, the second 20).
	l0=$(listening)
	client timeout 60 rping -s -P -a 127.0.0.1 -v >"$S" 2>&1 &
	srv=$!
	SIB_PIDS+=("$srv")
	wait_listen $((l0 + 1)) || { show; fail "rping -s -P does not listen"; }
	client timeout 60 rping -c -a 127.0.0.1 -C 500 -v -V >"$C.1" 2>&1 &
	c1=$!
	SIB_PIDS+=("$c1")
	wait_until 10 grep -q 'ping data: rdma-ping-' "$C.1"
	client timeout 60 rping -c -a 127.0.0.1 -C 20 -v -V >"$C" 2>&1
	crc=$?
	wait "$c1"
	crc1=$?
	cat "$C.1" >>"$C"
	[ "$crc" = 0 ] && [ "$crc1" = 0 ] || { show; fail "clients exited $crc1 and $crc"; }
	alive "$srv" || { show; fail "the persistent server is gone"; }
	[ "$(grep -c 'ping data: rdma-ping-' "$C")" = 520 ] || { show; fail "the clients did not print 500 + 20 ping lines"; }
	;;
rping_reject)
	port=$(free_port) || fail "no free port"
	client timeout 60 rping -c -a 127.0.0.1 -p "$port" -C 1 -v >"$C" 2>&1
	crc=$?
	cat "$C"
	[ "$crc" != 0 ] || fail "rping to a port nobody listens on succeeded"
	[ "$crc" != 124 ] || fail "rping timed out instead of being rejected"
	grep -q 'REJECTED, error 8' "$C" || fail "no 'REJECTED, error 8'"
	;;
rping_q)
	run_pair 60 "$S" "rping -s -q -a 127.0.0.1 -v -C 10" "$C" rping -c -q -a 127.0.0.1 -C 10 -v -V
	check_pair
	[ "$(grep -c 'ping data: rdma-ping-' "$C")" = 10 ] || { show; fail "client did not print 10 ping lines"; }
	;;
rping_dev)
	run_pair 60 "$S" "rping -s -a 127.1.0.1 -v -C 5" "$C" rping -c -I 127.1.1.1 -a 127.1.0.1 -C 5 -v -V
	check_pair
	[ "$(grep -c 'ping data: rdma-ping-' "$C")" = 5 ] || { show; fail "client did not print 5 ping lines"; }
	;;
ucmatose)
	run_pair 60 "$S" "ucmatose -b 127.0.0.1 -c 2 -C 100" "$C" ucmatose -s 127.0.0.1 -c 2 -C 100
	check_pair
	grep -q 'return status 0' "$C" || { show; fail "client: no 'return status 0'"; }
	grep -q 'return status 0' "$S" || { show; fail "server: no 'return status 0'"; }
	;;
ucmatose_migrate)
	run_pair 60 "$S" "ucmatose -b 127.0.0.1 -m" "$C" ucmatose -s 127.0.0.1 -a 18
	check_pair
	grep -q 'migrating to new event channel' "$S" || { show; fail "server did not migrate"; }
	grep -q 'return status 0' "$C" || { show; fail "client: no 'return status 0'"; }
	grep -q 'return status 0' "$S" || { show; fail "server: no 'return status 0'"; }
	;;
pyverbs_*)
	# pyverbs CMID programs (rdmacm_cmid.py): pyverbs_cmid is the
	# synchronous case, pyverbs_CASE another; _dev: server on softib0's
	# 127.1.0.1, client from softib1's 127.1.1.1.  The client starts once
	# the server says "ready"; afterwards softibd holds no id.
	name=${case#pyverbs_}
	# On 127.0.0.1 the server's listener is synchronous: pyverbs'
	# CMID.bind_addr needs the device a bind attaches, and a loopback
	# bind attaches none (Linux: cma_any_addr); on a port's address it
	# is on an event channel (rdmacm_cmid.py Listener).
	addrs=()
	cdev=softib0
	lis=sync
	case $name in
	*_dev) name=${name%_dev}; addrs=(127.1.0.1 127.1.1.1); cdev=softib1; lis=async ;;
	esac
	[ "$name" = cmid ] && name=sync
	py=$(dirname "$0")/rdmacm_cmid.py
	port=$(free_port) || fail "no free port"
	client timeout 60 /usr/bin/python3 "$py" s "$name" "$port" "${addrs[@]}" >"$S" 2>&1 &
	srv=$!
	SIB_PIDS+=("$srv")
	wait_until 20 grep -q '^ready' "$S" || { show; fail "the server did not get ready"; }
	client timeout 60 /usr/bin/python3 "$py" c "$name" "$port" "${addrs[@]}" >"$C" 2>&1
	crc=$?
	check_pair
	want() { # FILE REGEX
		grep -Eq "$2" "$1" || { show; fail "no '$2' in $(basename "$1")"; }
	}
	want "$S" '^server dev softib0$'
	want "$C" "^client dev $cdev\$"
	want "$S" '^server done$'
	want "$C" '^client done$'
	[ "$name" = sync ] || [ "$name" = mcast ] || want "$S" "^server listener $lis\$"
	case $name in
	sync)	want "$S" "^server got b'hello'"; want "$C" '^client sent$' ;;
	async)	[ $lis = sync ] || want "$S" "^server request data b'async-req' 56$"
		want "$C" "^client reply data b'async-rep' 196$"
		want "$S" "^server got b'ping!'"; want "$C" "^client got b'pong!'"
		want "$C" '^client disconnected$'; want "$S" '^server disconnected$' ;;
	reject)	want "$C" "^client rejected with b'go away' 148$"
		# REJECTED (8) with status 28, the consumer's reject (IBA 12.6.7.2)
		want "$SIB_TMP/softibd.log" ' event 8 status 28 id ' 
		want "$C" '^client sync connect refused$'
		want "$S" '^server rejected 2$' ;;
	udp)	[ $lis = sync ] || want "$S" "^server request data b'sidr-req' 180$"
		want "$C" "^client ud qpn 0x[0-9a-f]+ qkey 0x1234567 reply data 136$"
		want "$S" "^server got b'ping!' from QPN"; want "$C" "^client got b'pong!'" ;;
	extqp)	want "$S" "^server got b'ext-qp' on external QP 0x"
		want "$C" '^client sent on external QP 0x'; want "$S" '^server disconnected$' ;;
	mcast)	want "$S" "^server got b'mcast' from the group$"
		want "$C" '^client sent to the group$'
		want "$S" '^server left$'; want "$C" '^client left$' ;;
	esac
	wait_until 10 sh -c "\"$SIB_BIN/softib\" status | grep -q '^ucma ids=0 '" ||
		{ show; fail "softibd still holds ucma ids"; }
	;;
fault_*)
	# A peer that dies mid-handshake (rdmacm_cmid.py server_dies,
	# client_dies_req, client_dies_rep: SIGKILL with a CONNECT_REQUEST not
	# accepted, after sending the REQ, after the REP before the RTU): the
	# survivor sees the end of the connection (REJECTED, UNREACHABLE,
	# CONNECT_ERROR or DISCONNECTED) within its bounded wait, and softibd's
	# ucma and rdma_cm lines come back to zero ids.  The server listens on
	# softib0's 127.1.0.1 (an event channel: pyverbs' bind_addr needs a
	# port's address); _dev: the client on softib1.
	name=${case#fault_}
	addrs=(127.1.0.1)
	case $name in
	*_dev) name=${name%_dev}; addrs=(127.1.0.1 127.1.1.1) ;;
	esac
	py=$(dirname "$0")/rdmacm_cmid.py
	port=$(free_port) || fail "no free port"
	client timeout 60 /usr/bin/python3 "$py" s "$name" "$port" "${addrs[@]}" >"$S" 2>&1 &
	srv=$!
	SIB_PIDS+=("$srv")
	wait_until 20 grep -q '^ready' "$S" || { show; fail "the server did not get ready"; }
	client timeout 60 /usr/bin/python3 "$py" c "$name" "$port" "${addrs[@]}" >"$C" 2>&1
	crc=$?
	wait_server 30
	if [ "$name" = server_dies ]; then
		dead=$src; live=$crc; lout=$C; dout=$S
	else
		dead=$crc; live=$src; lout=$S; dout=$C
	fi
	[ "$dead" = 137 ] || { show; fail "the dying side exited $dead, not by SIGKILL"; }
	grep -q ' dies ' "$dout" || { show; fail "the dying side did not get to its point"; }
	[ "$live" = 0 ] || { show; fail "the survivor exited $live"; }
	grep -Eq ' saw RDMA_CM_EVENT_(REJECTED|UNREACHABLE|CONNECT_ERROR|DISCONNECTED)$' "$lout" ||
		{ show; fail "the survivor saw no end of the connection"; }
	for line in ucma rdma_cm; do
		wait_until 10 sh -c "\"$SIB_BIN/softib\" status | grep -q '^$line ids=0 '" ||
			{ show; fail "softibd's $line line still has ids"; }
	done
	cat "$S"
	;;
rdma_server)
	run_pair 60 "$S" "rdma_server -s 127.0.0.1" "$C" rdma_client -s 127.0.0.1
	check_pair
	grep -q 'rdma_client: end 0' "$C" || { show; fail "client: no 'rdma_client: end 0'"; }
	grep -q 'rdma_server: end 0' "$S" || { show; fail "server: no 'rdma_server: end 0'"; }
	;;
udaddy)
	run_pair 60 "$S" "udaddy -b 127.0.0.1 -c 2 -C 10" "$C" udaddy -s 127.0.0.1 -c 2 -C 10
	check_pair
	grep -q 'data transfers complete' "$C" || { show; fail "client: no 'data transfers complete'"; }
	grep -q 'return status 0' "$S" || { show; fail "server: no 'return status 0'"; }
	;;
send_bw|send_bw_ud|write_lat)
	tool=ib_send_bw
	extra=()
	[ "$case" = write_lat ] && tool=ib_write_lat
	[ "$case" = send_bw_ud ] && extra=(-c UD)
	# perftest -R connects its data QPs right after the exchange on its
	# control connection, without waiting for the server's second listener
	# (perftest_communication.c create_rdma_cm_connection): a client that
	# comes first is rejected (reason 8, no listener), and perftest's own
	# retry then fails or crashes (its second ctx_init).  That race is
	# perftest's (a kernel's rdma_cm rejects the same way): run the pair
	# again, at most 8 times, a random 0-0.4 s apart, only when the daemon
	# counted a rejected connection during a failed attempt.  A client
	# started as soon as the first listener is up loses it often on a
	# loaded machine (3 quick losses in a row failed this test).
	for attempt in 1 2 3 4 5 6 7 8; do
		port=$(free_port) || fail "no free port"
		before=$(status 2>/dev/null | sed -n 's/^rdma_cm .* rejected=\([0-9]*\).*/\1/p')
		run_pair 60 "$S" "$tool -R ${extra[*]} -d softib0 -p $port -n 200" "$C" $tool -R "${extra[@]}" -d softib0 \
			-p "$port" -n 200 127.0.0.1
		[ "$crc" = 0 ] && break
		after=$(status 2>/dev/null | sed -n 's/^rdma_cm .* rejected=\([0-9]*\).*/\1/p')
		[ "${after:-0}" -gt "${before:-0}" ] || break
		echo "attempt $attempt: the data QPs came before perftest's listener (rejected); again"
		sleep "0.$((RANDOM % 5))"
		kill -TERM "$srv" 2>/dev/null
		wait "$srv" 2>/dev/null
	done
	check_pair
	grep -Eq '^ *[0-9]+ +200 ' "$C" || { show; fail "no result line with 200 iterations"; }
	if [ "$case" = send_bw_ud ]; then
		grep -Eq 'Connection type : UD' "$C" && grep -Eq 'rdma_cm QPs[[:space:]]*: ON' "$C" ||
			{ show; fail "not UD QPs through rdma_cm"; }
	fi
	;;
rstream)
	rs_pair 280 rstream
	grep -q '^64_lat ' "$C" && grep -q '^1m_bw ' "$C" || { show; fail "rstream: not every size ran"; }
	;;
rstream_b)
	# not -S below 16: rstream's sync message is 16 bytes from a buffer
	# of -S bytes (an overflow of rstream's own, which ASan reports)
	for sz in 16 4096 100000 1000000; do
		rs_pair 120 rstream -T b -T v -S "$sz" -C 50
	done
	;;
rstream_nb)
	RS_BIND=127.0.0.1 rs_pair 120 rstream -T n -T v -S 65536 -C 500
	;;
rstream_async)
	rs_pair 120 rstream -T a -T v -S 1000000 -C 50
	;;
riostream)
	rs_pair 120 riostream -T v -S 4096 -C 20 -I 10
	;;
riostream_b)
	rs_pair 120 riostream -T b -T v -S 100000 -C 20 -I 5
	;;
riostream_async)
	rs_pair 120 riostream -T a -T v -S 65536 -C 20 -I 5
	;;
riostream_small)
	rs_pair 120 riostream -S 64 -C 1 -I 2000
	;;
*)
	fail "unknown case $case"
	;;
esac
cat "$C"
echo PASS
