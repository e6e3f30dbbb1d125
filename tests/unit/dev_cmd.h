/* SPDX-License-Identifier: MIT */
/*
 * The admin commands naming a device (SIB_CTL_DEVICE_ADD, _DEVICE_REMOVE),
 * for the unit tests that add and remove devices under a private softibd
 * (test_mai_chan, test_umad).  Header-only: those tests link different
 * fixtures.
 */
#ifndef SIB_TESTS_DEV_CMD_H
#define SIB_TESTS_DEV_CMD_H

#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "common/ctl.h"

/* op on device `name` of the softibd at sock: 0, the call's -errno, or
 * -hdr.status. */
static inline int dev_cmd_at(const char *sock, uint16_t op, const char *name)
{
	struct sib_ctl_msg msg = { .hdr.op = op };
	int fd = sib_ctl_connect(sock), ret;

	if (fd < 0)
		return fd;
	snprintf(msg.u.dev.name, sizeof(msg.u.dev.name), "%s", name);
	ret = sib_ctl_call(fd, &msg, NULL);
	close(fd);
	return ret ? ret : -msg.hdr.status;
}

#endif
