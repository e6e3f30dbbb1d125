#!/bin/bash
# SPDX-License-Identifier: MIT
# `softib run` (docs/clients.md "softib run"): unmodified programs that
# look for /dev/infiniband and /sys/class/infiniband find softib's devices
# there, as root (the mount-namespace view) and as a fresh unprivileged uid
# with env -i and no namespace rights (the interposer), run_lib.sh.
# Usage: softib_run.sh CASE MODE   (MODE root|user)
#   check   --check names the path the mode must take; exit statuses
#   view    every device's uverbs, umad and rdma_cm nodes are character
#           devices, the classes list the devices; ibstatus (a sh script
#           reading sysfs) and ibstat on the *system's* libibumad (which
#           reads sysfs, not softibd) print what ibv_devinfo says
#   live    a port taken down outside shows in the view at once, and back up
#   views   (root) where views live: a socket directory that others can
#           write is refused; a stale view (its lock free) is removed, a
#           live one (lock held) is not, a symbolic link planted as a stale
#           view is removed without following it, and nothing beside the
#           socket that only looks like a view (view-1_photos) is touched
#   fabric  libfabric's verbs provider under softib run: fi_info lists
#           softib's MSG and DGRAM domains, fi_pingpong -e msg and -e dgram
#           (data checked, -c) between two processes of one softib run
#   net     (root) --net: each port's IPoIB interface is in the view
#           (device/net/<if>) and in `ip addr`; a pyverbs CMID server and
#           client (rdmacm_cmid.py async) find softib0's and softib1's
#           interfaces through sysfs and their addresses through `ip -j
#           addr`, as rdma-core's tests/base.py does, and connect on them
# Needs root (77 otherwise); every wait is bounded; processes stop by PID.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/run_lib.sh"
set -o pipefail
case=${1:?usage: softib_run.sh CASE MODE}
mode=${2:?usage: softib_run.sh CASE MODE}
run_setup "$mode"
OUT=$SIB_TMP/out

case $case in
check)
	# RUN ends in "run --quiet --": the same prefix with --check instead
	chk=("${RUN[@]:0:${#RUN[@]}-2}" --check)
	"${chk[@]}" >"$OUT" 2>&1 || fail "--check exited $?: $(cat "$OUT")"
	cat "$OUT"
	if [ "$mode" = root ]; then
		grep -q '^namespace: root' "$OUT" || fail "root: --check did not pick the namespace"
	else
		grep -q '^preload: no mount namespace here (unshare(CLONE_NEWUSER|CLONE_NEWNS): Operation not permitted)' "$OUT" ||
			fail "user without namespaces: --check did not pick preload, or not say why"
	fi
	# clear errors: a bad option, no daemon
	rc=0; "$SIB_BIN/softib" run --bogus -- true 2>"$OUT" || rc=$?
	[ "$rc" = 2 ] && grep -q '^softib run: unknown option --bogus$' "$OUT" || fail "--bogus: $rc $(cat "$OUT")"
	rc=0; "$SIB_BIN/softib" run --view foo -- true 2>"$OUT" || rc=$?
	[ "$rc" = 2 ] && grep -q 'softib run: --view foo: expected auto, namespace or preload' "$OUT" ||
		fail "--view foo: $rc $(cat "$OUT")"
	if [ "$mode" = root ]; then
		rc=0
		SOFTIB_SOCKET=$SIB_TMP/none/s.sock "$SIB_BIN/softib" run -- true 2>"$OUT" || rc=$?
		[ "$rc" = 1 ] && grep -q 'softib run: no softib device' "$OUT" ||
			fail "no daemon: exit $rc, $(cat "$OUT")"
	fi
	rc=0; "${RUN[@]}" sh -c 'exit 7' || rc=$?
	[ "$rc" = 7 ] || fail "CMD's exit status 7 came back as $rc"
	rc=0; "${RUN[@]}" /nonexistent/cmd 2>"$OUT" || rc=$?
	[ "$rc" = 127 ] || fail "a missing CMD gave $rc, not 127"
	grep -q 'softib run: /nonexistent/cmd: No such file or directory' "$OUT" || fail "no message: $(cat "$OUT")"
	rc=0; "${RUN[@]}" sh -c 'kill -TERM $$' || rc=$?
	[ "$rc" = 143 ] || fail "CMD killed by SIGTERM gave $rc, not 143"
	# a signal to softib run (CMD's parent) reaches CMD, SIGUSR1 too, and
	# softib run, whose library threads must not take it, stays
	rc=0
	"${RUN[@]}" sh -c 'trap "echo got USR1; exit 5" USR1; kill -USR1 $PPID
		for i in $(seq 200); do sleep 0.1; done; exit 9' >"$OUT" 2>&1 || rc=$?
	[ "$rc" = 5 ] && grep -q 'got USR1' "$OUT" || fail "SIGUSR1 was not forwarded (exit $rc): $(cat "$OUT")"
	;;
