#!/bin/bash
# SPDX-License-Identifier: MIT
# Run a command in a private mount namespace in which every softib device
# has its uverbs character device, /dev/infiniband/<dev_name>.  UCX (and
# through it Open MPI's pml ucx) uses a verbs device only when that path is
# a character device it can open read-write (docs/clients.md); softib has
# no kernel driver, so the view binds /dev/null there.
#
# Usage: uverbs_view.sh [-d DEV_NAME]... [--] COMMAND [ARGS...]
#   -d DEV_NAME  make /dev/infiniband/DEV_NAME (repeatable).  Without -d the
#                names come from ibv_devnames (built with the tests:
#                $SIB_BIN/ibv_devnames, else build/bin/ibv_devnames beside
#                this tree), which lists ibv_device.dev_name of every device
#                the library sees, so the library's environment
#                (LD_LIBRARY_PATH, SOFTIB_SOCKET) must already be set.
#
# Needs root: `unshare -m` (a mount namespace only, no user namespace), a
# tmpfs over /dev (or over /dev/infiniband when it exists) with every
# original entry bound back, and a bind mount of /dev/null per device.
# Nothing outside the namespace changes; it ends with COMMAND.  Exits with
# COMMAND's status, or 77 (skip) when not root or the namespace or a mount
# cannot be made.
set -euo pipefail

skip() {
	echo "SKIP: uverbs_view.sh: $*" >&2
	exit 77
}

# Inside the namespace: DIR gets a tmpfs with its entries bound back from
# the original (reached through an fd opened before the tmpfs hides it;
# mount -c keeps that /proc path as it is instead of resolving it to the
# new /dev), then /dev/infiniband/<dev_name> for each name.
if [ "${1:-}" = --inside ]; then
	shift
	names=()
	while [ "$1" != -- ]; do names+=("$1"); shift; done
	shift
	mount --make-rprivate / || skip "mount --make-rprivate / failed"
	if [ -d /dev/infiniband ]; then dir=/dev/infiniband; else dir=/dev; fi
	exec 3<"$dir"
	orig=/proc/self/fd/3
	mount -t tmpfs -o mode=755 softib-view "$dir" || skip "cannot mount a tmpfs over $dir"
	for e in "$orig"/* "$orig"/.[!.]*; do
		[ -e "$e" ] || [ -L "$e" ] || continue
		n=${e##*/}
		if [ -L "$e" ]; then
			ln -s "$(readlink "$e")" "$dir/$n"
		elif [ -d "$e" ]; then
			mkdir "$dir/$n"
			mount -c --rbind "$e" "$dir/$n"
		else
			: >"$dir/$n"
			mount -c --bind "$e" "$dir/$n"
		fi
	done
	exec 3<&-
	mkdir -p /dev/infiniband
	for n in "${names[@]}"; do
		: >"/dev/infiniband/$n"
		mount --bind /dev/null "/dev/infiniband/$n"
	done
	exec "$@"
fi

[ "$(id -u)" = 0 ] || skip "needs root (unshare -m and mount)"
names=()
while [ $# -gt 0 ]; do
	case $1 in
	-d) names+=("$2"); shift 2 ;;
	--) shift; break ;;
	*) break ;;
	esac
done
[ $# -gt 0 ] || { echo "usage: uverbs_view.sh [-d DEV_NAME]... [--] COMMAND [ARGS...]" >&2; exit 2; }
if [ ${#names[@]} -eq 0 ]; then
	here=$(cd "$(dirname "$0")" && pwd)
	lister=${SIB_BIN:-$here/../../build/bin}/ibv_devnames
	[ -x "$lister" ] || { echo "uverbs_view.sh: no $lister (build the tests, or give -d)" >&2; exit 2; }
	while read -r _ dev; do names+=("$dev"); done < <("$lister")
	[ ${#names[@]} -gt 0 ] || { echo "uverbs_view.sh: the library lists no device" >&2; exit 2; }
fi
for n in "${names[@]}"; do
	case $n in */* | .* | '') echo "uverbs_view.sh: bad device name '$n'" >&2; exit 2 ;; esac
done
unshare -m --propagation private true 2>/dev/null || skip "unshare -m failed"
exec unshare -m --propagation private -- "$BASH" "$0" --inside "${names[@]}" -- "$@"
