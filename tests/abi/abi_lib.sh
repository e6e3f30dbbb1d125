# SPDX-License-Identifier: MIT
#
# abi_lib.sh: the checks check_exports.sh (libibverbs) and
# check_umad_exports.sh (libibumad) share; sourced, not run, after the
# caller set LIB and EXPECTED.  Sourcing checks both files exist and sets
# OBJDUMP, READELF (overridable), tmp (a scratch directory, removed on exit),
# fail=0 and err() (reports a failure, the caller exits with $fail).
OBJDUMP=${OBJDUMP:-objdump}
READELF=${READELF:-readelf}
export LC_ALL=C

fail=0
err() { echo "FAIL: $*" >&2; fail=1; }

[ -f "$LIB" ] || { echo "FAIL: no such library: $LIB" >&2; exit 1; }
[ -f "$EXPECTED" ] || { echo "FAIL: no such file: $EXPECTED" >&2; exit 1; }

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

# abi_stray DYNSYM PREFIX: the defined dynamic symbols of DYNSYM (`readelf
# --dyn-syms -W`: Num: Value Size Type Bind Vis Ndx Name[@[@]VER]) outside
# the PREFIX_* version nodes (the nodes' own ABS symbols aside), one a line.
abi_stray() {
	awk -v p="$2" '$1 ~ /^[0-9]+:$/ && $7 != "UND" && $8 != "" && $8 !~ ("@@?" p "_") &&
		!($7 == "ABS" && $8 ~ ("^" p "_[0-9A-Z_.]+$")) {print $8}' "$1"
}

# abi_check_chain LIB: LIB's version definition chain, as "node parent"
# lines ("-" for none), must equal the lines given on stdin (any order).
abi_check_chain() {
	"$READELF" -V -W "$1" > "$tmp/versions"
	awk '
		/Version definition section/ { in_d = 1; next }
		/Version needs section/ || /Version symbols section/ { in_d = 0 }
		in_d && /Flags: BASE/ { next }
		in_d && / Name: / { if (cur != "") print cur, par; cur = $NF; par = "-"; next }
		in_d && /Parent 1: / { par = $NF }
		END { if (cur != "") print cur, par }
	' "$tmp/versions" | sort > "$tmp/chain"
	sort > "$tmp/chain.expected"
	if ! diff -u "$tmp/chain.expected" "$tmp/chain" > "$tmp/chain.diff"; then
		err "version definition chain differs ('node parent'):"
		grep '^[-+][^-+]' "$tmp/chain.diff" >&2
	fi
}