view)
	umad=$(ldconfig -p | awk '/libibumad\.so\.3 .*x86-64|libibumad\.so\.3 \(libc6,x86-64/ { print $NF; exit }')
	[ -n "$umad" ] && [ -r "$umad" ] || umad=$(ldconfig -p | awk '/libibumad\.so\.3 / { print $NF; exit }')
	[ -n "$umad" ] || fail "no system libibumad.so.3 (Debian libibumad3)"
	"${RUN[@]}" bash -c '
		set -e
		echo "classes: $(ls /sys/class/infiniband | tr "\n" " ")"
		for v in /sys/class/infiniband_verbs/uverbs*; do
			n=${v##*/}
			test -c "/dev/infiniband/$n" && test -r "/dev/infiniband/$n" -a -w "/dev/infiniband/$n"
			echo "verbs: $n $(cat "$v/ibdev") abi $(cat "$v/abi_version")"
		done
		for m in /sys/class/infiniband_mad/umad*; do
			test -c "/dev/infiniband/${m##*/}"
			echo "mad: ${m##*/} $(cat "$m/ibdev") $(cat "$m/port")"
		done
		echo "verbs class abi $(cat /sys/class/infiniband_verbs/abi_version)"
		echo "mad class abi $(cat /sys/class/infiniband_mad/abi_version)"
		test -c /dev/infiniband/rdma_cm
		echo "rdma_cm abi $(cat /sys/class/misc/rdma_cm/abi_version)"
		test -e /dev/null -a -e /dev/pts -a -e /dev/shm
		# read-only, as sysfs and a user'"'"'s /dev are (review)
		if touch /sys/class/infiniband/new 2>/dev/null || rm /dev/infiniband/uverbs0 2>/dev/null; then
			echo "the view is writable"; exit 1
		fi
		ibstatus
		echo "== ibstat"
		LD_PRELOAD=${LD_PRELOAD:+$LD_PRELOAD:}'"$umad"' ibstat
		echo "== devinfo"
		ibv_devinfo -v
	' >"$OUT" 2>&1 || fail "the view script exited $?: $(cat "$OUT")"
	sed -n '1,/^== ibstat/p' "$OUT"
	grep -q '^classes: softib0 softib1 softib2 softib3 $' "$OUT" || fail "the class does not list softib0..3"
	[ "$(grep -c '^verbs: uverbs[0-9] softib[0-3] abi [0-9]*$' "$OUT")" = 4 ] || fail "not 4 uverbs nodes"
	[ "$(grep -c '^mad: umad[0-9] softib[0-3] 1$' "$OUT")" = 4 ] || fail "not 4 umad nodes"
	grep -q '^rdma_cm abi 4$' "$OUT" || fail "rdma_cm abi_version"
	grep -q '^verbs class abi 6$' "$OUT" || fail "infiniband_verbs/abi_version"
	grep -q '^mad class abi 5$' "$OUT" || fail "infiniband_mad/abi_version"
	# each device: ibstatus and ibstat print what ibv_devinfo -v says
	for d in 0 1 2 3; do
		dev=softib$d
		info=$(sed -n "/^== devinfo/,\$p" "$OUT" | sed -n "/hca_id:\t$dev\$/,/^hca_id/p")
		lid=$(echo "$info" | awk '/port_lid:/ { print $2; exit }')
		smlid=$(echo "$info" | awk '/sm_lid:/ { print $2; exit }')
		gid=$(echo "$info" | awk '/GID\[ *0\]:/ { print $NF; exit }')
		[ -n "$lid" ] && [ -n "$gid" ] || fail "$dev: no LID or GID in ibv_devinfo -v"
		st=$(sed -n "/^Infiniband device '$dev' port 1 status:/,/^\$/p" "$OUT")
		[ -n "$st" ] || fail "ibstatus printed no $dev"
		echo "$st" | grep -Eq "base lid:[[:space:]]+$(printf '0x%x' "$lid")\$" || fail "ibstatus $dev: base lid is not $lid: $st"
		echo "$st" | grep -Eq "sm lid:[[:space:]]+$(printf '0x%x' "$smlid")\$" || fail "ibstatus $dev: sm lid is not $smlid"
		echo "$st" | grep -Eq "default gid:[[:space:]]+$gid\$" || fail "ibstatus $dev: default gid is not $gid: $st"
		echo "$st" | grep -Eq 'state:[[:space:]]+4: ACTIVE$' || fail "ibstatus $dev: not ACTIVE"
		echo "$st" | grep -Eq 'link_layer:[[:space:]]+InfiniBand$' || fail "ibstatus $dev: link layer"
		ca=$(sed -n "/^CA '$dev'/,/^CA /p" "$OUT")
		[ -n "$ca" ] || fail "ibstat (system libibumad) printed no CA $dev"
		echo "$ca" | grep -q "Base lid: $lid\$" || fail "ibstat $dev: Base lid is not $lid: $ca"
		echo "$ca" | grep -q "State: Active" || fail "ibstat $dev: not Active"
	done
	echo "ibstatus, ibstat (system libibumad $umad) and ibv_devinfo agree on 4 devices"
	;;
live)
	"${RUN[@]}" bash -c '
		f=/sys/class/infiniband/softib1/ports/1/state
		echo "before: $(cat $f)"
		for _ in $(seq 400); do
			s=$(cat $f)
			case $s in *ACTIVE) sleep 0.05 ;; *) echo "after: $s"; exit 0 ;; esac
		done
		exit 1
	' >"$OUT" 2>&1 &
	pid=$!
	SIB_PIDS+=("$pid")
	wait_until 20 grep -q '^before:' "$OUT" || fail "the view script did not start: $(cat "$OUT")"
	run_admin port softib1 1 down || fail "softib port softib1 1 down failed"
	rc=0
	for _ in $(seq 300); do alive "$pid" || break; sleep 0.1; done
	wait "$pid" || rc=$?
	run_admin port softib1 1 up || fail "softib port softib1 1 up failed"
	cat "$OUT"
	[ "$rc" = 0 ] || fail "the view did not show the port going down (exit $rc)"
	grep -q '^before: 4: ACTIVE$' "$OUT" || fail "the port was not ACTIVE first"
	grep -q '^after: 1: DOWN$' "$OUT" || fail "the port did not show DOWN"
	;;
