/* SPDX-License-Identifier: MIT */
/* status_text.h: `softib status` of the test's private softibd. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/ctl.h"
#include "common/sib_ctl.h"
#include "daemon_fixture.h"
#include "status_text.h"

char *status_text(void)
{
	int fd = sib_ctl_connect(daemon_socket());
	char *text = NULL;

	assert_true(fd >= 0);
	assert_int_equal(sib_ctl_status(fd, &text), 0);
	close(fd);
	return text;
}

long field(const char *text, const char *prefix, const char *key)
{
	const char *l = strstr(text, prefix), *k, *nl;
	char pat[64];

	if (!l)
		return -1;
	nl = strchr(l, '\n');
	snprintf(pat, sizeof(pat), " %s=", key);
	k = strstr(l, pat);
	if (!k || (nl && k > nl))
		return -1;
	return strtol(k + strlen(pat), NULL, 10);
}


int hello_conn(void)
{
	struct timeval tv = { .tv_sec = 10 };
	struct sib_ctl_msg m = { .hdr.op = SIB_CTL_HELLO };
	int fd = sib_ctl_connect(daemon_socket()), mfd = -1;

	assert_true(fd >= 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	m.u.hello.abi_version = SIB_ABI_VERSION;
	m.u.hello.pid = getpid();
	assert_int_equal(sib_ctl_call(fd, &m, &mfd), 0);
	assert_int_equal(m.hdr.status, 0);
	if (mfd >= 0)
		close(mfd);
	return fd;
}
