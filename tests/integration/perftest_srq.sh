#!/bin/bash
# SPDX-License-Identifier: MIT
# Unmodified perftest with --use-srq (the responder's QPs receive from one
# SRQ), server on softib0, client on softib1: perftest.sh's run, then the
# tool must say it used an SRQ.
# Usage: perftest_srq.sh TOOL [ARGS...]   e.g. perftest_srq.sh ib_send_bw -q 4
here=$(dirname "$0")
tool=$1; shift
out=$(bash "$here/perftest.sh" "$tool" --use-srq "$@" 2>&1)
rc=$?
echo "$out"
[ "$rc" = 0 ] || { echo "FAIL: perftest.sh exited $rc" >&2; exit 1; }
echo "$out" | grep -q 'Using SRQ *: ON' || { echo "FAIL: perftest did not use an SRQ" >&2; exit 1; }
echo PASS
