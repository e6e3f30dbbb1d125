#!/bin/bash
# SPDX-License-Identifier: MIT
# Unmodified ibacm (Debian package ibacm, rdma-core's IB ACM) as root on
# softib (issue 14): on the default fabric under OpenSM (softibd --sm
# external, so that the SA answers its multicast joins), ibacm opens an
# endpoint on every CA port: each UD QP takes the controlled Q_Key
# 0x80010000 (CAP_NET_RAW, docs/threat-model.md "Privilege"; before issue
# 14: "failed to modify QP to init"), joins the ACM multicast group through
# the SA and is listed by `ib_acme -e`; `ib_acme` then resolves one CA's
# name from another (ACM's address protocol over those QPs, the path from
# the SA).  ibacm writes its port file, lock and sockets under /run: the
# test runs in a mount namespace of its own with a private /run.  Not root:
# exit 77.  ibacm is stopped by PID; every wait is bounded.
if [ "$(id -u)" != 0 ]; then
	echo "SKIP: ibacm needs root (CAP_NET_RAW for its Q_Key, /run for its files)"
	exit 77
fi
if [ -z "${SIB_IBACM_NS:-}" ]; then
	command -v unshare >/dev/null || { echo "FAIL: no unshare (util-linux)" >&2; exit 1; }
	unshare --mount --propagation private true 2>/dev/null ||
		{ echo "SKIP: root without CAP_SYS_ADMIN here: no private /run for ibacm"; exit 77; }
	exec unshare --mount --propagation private env SIB_IBACM_NS=1 bash "$0" "$@"
fi
mount -t tmpfs -o mode=0755 tmpfs /run || { echo "FAIL: cannot mount a private /run" >&2; exit 1; }

. "$(dirname "$0")/mgmt_lib.sh"
need_tool ibacm ibacm
need_tool ib_acme ibacm
need_umad
mgmt_start "" external
opensm_start
check_ports_active

devs=$(ca_devs)
acm=$SIB_TMP/acm
mkdir -p "$acm"
: >"$acm/addr.cfg"
for d in $devs; do
	echo "acm-$d $d 1 default" >>"$acm/addr.cfg"
done
cat >"$acm/opts.cfg" <<EOF
log_file $acm/ibacm.log
log_level 2
lock_file $acm/ibacm.pid
server_mode unix
addr_prot acm
route_prot sa
loopback_prot none
timeout 2000
retries 2
EOF

LD_PRELOAD=$SIB_PRELOAD ibacm -P -O "$acm/opts.cfg" -A "$acm/addr.cfg" >"$acm/ibacm.out" 2>&1 &
ACM_PID=$!
SIB_PIDS+=("$ACM_PID")

# endpoint_up DEV: ibacm says DEV's endpoint joined its group.
endpoint_up() {
	grep -q "acmp_ep_join: join for $1-1-0xffff complete" "$acm/ibacm.log" 2>/dev/null
}
for d in $devs; do
	wait_until 20 endpoint_up "$d" ||
		fail "ibacm opened no endpoint on $d: $(grep -E 'ERROR|fail' "$acm/ibacm.log" | head -5; tail -3 "$acm/ibacm.out")"
done
alive "$ACM_PID" || fail "ibacm exited: $(tail -5 "$acm/ibacm.out"; tail -5 "$acm/ibacm.log")"
! grep -q "failed to modify QP" "$acm/ibacm.log" || fail "ibacm: $(grep 'failed to modify QP' "$acm/ibacm.log" | head -1)"
! grep -q "join response status" "$acm/ibacm.log" ||
	fail "a multicast join failed: $(grep 'join response status' "$acm/ibacm.log" | head -1)"

# ib_acme -e: the running ibacm lists an endpoint per CA port, named as configured
client timeout 20 ib_acme -e >"$acm/ep.out" 2>&1 || fail "ib_acme -e: $(cat "$acm/ep.out")"
for d in $devs; do
	grep -q "acm-$d" "$acm/ep.out" || fail "ib_acme -e lists no acm-$d: $(cat "$acm/ep.out")"
done

# a name resolved by ACM over the endpoints' QPs, its path from the SA
set -- $devs
[ $# -ge 2 ] || fail "need two CAs, have: $devs"
client timeout 30 ib_acme -f n -s "acm-$1" -d "acm-$2" >"$acm/resolve.out" 2>&1 ||
	fail "ib_acme -s acm-$1 -d acm-$2: $(cat "$acm/resolve.out"; grep -E 'ERROR|fail' "$acm/ibacm.log" | tail -5)"
grep -qi "dlid" "$acm/resolve.out" || fail "ib_acme resolved no path: $(cat "$acm/resolve.out")"
# not from a local shortcut (loopback_prot none): the request went out to
# the ACM group and the endpoints took it from their QPs
grep -q "acmp_resolve_dest: sending resolve msg to dest" "$acm/ibacm.log" ||
	fail "ibacm sent no address request: $(grep acmp_resolve "$acm/ibacm.log" | tail -3)"
grep -q "acmp_process_addr_req" "$acm/ibacm.log" ||
	fail "no endpoint received the address request: $(grep acmp_process "$acm/ibacm.log" | tail -3)"
lid2=$(lid_of "$2")
grep -Eqi "dlid: *(0x)?0*$(printf '%x' "$lid2")\b|dlid: *$lid2\b" "$acm/resolve.out" ||
	fail "path to acm-$2 does not lead to LID $lid2: $(cat "$acm/resolve.out")"

cat "$acm/ep.out" "$acm/resolve.out"
kill -TERM "$ACM_PID"
wait_until 10 eval '! alive "$ACM_PID"' || fail "ibacm did not stop on SIGTERM"
echo PASS
