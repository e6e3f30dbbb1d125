#!/bin/bash
# SPDX-License-Identifier: MIT
# Capture (docs/link.md) of unmodified programs, decoded by tshark:
#  1. ibv_rc_pingpong, one packet per message and three (MTU 1024), with
#     SOFTIB_CAPTURE on the server: both directions of its port.  The
#     opcodes, destination QPNs, PSNs and AETH (syndrome, MSN) must be the
#     exact expected sequence.
#  2. ib_write_bw with SOFTIB_CAPTURE on the client: RDMA WRITE ONLY with
#     the RETH the server advertised (VA, R_Key, DMA length), then ACKs.
#  3. `softib capture -d softib0 -p 1 -c N` started before the programs
#     (which know nothing of it): the same sequence as 1; and a capture of
#     every port stopped with SIGINT.
# Every record's ICRC and VCRC are recomputed (test_capture --check).
# Exit 77 (skipped) only if tshark is not installed.
. "$(dirname "$0")/lib.sh"
command -v tshark >/dev/null || { echo "SKIP: tshark not installed (Debian package tshark)"; exit 77; }
command -v ib_write_bw >/dev/null || fail "ib_write_bw not installed (Debian package perftest)"
start_daemon

# Payload heuristics off: our payloads are not RPC-over-RDMA and friends.
TSHARK_OPTS=(--disable-protocol rpcordma --disable-protocol smb_direct --disable-protocol smc
	--disable-protocol nvme-rdma --disable-protocol lnet --disable-protocol iser
	--disable-protocol fcoib --disable-protocol infiniband_sdp)
decode() { # FILE FIELDS...
	local f=$1; shift
	local args=()
	for x in "$@"; do args+=(-e "$x"); done
	tshark "${TSHARK_OPTS[@]}" -r "$f" -T fields -E separator=' ' -E occurrence=f "${args[@]}" 2>/dev/null
}
# The value after KEY on the first "WHICH address:" line of FILE, in decimal:
# "local address:  LID 0x0002, QPN 0x000002, PSN 0xc96405, ..." (ibv_rc_pingpong)
# " remote address: LID 0x02 QPN 0x0002 PSN 0x37afba RKey 0x000100 VAddr 0x..." (perftest)
field() { # FILE local|remote KEY
	local v
	v=$(awk -v w="$2" -v k="$3" '$1 == w && $2 == "address:" {
		for (i = 3; i < NF; i++) if ($i == k) { v = $(i + 1); gsub(",", "", v); print v; exit } }' "$1")
	[ -n "$v" ] && printf '%d\n' "$v"
}

pingpong_case() { # env|tool SIZE PACKETS_PER_MESSAGE [ARGS...]
	local how=$1 size=$2 npkt=$3; shift 3
	local iters=4 cap=$SIB_TMP/pp-$how-$size.pcap tool=
	local -a capenv=(env)
	if [ "$how" = env ]; then
		capenv=(env SOFTIB_CAPTURE="$cap")
	else
		# Through softibd, for programs that do not know: 4 packets per
		# iteration and packet of a message.
		"$SIB_BIN/softib" capture -w "$cap" -d softib0 -p 1 -c $((iters * 2 * (npkt + 1))) \
			2>"$SIB_TMP/tool.err" &
		tool=$!
		SIB_PIDS+=("$tool")
		wait_until 10 grep -q capturing "$SIB_TMP/tool.err" || fail "softib capture: $(cat "$SIB_TMP/tool.err")"
	fi
	start_server "$SIB_TMP/server.out" timeout 60 "${capenv[@]}" \
		ibv_rc_pingpong -d softib0 -p PORT -n $iters -s "$size" "$@"
	client timeout 60 ibv_rc_pingpong -d softib1 -p "$port" -n $iters -s "$size" "$@" 127.0.0.1 \
		>"$SIB_TMP/client.out" 2>&1 || fail "client: $(cat "$SIB_TMP/client.out")"
	wait "$srv" || fail "server: $(cat "$SIB_TMP/server.out")"
	if [ -n "$tool" ]; then
		wait_until 10 sh -c "! kill -0 $tool 2>/dev/null" || fail "softib capture did not stop after its count"
		wait "$tool" || fail "softib capture: $(cat "$SIB_TMP/tool.err")"
	fi
	local so=$SIB_TMP/server.out sqpn spsn cqpn cpsn
	sqpn=$(field "$so" local QPN) && spsn=$(field "$so" local PSN) &&
		cqpn=$(field "$so" remote QPN) && cpsn=$(field "$so" remote PSN) ||
		fail "no addresses in $(cat "$so")"
	# Per iteration: the client's message (FIRST/MIDDLE/LAST or ONLY) to the
	# server's QP, the server's ACK of its last PSN (MSN = messages so far),
	# then the same the other way round.
	local -a ops
	if [ "$npkt" = 1 ]; then ops=(4); else ops=(0); for _ in $(seq $((npkt - 2))); do ops+=(1); done; ops+=(2); fi
	{
		for i in $(seq 0 $((iters - 1))); do
			for side in c s; do
				if [ $side = c ]; then dq=$sqpn aq=$cqpn base=$cpsn; else dq=$cqpn aq=$sqpn base=$spsn; fi
				for k in $(seq 0 $((npkt - 1))); do
					printf '%d 0x%06x %d - -\n' "${ops[$k]}" "$dq" $(((base + i * npkt + k) & 0xffffff))
				done
				printf '17 0x%06x %d ACK %d\n' "$aq" $(((base + i * npkt + npkt - 1) & 0xffffff)) $((i + 1))
			done
		done
	} >"$SIB_TMP/want"
	decode "$cap" infiniband.bth.opcode infiniband.bth.destqp infiniband.bth.psn \
		infiniband.aeth.syndrome infiniband.aeth.msn |
		awk '{ syn = $4 == "" ? "-" : ($4 < 32 ? "ACK" : "NAK" $4); msn = $5 == "" ? "-" : $5
		       print $1, $2, $3, syn, msn }' >"$SIB_TMP/got"
	diff -u "$SIB_TMP/want" "$SIB_TMP/got" || fail "ibv_rc_pingpong -s $size ($how): decoded sequence differs"
	"$SIB_BIN/test_capture" --check "$cap" || fail "ibv_rc_pingpong -s $size ($how): bad ICRC/VCRC"
	echo "ibv_rc_pingpong -s $size ($how capture): $(wc -l <"$SIB_TMP/got") packets as expected"
}

