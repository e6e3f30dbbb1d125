#!/bin/bash
# SPDX-License-Identifier: MIT
# No daemon and autostart off: an empty device list, as on a host without
# HCAs.  Autostart on: the library starts softibd, which serves the call.
. "$(dirname "$0")/lib.sh"

out=$(client timeout 20 ibv_devices) || fail "ibv_devices exited $?"
echo "$out" | grep -q softib && fail "devices listed without a daemon"

export SOFTIB_NO_AUTOSTART=0
export SOFTIB_IDLE_EXIT=2
out=$(client timeout 20 ibv_devices) || fail "ibv_devices with autostart exited $?"
echo "$out"
echo "$out" | grep -q softib3 || fail "autostarted daemon did not serve the device list"
pid=$("$SIB_BIN/softib" status | sed -n 's/^softibd pid=\([0-9]*\).*/\1/p')
[ -n "$pid" ] || fail "no status from the autostarted daemon"
SIB_PIDS+=("$pid")
# It exits by itself once idle.
wait_until 15 eval "! alive $pid" || fail "autostarted softibd did not exit when idle"
echo PASS
