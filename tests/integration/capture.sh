#!/bin/bash
# SPDX-License-Identifier: MIT
# Capture (docs/link.md) of unmodified programs, decoded by tshark:
#  1. ibv_rc_pingpong, one packet per message and three (MTU 1024), with
#     SOFTIB_CAPTURE on the server: both directions of its port.  The
#     opcodes, destination QPNs, PSNs and AETH (syndrome, MSN) must be the
#     exact expected sequence.
#  2. ib_write_bw with SOFTIB_CAPTURE on the client: RDMA WRITE ONLY with
#     the RETH the server advertised (VA, R_Key, DMA length), then ACKs.
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

pingpong_case() { # SIZE PACKETS_PER_MESSAGE [ARGS...]
	local size=$1 npkt=$2; shift 2
	local iters=4 cap=$SIB_TMP/pp-$size.pcap
	start_server "$SIB_TMP/server.out" timeout 60 env SOFTIB_CAPTURE="$cap" \
		ibv_rc_pingpong -d softib0 -p PORT -n $iters -s "$size" "$@"
	client timeout 60 ibv_rc_pingpong -d softib1 -p "$port" -n $iters -s "$size" "$@" 127.0.0.1 \
		>"$SIB_TMP/client.out" 2>&1 || fail "client: $(cat "$SIB_TMP/client.out")"
	wait "$srv" || fail "server: $(cat "$SIB_TMP/server.out")"
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
	diff -u "$SIB_TMP/want" "$SIB_TMP/got" || fail "ibv_rc_pingpong -s $size: decoded sequence differs"
	"$SIB_BIN/test_capture" --check "$cap" || fail "ibv_rc_pingpong -s $size: bad ICRC/VCRC in the capture"
	echo "ibv_rc_pingpong -s $size: $(wc -l <"$SIB_TMP/got") packets as expected"
}

pingpong_case 64 1
pingpong_case 2500 3 -m 1024

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
grep '^10 ' "$SIB_TMP/got" | diff -u "$SIB_TMP/want" - || fail "ib_write_bw: RDMA WRITE/RETH sequence differs"
# Every write ACKed, MSN counting up (ACKs may be coalesced: the last one covers all).
grep '^17 ' "$SIB_TMP/got" | awk -v n=$n 'BEGIN { last = 0 } { if ($4 <= last) bad = 1; last = $4 }
	END { exit bad || last != n }' || fail "ib_write_bw: ACK MSNs: $(grep '^17 ' "$SIB_TMP/got")"
"$SIB_BIN/test_capture" --check "$cap" || fail "ib_write_bw: bad ICRC/VCRC in the capture"
echo "ib_write_bw: $n RDMA WRITEs with RETH va=$va rkey=$rkey dmalen=$size"
echo PASS
