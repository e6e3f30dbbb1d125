// SPDX-License-Identifier: MIT
/*
 * The softib command: talks to a running softibd over its control socket
 * (status, stop).  Never starts a daemon: asking a stopped daemon for its
 * status must not start one.  Single-threaded; no state beyond one socket.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/ctl.h"

static const char usage[] =
"Usage: softib [--socket PATH] COMMAND\n"
"Talk to the softib fabric daemon (softibd).\n"
"\n"
"Commands:\n"
"  status          print the daemon's status report: devices, ports, clients,\n"
"                  object counts and counters (docs/daemon.md)\n"
"  stop            stop the daemon; returns once it has closed its socket\n"
"\n"
"Options:\n"
"  -s, --socket PATH  control socket (default: $SOFTIB_SOCKET, else\n"
"                     $XDG_RUNTIME_DIR/softib.sock, else\n"
"                     /tmp/softib-<uid>/softib.sock)\n"
"  -h, --help         show this help\n"
"\n"
"Exit status: 0 on success, 1 on errors or if softibd is not running,\n"
"2 on usage errors.\n";

static int connect_daemon(const char *path)
{
	char def[sizeof(((struct sockaddr_un *)0)->sun_path)];
	int fd;

	fd = path ? sib_ctl_connect(path) : sib_ctl_open(false);
	if (fd >= 0)
		return fd;
	if (!path && !sib_ctl_default_path(def, sizeof(def)))
		path = def;
	if (fd == -ENOENT || fd == -ECONNREFUSED)
		fprintf(stderr, "softibd is not running (no daemon on %s)\n", path ? path : "?");
	else
		fprintf(stderr, "softib: connect %s: %s\n", path ? path : "?", strerror(-fd));
	return -1;
}

int main(int argc, char **argv)
{
	const char *path = NULL, *cmd = NULL;
	char *text;
	int i, fd, ret;

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
		} else if (!cmd && argv[i][0] != '-') {
			cmd = argv[i];
		} else {
			goto bad_usage;
		}
	}
	if (!cmd || (strcmp(cmd, "status") && strcmp(cmd, "stop")))
		goto bad_usage;

	fd = connect_daemon(path);
	if (fd < 0)
		return 1;
	if (!strcmp(cmd, "status")) {
		ret = sib_ctl_status(fd, &text);
		if (!ret) {
			fputs(text, stdout);
			free(text);
		}
	} else {
		ret = sib_ctl_stop(fd);
	}
	close(fd);
	if (ret) {
		fprintf(stderr, "softib %s: %s\n", cmd, strerror(-ret));
		return 1;
	}
	return 0;

bad_usage:
	fputs("softib: expected a command: status or stop.  Try 'softib --help'.\n", stderr);
	return 2;
}
