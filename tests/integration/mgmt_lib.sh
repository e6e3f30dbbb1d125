# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Helpers for the management integration tests (issue 7): a private softibd
# (lib.sh: own socket dir, stopped by PID) on a topology file, in the default
# or the external-SM mode; unmodified OpenSM once (-o) or running (-d2, so
# that its log is flushed per line); bounded waits for SUBNET UP; the
# unmodified diags on our libibumad.so.3 and libibverbs.so.1 (LD_LIBRARY_PATH
# = the build); a topology normaliser to compare ibnetdiscover with a file.
# A test skips (exit 77, CTest SKIP_RETURN_CODE) only while a piece it needs
# is not built yet; a missing Debian tool is a failure.  Sourced by
# opensm_*.sh and diags_*.sh; every wait has a limit.

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
MGMT_DATA=$(cd "$(dirname "${BASH_SOURCE[0]}")/../data" && pwd)
OSM_DIR=$SIB_TMP/osm
OSM_LOG=$OSM_DIR/opensm.log
mkdir -p "$OSM_DIR/cache" "$OSM_DIR/tmp"
# OpenSM keeps guid2lid, guid2mkey and its dumps here instead of /var.
export OSM_CACHE_DIR=$OSM_DIR/cache OSM_TMP_DIR=$OSM_DIR/tmp

skip() {
	echo "SKIP: $*"
	exit 77
}

# need_tool NAME PACKAGE: the Debian tool must be installed (a failure, not
# a skip: .ci/deps installs them).
need_tool() {
	command -v "$1" >/dev/null || fail "$1 not installed (Debian package $2)"
}

# need_umad: our libibumad.so.3 (src/umad) must be built, and the diags must
# load it rather than the system's.
need_umad() {
	local d
	for d in "$SIB_LIB" "$SIB_LIB/../src/umad"; do
		if [ -e "$d/libibumad.so.3" ]; then
			d=$(cd "$d" && pwd)
			[ "$d" = "$SIB_LIB" ] || export LD_LIBRARY_PATH=$d:$LD_LIBRARY_PATH
			need_tool ibstat infiniband-diags
			ldd "$(command -v ibstat)" | grep -q "libibumad.so.3 => $d/" ||
				fail "ibstat does not load $d/libibumad.so.3: $(ldd "$(command -v ibstat)" | grep umad)"
			return 0
		fi
	done
	skip "libibumad.so.3 is not built yet (src/umad)"
}

# need_sm_external: softibd must offer --sm external.
need_sm_external() {
	"$SIB_BIN/softibd" --help 2>&1 | grep -q -- '--sm' ||
		skip "softibd has no --sm external yet (the SMA and its modes)"
}

# mgmt_start TOPOLOGY MODE: start the private softibd on TOPOLOGY (a file
# under tests/data, a path, or "" for the embedded default) in MODE
# "default" (built-in LIDs and LFTs) or "external" (ports wait for an SM).
mgmt_start() {
	local topo=$1 mode=$2
	[ -z "$topo" ] || [ -e "$topo" ] || topo=$MGMT_DATA/$topo
	MGMT_TOPO=$topo
	if [ "$mode" = external ]; then
		need_sm_external
		SIB_TOPOLOGY=$topo start_daemon --sm external
	else
		SIB_TOPOLOGY=$topo start_daemon
	fi
}

# ca_devs: the verbs devices of the running fabric, in order.
ca_devs() {
	"$SIB_BIN/softib" status | awk '$1 == "device" { sub(/^name=/, "", $2); print $2 }'
}

# port_field DEV PORT FIELD: a key=value field of the port's line in
# `softib status` (state, phys, lid, sm_lid, guid, peer, ...).
port_field() {
	"$SIB_BIN/softib" status | awk -v dev="$1" -v port="$2" -v key="$3" '
		$1 == "device" { cur = ($2 == "name=" dev) }
		cur && $1 == "port" && $2 == "num=" port {
			for (i = 3; i <= NF; i++) if (index($i, key "=") == 1) { print substr($i, length(key) + 2); exit }
		}'
}

# port_guid DEV PORT: the port GUID as 0x + 16 hex digits.
port_guid() {
	local g
	g=$(port_field "$1" "$2" guid | tr -d :)
	[ -n "$g" ] || fail "no GUID for $1 port $2: $(status)"
	echo "0x$g"
}

# node_guid DEV: the CA's node GUID as 0x + 16 hex digits.
node_guid() {
	"$SIB_BIN/softib" status | awk -v dev="$1" '$1 == "device" && $2 == "name=" dev {
		for (i = 3; i <= NF; i++) if (index($i, "node_guid=") == 1) { g = substr($i, 11); gsub(/:/, "", g); print "0x" g; exit } }'
}

