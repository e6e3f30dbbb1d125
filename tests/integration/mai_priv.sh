#!/bin/bash
# SPDX-License-Identifier: MIT
# MAI privilege (docs/mai.md "Who is privileged"): the mai.h-only client
# (mai_client) as root against a root softibd may use QP0 and RAW; as
# nobody against a softibd running as nobody (a private socket directory
# owned by nobody) it gets -EACCES for QP0 and -EPERM for RAW, while QP1
# and OOB work; as nobody with CAP_NET_ADMIN it is privileged again.
# The unprivileged half needs root and setpriv, else exit 77
# after the first half.  Daemons stopped by PID; every wait bounded.
. "$(dirname "$0")/lib.sh"
cli=$1

start_daemon
client "$cli" priv || fail "privileged client failed"

[ "$(id -u)" = 0 ] || { echo "SKIP: needs root to act as nobody"; exit 77; }
command -v setpriv >/dev/null || { echo "SKIP: no setpriv"; exit 77; }
as_nobody() {
	# shellcheck disable=SC2086
	setpriv --reuid=nobody --regid=nogroup --clear-groups ${SIB_CAPS:-} \
		env -i PATH=/usr/bin:/bin SOFTIB_SOCKET="$ndir/softib.sock" SOFTIB_NO_AUTOSTART=1 \
		${SIB_PRELOAD:+LD_PRELOAD=$SIB_PRELOAD ASAN_OPTIONS=$ASAN_OPTIONS} "$@"
}
ndir=$(mktemp -d /tmp/softib-nobody.XXXXXX)
trap 'sib_cleanup; rm -rf "$ndir"' EXIT
chown nobody:nogroup "$ndir"
chmod 700 "$ndir"
as_nobody test -x "$SIB_BIN/softibd" -a -x "$cli" ||
	{ echo "SKIP: nobody cannot run the build tree"; exit 77; }
# Not through the function: backgrounded, it would run in a subshell whose
# PID is not softibd's, and stopping that PID would leave softibd behind.
# setpriv and env exec, so $! is softibd itself.
setpriv --reuid=nobody --regid=nogroup --clear-groups \
	env -i PATH=/usr/bin:/bin SOFTIB_SOCKET="$ndir/softib.sock" SOFTIB_NO_AUTOSTART=1 \
	${SIB_PRELOAD:+LD_PRELOAD=$SIB_PRELOAD ASAN_OPTIONS=$ASAN_OPTIONS} \
	"$SIB_BIN/softibd" --foreground --socket "$ndir/softib.sock" >"$SIB_TMP/nobody.log" 2>&1 &
SIB_PIDS+=("$!")
wait_until 10 test -S "$ndir/softib.sock" || fail "softibd as nobody did not start: $(cat "$SIB_TMP/nobody.log")"
as_nobody "$cli" unpriv || fail "unprivileged client failed"
# nobody with CAP_NET_ADMIN (ambient) is privileged, as for umad
if setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=+net_admin \
	--ambient-caps=+net_admin true 2>/dev/null; then
	SIB_CAPS="--inh-caps=+net_admin --ambient-caps=+net_admin" as_nobody "$cli" priv ||
		fail "nobody with CAP_NET_ADMIN was not privileged"
else
	echo "note: setpriv cannot grant ambient capabilities here; CAP_NET_ADMIN case not run"
fi
SOFTIB_SOCKET=$ndir/softib.sock "$SIB_BIN/softib" status | grep -E "^mad|^mai" || fail "no mad status lines"
SOFTIB_SOCKET=$ndir/softib.sock "$SIB_BIN/softib" status | grep -q "^mad_drop .* not_priv=0" ||
	fail "a RAW got through to softibd"
echo PASS
