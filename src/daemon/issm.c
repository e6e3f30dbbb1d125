// SPDX-License-Identifier: MIT
/*
 * ISSM: the file umad_get_issm_path names (docs/umad.md).  On a kernel
 * stack, holding /dev/infiniband/issmN open sets PortInfo:CapabilityMask
 * IsSM (IBA 14.2.5.6) of that port and closing it clears the bit; OpenSM
 * open()s it with libc, which no library can intercept.  softibd creates
 * one FIFO per CA port next to its socket when the path is first asked,
 * watches opens and closes with inotify, and calls the SMA's
 * sib_sma_set_capability() when the first holder comes or the last goes.
 * softibd never opens the FIFOs itself (except to re-probe after an
 * inotify overflow) and never reads or writes them.  Single-threaded.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/softibd.h"
#include "iba/mad.h"

#define ISSM_MAX (SIB_MAX_DEVICES * SIB_MAX_PORTS)

struct issm_ent {
	int wd;                 /* inotify watch, -1 = slot free */
	uint32_t dev_index, gen;
	uint8_t port;
	uint32_t holders;       /* opens not yet closed */
	uint32_t self_events;   /* our own probe's IN_OPEN + IN_CLOSE still to come */
	char path[SIB_MGMT_PATH_MAX];
};

struct sibd_issm {
	int fd;                 /* inotify */
	struct issm_ent ent[ISSM_MAX];
	uint64_t overflows;
};

int sibd_issm_init(struct sibd *d)
{
	struct sibd_issm *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (s->fd < 0) {
		int err = -errno;

		sibd_log("inotify_init1: %s", strerror(errno));
		free(s);
		return err;
	}
	for (int i = 0; i < ISSM_MAX; i++)
		s->ent[i].wd = -1;
	d->issm = s;
	return 0;
}

int sibd_issm_fd(const struct sibd *d)
{
	return d->issm ? d->issm->fd : -1;
}

void sibd_issm_fini(struct sibd *d)
{
	struct sibd_issm *s = d->issm;

	if (!s)
		return;
	for (int i = 0; i < ISSM_MAX; i++)
		if (s->ent[i].wd >= 0)
			unlink(s->ent[i].path);
	close(s->fd);
	free(s);
	d->issm = NULL;
}

/* IsSM follows whether anybody holds the FIFO (the device still present). */
static void apply(struct sibd *d, struct issm_ent *e, bool on)
{
	struct sib_fab_node *n;

	if (!sibd_dev_present(d, e->dev_index) || d->devs[e->dev_index].gen != e->gen)
		return;
	n = d->dev_node[e->dev_index];
	if (n)
		sib_sma_set_capability(d->sn, n, e->port, MAD_PORT_CAP_IS_SM, on);
}

int sibd_issm_ensure(struct sibd *d, uint32_t dev_index, uint8_t port, const char *path)
{
	struct sibd_issm *s = d->issm;
	struct issm_ent *e = NULL;
	struct stat st;
	int wd;

	if (!s)
		return -EIO;
	for (int i = 0; i < ISSM_MAX; i++) {
		struct issm_ent *x = &s->ent[i];

		if (x->wd >= 0 && x->dev_index == dev_index && x->port == port &&
		    x->gen == d->devs[dev_index].gen && !strcmp(x->path, path))
			return 0;
		if (!e && x->wd < 0)
			e = x;
	}
	if (lstat(path, &st) == 0 && !S_ISFIFO(st.st_mode))
		unlink(path); /* not ours any more: replace it */
	if (mkfifo(path, 0600) < 0 && errno != EEXIST)
		return -errno;
	wd = inotify_add_watch(s->fd, path, IN_OPEN | IN_CLOSE | IN_DELETE_SELF | IN_IGNORED);
	if (wd < 0)
		return -errno;
	/* the same file already watched (inotify gives the same wd): that
	 * entry is this one now, so by_wd never finds a stale one first */
	for (int i = 0; i < ISSM_MAX; i++)
		if (s->ent[i].wd == wd)
			e = &s->ent[i];
	if (!e) {
		inotify_rm_watch(s->fd, wd);
		return -ENOSPC;
	}
	memset(e, 0, sizeof(*e));
	e->wd = wd;
	e->dev_index = dev_index;
	e->gen = d->devs[dev_index].gen;
	e->port = port;
	snprintf(e->path, sizeof(e->path), "%s", path);
	return 0;
}

void sibd_issm_device_gone(struct sibd *d, uint32_t dev_index)
{
	struct sibd_issm *s = d->issm;

	if (!s)
		return;
	for (int i = 0; i < ISSM_MAX; i++) {
		struct issm_ent *e = &s->ent[i];

		if (e->wd < 0 || e->dev_index != dev_index)
			continue;
		/* its IN_IGNORED comes later and finds no entry */
		inotify_rm_watch(s->fd, e->wd);
		unlink(e->path);
		e->wd = -1;
	}
}

static struct issm_ent *by_wd(struct sibd_issm *s, int wd)
{
	for (int i = 0; i < ISSM_MAX; i++)
		if (s->ent[i].wd == wd)
			return &s->ent[i];
	return NULL;
}

/* After lost events: is there a reader?  Opening for writing without
 * blocking fails with ENXIO when none (fifo(7)); a successful probe
 * produces an IN_OPEN and an IN_CLOSE_WRITE of our own, to be ignored. */
static void reprobe(struct sibd *d, struct issm_ent *e)
{
	int fd = open(e->path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	bool had = e->holders > 0;

	if (fd >= 0) {
		close(fd);
		e->holders = 1;
		e->self_events = 2;
	} else {
		e->holders = 0;
		e->self_events = 0;
	}
	if (had != (e->holders > 0))
		apply(d, e, e->holders > 0);
}

static void one_event(struct sibd *d, const struct inotify_event *ev)
{
	struct sibd_issm *s = d->issm;
	struct issm_ent *e = by_wd(s, ev->wd);

	if (!e)
		return;
	if (ev->mask & (IN_IGNORED | IN_DELETE_SELF)) {
		if (e->holders)
			apply(d, e, false);
		e->wd = -1; /* removed behind our back: made again on the next query */
		return;
	}
	if (e->self_events && (ev->mask & (IN_OPEN | IN_CLOSE_WRITE))) {
		e->self_events--;
		return;
	}
	if (ev->mask & IN_OPEN) {
		if (e->holders++ == 0)
			apply(d, e, true);
	} else if (ev->mask & IN_CLOSE) {
		if (e->holders && --e->holders == 0)
			apply(d, e, false);
	}
}

void sibd_issm_event(struct sibd *d)
{
	struct sibd_issm *s = d->issm;
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t n;

	for (;;) {
		n = read(s->fd, buf, sizeof(buf));
		if (n <= 0)
			return;
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;

			if (ev->mask & IN_Q_OVERFLOW) {
				s->overflows++;
				for (int i = 0; i < ISSM_MAX; i++)
					if (s->ent[i].wd >= 0)
						reprobe(d, &s->ent[i]);
			} else {
				one_event(d, ev);
			}
			p += sizeof(*ev) + ev->len;
		}
	}
}