# opensm_once [OPTIONS...]: one unmodified `opensm -o` bound to softib0
# port 1 (override with -g); fails unless it reached SUBNET UP.
opensm_once() {
	need_tool opensm opensm
	local guid
	guid=$(port_guid softib0 1)
	LD_PRELOAD=$SIB_PRELOAD timeout 60 opensm -o -e -g "$guid" -f "$OSM_LOG" "$@" \
		>"$OSM_DIR/opensm.out" 2>&1
	local rc=$?
	grep -q "SUBNET UP" "$OSM_LOG" 2>/dev/null ||
		fail "opensm -o (rc $rc) did not reach SUBNET UP: $(tail -5 "$OSM_DIR/opensm.out"; grep -E 'ERR|SUBNET' "$OSM_LOG" 2>/dev/null | tail -10)"
	[ "$rc" = 0 ] || fail "opensm -o exited $rc: $(tail -5 "$OSM_DIR/opensm.out")"
}

# opensm_start [OPTIONS...]: a running OpenSM on softib0 port 1 (log flushed
# per line with -d2, light sweep every 2 s unless OPTIONS say otherwise),
# stopped by PID at exit; waits for its first SUBNET UP.  Sets OSM_PID.
opensm_start() {
	need_tool opensm opensm
	local guid
	guid=$(port_guid softib0 1)
	LD_PRELOAD=$SIB_PRELOAD opensm -d2 -e -s 2 -g "$guid" -f "$OSM_LOG" "$@" \
		>"$OSM_DIR/opensm.out" 2>&1 &
	OSM_PID=$!
	SIB_PIDS+=("$OSM_PID")
	opensm_wait_up 1 30
}

# subnet_ups: how many times the OpenSM log says SUBNET UP.
subnet_ups() {
	awk '/SUBNET UP/ { n++ } END { print n + 0 }' "$OSM_LOG" 2>/dev/null || echo 0
}

subnet_up_at_least() {
	[ "$(subnet_ups)" -ge "$1" ]
}

# opensm_wait_up COUNT SECONDS: wait until the log says SUBNET UP COUNT times.
opensm_wait_up() {
	wait_until "$2" subnet_up_at_least "$1" && return 0
	alive "${OSM_PID:-0}" || fail "opensm died: $(tail -5 "$OSM_DIR/opensm.out"; grep ERR "$OSM_LOG" | tail -5)"
	fail "no SUBNET UP #$1 within $2 s: $(grep -E 'ERR|SUBNET|Entering' "$OSM_LOG" | tail -10)"
}

# osm_lid GUID: the LID OpenSM gave the port GUID (its guid2lid file), in
# decimal.
osm_lid() {
	local l
	l=$(awk -v g="$1" 'tolower($1) == tolower(g) { print $2; exit }' "$OSM_CACHE_DIR/guid2lid" 2>/dev/null)
	[ -n "$l" ] && echo $((l))
}

# devinfo_field DEV PORT FIELD: a field of `ibv_devinfo -d DEV -i PORT`
# (state, port_lid, sm_lid, ...), as ibv_devinfo prints it.
devinfo_field() {
	client ibv_devinfo -d "$1" -i "$2" | awk -v k="$3:" '$1 == k { $1 = ""; sub(/^ /, ""); print; exit }'
}

# check_ports_active: every CA port with a peer is ACTIVE, with a unique LID
# that OpenSM assigned (its guid2lid), the SM LID of softib0 port 1, and
# ibv_devinfo agrees.
check_ports_active() {
	local dev lid osm sm seen=" " smlid
	smlid=$(port_field softib0 1 lid)
	[ "${smlid:-0}" -gt 0 ] || fail "the SM port has no LID: $(status)"
	for dev in $(ca_devs); do
		[ -n "$(port_field "$dev" 1 peer)" ] || continue
		[ "$(port_field "$dev" 1 state)" = ACTIVE ] || fail "$dev port 1 not ACTIVE: $(status)"
		lid=$(port_field "$dev" 1 lid)
		[ "${lid:-0}" -gt 0 ] && [ "$lid" -lt 49152 ] || fail "$dev port 1 has LID '$lid'"
		case $seen in *" $lid "*) fail "LID $lid given twice: $(status)";; esac
		seen="$seen$lid "
		osm=$(osm_lid "$(port_guid "$dev" 1)")
		[ "$osm" = "$lid" ] || fail "$dev port 1: LID $lid, OpenSM's guid2lid says '$osm'"
		sm=$(port_field "$dev" 1 sm_lid)
		[ "$sm" = "$smlid" ] || fail "$dev port 1: SM LID $sm, the SM is at $smlid"
		devinfo_field "$dev" 1 state | grep -q '^PORT_ACTIVE' ||
			fail "ibv_devinfo: $dev port 1 not PORT_ACTIVE: $(client ibv_devinfo -d "$dev")"
		[ "$(devinfo_field "$dev" 1 port_lid)" = "$lid" ] ||
			fail "ibv_devinfo: $dev port_lid $(devinfo_field "$dev" 1 port_lid), daemon says $lid"
		[ "$(devinfo_field "$dev" 1 sm_lid)" = "$smlid" ] ||
			fail "ibv_devinfo: $dev sm_lid $(devinfo_field "$dev" 1 sm_lid), SM at $smlid"
	done
	[ "$seen" != " " ] || fail "no CA port with a peer: $(status)"
}

