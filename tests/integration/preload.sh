#!/bin/bash
# SPDX-License-Identifier: MIT
# libsoftib_view.so (src/preload, docs/clients.md "The interposer") under
# unmodified programs: dash and bash (`cd /sys/class/infiniband && echo *`,
# `[ -r ]`, `test -c`), cat, ls -l, stat, readlink, find, python3 (os.listdir,
# open, os.path.realpath, os.stat, os.getcwd), /usr/sbin/ibstatus and ibstat
# (the system's libibumad), also as uid 65534 with `env -i` when root, on a
# fake tree (softib0, one port) this test makes; each must show the tree's
# values.  No daemon; root is not needed.  The library is not sanitized in either build,
# and neither are these programs: no ASan runtime is preloaded here.
. "$(dirname "$0")/lib.sh"
set -o pipefail
unset LD_LIBRARY_PATH
LIB=$SIB_LIB/libsoftib_view.so
[ -f "$LIB" ] || fail "no $LIB (build first)"
V=$SIB_TMP/view
P=$V/sys/class/infiniband/softib0/ports/1
mkdir -p "$P/gids" "$P/pkeys" "$V/dev/infiniband" "$V/sys/class/infiniband_verbs/uverbs0" \
	"$V/sys/class/misc/rdma_cm" "$V/sys/devices/softib0"
D=$V/sys/class/infiniband/softib0
echo "1: CA" >"$D/node_type"
echo 5eed:0000:0000:0001 >"$D/node_guid"
echo 5eed:0000:0000:0001 >"$D/sys_image_guid"
echo 1.0.0 >"$D/fw_ver"
echo 0 >"$D/hw_rev"
echo softib >"$D/hca_type"
echo 0 >"$P/lid_mask_count"
echo 0 >"$P/sm_sl"
echo 0x02510868 >"$P/cap_mask"
echo "4: ACTIVE" >"$P/state"
echo "5: LinkUp" >"$P/phys_state"
echo "100 Gb/sec (4X EDR)" >"$P/rate"
echo 0x7 >"$P/lid"
echo 0x1 >"$P/sm_lid"
echo InfiniBand >"$P/link_layer"
echo fe80:0000:0000:0000:5eed:0000:0000:0001 >"$P/gids/0"
echo 0xffff >"$P/pkeys/0"
echo softib0 >"$V/sys/class/infiniband_verbs/uverbs0/ibdev"
echo 4 >"$V/sys/class/misc/rdma_cm/abi_version"
ln -s /dev/null "$V/dev/infiniband/uverbs0"
ln -s ../../../devices/softib0 "$V/sys/class/infiniband/softib0/device"

# run CMD...: CMD in the view, its stderr kept for the check.
run() { timeout 30 env LD_PRELOAD="$LIB" SOFTIB_VIEW="$V" "$@" 2>"$SIB_TMP/err"; }
# expect NAME WANT GOT: GOT must be WANT, with nothing on stderr.
expect() {
	[ "$3" = "$2" ] || fail "$1: got [$3], want [$2] (stderr: $(cat "$SIB_TMP/err"))"
	[ ! -s "$SIB_TMP/err" ] || fail "$1: stderr: $(cat "$SIB_TMP/err")"
	echo "ok: $1"
}

for sh in /bin/dash bash; do
	command -v "$sh" >/dev/null || continue
	expect "$sh echo /abs/*" /sys/class/infiniband/softib0/ports/1 "$(run "$sh" -c 'echo /sys/class/infiniband/*/ports/*')"
	expect "$sh cd; echo *" softib0 "$(run "$sh" -c 'cd /sys/class/infiniband && echo *')"
	expect "$sh cd; pwd -P" /sys/class/infiniband/softib0/ports "$(run "$sh" -c 'cd /sys/class/infiniband/softib0/ports && pwd -P')"
	expect "$sh [ -r ]" yes "$(run "$sh" -c '[ -r /sys/class/infiniband/softib0/ports/1/state ] && echo yes')"
	expect "$sh [ -r ] missing" no "$(run "$sh" -c '[ -r /sys/class/infiniband/softib0/ports/1/nosuch ] || echo no')"
	expect "$sh test -c" chr "$(run "$sh" -c 'test -c /dev/infiniband/uverbs0 && echo chr')"
	expect "$sh test -d .." dir "$(run "$sh" -c 'cd /sys/class/infiniband && test -d ../net -a ! -d ../net/softib0 && echo dir')"
	expect "$sh cat in a child's child" 0x7 "$(run "$sh" -c 'sh -c "cat /sys/class/infiniband/softib0/ports/1/lid"')"
