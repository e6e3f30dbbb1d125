# SPDX-License-Identifier: MIT
# `softib run` in the tests (docs/clients.md "softib run"), sourced after
# lib.sh.  run_setup MODE [SOFTIBD_ARGS...] sets RUN, the command prefix
# that runs a program under `softib run`, in one of two settings:
#   root  as root: softib run's mount-namespace view, against the test's
#         private softibd (started here with SOFTIBD_ARGS);
#   user  as a fresh unprivileged uid, as a new user in a default Docker
#         container meets it: nothing of our environment (env -i: no
#         SOFTIB_*, no XDG_RUNTIME_DIR), no capabilities, and no way to
#         make a namespace (no_userns: a seccomp filter like Docker's
#         default profile), RLIMIT_MEMLOCK as it comes (softib run turns the
#         accounting off when it is finite); so softib run takes its interposer path,
#         and the library autostarts the uid's own softibd on the default
#         socket (/tmp/softib-<uid>), stopped and removed at exit.
# Both need root (to be root, or to become another uid): else exit 77.
# as_run_user CMD...: CMD as that uid, in the same environment (user mode:
# run_user.sh, which passes the clients' UCX_*, OMPI_* and FI_* settings).
# run_client CMD...: CMD in RUN's setting (the daemon RUN's programs use).

SIB_RUN_HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

run_skip() {
	echo "SKIP: $*"
	exit 77
}

run_cleanup() {
	if [ -n "${SIB_RUN_UID:-}" ]; then
		as_run_user timeout 10 "$SIB_BIN/softib" stop >/dev/null 2>&1
		rm -rf "/tmp/softib-$SIB_RUN_UID"
	fi
}

as_run_user() {
	bash "$SIB_RUN_HERE/run_user.sh" "$SIB_RUN_UID" "$@"
}

run_setup() {
	local mode=$1 u
	shift
	export SIB_RUN_MODE=$mode
	[ "$(id -u)" = 0 ] || run_skip "needs root (softib run as root, or as another uid)"
	case $mode in
	root)
		start_daemon "$@"
		RUN=(env LD_PRELOAD="$SIB_PRELOAD" "$SIB_BIN/softib" run --quiet --)
		RUN_BARE=("$SIB_BIN/softib" run --quiet --)
		;;
	user)
		command -v setpriv >/dev/null || run_skip "no setpriv (util-linux)"
		[ -x "$SIB_BIN/no_userns" ] || run_skip "no $SIB_BIN/no_userns (libseccomp-dev)"
		for _ in $(seq 100); do
			u=$((3000000000 + RANDOM * 32768 + RANDOM))
			getent passwd "$u" >/dev/null || [ -e "/tmp/softib-$u" ] || break
		done
		SIB_RUN_UID=$u
		export SIB_PRELOAD
		trap 'run_cleanup; sib_cleanup' EXIT
		as_run_user test -x "$SIB_BIN/softib" -a -r "$SIB_LIB/libibverbs.so.1" ||
			run_skip "uid $u cannot read the build tree $SIB_BIN"
		RUN=(bash "$SIB_RUN_HERE/run_user.sh" "$u" "$SIB_BIN/no_userns" "$SIB_BIN/softib" run --quiet --)
		RUN_BARE=("${RUN[@]}")
		;;
	*)
		fail "run_setup: unknown mode $mode"
		;;
	esac
}

run_client() {
	"${RUN[@]}" "$@"
}

# run_admin ARGS...: the softib command (status, port, ...) against the
# daemon RUN uses.
run_admin() {
	if [ -n "${SIB_RUN_UID:-}" ]; then
		as_run_user "$SIB_BIN/softib" "$@"
	else
		"$SIB_BIN/softib" "$@"
	fi
}
