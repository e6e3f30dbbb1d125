// SPDX-License-Identifier: MIT
/*
 * The softib command: talks to a running softibd over its control socket
 * (status, stop; device add|remove and port down|up in softib_dev.c;
 * capture and fault in linkcmd.c).  Never starts a daemon: asking a
 * stopped daemon for its status must not start one.  Single-threaded; no
 * state beyond one socket (capture: plus its ring and file; ipoib: the
 * bridge of src/ipoib, ipoibcmd.c).
 */
#include <stdio.h>
#include <string.h>

#include "common/ctl.h"
#include "softib_dev.h"
#include "linkcmd.h"
#ifdef SOFTIB_HAVE_IPOIB
#include "ipoibcmd.h"
#endif

static const char usage[] =
"Usage: softib [--socket PATH] COMMAND\n"
"Talk to the softib fabric daemon (softibd).\n"
"\n"
"Commands:\n"
"  status          print the daemon's status report: devices, ports, clients,\n"
"                  object counts and counters (docs/daemon.md)\n"
"  stop            stop the daemon; returns once it has closed its socket\n"
"  device add NAME     register a new single-port CA called NAME, cabled to a\n"
"                      free switch port, with a fresh GUID and LID, port ACTIVE\n"
"                      (softibd --sm external: INIT, LID 0 until an SM comes);\n"
"                      processes started from now on list it (docs/events.md)\n"
"  device remove NAME  unregister CA NAME: every context open on it gets\n"
"                      IBV_EVENT_DEVICE_FATAL, its QPs go to the error state,\n"
"                      peers' packets to it are lost; new processes no longer\n"
"                      list it\n"
"  port DEV PORT down|up\n"
"                      take port PORT of CA DEV down (DOWN, Disabled: packets\n"
"                      from and to it are lost; the switch's PortStateChange\n"
"                      and trap 128 tell an SM) or back up (the link trains to\n"
"                      INIT, the built-in SM makes it ACTIVE); every context of\n"
"                      DEV gets IBV_EVENT_PORT_ERR / PORT_ACTIVE; DEV may also\n"
"                      name a switch by its topology id (S-...): a link in the\n"
"                      middle of paths goes down or up\n"
"  port DEV PORT lid LID | smlid LID\n"
"                      give the port a new base LID (a free unicast LID; packets\n"
"                      to the old one are lost) or SM LID; every context of DEV\n"
"                      gets IBV_EVENT_LID_CHANGE / IBV_EVENT_SM_CHANGE\n"
"  capture -w FILE [-d DEV] [-p PORT] [-c COUNT]\n"
"                  write every packet that crosses the port (default: every\n"
"                  port of every device) to FILE, a pcap file tshark decodes\n"
"                  as InfiniBand; programs already running are captured too.\n"
"                  Stops on Ctrl-C/SIGTERM or after COUNT packets (docs/link.md)\n"
"  fault DEV|all PORT|all SPEC|off\n"
"                  inject faults on a port of running programs, SPEC as in\n"
"                  SOFTIB_FAULTS, e.g. seed=1,loss=0.01,corrupt=0.01,down=0;\n"
"                  off removes them (docs/link.md)\n"
"  ipoib DEV PORT up --tun NAME [--addr A.B.C.D/P] [--mode datagram|connected]\n"
"                  [--daemon] [--wait SECONDS]\n"
"                  IP over InfiniBand: a TUN interface NAME with that address\n"
"                  bridged to the port's IPoIB endpoint (a UD QP in the\n"
"                  partition's broadcast group, ARP with 20-byte addresses);\n"
"                  datagram mode (RFC 4391, the default): MTU 2044; connected\n"
"                  mode (RFC 4755): RC connections through the CM to neighbours\n"
"                  that take them, MTU 65520; runs until Ctrl-C/SIGTERM or\n"
"                  `ipoib DEV PORT down`; needs CAP_NET_ADMIN in its network\n"
"                  namespace (root, or `unshare -rn`; docs/ipoib.md)\n"
"  ipoib DEV PORT down\n"
"                  stop the interface of DEV PORT\n"
"  ipoib DEV PORT add|del ADDR[/PREFIX]\n"
"                  add or delete an IPv4 or IPv6 address of the port in\n"
"                  softibd's rdma_cm table (no TUN, no root): rdma_cm programs\n"
"                  bind and resolve it at once; without /PREFIX add takes /32\n"
"                  (/128) and del any; ids bound to a deleted address keep it,\n"
"                  new binds fail (EADDRNOTAVAIL), as `ip addr del`\n"
"  ipoib DEV PORT addrs\n"
"                  the port's addresses, one ADDR/PREFIX a line: 127.1.d.p/8\n"
"                  and the GID's IPv6 address/64 (the defaults), then the added\n"
"                  ones\n"
"\n"
"Options:\n"
"  -s, --socket PATH  control socket (default: $SOFTIB_SOCKET, else\n"
"                     $XDG_RUNTIME_DIR/softib.sock, else\n"
"                     /tmp/softib-<uid>/softib.sock)\n"
"  -h, --help         show this help\n"
"\n"
"Exit status: 0 on success, 1 on errors or if softibd is not running,\n"
"2 on usage errors.\n";

int main(int argc, char **argv)
{
	const char *path = NULL, *cmd, *args[8];
	int i, nargs = 0;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			fputs(usage, stdout);
			return 0;
		} else if (!strcmp(argv[i], "-s") || !strcmp(argv[i], "--socket")) {
			if (++i == argc)
				goto bad_usage;
			path = argv[i];
		} else if (!strncmp(argv[i], "--socket=", 9)) {
			path = argv[i] + 9;
		} else if (!nargs && argv[i][0] != '-' &&
			   (!strcmp(argv[i], "capture") || !strcmp(argv[i], "fault") ||
			    !strcmp(argv[i], "ipoib"))) {
			/* capture, fault and ipoib take the rest of the line. */
			if (!strcmp(argv[i], "ipoib") && argc - i > 3 &&
			    (!strcmp(argv[i + 3], "add") || !strcmp(argv[i + 3], "del") ||
			     !strcmp(argv[i + 3], "addrs")))
				return sib_tool_ipaddr(path, argc - i - 1, argv + i + 1, "softib");
			if (!strcmp(argv[i], "ipoib")) {
#ifdef SOFTIB_HAVE_IPOIB
				return sib_tool_ipoib(path, argc - i - 1, argv + i + 1);
#else
				fputs("softib: built without ipoib (libnl-route-3)\n", stderr);
				return 1;
#endif
			}
			if (!strcmp(argv[i], "capture"))
				return sib_tool_capture(path, argc - i - 1, argv + i + 1);
			return sib_tool_fault(path, argc - i - 1, argv + i + 1);
		} else if (argv[i][0] != '-' && nargs < 8) {
			args[nargs++] = argv[i];
		} else {
			goto bad_usage;
		}
	}
	cmd = nargs ? args[0] : NULL;
	if (cmd && (!strcmp(cmd, "device") || !strcmp(cmd, "port")))
		return sib_tool_admin(path, nargs, args, "softib");
	if (nargs != 1 || (strcmp(cmd, "status") && strcmp(cmd, "stop")))
		goto bad_usage;

	return sib_ctl_tool(path, !strcmp(cmd, "stop"), "softib");

bad_usage:
	fputs("softib: expected a command: status, stop, device, port, capture, fault or ipoib.  "
	      "Try 'softib --help'.\n", stderr);
	return 2;
}
