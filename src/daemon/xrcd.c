// SPDX-License-Identifier: MIT
/*
 * XRC domains of softibd (ibv_open_xrcd(3); the XRC annex of IBA vol 1):
 * the daemon's table of domains per device, as the kernel's per-device
 * xrcd tree keyed by inode.  A domain opened on a file is identified by
 * the st_dev and st_ino of the fd the client passed (never by numbers the
 * client states), so every process that opens the same file gets the same
 * domain number; fd -1 makes a private one.  Each opener's handle holds
 * one reference; the last one (closed, or dropped with its process or
 * device) frees the domain.  Single-threaded (the event loop).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "daemon/softibd.h"

#define SIBD_MAX_XRCDS 4096 /* domains alive at once, all devices */

struct sibd_xrcd {
	struct sibd_xrcd *next;
	uint32_t dev_index;
	uint32_t num;                  /* never 0 */
	uint32_t refs;                 /* opener handles */
	bool file;                     /* keyed by (dev, ino) */
	dev_t dev;
	ino_t ino;
};

static struct sibd_xrcd *find_num(struct sibd *d, uint32_t dev_index, uint32_t num)
{
	for (struct sibd_xrcd *x = d->xrcds; x; x = x->next)
		if (x->dev_index == dev_index && x->num == num)
			return x;
	return NULL;
}

int sibd_xrcd_open(struct sibd *d, uint32_t dev_index, int fd, uint32_t oflags, uint32_t *num)
{
	struct sibd_xrcd *x;
	struct stat st;
	unsigned int n = 0;

	if (fd >= 0) {
		if (fstat(fd, &st))
			return -EBADF;
		for (x = d->xrcds; x; x = x->next)
			if (x->dev_index == dev_index && x->file && x->dev == st.st_dev && x->ino == st.st_ino)
				break;
		if (x && (oflags & O_EXCL))
			return -EINVAL;
		if (x) {
			x->refs++;
			*num = x->num;
			return 0;
		}
		if (!(oflags & O_CREAT))
			return -EAGAIN;
	}
	for (x = d->xrcds; x; x = x->next)
		n++;
	if (n >= SIBD_MAX_XRCDS)
		return -ENOSPC;
	x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	do /* fewer than SIBD_MAX_XRCDS are taken: this ends */
		d->xrcd_next++;
	while (!d->xrcd_next || find_num(d, dev_index, d->xrcd_next));
	x->dev_index = dev_index;
	x->num = d->xrcd_next;
	x->refs = 1;
	x->file = fd >= 0;
	if (x->file) {
		x->dev = st.st_dev;
		x->ino = st.st_ino;
	}
	x->next = d->xrcds;
	d->xrcds = x;
	*num = x->num;
	return 0;
}

void sibd_xrcd_put(struct sibd *d, uint32_t dev_index, uint32_t num)
{
	for (struct sibd_xrcd **pp = &d->xrcds; *pp; pp = &(*pp)->next) {
		struct sibd_xrcd *x = *pp;

		if (x->dev_index != dev_index || x->num != num)
			continue;
		if (--x->refs == 0) {
			*pp = x->next;
			free(x);
		}
		return;
	}
}