fabric)
	command -v fi_pingpong >/dev/null || run_skip "no fi_pingpong (Debian libfabric-bin)"
	port=$(free_port) || fail "no free port"
	"${RUN[@]}" bash -c '
		fi_info -p verbs | grep -E "^ +domain:" | sort -u
		pp() { # NAME SERVER_ARGS CLIENT_ARGS
			local s c
			timeout 60 fi_pingpong -B '"$port"' $2 -I 100 -S 4096 -c >/dev/null 2>&1 &
			s=$!
			for _ in $(seq 50); do
				timeout 60 fi_pingpong -P '"$port"' $3 -I 100 -S 4096 -c 127.0.0.1 >c.out 2>&1
				c=$?
				grep -q "failed to connect\|connection refused" c.out || break
				sleep 0.2
			done
			wait $s
			echo "$1 server $? client $c: $(grep -E "^4k +100 +=100 " c.out | head -1)"
		}
		cd "$(mktemp -d)"
		pp msg "-p verbs -e msg" "-p verbs -e msg"
		pp dgram "-p verbs -e dgram -d softib0-dgram" "-p verbs -e dgram -d softib1-dgram"
	' >"$OUT" 2>&1 || fail "the fabric script exited $?: $(cat "$OUT")"
	cat "$OUT"
	grep -q 'domain: softib0$' "$OUT" || fail "fi_info: no MSG domain softib0"
	grep -q 'domain: softib1-dgram$' "$OUT" || fail "fi_info: no DGRAM domain softib1-dgram"
	grep -Eq '^msg server 0 client 0: 4k +100 +=100 ' "$OUT" || fail "fi_pingpong -e msg"
	grep -Eq '^dgram server 0 client 0: 4k +100 +=100 ' "$OUT" || fail "fi_pingpong -e dgram"
	;;
