#!/bin/bash
# SPDX-License-Identifier: MIT
# docs/architecture.md "Every file" stays true: every .c and .h file under
# src/ and tools/ has a row there (in its folder's table), and every row
# names a file that exists.  Exit 0 when both hold, 1 with one line per
# file missing or gone.
# Usage: docs_files.sh SOURCE_DIR
set -euo pipefail
src=${1:?usage: docs_files.sh SOURCE_DIR}
doc=$src/docs/architecture.md
[ -f "$doc" ] || { echo "docs_files: no $doc" >&2; exit 2; }
fail=0
# The rows of "Every file": "| `name` | role |" under "### `folder/`".
rows=$(awk '/^## Every file/ {on = 1; next} /^## / {on = 0}
	on && /^### `/ {d = $2; gsub(/`/, "", d)}
	on && /^\| `[^`]+` \|/ {f = $2; gsub(/`/, "", f); print d f}' "$doc")
[ -n "$rows" ] || { echo "docs_files: no \"Every file\" tables in $doc" >&2; exit 2; }
while read -r f; do
	grep -qxF "$f" <<<"$rows" || { echo "docs_files: $f has no row in docs/architecture.md \"Every file\""; fail=1; }
done < <(cd "$src" && find src tools -name '*.[ch]' | sort)
while read -r f; do
	[ -f "$src/$f" ] || { echo "docs_files: docs/architecture.md names $f, which does not exist"; fail=1; }
done <<<"$rows"
exit $fail
