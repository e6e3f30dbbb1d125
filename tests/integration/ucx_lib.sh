# SPDX-License-Identifier: MIT
# Helpers for the UCX and Open MPI tests, sourced after lib.sh: `softib
# run` around a command (run_lib.sh), and the check that UCX really used
# softib.  The tests need root (to be root, or to become another uid);
# elsewhere they exit 77 (skip).

SIB_HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$SIB_HERE/run_lib.sh"

# UCX's memory pools and registration cache pin more than a container's
# default 8 MiB RLIMIT_MEMLOCK: without CAP_IPC_LOCK (docker's root lacks
# it) ucx_perftest tag_bw 1048576 and the rc_verbs MPI pingpong fail with
# "Failed to allocate memory pool", as on hardware.  These tests are about
# UCX over softib, not the limit (test_memlock is): accounting off unless
# the caller chose.
export SOFTIB_MEMLOCK=${SOFTIB_MEMLOCK:-0}

skip() {
	echo "SKIP: $*"
	exit 77
}

# ucx_view_setup [SOFTIBD_ARGS...]: VIEW, the prefix that runs a program
# under `softib run` (run_lib.sh) in the mode SIB_RUN_MODE names (root,
# the default: softib run's mount namespace against a private softibd;
# user: a fresh uid with env -i and no namespaces, softib run's
# interposer), VIEW_BARE the same without the ASan runtime for mpirun.
ucx_view_setup() {
	run_setup "${SIB_RUN_MODE:-root}" "$@"
	VIEW=("${RUN[@]}")
	VIEW_BARE=("${RUN_BARE[@]}")
}

# check_lanes FILE TLS DEVPATTERN: FILE holds UCX's info log (UCX_LOG_LEVEL=info);
# every lane of every endpoint configuration it printed ("ep_cfg[0]:
# tag(rc_verbs/softib1:1) ...") is a transport of TLS (comma-separated) on a
# device matching DEVPATTERN (a grep -E pattern), and there is at least one.
check_lanes() {
	local file=$1 tls=",$2," pat=$3 lanes lane tl dev
	lanes=$(grep -E 'ep_cfg\[[0-9]+\]:' "$file" | sed 's/.*ep_cfg\[[0-9]*\]://' |
		grep -oE '[a-z0-9_]+/[A-Za-z0-9_.:-]+' || true)
	[ -n "$lanes" ] || fail "$file: UCX printed no endpoint configuration (ep_cfg)"
	for lane in $lanes; do
		tl=${lane%%/*}
		dev=${lane#*/}
		[[ $tls == *",$tl,"* ]] || fail "$file: UCX used transport $tl ($lane), not one of $2"
		[[ $dev =~ ^($pat)$ ]] || fail "$file: UCX used device $dev ($lane), not $pat"
	done
	echo "lanes in $(basename "$file"): $(printf '%s\n' "$lanes" | sort -u | tr '\n' ' ')"
}

# check_released: every object of every process the test ran is gone.
check_released() {
	local _
	for _ in $(seq 100); do
		run_admin status | grep -Eq '^totals devices=0 pd=0 mr=0 cq=0 qp=0 srq=0 ah=0 ' && return 0
		sleep 0.05
	done
	fail "resources left: $(run_admin status)"
}