views)
	[ "$mode" = root ] || run_skip "this case plants files as root"
	V=$SIB_TMP/softib-views
	mkdir -p "$SIB_TMP/bad" "$SIB_TMP/victim"
	chmod 0777 "$SIB_TMP/bad"
	rc=0
	"$SIB_BIN/softib" --socket "$SIB_TMP/bad/s.sock" run -- true 2>"$OUT" || rc=$?
	[ "$rc" = 1 ] || fail "a socket directory others can write was used (exit $rc)"
	grep -q "refusing $SIB_TMP/bad: writable by group or others" "$OUT" || fail "no reason: $(cat "$OUT")"
	mkdir -p "$SIB_TMP/view-4000001_photos" && echo keep >"$SIB_TMP/view-2024-report"
	"${RUN[@]}" true || fail "the first run failed"
	[ -d "$V" ] && [ "$(stat -c %a "$V")" = 711 ] || fail "$V: $(stat -c '%a %U' "$V")"
	mkdir -p "$V/view-999999/sys" "$V/view-999997/dev" && echo x >"$V/view-999999/sys/f"
	echo keep >"$SIB_TMP/victim/file"
	ln -s "$SIB_TMP/victim" "$V/view-999998"
	: >"$V/view-999997.lock"
	: >"$SIB_TMP/hold"
	# a live run's lock, held until $SIB_TMP/hold goes (no child left behind
	# that keeps the test's output open)
	(exec 9<"$V/view-999997.lock"; flock 9; while [ -e "$SIB_TMP/hold" ]; do sleep 0.05; done) &
	holder=$!
	SIB_PIDS+=("$holder")
	wait_until 5 sh -c "! flock -n '$V/view-999997.lock' true" || fail "the lock was not taken"
	"${RUN[@]}" sh -c 'ls /sys/class/infiniband >/dev/null' || fail "the second run failed"
	[ -e "$V/view-999999" ] && fail "a stale view was left"
	[ -L "$V/view-999998" ] && fail "a planted link was left"
	[ -f "$SIB_TMP/victim/file" ] || fail "the cleanup followed a symbolic link"
	[ -d "$V/view-999997" ] || fail "a live view (its lock held) was removed"
	[ -d "$SIB_TMP/view-4000001_photos" ] && [ -f "$SIB_TMP/view-2024-report" ] ||
		fail "a file beside the socket was removed"
	rm -f "$SIB_TMP/hold"
	wait "$holder"
	[ "$(ls "$V" | grep -cv '^view-99999[7]')" = 0 ] || fail "this run left its view: $(ls "$V")"
	# two runs with the same pid (each pid 1 of its own pid namespace)
	if unshare -pf true 2>/dev/null; then
		unshare -pf "${RUN[@]}" sleep 4 &
		first=$!
		SIB_PIDS+=("$first")
		wait_until 10 sh -c "ls '$V' | grep -q '^view-1$'" || fail "the first pid-1 run has no view-1"
		unshare -pf "${RUN[@]}" sh -c 'ls /sys/class/infiniband | grep -q softib0' ||
			fail "a second run with pid 1 failed"
		wait "$first" || fail "the first pid-1 run failed"
	fi
	# a child CMD leaves behind keeps the view (it holds the lock), then it goes
	"${RUN[@]}" sh -c '(sleep 1; ls /sys/class/infiniband | tr "\n" " "; echo) &' >"$OUT" 2>&1 ||
		fail "the run with a lingering child failed"
	wait_until 10 grep -q softib0 "$OUT" || fail "a child that outlived CMD lost the view: $(cat "$OUT")"
	"${RUN[@]}" true
	[ "$(ls "$V" | grep -cv '^view-99999[7]')" = 0 ] || fail "a view was left: $(ls "$V")"
	echo "views: refused, removed, kept as they should be"
	;;
