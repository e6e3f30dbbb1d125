/* SPDX-License-Identifier: MIT */
/*
 * IPoIB interfaces (docs/ipoib.md): `softib ipoib DEV PORT up|down` as the
 * tool calls it.  up bridges a TUN interface (IFF_TUN|IFF_NO_PI, address,
 * MTU and link state set through libnl-route-3) to the port's IPoIB endpoint
 * (ep.h) until SIGINT/SIGTERM or `down`; a pid file in softib's runtime dir
 * names the running bridge.
 */
#ifndef SOFTIB_IPOIB_IPOIB_H
#define SOFTIB_IPOIB_IPOIB_H

#include <stdbool.h>

struct sib_ipoib_opts {
	const char *dev;	/* CA name, e.g. softib0 */
	int port;		/* 1.. */
	const char *tun;	/* interface name, e.g. ib0 */
	const char *addr;	/* A.B.C.D/P, or NULL */
	bool daemon;		/* detach once up */
	int wait_ms;		/* for the port to be ACTIVE */
	bool connected;		/* --mode connected (RFC 4755); default datagram */
};

/* Bring the interface up and run the bridge: returns the exit status (0 after
 * a clean stop; 1 on errors, with a message on stderr; without CAP_NET_ADMIN
 * in the network namespace a message saying so, 1). */
int sib_ipoib_up(const struct sib_ipoib_opts *o);
/* Stop the bridge of dev/port named by its pid file (SIGTERM, waiting up to
 * 10 s): 0, or 1 with a message (none running, did not stop). */
int sib_ipoib_down(const char *dev, int port);

#endif
