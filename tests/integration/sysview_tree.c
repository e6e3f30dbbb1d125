// SPDX-License-Identifier: MIT
/*
 * sysview_tree ROOT [DEV:PORT:IFNAME]...: keep softib's system view
 * (src/sysview) live under ROOT until SIGTERM or SIGINT, then remove it.
 * Prints "ready" on stdout once the tree is written; refreshes on every
 * async event and once a second.  For tests/integration/sysview.sh, which
 * points system tools at the tree; `softib run` is the user's way.
 * Exit 0, or 1 with the reason on stderr.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sysview/sysview.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct sib_sysview *v;

	if (argc < 2) {
		fprintf(stderr, "usage: sysview_tree ROOT [DEV:PORT:IFNAME]...\n");
		return 1;
	}
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	v = sib_sysview_create(argv[1]);
	if (!v) {
		fprintf(stderr, "sysview_tree: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	for (int i = 2; i < argc; i++) {
		char dev[64], ifname[32];
		unsigned port;
		int rc;

		if (sscanf(argv[i], "%63[^:]:%u:%31s", dev, &port, ifname) != 3 || port > 255) {
			fprintf(stderr, "sysview_tree: bad netdev '%s'\n", argv[i]);
			sib_sysview_destroy(v, true);
			return 1;
		}
		rc = sib_sysview_set_netdev(v, dev, (uint8_t)port, ifname);
		if (rc) {
			fprintf(stderr, "sysview_tree: %s: %s\n", argv[i], strerror(-rc));
			sib_sysview_destroy(v, true);
			return 1;
		}
	}
	printf("ready\n");
	fflush(stdout);
	while (!stop) {
		struct pollfd p = { .fd = sib_sysview_fd(v), .events = POLLIN };
		int rc;

		poll(&p, 1, 1000);
		rc = sib_sysview_refresh(v);
		if (rc)
			fprintf(stderr, "sysview_tree: refresh: %s\n", strerror(-rc));
	}
	sib_sysview_destroy(v, true);
	return 0;
}
