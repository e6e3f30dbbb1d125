#!/bin/bash
# SPDX-License-Identifier: MIT
# Unmodified perftest atomics through softib (server softib0, client
# softib1): perftest.sh's run, then the atomic the tool says it measured
# must be the one asked for (FETCH_AND_ADD unless -A CMP_AND_SWAP) on
# 8-byte messages.
# Usage: perftest_atomic.sh ib_atomic_bw|ib_atomic_lat [-A TYPE] [ARGS...]
here=$(dirname "$0")
type=FETCH_AND_ADD
prev=
for a in "$@"; do
	[ "$prev" = -A ] && type=$a
	prev=$a
done
out=$(bash "$here/perftest.sh" "$@" 2>&1)
rc=$?
echo "$out"
[ "$rc" = 0 ] || { echo "FAIL: perftest.sh exited $rc" >&2; exit 1; }
echo "$out" | grep -q "Atomic $type" || { echo "FAIL: not an $type test" >&2; exit 1; }
echo "$out" | grep -Eq '^ *8 +500 ' || { echo "FAIL: no 8-byte result line" >&2; exit 1; }
echo PASS
