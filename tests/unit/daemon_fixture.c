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
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "daemon_fixture.h"

static char tmpdir[64] = "/tmp/softib-test.XXXXXX";
static char sock[128];
static pid_t daemon_pid;

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
	if (!mkdtemp(tmpdir))
		return -1;
	snprintf(sock, sizeof(sock), "%s/softib.sock", tmpdir);
	setenv("SOFTIB_SOCKET", sock, 1);
	setenv("SOFTIB_NO_AUTOSTART", "1", 1);
	daemon_pid = fork();
	if (daemon_pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(null, 1);
		dup2(null, 2);
		execl(SOFTIBD_PATH, "softibd", "--foreground", "--idle-exit", "30", "--socket", sock,
		      (char *)NULL);
		_exit(127);
	}
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
	}
	unlink(sock);
	snprintf(path, sizeof(path), "%s.lock", sock);
	unlink(path);
	rmdir(tmpdir);
	return 0;
}
