#!/bin/sh
# SPDX-License-Identifier: MIT
#
# check_exports.sh LIBRARY EXPECTED
#
# Checks that softib's drop-in LIBRARY (libibverbs.so.1) has exactly the
# export table of rdma-core 44's libibverbs:
#   1. "version name" pairs of every IBVERBS* dynamic symbol, hidden versions
#      in parentheses, identical to EXPECTED (produced from the system library
#      by `objdump -T libibverbs.so.1 | grep IBVERBS | awk '{print $(NF-1), $NF}'
#      | sort -k2`, see docs/abi.md);
#   2. no other defined dynamic symbol (nothing exported outside the IBVERBS
#      nodes, no unversioned export);
#   3. the version-definition chain IBVERBS_1.0 <- 1.1 <- 1.5 ... <- 1.14,
#      IBVERBS_PRIVATE_34 without parent;
#   4. verbs_allow_disassociate_destroy is a data object (libmlx5 reads it);
#   5. SONAME libibverbs.so.1, BIND_NOW, and no NEEDED libibverbs, librdmacm,
#      libnl or provider library;
#   6. undefined symbols only require GLIBC_*/ZLIB_*/GCC_* versions (no
#      IBVERBS_* reference: softib must never bind to the real libibverbs).
#
# Environment: OBJDUMP, READELF (default: objdump, readelf).
set -u

LIB=${1:?usage: check_exports.sh LIBRARY EXPECTED}
EXPECTED=${2:?usage: check_exports.sh LIBRARY EXPECTED}
. "$(dirname "$0")/abi_lib.sh"

# --- 1. the export table -------------------------------------------------
"$OBJDUMP" -T "$LIB" > "$tmp/objdump" || { echo "FAIL: $OBJDUMP -T failed" >&2; exit 1; }
grep IBVERBS "$tmp/objdump" | awk '{print $(NF-1), $NF}' | sort > "$tmp/actual"
sort "$EXPECTED" > "$tmp/expected"
if ! diff -u "$tmp/expected" "$tmp/actual" > "$tmp/diff"; then
	err "export table differs from $EXPECTED ('-' missing, '+' unexpected):"
	grep '^[-+][^-+]' "$tmp/diff" >&2
fi

# --- 2. nothing else exported -------------------------------------------
# readelf --dyn-syms -W: Num: Value Size Type Bind Vis Ndx Name[@[@]VER]
"$READELF" --dyn-syms -W "$LIB" > "$tmp/dynsym" || { echo "FAIL: $READELF failed" >&2; exit 1; }
abi_stray "$tmp/dynsym" IBVERBS > "$tmp/stray"
if [ -s "$tmp/stray" ]; then
	err "defined dynamic symbols outside the IBVERBS version nodes:"
	sed 's/^/    /' "$tmp/stray" >&2
fi

# --- 3. version definition chain ----------------------------------------
abi_check_chain "$LIB" <<'EOF'
IBVERBS_1.0 -
IBVERBS_1.1 IBVERBS_1.0
IBVERBS_1.5 IBVERBS_1.1
IBVERBS_1.6 IBVERBS_1.5
IBVERBS_1.7 IBVERBS_1.6
IBVERBS_1.8 IBVERBS_1.7
IBVERBS_1.9 IBVERBS_1.8
IBVERBS_1.10 IBVERBS_1.9
IBVERBS_1.11 IBVERBS_1.10
IBVERBS_1.12 IBVERBS_1.11
IBVERBS_1.13 IBVERBS_1.12
IBVERBS_1.14 IBVERBS_1.13
IBVERBS_PRIVATE_34 -
EOF

# --- 4. data object -------------------------------------------------------
if ! awk '$8 == "verbs_allow_disassociate_destroy@@IBVERBS_PRIVATE_34" && $4 == "OBJECT" {ok = 1}
	END {exit !ok}' "$tmp/dynsym"; then
	err "verbs_allow_disassociate_destroy@@IBVERBS_PRIVATE_34 is not a data object"
fi

# --- 5. dynamic section -----------------------------------------------------
"$READELF" -d -W "$LIB" > "$tmp/dynamic"
soname=$(sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p' "$tmp/dynamic")
[ "$soname" = "libibverbs.so.1" ] || err "SONAME is '$soname', want libibverbs.so.1"
grep -E '\((FLAGS|FLAGS_1)\)' "$tmp/dynamic" | grep -qE 'BIND_NOW|NOW' ||
	err "not linked with -z now (no BIND_NOW flag)"
sed -n 's/.*(NEEDED).*\[\(.*\)\].*/\1/p' "$tmp/dynamic" > "$tmp/needed"
if grep -E '^(libibverbs|librdmacm|libnl|libmlx[45]|libefa|libmana)' "$tmp/needed" > "$tmp/badneeded"; then
	err "forbidden NEEDED entries:"
	sed 's/^/    /' "$tmp/badneeded" >&2
fi

# --- 6. undefined symbol versions ----------------------------------------
awk '$1 ~ /^[0-9]+:$/ && $7 == "UND" && index($8, "@") {
	v = substr($8, index($8, "@") + 1); sub(/^@/, "", v)
	if (v !~ /^(GLIBC_|ZLIB_|GCC_)/) print $8
}' "$tmp/dynsym" > "$tmp/badund"
if [ -s "$tmp/badund" ]; then
	err "undefined symbols requiring unexpected versions:"
	sed 's/^/    /' "$tmp/badund" >&2
fi

if [ "$fail" -ne 0 ]; then
	echo "check_exports: $LIB does NOT match $EXPECTED" >&2
	exit 1
fi
echo "check_exports: $LIB matches $EXPECTED ($(wc -l < "$tmp/actual") IBVERBS entries)"
exit 0
