// SPDX-License-Identifier: MIT
/*
 * `softib device add|remove NAME`, `softib port DEV PORT down|up|lid|smlid`: the
 * device registry commands of softibd (docs/events.md); `softib ipoib DEV
 * PORT add|del ADDR[/PREFIX]` and `addrs`: a CA port's IP addresses in
 * softibd's rdma_cm table (IPADDR, docs/rdmacm.md "Addresses").  One request and
 * one reply on a fresh connection; never starts a daemon.  Single-threaded.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/ctl.h"
#include "softib_dev.h"

#define REPLY_TIMEOUT_S 10

/* What an errno means for each command, where strerror() would mislead. */
static const char *why(uint16_t op, int err)
{
	switch (err) {
	case EEXIST: return "a device of that name exists";
	case ENODEV: return "no such device";
	case ENOSPC: return op == SIB_CTL_DEVICE_ADD ?
			    "no free switch port, device slot, GUID or LID" : strerror(err);
	case ENOLINK: return "the port has no link";
	case EADDRINUSE: return "another port has that LID";
	case EINVAL: return op == SIB_CTL_PORT_SET ? "bad device name or port number" :
			    "bad device name (1-63 of A-Z a-z 0-9 _ - .)";
	default: return strerror(err);
	}
}

/* Send m to the daemon on path (NULL: the default socket).  0, or 1 with a message. */
static int run(const char *path, struct sib_ctl_msg *m, const char *prog)
{
	struct timeval tv = { .tv_sec = REPLY_TIMEOUT_S };
	uint16_t op = m->hdr.op;
	int fd, ret;

	fd = sib_ctl_tool_connect(path, prog);
	if (fd < 0)
		return 1;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	ret = sib_ctl_call(fd, m, NULL);
	close(fd);
	if (ret) {
		fprintf(stderr, "%s: %s\n", prog, strerror(-ret));
		return 1;
	}
	if (m->hdr.status) {
		fprintf(stderr, "%s: %s: %s\n", prog, m->u.dev.name, why(op, m->hdr.status));
		return 1;
	}
	return 0;
}

static int set_name(struct sib_ctl_msg *m, const char *name, const char *prog)
{
	if (strlen(name) >= sizeof(m->u.dev.name)) {
		fprintf(stderr, "%s: device name too long: %s\n", prog, name);
		return -1;
	}
	strcpy(m->u.dev.name, name);
	return 0;
}

/* A decimal number in [min, max] into *out.  0, or -1 with a message. */
static int number(const char *s, long min, long max, uint32_t *out, const char *what,
		  const char *prog)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 0);
	if (errno || end == s || *end || v < min || v > max) {
		fprintf(stderr, "%s: not a %s: %s\n", prog, what, s);
		return -1;
	}
	*out = (uint32_t)v;
	return 0;
}

int sib_tool_admin(const char *path, int argc, const char *const *argv, const char *prog)
{
	struct sib_ctl_msg m;

	memset(&m, 0, sizeof(m));
	if (argc == 3 && !strcmp(argv[0], "device") &&
	    (!strcmp(argv[1], "add") || !strcmp(argv[1], "remove"))) {
		m.hdr.op = argv[1][0] == 'a' ? SIB_CTL_DEVICE_ADD : SIB_CTL_DEVICE_REMOVE;
		if (set_name(&m, argv[2], prog))
			return 2;
		if (run(path, &m, prog))
			return 1;
		if (m.hdr.op == SIB_CTL_DEVICE_ADD)
			printf("%s added (device index %u)\n", m.u.dev.name, m.u.dev.dev_index);
		return 0;
	}
	if ((argc == 4 || argc == 5) && !strcmp(argv[0], "port")) {
		if (argc == 4 && !strcmp(argv[3], "down"))
			m.u.dev.action = SIB_PORT_DOWN;
		else if (argc == 4 && !strcmp(argv[3], "up"))
			m.u.dev.action = SIB_PORT_UP;
		else if (argc == 5 && !strcmp(argv[3], "lid"))
			m.u.dev.action = SIB_PORT_LID;
		else if (argc == 5 && !strcmp(argv[3], "smlid"))
			m.u.dev.action = SIB_PORT_SM_LID;
		else
			goto usage;
		if (number(argv[2], 1, 254, &m.u.dev.port_num, "port number", prog) ||
		    (argc == 5 && number(argv[4], 1, 0xbfff, &m.u.dev.value, "unicast LID", prog)))
			return 2;
		m.hdr.op = SIB_CTL_PORT_SET;
		if (set_name(&m, argv[1], prog))
			return 2;
		return run(path, &m, prog);
	}
usage:
	fprintf(stderr, "%s: expected 'device add|remove NAME' or"
		" 'port DEV PORT down|up|lid LID|smlid LID'."
		"  Try '%s --help'.\n", prog, prog);
	return 2;
}

/* What IPADDR's errno means, as `ip addr` says it. */
static const char *ipaddr_why(uint32_t op, int err)
{
	switch (err) {
	case EEXIST: return "address already assigned (to this or another port)";
	case EADDRNOTAVAIL: return "the port has no such address";
	case EPERM: return "a default address (127.1.d.p, the GID's) cannot be deleted";
	case ENODEV: return "no such device";
	case ENOSPC: return "softibd's address table is full";
	case EINVAL: return op == SIB_IPADDR_GET ? "bad port number" :
			    "bad port number, address or prefix length";
	default: return strerror(err);
	}
}

int sib_tool_ipaddr(const char *path, int argc, char *const *argv, const char *prog)
{
	struct sib_ctl_ipaddr ia;
	char text[INET6_ADDRSTRLEN];
	int ret;

	memset(&ia, 0, sizeof(ia));
	if (argc < 3 || strlen(argv[0]) >= sizeof(ia.dev) ||
	    number(argv[1], 1, 254, &ia.port, "port number", prog))
		goto usage;
	strcpy(ia.dev, argv[0]);
	if (argc == 3 && !strcmp(argv[2], "addrs")) {
		ia.op = SIB_IPADDR_GET;
		for (ia.index = 0;; ia.index++) {
			uint32_t index = ia.index;

			ret = sib_ctl_ipaddr_call(path, &ia, prog);
			if (ret == ENOENT)
				return 0;
			if (ret)
				goto failed;
			inet_ntop(ia.family, ia.addr, text, sizeof(text));
			printf("%s/%u\n", text, ia.prefix);
			ia.index = index;
		}
	}
	if (argc != 4 || (strcmp(argv[2], "add") && strcmp(argv[2], "del")))
		goto usage;
	ia.op = argv[2][0] == 'a' ? SIB_IPADDR_ADD : SIB_IPADDR_DEL;
	if (sib_ctl_ipaddr_parse(argv[3], ia.op == SIB_IPADDR_DEL, &ia)) {
		fprintf(stderr, "%s: not an address[/prefix length]: %s\n", prog, argv[3]);
		return 2;
	}
	ret = sib_ctl_ipaddr_call(path, &ia, prog);
	if (!ret)
		return 0;
failed:
	if (ret > 0)
		fprintf(stderr, "%s: %s port %u: %s\n", prog, ia.dev, ia.port, ipaddr_why(ia.op, ret));
	return 1;
usage:
	fprintf(stderr, "%s: expected 'ipoib DEV PORT add|del ADDR[/PREFIX]' or "
		"'ipoib DEV PORT addrs'.  Try '%s --help'.\n", prog, prog);
	return 2;
}
