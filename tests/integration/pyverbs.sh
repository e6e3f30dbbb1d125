#!/bin/bash
# SPDX-License-Identifier: MIT
# The pyverbs program (tests/integration/pyverbs_hca.py) through softib: a
# private softibd, Debian's python3-pyverbs run by /usr/bin/python3 on our
# libibverbs (LD_LIBRARY_PATH), two processes (softib0 and softib1).
# Usage: pyverbs.sh SECTION...   Every section named must PASS (--strict: a
# SKIP, i.e. a missing feature, fails too).  Exit 77 without pyverbs.
. "$(dirname "$0")/lib.sh"
[ $# -gt 0 ] || fail "usage: pyverbs.sh SECTION..."
# Without loading it (an ASan-built libibverbs needs the runtime preloaded).
/usr/bin/python3 -c 'import importlib.util as u, sys; sys.exit(u.find_spec("pyverbs") is None)' ||
	{ echo "SKIP: no python3-pyverbs"; exit 77; }
start_daemon
client timeout 150 /usr/bin/python3 "$(dirname "$0")/pyverbs_hca.py" --strict "$@" \
	>"$SIB_TMP/out" 2>&1
rc=$?
cat "$SIB_TMP/out"
[ "$rc" = 0 ] || fail "pyverbs_hca.py exited $rc"
# pyverbs loaded our libibverbs, not the system's.
grep -q "^libibverbs: $SIB_LIB/libibverbs.so" "$SIB_TMP/out" || fail "pyverbs did not load $SIB_LIB"
for s in "$@"; do
	grep -q "^PASS $s " "$SIB_TMP/out" || fail "section $s did not pass"
done
# Every object of both processes was released.
wait_until 5 sh -c "\"$SIB_BIN/softib\" status | grep -Eq '^totals devices=0 pd=0 mr=0 cq=0 qp=0 '" ||
	fail "resources left: $(status)"
echo PASS
