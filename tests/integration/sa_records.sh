# SPDX-License-Identifier: MIT
# The SA records clients set (no Debian tool sets them: tests/integration/
# sa_client.c through libibumad), checked with unmodified saquery the same
# way under the built-in SM's SA (diags_sa_builtin.sh) and OpenSM's
# (diags_sa.sh): ServiceRecords registered, listed, one deleted;
# an InformInfo subscription listed as InformInfoRecord; a Report of trap 64
# delivered when a port goes down and comes back, and one of the switch's
# trap 128 (its link state changed) forwarded by the SM; PathRecords by
# SLID/DLID with NumbPath 4 and 0 (LMC 0: one path, none).  Sourced after
# mgmt_lib.sh, with the fabric up.

# gid_of DEV: port 1's GID as saquery prints it (fe80::...).
gid_of() {
	python3 -c "import ipaddress, sys; print(ipaddress.IPv6Address((0xfe80 << 112) | int(sys.argv[1], 16)))" \
		"$(port_guid "$1" 1)"
}

# sa_records_check A B C SM: three CAs with port 1 ACTIVE, none the SM's;
# SM builtin or opensm.
sa_records_check() {
	local a=$1 b=$2 c=$3 sm=$4 cl="$SIB_BIN/sa_client" wp wp2 lid
	[ -x "$cl" ] || fail "no $cl"

	run sra "$cl" "$a" 1 sr-set 0x1000000000000abc softib-test 0xFFFFFFFF
	want sra '^status 0x0000$'
	run srb "$cl" "$b" 1 sr-set 0x2000 second 600
	want srb '^status 0x0000$'
	run sr saquery SR
	[ "$(grep -c 'ServiceRecord dump' "$SIB_TMP/sr.out")" = 2 ] || fail "saquery SR: $(cat "$SIB_TMP/sr.out")"
	for f in 'ServiceID\.+0x1000000000000abc$' "ServiceGID\.+$(gid_of "$a")\$" 'ServiceP_Key\.+0xFFFF$' \
		'ServiceLease\.+0xFFFFFFFF$' 'ServiceKey\.+<not displayed>$' 'ServiceName\.+softib-test$' \
		'ServiceData8\.1\.+0x7$' 'ServiceID\.+0x0000000000002000$' "ServiceGID\.+$(gid_of "$b")\$" \
		'ServiceLease\.+0x258$' 'ServiceName\.+second$'; do
		want sr "$f"
	done
	run srd "$cl" "$b" 1 sr-delete 0x2000 second
	want srd '^status 0x0000$'
	client timeout 20 "$cl" "$b" 1 sr-delete 0x2000 second >"$SIB_TMP/srd2.out" 2>&1
	want srd2 '^status 0x0300$'	# no such record
	run sr1 saquery SR
	[ "$(grep -c 'ServiceRecord dump' "$SIB_TMP/sr1.out")" = 1 ] && want sr1 'ServiceName\.+softib-test$' ||
		fail "saquery SR after delete: $(cat "$SIB_TMP/sr1.out")"

	if [ "$sm" = builtin ]; then
		# a lease of 1 s runs out in softibd (its loop ticks the SA's clock)
		run srl "$cl" "$b" 1 sr-set 0x3000 leased 1
		want srl '^status 0x0000$'
		wait_until 15 sh -c "! LD_PRELOAD=\"$SIB_PRELOAD\" saquery SR 2>&1 | grep -q 'ServiceName.*leased'" ||
			fail "the 1 s lease did not run out: $(LD_PRELOAD="$SIB_PRELOAD" saquery SR 2>&1)"
		status | grep -q '^sa .* leases_expired=1 ' || fail "leases_expired: $(status | grep '^sa ')"
	fi

	run iis "$cl" "$c" 1 ii-sub 65
	want iis '^status 0x0000$'
	run iir saquery IIR
	for f in 'InformInfoRecord dump' "SubscriberGID\.+$(gid_of "$c")\$" 'SubscriberEnum\.+0x0$' \
		'lid_range_begin\.+65535$' 'is_generic\.+0x1$' 'subscribe\.+0x1$' 'trap_type\.+0xFFFF$' \
		'trap_num\.+65$' 'qpn\.+<not displayed>$' 'resp_time_val\.+0x12$' 'node_type\.+0xFFFFFF$'; do
		want iir "$f"
	done

	# a Report(Notice) of trap 64 for b when its port comes back
	client timeout 40 "$cl" "$c" 1 ii-wait 64 30 >"$SIB_TMP/wait.out" 2>&1 &
	wp=$!
	SIB_PIDS+=("$wp")
	wait_until 10 grep -q '^ready$' "$SIB_TMP/wait.out" || fail "sa_client ii-wait: $(cat "$SIB_TMP/wait.out")"
	# and of the switch's trap 128 as b's link goes down (the SM forwards it)
	client timeout 40 "$cl" "$a" 1 ii-wait 128 30 >"$SIB_TMP/wait128.out" 2>&1 &
	wp2=$!
	SIB_PIDS+=("$wp2")
	wait_until 10 grep -q '^ready$' "$SIB_TMP/wait128.out" || fail "sa_client ii-wait 128: $(cat "$SIB_TMP/wait128.out")"
	lid=$(lid_of "$b")
	"$SIB_BIN/softib" port "$b" 1 down || fail "softib port $b 1 down"
	if [ "$sm" = opensm ]; then
		# OpenSM sweeps on the switch's trap 128: b leaves its tables
		wait_until 30 sh -c "! LD_PRELOAD=\"$SIB_PRELOAD\" saquery NR $lid 2>&1 | grep -q 'NodeRecord dump'" ||
			fail "OpenSM did not drop $b"
	fi
	"$SIB_BIN/softib" port "$b" 1 up || fail "softib port $b 1 up"
	wait "$wp" || fail "no Report of trap 64: $(cat "$SIB_TMP/wait.out")"
	want wait "^report trap 64 gid $(gid_of "$b")\$"
	wait "$wp2" || fail "no Report of trap 128: $(cat "$SIB_TMP/wait128.out")"
	want wait128 '^report trap 128 issuer_lid [1-9][0-9]* issuer_gid fe80::'

	# NumbPath at LMC 0: 4 asked, one path; 0 asked, none (as OpenSM)
	run pr4 "$cl" "$a" 1 pr-numb "$(lid_of "$a")" "$(lid_of "$c")" 4
	want pr4 '^paths 1$'
	run pr0 "$cl" "$a" 1 pr-numb "$(lid_of "$a")" "$(lid_of "$c")" 0
	want pr0 '^paths 0$'
}