done
expect "cat" "4: ACTIVE" "$(run cat /sys/class/infiniband/softib0/ports/1/state)"
expect "cat relative" "softib0" "$(run sh -c 'cd /sys/class && cat infiniband_verbs/uverbs0/ibdev')"
expect "ls" "cap_mask gids lid lid_mask_count link_layer phys_state pkeys rate sm_lid sm_sl state" "$(run ls /sys/class/infiniband/softib0/ports/1 | tr '\n' ' ' | sed 's/ $//')"
# the device nodes are character devices, as on a host (the tree's links
# to /dev/null are not shown), and ".." of a view directory is the system's
out=$(run ls -la /sys/class/infiniband/softib0/ports/1/state /dev/infiniband/)
expect "ls -la" "c uverbs0|d ..|" "$(awk '$NF == "uverbs0" || $NF == ".." { print substr($1, 1, 1), $NF }' <<<"$out" | LC_ALL=C sort | tr '\n' '|')"
expect "stat" "character special file" "$(run stat -c %F /dev/infiniband/uverbs0)"
expect "stat -L" "character special file" "$(run stat -L -c %F /dev/infiniband/uverbs0)"
expect "readlink" "" "$(run sh -c 'readlink /dev/infiniband/uverbs0 || echo -n')"
expect "find -L -type c" /dev/infiniband/uverbs0 "$(run find -L /dev/infiniband -type c)"
expect "stat .." "directory directory" "$(run stat -c %F /sys/class/infiniband/.. /dev/infiniband/.. | tr '\n' ' ' | sed 's/ $//')"
expect "ls ../null" /dev/infiniband/../null "$(run ls /dev/infiniband/../null)"
expect "stat nosuch/.." "No such file or directory" "$(run sh -c 'stat /dev/infiniband/nosuch/.. 2>&1 >/dev/null | grep -o "No such file or directory"')"
# nothing writes the view (sysfs: EACCES for a user, EPERM for root)
run sh -c 'echo x >/sys/class/infiniband/softib0/ports/1/state' && fail "write into the view worked"
run touch /sys/class/infiniband/new && fail "touch in the view worked"
run mkdir /dev/infiniband/d && fail "mkdir in the view worked"
run rm -rf /sys/class/infiniband/softib0 && fail "rm -rf of the view worked"
run mv /sys/class/infiniband/softib0 /sys/class/infiniband/x && fail "mv in the view worked"
: >"$SIB_TMP/err"
expect "view unchanged" "4: ACTIVE|uverbs0|softib0|" "$({ cat "$P/state"; ls "$V/sys/class/infiniband" "$V/dev/infiniband"; } | grep -v -e '^/' -e '^$' | tr '\n' '|')"
expect "readlink -f" /sys/class/infiniband/softib0/ports/1/state \
	"$(run readlink -f /sys/class/infiniband/softib0/ports/../ports/1/state)"
expect "find" "/sys/class/infiniband/softib0/ports/1/state" "$(run find /sys/class/infiniband/ -name state)"
expect "find -L" "/sys/class/infiniband/softib0/device" "$(run find /sys/class/infiniband/softib0/ -maxdepth 1 -name device)"
expect "abi_version" 4 "$(run cat /sys/class/misc/rdma_cm/abi_version)"
# outside the view: the system's own
expect "outside" "$(cat /proc/sys/kernel/ostype)" "$(run cat /proc/sys/kernel/ostype)"
expect "outside dir" "$(ls /sys/class | head -3)" "$(run ls /sys/class | head -3)"