# pair_run DEV_A DEV_B TOOL [ARGS...]: an unmodified ibverbs-utils
# ping-pong or perftest tool between two CAs (e.g. on different switches),
# server on DEV_A, 500 iterations; both sides must finish them.
pair_run() {
	local a=$1 b=$2 tool=$3 crc src done_re; shift 3
	case $tool in
	ibv_*) need_tool "$tool" ibverbs-utils; done_re="^500 iters in" ;;
	*) need_tool "$tool" perftest; done_re="^ *[0-9]+ +500 " ;;
	esac
	pair_try "$a" "$b" "$tool" "$@"
	[ "$crc" = 0 ] && [ "$src" = 0 ] || fail "$tool $a <-> $b: $(cat "$SIB_TMP/server.out" "$SIB_TMP/client.out")"
	grep -Eq "$done_re" "$SIB_TMP/client.out" || fail "$tool did not finish: $(cat "$SIB_TMP/client.out")"
}

# rc_pingpong DEV_A DEV_B [ARGS...]: ibv_rc_pingpong through pair_run.
rc_pingpong() {
	pair_run "$1" "$2" ibv_rc_pingpong "${@:3}"
}

# topo_norm FILE: a topology file (docs/topology.md) or an ibnetdiscover
# print-out as sorted lines "node Switch|Ca GUID NPORTS" and
# "link GUID[P] GUID[P]" (the ends in order), GUIDs as 16 lower-case hex
# digits, so that two descriptions of one fabric compare equal.
topo_norm() {
	awk '
	function g16(s) {
		sub(/^0[xX]/, "", s); s = tolower(s)
		while (length(s) < 16) s = "0" s
		return s
	}
	/^(switchguid|caguid)=/ { v = $0; sub(/^[a-z]+=/, "", v); sub(/\(.*/, "", v); nextguid = g16(v); next }
	/^(Switch|Ca|Hca)[ \t]/ {
		type = ($1 == "Switch") ? "Switch" : "Ca"
		id = $0; sub(/^[^"]*"/, "", id); sub(/".*/, "", id)
		guid = nextguid
		if (guid == "" && id ~ /^[SH]-[0-9a-fA-F]+$/) guid = g16(substr(id, 3))
		nextguid = ""
		node[id] = guid; cur = id
		print "node", type, guid, $2 + 0
		next
	}
	/^\[/ && cur != "" {
		p = $0; sub(/^\[/, "", p); sub(/\].*/, "", p)
		r = $0; sub(/^[^"]*"/, "", r); rid = r; sub(/".*/, "", rid)
		sub(/^[^"]*"/, "", r); sub(/^[ \t]*\[/, "", r); sub(/\].*/, "", r)
		nl++; la[nl] = cur; lp[nl] = p + 0; lb[nl] = rid; lq[nl] = r + 0
		next
	}
	/^[ \t]*$/ { cur = "" }
	END {
		for (i = 1; i <= nl; i++) {
			a = node[la[i]] "[" lp[i] "]"; b = node[lb[i]] "[" lq[i] "]"
			if (b < a) { t = a; a = b; b = t }
			print "link", a, b
		}
	}' "$1" | sort -u
}

# lid_of DEV: the LID of port 1 of a CA (decimal).
lid_of() {
	port_field "$1" 1 lid
}

# default_topo FILE: write the embedded default topology, as
# docs/topology.md prints it, to FILE (so that the doc stays true).
default_topo() {
	awk '/^## The default topology/ { s = 1 } s && /^```$/ { if (in_) exit; in_ = 1; next } in_' \
		"$MGMT_DATA/../../docs/topology.md" >"$1"
	grep -q '^Switch' "$1" || fail "no default topology in docs/topology.md"
}

# topo_file: the file the running daemon was started on (the default one
# from the docs when none was given).
topo_file() {
	if [ -n "$MGMT_TOPO" ]; then
		echo "$MGMT_TOPO"
	else
		default_topo "$SIB_TMP/default.topo"
		echo "$SIB_TMP/default.topo"
	fi
}

# switch_guids: the switch node GUIDs of the running topology (0x...).
switch_guids() {
	topo_norm "$(topo_file)" | awk '$1 == "node" && $2 == "Switch" { print "0x" $3 }'
}

# two_switch_sm: the fabric most diags tests use: two_switch.topo in the
# external-SM mode under a running OpenSM, every CA port ACTIVE.
two_switch_sm() {
	need_umad
	mgmt_start two_switch.topo external
	opensm_start
	check_ports_active
}

# run NAME CMD...: an unmodified client's output in $SIB_TMP/NAME.out; fails
# on a non-zero exit.
run() {
	local name=$1; shift
	client timeout 20 "$@" >"$SIB_TMP/$name.out" 2>&1 || fail "$*: rc $?: $(cat "$SIB_TMP/$name.out")"
}

# want NAME REGEX: that output must have a line matching REGEX.
want() {
	grep -Eq "$2" "$SIB_TMP/$1.out" || fail "$1: no line matching '$2' in: $(cat "$SIB_TMP/$1.out")"
}
