#!/bin/bash
# SPDX-License-Identifier: MIT
# The first commands of a new user on a new machine: no SOFTIB_* and no
# XDG_RUNTIME_DIR in the environment (env -i), and no /tmp/softib-<uid> yet.
# As another uid (setpriv), unmodified ibv_devices, ibv_devinfo and
# ibv_rc_pingpong run through the build, first as the README's main job
# (tools/demo.sh), then one by one; the library autostarts softibd,
# which creates its socket directory 0700.  Then an unsafe directory: an
# empty list, exit 0, and one line from softibd and one from the library on
# stderr.  Needs root and setpriv, else exit 77 (skipped).  The daemon
# started here is stopped here by PID and its directory removed; every
# wait is bounded.
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" = 0 ] || { echo "SKIP: needs root to act as another uid"; exit 77; }
command -v setpriv >/dev/null || { echo "SKIP: no setpriv"; exit 77; }

# Two uids that nobody uses here, with no socket directory yet.
pick_uid() {
	local u
	for _ in $(seq 100); do
		u=$((3000000000 + RANDOM * 32768 + RANDOM))
		if ! getent passwd "$u" >/dev/null && [ ! -e "/tmp/softib-$u" ] && [ "$u" != "${U:-}" ]; then
			echo "$u"
			return 0
		fi
	done
	return 1
}
U=$(pick_uid) || fail "no free uid"
U2=$(pick_uid) || fail "no free uid"
dir=/tmp/softib-$U
dir2=/tmp/softib-$U2
dpid=

stop_user_daemon() {
	if [ -n "$dpid" ]; then
		kill -TERM "$dpid" 2>/dev/null
		wait_until 5 eval "! alive $dpid" || kill -KILL "$dpid" 2>/dev/null
	fi
	rm -rf "$dir" "$dir2"
}
trap 'stop_user_daemon; sib_cleanup' EXIT

# as_user UID CMD...: CMD as UID with nothing of our environment but PATH,
# the build's library and, for the sanitized build, the ASan runtime.
as_user() {
	local u=$1; shift
	setpriv --reuid="$u" --regid="$u" --clear-groups \
		env -i PATH=/usr/local/bin:/usr/bin:/bin LD_LIBRARY_PATH="$SIB_LIB" \
		${SIB_PRELOAD:+LD_PRELOAD=$SIB_PRELOAD ASAN_OPTIONS=$ASAN_OPTIONS} "$@"
}

as_user "$U" test -r "$SIB_LIB/libibverbs.so.1" -a -x "$SIB_BIN/softibd" ||
	{ echo "SKIP: uid $U cannot read the build tree $SIB_LIB"; exit 77; }

# 0. the README's main job, tools/demo.sh, as this user meets it: it uses the
# default socket, the library autostarts softibd there, and demo.sh stops it
demo=$(cd "$(dirname "$0")/../../tools" && pwd)/demo.sh
as_user "$U" test -r "$demo" || { echo "SKIP: uid $U cannot read $demo"; exit 77; }
as_user "$U" timeout 120 bash "$demo" "$SIB_LIB/.." >"$SIB_TMP/demo" 2>&1 ||
	fail "tools/demo.sh exited $?: $(cat "$SIB_TMP/demo")"
grep -q "1000 iters" "$SIB_TMP/demo" || fail "demo: no ping-pong result: $(cat "$SIB_TMP/demo")"
grep -q "socket=$dir/softib.sock" "$SIB_TMP/demo" || fail "demo did not use $dir: $(cat "$SIB_TMP/demo")"
grep -q "libibverbs: Warning" "$SIB_TMP/demo" && fail "demo warned: $(cat "$SIB_TMP/demo")"
[ "$(stat -c '%u %a' "$dir")" = "$U 700" ] || fail "$dir: $(stat -c 'owner %u mode %a' "$dir")"
wait_until 10 eval "! as_user $U $SIB_BIN/softib status >/dev/null 2>&1" ||
	fail "demo.sh left its daemon running"
grep -E "^==|iters|^softibd pid" "$SIB_TMP/demo"
rm -rf "$dir" # step 1 starts from no directory again

