#!/bin/bash
# SPDX-License-Identifier: MIT
# run_user.sh UID CMD ARGS...: CMD as UID the way run_lib.sh's "user" mode
# means it: no capabilities (setpriv, bounding set cleared), nothing of the
# caller's environment (env -i) but PATH, HOME=/ and the clients' own
# settings (UCX_*, OMPI_*, FI_*: what a user would set for the program),
# RLIMIT_MEMLOCK as it comes (8 MiB on Debian, as in a default container:
# softib run deals with it), and for the sanitized build the ASan runtime
# first ($SIB_PRELOAD, $ASAN_OPTIONS).
# A script, not a function, so that `timeout` and `env` can run it.
set -u
u=${1:?usage: run_user.sh UID CMD...}
shift
pass=()
for k in $(compgen -e); do
	case $k in UCX_* | OMPI_* | FI_*) pass+=("$k=${!k}") ;; esac
done
asan=()
[ -z "${SIB_PRELOAD:-}" ] || asan=(LD_PRELOAD="$SIB_PRELOAD" ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0}")
exec setpriv --reuid="$u" --regid="$u" --clear-groups --inh-caps=-all --bounding-set=-all \
	env -i PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin HOME=/ "${pass[@]}" "${asan[@]}" "$@"