net)
	[ "$mode" = root ] || run_skip "--net needs a network namespace; this test runs it as root"
	command -v ip >/dev/null || run_skip "no ip (iproute2)"
	[ -c /dev/net/tun ] || run_skip "no /dev/net/tun"
	py=$(cd "$(dirname "$0")" && pwd)/rdmacm_cmid.py
	port=$(free_port) || fail "no free port"
	cat >"$SIB_TMP/net.sh" <<NET
set -u
ip -br addr
# the device's interface through sysfs, its IPv4 address through ip -j
ifaddr() {
	local n
	n=\$(ls /sys/class/infiniband/\$1/device/net/) || return 1
	echo "\$1 port 1: \$n dev_port \$(cat /sys/class/infiniband/\$1/device/net/\$n/dev_port)" >&2
	ip -j addr show "\$n" | python3 -c 'import json, sys
print([a["local"] for a in json.load(sys.stdin)[0]["addr_info"] if a["family"] == "inet"][0])'
}
a0=\$(ifaddr softib0) && a1=\$(ifaddr softib1) || exit 1
# sysfs of this network namespace: the view's ifindex is the interface's
echo "ifindex \$(cat /sys/class/infiniband/softib1/device/net/*/ifindex) \$(cat /sys/class/net/\$(ls /sys/class/infiniband/softib1/device/net/)/ifindex)"
echo "addresses \$a0 \$a1"
timeout 60 /usr/bin/python3 "$py" s async $port "\$a0" "\$a1" >"$SIB_TMP/s.out" 2>&1 &
s=\$!
for _ in \$(seq 200); do grep -q '^ready' "$SIB_TMP/s.out" && break; sleep 0.1; done
timeout 60 /usr/bin/python3 "$py" c async $port "\$a0" "\$a1" >"$SIB_TMP/c.out" 2>&1
c=\$?
wait \$s
echo "server \$? client \$c"
NET
	env LD_PRELOAD="$SIB_PRELOAD" timeout 120 "$SIB_BIN/softib" run --quiet --net -- bash "$SIB_TMP/net.sh" \
		>"$OUT" 2>&1 || fail "softib run --net exited $?: $(cat "$OUT")"
	cat "$OUT"
	show() { echo "--- server"; cat "$SIB_TMP/s.out"; echo "--- client"; cat "$SIB_TMP/c.out"; }
	grep -Eq '^softib0 port 1: ib[0-9]+ dev_port 0$' "$OUT" || fail "softib0 has no interface in sysfs"
	grep -Eq '^softib1 port 1: ib[0-9]+ dev_port 0$' "$OUT" || fail "softib1 has no interface in sysfs"
	grep -q '^addresses 127.1.0.1 127.1.1.1$' "$OUT" || fail "the interfaces do not have rdma_cm's addresses"
	grep -Eq '^ifindex ([0-9]+) \1$' "$OUT" || fail "the view's ifindex is not the namespace's"
	grep -q '^server 0 client 0$' "$OUT" || { show; fail "the CMID pair failed"; }
	grep -q '^server dev softib0$' "$SIB_TMP/s.out" || { show; fail "the server was not on softib0"; }
	grep -q '^client dev softib1$' "$SIB_TMP/c.out" || { show; fail "the client was not on softib1"; }
	grep -q "^client got b'pong!'" "$SIB_TMP/c.out" || { show; fail "no pong"; }
	ip link show ib0 >/dev/null 2>&1 && fail "ib0 leaked out of the namespace"
	;;
*)
	fail "unknown case $case"
	;;
esac
echo PASS
