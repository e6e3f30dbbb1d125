/* SPDX-License-Identifier: MIT */
/*
 * A private softibd per test program (daemon_fixture.h): the one fixture of
 * the tests through the built library.  SOFTIBD_PATH comes from CMake.
 * Test code only: no locking.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "daemon_fixture.h"

#define TMPDIR_TEMPLATE "/tmp/softib-test.XXXXXX"
#define MAX_EXTRA 8

static char tmpdir[64];
static char sock[128];
static pid_t daemon_pid;
static const char *extra[MAX_EXTRA + 1];
static unsigned long extra_nofile;

void daemon_options(const char *const *args, unsigned long nofile)
{
	int i = 0;

	for (; args && args[i] && i < MAX_EXTRA; i++)
		extra[i] = args[i];
	extra[i] = NULL;
	extra_nofile = nofile;
}

/* The child: softibd on sock with the options, under the fd limit. */
static void exec_daemon(void)
{
	const char *argv[8 + MAX_EXTRA] = {
		"softibd", "--foreground", "--idle-exit", "30", "--socket", sock,
	};
	struct rlimit rl = { extra_nofile, extra_nofile };
	int null = open("/dev/null", O_WRONLY), n = 6;

	dup2(null, 1);
	dup2(null, 2);
	for (int i = 0; extra[i]; i++)
		argv[n++] = extra[i];
	argv[n] = NULL;
	if (extra_nofile && setrlimit(RLIMIT_NOFILE, &rl))
		_exit(126);
	execv(SOFTIBD_PATH, (char *const *)argv);
	_exit(127);
}

uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

const char *daemon_socket(void)
{
	return sock;
}

int daemon_process(void)
{
	return (int)daemon_pid;
}

int start_daemon(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "%s", TMPDIR_TEMPLATE);
	if (!mkdtemp(tmpdir))
		return -1;
	snprintf(sock, sizeof(sock), "%s/softib.sock", tmpdir);
	setenv("SOFTIB_SOCKET", sock, 1);
	setenv("SOFTIB_NO_AUTOSTART", "1", 1);
	daemon_pid = fork();
	if (daemon_pid == 0)
		exec_daemon();
	for (int i = 0; i < 200; i++) {
		struct stat st;

		if (stat(sock, &st) == 0)
			return 0;
		usleep(25000);
	}
	return -1;
}

int stop_daemon(void **state)
{
	char path[160];
	int st;

	(void)state;
	if (daemon_pid > 0) {
		kill(daemon_pid, SIGTERM);
		for (int i = 0; i < 100 && waitpid(daemon_pid, &st, WNOHANG) == 0; i++)
			usleep(50000);
		kill(daemon_pid, SIGKILL);
		waitpid(daemon_pid, &st, 0);
		daemon_pid = 0;
	}
	unlink(sock);
	snprintf(path, sizeof(path), "%s.lock", sock);
	unlink(path);
	rmdir(tmpdir);
	return 0;
}
