#!/bin/sh
# SPDX-License-Identifier: MIT
#
# check_rdmacm_exports.sh LIBRARY EXPECTED [SYSTEM_LIBRARY]
#
# Checks that softib's drop-in LIBRARY (librdmacm.so.1) has exactly the
# export table of rdma-core v44's librdmacm (docs/rdmacm.md,
# research/rdmacm.md §1), read with objdump/readelf only (the system
# library is never linked or loaded):
#   1. "version name" pairs of every RDMACM* dynamic symbol identical to
#      EXPECTED (made from the system library by `objdump -T librdmacm.so.1 |
#      grep RDMACM | awk '{print $(NF-1), $NF}' | sort`): 68 functions and 4
#      version nodes, and, when SYSTEM_LIBRARY exists, identical to that
#      library's table too;
#   2. no other defined dynamic symbol (cma_*, sib_* stay local);
#   3. the version chain RDMACM_1.0 <- 1.1 <- 1.2 <- 1.3;
#   4. SONAME librdmacm.so.1, BIND_NOW, NEEDED libibverbs.so.1 (softib's at
#      run time, through LD_LIBRARY_PATH) and no libnl or librdmacm, no
#      undefined RDMACM_* reference.
# Environment: OBJDUMP, READELF (default: objdump, readelf).
set -u

LIB=${1:?usage: check_rdmacm_exports.sh LIBRARY EXPECTED [SYSTEM_LIBRARY]}
EXPECTED=${2:?usage: check_rdmacm_exports.sh LIBRARY EXPECTED [SYSTEM_LIBRARY]}
SYSLIB=${3:-}
. "$(dirname "$0")/abi_lib.sh"

table() { "$OBJDUMP" -T "$1" | grep RDMACM | awk '{print $(NF-1), $NF}' | sort; }

# --- 1. the export table -------------------------------------------------
table "$LIB" > "$tmp/actual"
sort "$EXPECTED" > "$tmp/expected"
[ "$(wc -l < "$tmp/actual")" -eq 72 ] || err "$(wc -l < "$tmp/actual") RDMACM entries, want 68 functions + 4 version nodes"
if ! diff -u "$tmp/expected" "$tmp/actual" > "$tmp/diff"; then
	err "export table differs from $EXPECTED ('-' missing, '+' unexpected):"
	grep '^[-+][^-+]' "$tmp/diff" >&2
fi
if [ -n "$SYSLIB" ] && [ -f "$SYSLIB" ]; then
	table "$SYSLIB" > "$tmp/system"
	if ! diff -u "$tmp/system" "$tmp/actual" > "$tmp/sysdiff"; then
		err "export table differs from the system's $SYSLIB:"
		grep '^[-+][^-+]' "$tmp/sysdiff" >&2
	else
		echo "check_rdmacm_exports: same table as $SYSLIB"
	fi
fi

# --- 2. nothing else exported -------------------------------------------
"$READELF" --dyn-syms -W "$LIB" > "$tmp/dynsym" || { echo "FAIL: $READELF failed" >&2; exit 1; }
abi_stray "$tmp/dynsym" RDMACM > "$tmp/stray"
if [ -s "$tmp/stray" ]; then
	err "defined dynamic symbols outside the RDMACM version nodes:"
	sed 's/^/    /' "$tmp/stray" >&2
fi

# --- 3. version definition chain ----------------------------------------
abi_check_chain "$LIB" <<'CHAIN'
RDMACM_1.0 -
RDMACM_1.1 RDMACM_1.0
RDMACM_1.2 RDMACM_1.1
RDMACM_1.3 RDMACM_1.2
CHAIN

# --- 4. dynamic section and references ------------------------------------
"$READELF" -d -W "$LIB" > "$tmp/dynamic"
soname=$(sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p' "$tmp/dynamic")
[ "$soname" = "librdmacm.so.1" ] || err "SONAME is '$soname', want librdmacm.so.1"
grep -E '\((FLAGS|FLAGS_1)\)' "$tmp/dynamic" | grep -qE 'BIND_NOW|NOW' ||
	err "not linked with -z now (no BIND_NOW flag)"
needed=$(sed -n 's/.*(NEEDED).*\[\(.*\)\].*/\1/p' "$tmp/dynamic")
echo "$needed" | grep -qx 'libibverbs.so.1' || err "no NEEDED libibverbs.so.1"
if echo "$needed" | grep -E '^(librdmacm|libnl|libibumad)'; then
	err "forbidden NEEDED entries (above)"
fi
awk '$1 ~ /^[0-9]+:$/ && $7 == "UND" && $8 ~ /@RDMACM_/ {print $8}' "$tmp/dynsym" > "$tmp/badund"
if [ -s "$tmp/badund" ]; then
	err "references to librdmacm's own versions:"
	sed 's/^/    /' "$tmp/badund" >&2
fi

if [ "$fail" -ne 0 ]; then
	echo "check_rdmacm_exports: $LIB does NOT match" >&2
	exit 1
fi
echo "check_rdmacm_exports: $LIB matches $EXPECTED ($(wc -l < "$tmp/actual") RDMACM entries)"
exit 0
