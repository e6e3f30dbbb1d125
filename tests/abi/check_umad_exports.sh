#!/bin/sh
# SPDX-License-Identifier: MIT
#
# check_umad_exports.sh LIBRARY EXPECTED [SYSTEM_LIBRARY]
#
# Checks that softib's drop-in LIBRARY (libibumad.so.3) has exactly the
# export table of rdma-core v44's libibumad (docs/umad.md):
#   1. "version name" pairs of every IBUMAD* dynamic symbol identical to
#      EXPECTED (made from the system library by `objdump -T libibumad.so.3 |
#      grep IBUMAD | awk '{print $(NF-1), $NF}' | sort -k2`), and, when
#      SYSTEM_LIBRARY exists, identical to that library's table too;
#   2. no other defined dynamic symbol (umad_set_grh_net, mai_*, sib_* stay
#      local);
#   3. the version chain IBUMAD_1.0 <- 1.1 <- 1.2;
#   4. SONAME libibumad.so.3, BIND_NOW, no NEEDED libibumad/libibverbs and no
#      undefined IBUMAD_*/IBVERBS_* reference (never binds to rdma-core).
# Environment: OBJDUMP, READELF (default: objdump, readelf).
set -u

LIB=${1:?usage: check_umad_exports.sh LIBRARY EXPECTED [SYSTEM_LIBRARY]}
EXPECTED=${2:?usage: check_umad_exports.sh LIBRARY EXPECTED [SYSTEM_LIBRARY]}
SYSLIB=${3:-}
. "$(dirname "$0")/abi_lib.sh"

table() { "$OBJDUMP" -T "$1" | grep IBUMAD | awk '{print $(NF-1), $NF}' | sort; }

# --- 1. the export table -------------------------------------------------
table "$LIB" > "$tmp/actual"
sort "$EXPECTED" > "$tmp/expected"
[ "$(wc -l < "$tmp/actual")" -eq 42 ] || err "$(wc -l < "$tmp/actual") IBUMAD entries, want 39 functions + 3 version nodes"
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
		echo "check_umad_exports: same table as $SYSLIB"
	fi
fi

# --- 2. nothing else exported -------------------------------------------
"$READELF" --dyn-syms -W "$LIB" > "$tmp/dynsym" || { echo "FAIL: $READELF failed" >&2; exit 1; }
abi_stray "$tmp/dynsym" IBUMAD > "$tmp/stray"
if [ -s "$tmp/stray" ]; then
	err "defined dynamic symbols outside the IBUMAD version nodes:"
	sed 's/^/    /' "$tmp/stray" >&2
fi

# --- 3. version definition chain ----------------------------------------
abi_check_chain "$LIB" <<'EOF'
IBUMAD_1.0 -
IBUMAD_1.1 IBUMAD_1.0
IBUMAD_1.2 IBUMAD_1.1
EOF

# --- 4. dynamic section and references ------------------------------------
"$READELF" -d -W "$LIB" > "$tmp/dynamic"
soname=$(sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p' "$tmp/dynamic")
[ "$soname" = "libibumad.so.3" ] || err "SONAME is '$soname', want libibumad.so.3"
grep -E '\((FLAGS|FLAGS_1)\)' "$tmp/dynamic" | grep -qE 'BIND_NOW|NOW' ||
	err "not linked with -z now (no BIND_NOW flag)"
if sed -n 's/.*(NEEDED).*\[\(.*\)\].*/\1/p' "$tmp/dynamic" | grep -E '^(libibumad|libibverbs|libibmad|librdmacm)'; then
	err "forbidden NEEDED entries (above)"
fi
awk '$1 ~ /^[0-9]+:$/ && $7 == "UND" && $8 ~ /@(IBUMAD|IBVERBS)_/ {print $8}' "$tmp/dynsym" > "$tmp/badund"
if [ -s "$tmp/badund" ]; then
	err "references to rdma-core's versions:"
	sed 's/^/    /' "$tmp/badund" >&2
fi

if [ "$fail" -ne 0 ]; then
	echo "check_umad_exports: $LIB does NOT match" >&2
	exit 1
fi
echo "check_umad_exports: $LIB matches $EXPECTED ($(wc -l < "$tmp/actual") IBUMAD entries)"
exit 0