pingpong_case env 64 1
pingpong_case env 2500 3 -m 1024
pingpong_case tool 64 1
pingpong_case tool 2500 3 -m 1024

# softib capture of every port, stopped by SIGINT: each packet twice (leaving
# one port, arriving at the other), a valid file, ports disarmed after.
"$SIB_BIN/softib" capture -w "$SIB_TMP/all.pcap" 2>"$SIB_TMP/tool.err" &
tool=$!
SIB_PIDS+=("$tool")
wait_until 10 grep -q capturing "$SIB_TMP/tool.err" || fail "softib capture: $(cat "$SIB_TMP/tool.err")"
status | grep -q '^link_port dev=softib1 port=1 capture=1' || fail "not armed: $(status)"
start_server "$SIB_TMP/server.out" timeout 60 ibv_rc_pingpong -d softib0 -p PORT -n 3 -s 64
client timeout 60 ibv_rc_pingpong -d softib1 -p "$port" -n 3 -s 64 127.0.0.1 >"$SIB_TMP/client.out" 2>&1 ||
	fail "client: $(cat "$SIB_TMP/client.out")"
wait "$srv" || fail "server: $(cat "$SIB_TMP/server.out")"
kill -INT "$tool"
wait "$tool" || fail "softib capture after SIGINT: $(cat "$SIB_TMP/tool.err")"
grep -q '24 packets captured' "$SIB_TMP/tool.err" || fail "every port, both ends: $(cat "$SIB_TMP/tool.err")"
"$SIB_BIN/test_capture" --check "$SIB_TMP/all.pcap" || fail "softib capture (all): bad ICRC/VCRC"
status | grep -q '^link_port' && fail "still armed after the capture ended: $(status)"
echo "softib capture of every port: $(grep captured "$SIB_TMP/tool.err")"

# ib_write_bw: the client writes, its capture shows the RETH.
n=5 size=4096 cap=$SIB_TMP/wbw.pcap
start_server "$SIB_TMP/server.out" timeout 60 ib_write_bw -d softib0 -p PORT -n $n -s $size
client timeout 60 env SOFTIB_CAPTURE="$cap" ib_write_bw -d softib1 -p "$port" -n $n -s $size 127.0.0.1 \
	>"$SIB_TMP/client.out" 2>&1 || fail "ib_write_bw client: $(cat "$SIB_TMP/client.out")"
wait "$srv" || fail "ib_write_bw server: $(cat "$SIB_TMP/server.out")"
co=$SIB_TMP/client.out
rqpn=$(field "$co" remote QPN) && rkey=$(field "$co" remote RKey) && va=$(field "$co" remote VAddr) &&
	lpsn=$(field "$co" local PSN) || fail "no addresses in $(cat "$co")"
decode "$cap" infiniband.bth.opcode infiniband.bth.destqp infiniband.bth.psn infiniband.reth.va \
	infiniband.reth.r_key infiniband.reth.dmalen infiniband.aeth.msn | awk '{ $1 = $1; print }' >"$SIB_TMP/got"
for i in $(seq 0 $((n - 1))); do
	printf '10 0x%06x %d 0x%016x 0x%08x %d\n' "$rqpn" $(((lpsn + i) & 0xffffff)) "$va" "$rkey" $size
done >"$SIB_TMP/want"
# A packet sent again (the requester's retry after an ACK timeout or a
# sequence NAK, which a loaded machine can cause) is on the wire twice and
# so in the capture twice, next to itself: the sequence counts it once.
grep '^10 ' "$SIB_TMP/got" | uniq | diff -u "$SIB_TMP/want" - || fail "ib_write_bw: RDMA WRITE/RETH sequence differs"
resent=$(( $(grep -c '^10 ' "$SIB_TMP/got") - $(grep '^10 ' "$SIB_TMP/got" | uniq | wc -l) ))
[ "$resent" -eq 0 ] || echo "ib_write_bw: $resent RDMA WRITE packet(s) sent again (retransmission)"
# Every write ACKed, MSN counting up (ACKs may be coalesced: the last one covers all).
grep '^17 ' "$SIB_TMP/got" | awk -v n=$n 'BEGIN { last = 0 } { if ($4 <= last) bad = 1; last = $4 }
	END { exit bad || last != n }' || fail "ib_write_bw: ACK MSNs: $(grep '^17 ' "$SIB_TMP/got")"
"$SIB_BIN/test_capture" --check "$cap" || fail "ib_write_bw: bad ICRC/VCRC in the capture"
echo "ib_write_bw: $n RDMA WRITEs with RETH va=$va rkey=$rkey dmalen=$size"
echo PASS
