#!/bin/bash
# SPDX-License-Identifier: MIT
# Hot-plug and port state from the softib command, seen by unmodified
# clients: `softib device add` gives a CA that ibv_devices lists and that
# ibv_rc_pingpong runs on; `softib device remove` takes it out of new
# processes' lists and releases everything; `softib port DEV 1 down|up` is
# what ibv_devinfo reports, and so are `lid` and `smlid`.  docs/events.md.
. "$(dirname "$0")/lib.sh"
start_daemon
softib() { "$SIB_BIN/softib" "$@"; }

softib device add hp0 || fail "device add"
softib device add hp0 2>/dev/null && fail "a second hp0 was added"
softib device add 'bad name' 2>/dev/null && fail "a bad name was accepted"
out=$(client timeout 20 ibv_devices) || fail "ibv_devices exited $?"
echo "$out"
echo "$out" | grep -q '^ *hp0 ' || fail "ibv_devices does not list hp0"
out=$(client timeout 20 ibv_devinfo -d hp0) || fail "ibv_devinfo -d hp0"
echo "$out" | grep -q 'PORT_ACTIVE (4)' || fail "hp0 port not active"
lid=$(echo "$out" | awk '/port_lid:/ { print $2 }')
[ -n "$lid" ] && [ "$lid" -gt 5 ] || fail "hp0 has no fresh LID: '$lid'"

# Traffic on the new CA, between two processes.
start_server "$SIB_TMP/server.out" timeout 60 ibv_rc_pingpong -d hp0 -p PORT -n 500 -s 4096
client timeout 60 ibv_rc_pingpong -d softib1 -p "$port" -n 500 -s 4096 127.0.0.1 \
	>"$SIB_TMP/client.out" 2>&1 || fail "client: $(cat "$SIB_TMP/client.out")"
wait "$srv" || fail "server: $(cat "$SIB_TMP/server.out")"
grep -q '500 iters in' "$SIB_TMP/server.out" || fail "server did not finish"

softib device remove hp0 || fail "device remove"
softib device remove hp0 2>/dev/null && fail "removed twice"
out=$(client timeout 20 ibv_devices) || fail "ibv_devices exited $?"
echo "$out" | grep -q '^ *hp0 ' && fail "ibv_devices still lists hp0"
client timeout 20 ibv_devinfo -d hp0 >/dev/null 2>&1 && fail "ibv_devinfo opened hp0"
status | grep -q '^device name=hp0 ' && fail "status still shows hp0"
status | grep -Eq '^resources inboxes=0 max_inboxes=[0-9]+ qpns=0 ' || fail "leaked: $(status)"

# A port down and up, as ibv_devinfo sees it.
softib port softib2 1 down || fail "port down"
client timeout 20 ibv_devinfo -d softib2 | grep -q 'PORT_DOWN (1)' || fail "softib2 not down"
status | grep -q 'state=DOWN phys=Disabled' || fail "status: $(status)"
softib port softib2 1 up || fail "port up"
client timeout 20 ibv_devinfo -d softib2 | grep -q 'PORT_ACTIVE (4)' || fail "softib2 not up"
softib port softib2 1 lid 200 || fail "port lid"
client timeout 20 ibv_devinfo -d softib2 | grep -Eq 'port_lid:[[:space:]]+200$' || fail "LID not 200"
softib port softib2 1 lid 2 2>/dev/null && fail "softib0's LID given twice"
softib port softib2 1 smlid 9 || fail "port smlid"
client timeout 20 ibv_devinfo -d softib2 | grep -Eq 'sm_lid:[[:space:]]+9$' || fail "SM LID not 9"
softib port softib2 2 down 2>/dev/null && fail "port 2 of a 1-port CA accepted"
softib port nosuch 1 down 2>/dev/null && fail "unknown device accepted"
status | grep -Eq '^events .* devices_added=1 devices_removed=1 port_changes=4' || fail "counters: $(status)"
"$SIB_BIN/softib" --help | grep -q 'device add NAME' || fail "--help"
echo PASS
