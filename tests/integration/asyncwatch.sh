#!/bin/bash
# SPDX-License-Identifier: MIT
# Unmodified ibv_asyncwatch sees the async events of softib's port changes
# (docs/events.md): port down/up, a new LID, a new SM LID, each with its port.
. "$(dirname "$0")/lib.sh"
start_daemon
softib() { "$SIB_BIN/softib" "$@"; }
out=$SIB_TMP/asyncwatch.out
client timeout 60 ibv_asyncwatch -d softib2 >"$out" 2>&1 &
SIB_PIDS+=($!)
wait_until 10 grep -q 'async event FD' "$out" || fail "asyncwatch did not start: $(cat "$out")"

# expect EVENT CMD...: CMD gives one more EVENT on port 1 than before.  The
# built-in SM sweeps after a port's trap and may set a hand-made LID or SM
# LID back, so SM_CHANGE and LID_CHANGE may come more often than asked for:
# each step counts its own event, not the position of a line.
count() { grep -c "event_type $1 ([0-9]*), port 1\$" "$out"; }
count_ge() { [ "$(count "$1")" -ge "$2" ]; }
expect() {
	local ev=$1 n
	shift
	n=$(($(count "$ev") + 1))
	"$@" || fail "$*"
	wait_until 10 count_ge "$ev" "$n" || fail "no further $ev after '$*': $(cat "$out")"
}
expect IBV_EVENT_PORT_ERR softib port softib2 1 down
expect IBV_EVENT_PORT_ACTIVE softib port softib2 1 up
expect IBV_EVENT_LID_CHANGE softib port softib2 1 lid 77
expect IBV_EVENT_SM_CHANGE softib port softib2 1 smlid 3
# Another device's change is not this context's: softib1's port going down
# gives softib2 no PORT_ERR or PORT_ACTIVE (a sweep may give it SM_CHANGE).
softib port softib1 1 down || fail "softib1 down"
sleep 0.3
[ "$(count IBV_EVENT_PORT_ERR)" = 1 ] && [ "$(count IBV_EVENT_PORT_ACTIVE)" = 1 ] ||
	fail "events of another device: $(cat "$out")"
cat "$out"
echo PASS
