#!/bin/bash
# SPDX-License-Identifier: MIT
# Unmodified perftest through softib: server on softib0, client on softib1.
# Usage: perftest.sh TOOL [ARGS...]   e.g. perftest.sh ib_write_bw -s 65536
# ARGS go to both sides (-c UC, -q 4, -e, --use_old_post_send, ...).  500
# iterations per QP, each side bounded by a 60 s timeout.
. "$(dirname "$0")/lib.sh"
tool=$1; shift
command -v "$tool" >/dev/null || fail "$tool not installed (Debian package perftest)"
# The result line counts iterations over all QPs (-q N).
qps=1
prev=
for a in "$@"; do
	[ "$prev" = -q ] || [ "$prev" = --qp ] && qps=$a
	case $a in --qp=*) qps=${a#--qp=} ;; esac
	prev=$a
done
iters=$((500 * qps))
start_daemon
pair_try softib0 softib1 "$tool" "$@"
cat "$SIB_TMP/client.out"
[ "$crc" = 0 ] || { cat "$SIB_TMP/server.out"; fail "client exited $crc"; }
[ "$src" = 0 ] || { cat "$SIB_TMP/server.out"; fail "server exited $src"; }
# The result table: a line that starts with the message size.
grep -Eq "^ *[0-9]+ +$iters " "$SIB_TMP/client.out" || fail "no result line with $iters iterations"
echo PASS
