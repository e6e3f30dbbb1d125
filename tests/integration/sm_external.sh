#!/bin/bash
# SPDX-License-Identifier: MIT
# softibd --sm external: the fabric comes up as real hardware does without a
# subnet manager (docs/subnet.md): every linked CA port LinkUp/INIT with LID
# 0 and no SM LID, as unmodified ibv_devinfo shows it; `softib port down`
# and `up` go through the port state machine and nothing activates the
# port again; a hot-plugged CA waits in INIT too.  A bad --sm is refused.
. "$(dirname "$0")/lib.sh"
"$SIB_BIN/softibd" --sm bogus --socket "$SIB_TMP/x.sock" 2>"$SIB_TMP/bad.out" &&
	fail "--sm bogus accepted"
grep -q -- '--sm: builtin or external' "$SIB_TMP/bad.out" || fail "--sm bogus: $(cat "$SIB_TMP/bad.out")"
start_daemon --sm external
softib() { "$SIB_BIN/softib" "$@"; }

port_is() { # DEV STATE LID: ibv_devinfo shows them
	local out
	out=$(client timeout 20 ibv_devinfo -d "$1") || fail "ibv_devinfo -d $1 exited $?"
	echo "$out" | grep -q "state:[[:space:]]*$2" || fail "$1 not $2: $out"
	echo "$out" | grep -Eq "port_lid:[[:space:]]+$3\$" || fail "$1 LID not $3: $out"
}

for dev in softib0 softib1 softib2 softib3; do
	port_is "$dev" 'PORT_INIT (2)' 0
	client timeout 20 ibv_devinfo -d "$dev" | grep -Eq 'sm_lid:[[:space:]]+0$' ||
		fail "$dev has an SM LID"
	client timeout 20 ibv_devinfo -v -d "$dev" | grep -q 'phys_state:[[:space:]]*LINK_UP (5)' ||
		fail "$dev link not up"
done
status | grep -q 'sm=external' || fail "status: $(status)"

softib port softib1 1 down || fail "port down"
port_is softib1 'PORT_DOWN (1)' 0
status | grep -q 'state=DOWN phys=Disabled' || fail "status: $(status)"
softib port softib1 1 up || fail "port up"
port_is softib1 'PORT_INIT (2)' 0   # no SM: it stays in INIT

softib device add hp0 || fail "device add"
port_is hp0 'PORT_INIT (2)' 0
softib device remove hp0 || fail "device remove"
echo PASS
