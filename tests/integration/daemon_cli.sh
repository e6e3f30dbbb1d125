#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The softibd and softib commands as a user runs them: --help, --daemon with
# readiness, status (both commands), a refused second daemon, stop, and the
# "not running" path.  Private socket in a temp dir; every daemon started
# here is stopped here by PID; every wait is bounded.
# Usage: daemon_cli.sh SOFTIBD SOFTIB
set -u
SOFTIBD=$1
SOFTIB=$2
dir=$(mktemp -d /tmp/softib-cli-XXXXXX)
sock=$dir/cli.sock
export SOFTIB_SOCKET=$sock SOFTIB_NO_AUTOSTART=1
unset SOFTIB_LOG
dpid=

cleanup() {
	if [ -n "$dpid" ] && kill -0 "$dpid" 2>/dev/null; then
		kill -TERM "$dpid" 2>/dev/null
		for _ in $(seq 50); do kill -0 "$dpid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$dpid" 2>/dev/null
	fi
	rm -rf "$dir"
}
trap cleanup EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

# --help is true: every option it lists is accepted (placed before --help,
# which then exits 0 before anything runs; an unknown option exits 1)
"$SOFTIBD" --help | grep -q -- '--idle-exit SECS' || fail "softibd --help"
for opt in $("$SOFTIBD" --help | grep -oE -- '^ +(-[a-z], )?--[a-z-]+( [A-Z]+)?' |
	     sed -E 's/^ +(-[a-z], )?//; s/ [A-Z]+$/=1/'); do
	"$SOFTIBD" "$opt" --help >/dev/null 2>&1 || fail "softibd does not accept $opt from --help"
done
"$SOFTIBD" --version | grep -q 'control ABI' || fail "softibd --version"
"$SOFTIB" --help | grep -q 'status' || fail "softib --help"
"$SOFTIB" bogus 2>/dev/null; [ $? -eq 2 ] || fail "softib bogus: exit 2"
"$SOFTIBD" --no-such-option 2>/dev/null && fail "softibd accepted a bad option"

# not running
out=$("$SOFTIB" status 2>&1); rc=$?
[ $rc -eq 1 ] || fail "status without daemon: exit $rc"
echo "$out" | grep -q 'softibd is not running' || fail "status without daemon: '$out'"
"$SOFTIBD" --status >/dev/null 2>&1 && fail "softibd --status without daemon"

# --daemon returns once the socket listens
timeout 10 "$SOFTIBD" --daemon || fail "softibd --daemon: exit $?"
[ -S "$sock" ] || fail "no socket after --daemon returned"
status=$(timeout 10 "$SOFTIB" status) || fail "softib status"
dpid=$(echo "$status" | sed -n 's/^softibd pid=\([0-9]*\) .*/\1/p')
[ -n "$dpid" ] || fail "no pid in status: $status"
echo "$status" | grep -q "^softibd pid=$dpid abi=[0-9]* socket=$sock topology=default clients=1 uptime=" ||
	fail "status header: $status"
echo "$status" | grep -q '^  port num=1 state=ACTIVE phys=LinkUp lid=5 sm_lid=1 lmc=0 mtu=4096 width=4X speed=QDR guid=' ||
	fail "status port line"
echo "$status" | grep -q '^counters bad_commands=0 ' || fail "status counters"
echo "$status" | grep -q '^cm ids=0 resent=0 timeouts=0 dropped=0 REQ=0/0 .* SIDR_REP=0/0$' ||
	fail "status cm line"
timeout 10 "$SOFTIBD" --status | grep -q "^softibd pid=$dpid " || fail "softibd --status"

# a second daemon on the same socket refuses, the first stays
timeout 10 "$SOFTIBD" --foreground 2>/dev/null; [ $? -eq 1 ] || fail "second daemon did not exit 1"
timeout 10 "$SOFTIBD" --autostart --daemon || fail "second autostart daemon did not exit 0"
kill -0 "$dpid" || fail "first daemon died"

# stop returns once the daemon closed its socket
timeout 10 "$SOFTIB" stop || fail "softib stop"
[ -e "$sock" ] && fail "socket still there after stop"
for _ in $(seq 50); do kill -0 "$dpid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$dpid" 2>/dev/null && fail "daemon $dpid still running after stop"
dpid=

# startup errors reach the caller of --daemon
out=$(timeout 10 "$SOFTIBD" --daemon --topology "$dir/missing.topo" 2>&1); rc=$?
[ $rc -eq 1 ] || fail "--daemon with a missing topology: exit $rc"
echo "$out" | grep -q 'topology' || fail "no topology error shown: $out"
[ -e "$sock" ] && fail "socket left behind by a failed start"
echo "daemon_cli: ok"