# 1. ibv_devices: autostart, the directory is made private
out=$(as_user "$U" timeout 30 ibv_devices 2>"$SIB_TMP/err") || fail "ibv_devices exited $?: $(cat "$SIB_TMP/err")"
echo "$out"
for d in softib0 softib1 softib2 softib3; do
	echo "$out" | grep -q "$d" || fail "ibv_devices did not list $d: $(cat "$SIB_TMP/err")"
done
[ -s "$SIB_TMP/err" ] && fail "warnings on a good start: $(cat "$SIB_TMP/err")"
[ -d "$dir" ] && [ ! -L "$dir" ] || fail "$dir was not created"
[ "$(stat -c '%u %a' "$dir")" = "$U 700" ] || fail "$dir: $(stat -c 'owner %u mode %a' "$dir")"
dpid=$(as_user "$U" timeout 10 "$SIB_BIN/softib" status | sed -n 's/^softibd pid=\([0-9]*\) .*socket=\([^ ]*\) .*/\1 \2/p')
[ "${dpid#* }" = "$dir/softib.sock" ] || fail "the daemon does not serve $dir/softib.sock: $dpid"
dpid=${dpid%% *}
[ "$(stat -c %u "/proc/$dpid")" = "$U" ] || fail "softibd $dpid does not run as uid $U"

# The same daemon from inside `unshare -r` (uid 0 there): the default path
# is the user's outside uid's (a newcomer's `unshare -rn softib ipoib` looked
# in /tmp/softib-0).  Skipped where user namespaces are not allowed.
if as_user "$U" unshare -r true 2>/dev/null; then
	in=$(as_user "$U" unshare -r "$SIB_BIN/softib" status 2>&1 | sed -n 's/^softibd pid=\([0-9]*\) .*/\1/p')
	[ "$in" = "$dpid" ] || fail "inside unshare -r: not softibd $dpid: $(as_user "$U" unshare -r "$SIB_BIN/softib" status 2>&1 | head -3)"
else
	echo "note: no user namespaces here; the unshare -r case is not run"
fi

# 2. ibv_devinfo
out=$(as_user "$U" timeout 30 ibv_devinfo -d softib0) || fail "ibv_devinfo exited $?"
echo "$out" | grep -q "PORT_ACTIVE" || fail "ibv_devinfo: no active port: $out"

# 3. ibv_rc_pingpong, server on softib0, client on softib1
for _ in 1 2 3 4 5; do
	port=$(free_port) || fail "no free port"
	as_user "$U" timeout 60 ibv_rc_pingpong -d softib0 -n 100 -p "$port" >"$SIB_TMP/srv" 2>&1 &
	srv=$!
	SIB_PIDS+=("$srv")
	wait_until 30 server_ready
	port_listening "$port" && break
	wait "$srv" 2>/dev/null
	grep -q "Couldn't listen" "$SIB_TMP/srv" || fail "server did not listen: $(cat "$SIB_TMP/srv")"
done
as_user "$U" timeout 60 ibv_rc_pingpong -d softib1 -n 100 -p "$port" 127.0.0.1 >"$SIB_TMP/cli" 2>&1 ||
	fail "ping-pong client: $(cat "$SIB_TMP/cli")"
wait "$srv" || fail "ping-pong server: $(cat "$SIB_TMP/srv")"
grep -q "100 iters" "$SIB_TMP/cli" || fail "no ping-pong result: $(cat "$SIB_TMP/cli")"
cat "$SIB_TMP/cli"

# 4. an unsafe socket directory: refused, said once each, still an empty list
mkdir -m 0777 "$dir2"
chown "$U2:$U2" "$dir2"
chmod 0777 "$dir2"
out=$(as_user "$U2" timeout 30 ibv_devices 2>"$SIB_TMP/err2") || fail "ibv_devices exited $? on a bad directory"
echo "$out" | grep -q softib && fail "devices listed without a daemon"
cat "$SIB_TMP/err2"
[ "$(grep -c "refusing socket directory $dir2: writable by group or others" "$SIB_TMP/err2")" = 1 ] ||
	fail "softibd did not say why it refused $dir2"
[ "$(grep -c '^libibverbs: Warning: softib: ' "$SIB_TMP/err2")" = 1 ] ||
	fail "the library did not say once why there are no devices"
[ -e "$dir2/softib.sock" ] && fail "a socket was made in an unsafe directory"

stop_user_daemon
alive "$dpid" && fail "softibd $dpid did not stop"
dpid=
echo PASS
