// SPDX-License-Identifier: MIT
/*
 * XRC domains of softibd (ibv_open_xrcd(3); the XRC annex of IBA vol 1):
 * the daemon's table of domains per device, as the kernel's per-device
 * xrcd tree keyed by inode.  A domain opened on a file is identified by
 * the st_dev and st_ino of the fd the client passed (never by numbers the
 * client states), so every process that opens the same file gets the same
 * domain number; fd -1 makes a private one.  Each opener's handle holds
 * one reference, and so does each XRC_RECV QP created in it (client.c);
 * the last one (closed, or dropped with its process or device) frees the
 * domain.  A file domain keeps a duplicate of the fd,
 * as the kernel holds the inode: the inode number cannot be reused by
 * another file while the domain lives.  The fd is hostile: statx with
 * AT_STATX_DONT_SYNC (a FUSE file cannot block the event loop on a
 * GETATTR) and no O_PATH fds (the kernel refuses those too: EBADF).
 * Single-threaded (the event loop).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/softibd.h"

#define SIBD_MAX_XRCDS 4096 /* domains alive at once, all devices */

struct sibd_xrcd {
	struct sibd_xrcd *next;
	uint32_t dev_index;
	uint32_t num;                  /* never 0 */
	uint32_t refs;                 /* opener handles */
	bool file;                     /* keyed by (dev, ino) */
	int fd;                        /* file domains: holds the inode */
	uint64_t dev;                  /* statx dev_major << 32 | dev_minor */
	uint64_t ino;
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
	struct statx st;
	uint64_t dev = 0;
	unsigned int n = 0;
	int fl;

	if (fd >= 0) {
		fl = fcntl(fd, F_GETFL);
		if (fl < 0 || (fl & O_PATH) ||
		    statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_INO, &st))
			return -EBADF;
		dev = (uint64_t)st.stx_dev_major << 32 | st.stx_dev_minor;
		for (x = d->xrcds; x; x = x->next)
			if (x->dev_index == dev_index && x->file && x->dev == dev && x->ino == st.stx_ino)
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
	x->fd = -1;
	if (fd >= 0 && (x->fd = fcntl(fd, F_DUPFD_CLOEXEC, 3)) < 0) {
		free(x);
		return -ENFILE; /* out of fds after all (budget.c counts them first) */
	}
	d->xrcd_files += x->fd >= 0;
	do /* fewer than SIBD_MAX_XRCDS are taken: this ends */
		d->xrcd_next++;
	while (!d->xrcd_next || find_num(d, dev_index, d->xrcd_next));
	x->dev_index = dev_index;
	x->num = d->xrcd_next;
	x->refs = 1;
	x->file = fd >= 0;
	if (x->file) {
		x->dev = dev;
		x->ino = st.stx_ino;
	}
	x->next = d->xrcds;
	d->xrcds = x;
	*num = x->num;
	return 0;
}

void sibd_xrcd_hold(struct sibd *d, uint32_t dev_index, uint32_t num)
{
	struct sibd_xrcd *x = find_num(d, dev_index, num);

	if (!x)
		abort(); /* a bug in softibd: callers name a domain they hold */
	x->refs++;
}

void sibd_xrcd_put(struct sibd *d, uint32_t dev_index, uint32_t num)
{
	for (struct sibd_xrcd **pp = &d->xrcds; *pp; pp = &(*pp)->next) {
		struct sibd_xrcd *x = *pp;

		if (x->dev_index != dev_index || x->num != num)
			continue;
		if (--x->refs == 0) {
			*pp = x->next;
			if (x->fd >= 0) {
				close(x->fd);
				d->xrcd_files--;
			}
			free(x);
		}
		return;
	}
}