if command -v python3 >/dev/null; then
	got=$(run python3 -c '
import os, stat
d = "/sys/class/infiniband"
print(sorted(os.listdir(d)))
print(open(d + "/softib0/ports/1/state").read().strip())
print(os.path.realpath(d + "/softib0/ports/1/../1/gids/0"))
print(stat.S_ISCHR(os.stat("/dev/infiniband/uverbs0").st_mode))
print(os.access("/dev/infiniband/uverbs0", os.R_OK | os.W_OK))
os.chdir(d + "/softib0")
print(os.getcwd(), open("ports/1/lid").read().strip())
print(os.path.exists("/sys/class/infiniband/nosuch"))
' | tr '\n' '|')
	expect "python3" "['softib0']|4: ACTIVE|/sys/class/infiniband/softib0/ports/1/gids/0|True|True|/sys/class/infiniband/softib0 0x7|False|" "$got"
else
	echo "skip: no python3"
fi

if [ -x /usr/sbin/ibstatus ]; then
	out=$(run /usr/sbin/ibstatus)
	for want in "Infiniband device 'softib0' port 1 status:" \
		"default gid:	 fe80:0000:0000:0000:5eed:0000:0000:0001" "base lid:	 0x7" \
		"sm lid:		 0x1" "state:		 4: ACTIVE" "phys state:	 5: LinkUp" \
		"rate:		 100 Gb/sec (4X EDR)" "link_layer:	 InfiniBand"; do
		grep -qF "$want" <<<"$out" || fail "ibstatus: no [$want] in: $out"
	done
	[ ! -s "$SIB_TMP/err" ] || fail "ibstatus: stderr: $(cat "$SIB_TMP/err")"
	echo "ok: ibstatus"
	out=$(run /usr/sbin/ibstatus softib0:1)
	grep -qF "base lid:	 0x7" <<<"$out" || fail "ibstatus softib0:1: $out"
	echo "ok: ibstatus softib0:1"
else
	echo "skip: no /usr/sbin/ibstatus (Debian infiniband-diags)"
fi
# As an ordinary user with a bare environment (setpriv, env -i), as in a
# container: only LD_PRELOAD and SOFTIB_VIEW carry the view (root only).
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	chmod 755 "$SIB_TMP"
	got=$(timeout 30 setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
		env -i PATH=/usr/bin:/bin LD_PRELOAD="$LIB" SOFTIB_VIEW="$V" \
		sh -c 'id -u; cd /sys/class/infiniband && echo *; cat softib0/ports/1/state; test -c /dev/infiniband/uverbs0 && test -r /dev/infiniband/uverbs0 && test -w /dev/infiniband/uverbs0 && echo rw' \
		2>"$SIB_TMP/err" | tr '\n' '|')
	expect "uid 65534, env -i" "65534|softib0|4: ACTIVE|rw|" "$got"
else
	echo "skip: not root or no setpriv (the ordinary-user run)"
fi

# ibstat: the system's libibumad (LD_LIBRARY_PATH unset) reads the view.
if [ -x /usr/sbin/ibstat ]; then
	out=$(run /usr/sbin/ibstat)
	for want in "CA 'softib0'" "CA type: softib" "Firmware version: 1.0.0" \
		"Node GUID: 0x5eed000000000001" "State: Active" "Physical state: LinkUp" \
		"Base lid: 7" "SM lid: 1" "Capability mask: 0x02510868" "Link layer: InfiniBand"; do
		grep -qF "$want" <<<"$out" || fail "ibstat: no [$want] in: $out"
	done
	echo "ok: ibstat (system libibumad)"
else
	echo "skip: no /usr/sbin/ibstat (Debian infiniband-diags)"
fi
echo PASS
