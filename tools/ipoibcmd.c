// SPDX-License-Identifier: MIT
/*
 * `softib ipoib DEV PORT up --tun NAME [--addr A.B.C.D/P] [--mode connected|datagram]
 * [--daemon]` and
 * `softib ipoib DEV PORT down` (docs/ipoib.md): the argument parsing; the
 * bridge itself is src/ipoib (a ULP on the public verbs and umad APIs).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ipoib/ipoib.h"
#include "ipoibcmd.h"

static int usage(void)
{
	fputs("softib ipoib: usage: softib ipoib DEV PORT up --tun NAME [--addr A.B.C.D/P] "
	      "[--mode datagram|connected] [--daemon] [--wait SECONDS]\n"
	      "                    softib ipoib DEV PORT down\n"
	      "                    softib ipoib DEV PORT add|del ADDR[/PREFIX]\n"
	      "                    softib ipoib DEV PORT addrs\n"
	      "  --mode datagram   RFC 4391 over the UD QP, MTU 2044 (the default, as the kernel's)\n"
	      "  --mode connected  RFC 4755: RC connections through the CM to neighbours that\n"
	      "                    support them, MTU 65520; UD for the others and multicast\n",
	      stderr);
	return 2;
}

int sib_tool_ipoib(const char *path, int argc, char **argv)
{
	struct sib_ipoib_opts o = { .wait_ms = 10000 };
	char *end;
	long port;

	if (argc < 3)
		return usage();
	if (path)
		setenv("SOFTIB_SOCKET", path, 1);
	o.dev = argv[0];
	port = strtol(argv[1], &end, 10);
	if (*end || port < 1 || port > 254)
		return usage();
	o.port = (int)port;
	if (!strcmp(argv[2], "down"))
		return argc == 3 ? sib_ipoib_down(o.dev, o.port) : usage();
	if (strcmp(argv[2], "up"))
		return usage();
	for (int i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "--tun") && i + 1 < argc)
			o.tun = argv[++i];
		else if (!strcmp(argv[i], "--addr") && i + 1 < argc)
			o.addr = argv[++i];
		else if (!strcmp(argv[i], "--wait") && i + 1 < argc)
			o.wait_ms = atoi(argv[++i]) * 1000;
		else if (!strcmp(argv[i], "--mode") && i + 1 < argc && !strcmp(argv[i + 1], "connected"))
			o.connected = true, i++;
		else if (!strcmp(argv[i], "--mode") && i + 1 < argc && !strcmp(argv[i + 1], "datagram"))
			o.connected = false, i++;
		else if (!strcmp(argv[i], "--daemon"))
			o.daemon = true;
		else
			return usage();
	}
	if (!o.tun || strlen(o.tun) >= 16)
		return usage();
	return sib_ipoib_up(&o);
}
