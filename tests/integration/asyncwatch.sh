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

# expect N EVENT: the Nth event line is EVENT on port 1.
expect() {
	wait_until 10 sh -c "grep 'event_type' '$out' | sed -n '$1p' | grep -q '$2 ([0-9]*), port 1\$'" ||
		fail "event $1 is not $2: $(cat "$out")"
}
softib port softib2 1 down || fail "port down"
expect 1 IBV_EVENT_PORT_ERR
softib port softib2 1 up || fail "port up"
expect 2 IBV_EVENT_PORT_ACTIVE
softib port softib2 1 lid 77 || fail "lid"
expect 3 IBV_EVENT_LID_CHANGE
softib port softib2 1 smlid 3 || fail "smlid"
expect 4 IBV_EVENT_SM_CHANGE
# Another device's change is not this context's.
softib port softib1 1 down || fail "softib1 down"
sleep 0.3
[ "$(grep -c event_type "$out")" = 4 ] || fail "events of another device: $(cat "$out")"
cat "$out"
echo PASS
