#!/bin/bash
# SPDX-License-Identifier: MIT
# The layering check (../shared/DESIGN.md "Layers": calls go one way,
# iba <- common <- link <- hca <- verbs; softibd on iba/common/link).
#
# For each static library given as NAME=ARCHIVE=ALLOWED (ALLOWED: a comma
# list of the library names it may use, itself included), every symbol that
# `nm -u` lists must be defined by an allowed library or by a system
# library (the shared libraries `ldd` finds for the --ldd binaries: libc,
# libisal, the sanitizer runtimes ...).  A symbol that only a layer above
# (another listed library, or an --above binary such as libibverbs.so.1 or
# softibd) defines is a layering violation; a symbol defined nowhere is
# reported too.  Exit 0 when clean, 1 with one line per violation.
#
# usage: layering.sh [--above FILE]... [--ldd FILE]... NAME=ARCHIVE=ALLOWED...
set -euo pipefail

declare -A lib_path lib_allow
names=()
above=()
ldd_of=()
while [ $# -gt 0 ]; do
	case "$1" in
	--above) above+=("$2"); shift 2 ;;
	--ldd) ldd_of+=("$2"); shift 2 ;;
	*=*=*)
		IFS='=' read -r n p a <<<"$1"
		names+=("$n"); lib_path[$n]=$p; lib_allow[$n]=$a; shift ;;
	*) echo "layering.sh: bad argument '$1'" >&2; exit 2 ;;
	esac
done
[ ${#names[@]} -gt 0 ] || { echo "layering.sh: no libraries given" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Definitions of each listed library (global symbols of its members).
for n in "${names[@]}"; do
	[ -f "${lib_path[$n]}" ] || { echo "layering.sh: $n: no file ${lib_path[$n]}" >&2; exit 2; }
	nm --defined-only -g "${lib_path[$n]}" 2>/dev/null | awk 'NF == 3 { print $3 }' | sort -u >"$tmp/def.$n"
done
# Everything an upper binary defines (hidden globals show as local there).
i=0
for f in "${above[@]}"; do
	nm --defined-only "$f" 2>/dev/null | awk 'NF == 3 { print $3 }' | sort -u >"$tmp/above.$i"
	i=$((i + 1))
done
# The system: dynamic definitions of every shared library the binaries use.
: >"$tmp/sys"
for f in "${ldd_of[@]}"; do
	ldd "$f" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'
done | sort -u | while read -r so; do
	nm -D --defined-only "$so" 2>/dev/null | awk 'NF >= 3 { sub(/@.*/, "", $3); print $3 }'
done | sort -u >"$tmp/sys"
# Symbols the static linker itself provides.
printf '%s\n' _GLOBAL_OFFSET_TABLE_ __dso_handle _DYNAMIC >>"$tmp/sys"
sort -u -o "$tmp/sys" "$tmp/sys"

fail=0
for n in "${names[@]}"; do
	# Strong undefined references only: a weak one may stay unresolved.
	nm -u "${lib_path[$n]}" | awk '$1 == "U" { print $2 }' | sort -u >"$tmp/undef"
	: >"$tmp/allowed"
	IFS=',' read -r -a allow <<<"${lib_allow[$n]}"
	for a in "${allow[@]}"; do
		[ -f "$tmp/def.$a" ] && cat "$tmp/def.$a" >>"$tmp/allowed"
	done
	sort -u -o "$tmp/allowed" "$tmp/allowed"
	comm -23 "$tmp/undef" "$tmp/allowed" | comm -23 - "$tmp/sys" >"$tmp/bad" || true
	bad=0
	while read -r s; do
		[ -n "$s" ] || continue
		where=""
		for m in "${names[@]}"; do
			[ "$m" != "$n" ] && grep -qxF "$s" "$tmp/def.$m" && where+=" $m"
		done
		i=0
		for f in "${above[@]}"; do
			grep -qxF "$s" "$tmp/above.$i" && where+=" $(basename "$f")"
			i=$((i + 1))
		done
		if [ -n "$where" ]; then
			echo "$n: $s is defined only by a layer it may not use:$where"
		else
			echo "$n: $s is defined nowhere"
		fi
		bad=1
	done <"$tmp/bad"
	if [ $bad = 0 ]; then
		echo "$n: ok ($(wc -l <"$tmp/undef") undefined symbols, allowed: ${lib_allow[$n]} + system)"
	else
		fail=1
	fi
done
exit $fail
