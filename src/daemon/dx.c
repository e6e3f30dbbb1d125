// SPDX-License-Identifier: MIT
/*
 * Direct placement's memfds in softibd (common/sib_ctl.h DX_PUT, DX_GET;
 * docs/transport.md "Direct placement", docs/threat-model.md).  A verbs
 * process maps its export table, in-flight counters and the memfds under
 * its registered pages and closes their fds, so that /proc/<pid>/fd offers
 * none of them to another process of the uid; it gives them to softibd
 * first (PUT), and softibd hands one to a peer (GET) only when the peer
 * has a reason to talk to the owner: it names one of its own RC or XRC
 * QPs and a QPN that softibd gave to the owner's context.  Not IBA: the
 * memory link's broker, standing where the kernel's uverbs keeps a
 * registration's pages from everyone but the HCA.  Each fd kept counts in
 * the owner's "dx_fds" budget (budget.c).  Single-threaded.
 */
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "daemon/softibd.h"

/* One memfd a client gave: a TAB or CNT of the context of `inbox`, or the
 * MR region `id` of the client's process. */
struct sibd_dxfd {
	uint32_t kind;                 /* enum sib_dx_kind */
	uint32_t inbox;                /* TAB, CNT: the owning context's inbox */
	uint32_t id;                   /* MR: the region's number */
	int fd;
};

static struct sibd_dxfd *dx_find(struct sibd_client *c, uint32_t kind, uint32_t inbox, uint32_t id)
{
	for (uint32_t i = 0; i < c->ndx; i++) {
		struct sibd_dxfd *e = &c->dx[i];

		if (e->kind == kind && (kind == SIB_DX_KIND_MR ? e->id == id : e->inbox == inbox))
			return e;
	}
	return NULL;
}

static void dx_remove(struct sibd *d, struct sibd_client *c, struct sibd_dxfd *e)
{
	close(e->fd);
	*e = c->dx[--c->ndx];
	d->dx_fds--;
}

void sibd_dx_release(struct sibd *d, struct sibd_client *c, uint32_t inbox)
{
	for (uint32_t i = 0; i < c->ndx;) {
		struct sibd_dxfd *e = &c->dx[i];

		if (inbox == UINT32_MAX || (e->kind != SIB_DX_KIND_MR && e->inbox == inbox))
			dx_remove(d, c, e); /* the last entry moved to i: look at it */
		else
			i++;
	}
	if (inbox == UINT32_MAX) {
		free(c->dx);
		c->dx = NULL;
		c->dx_cap = 0;
	}
}

/* A memfd sealed against shrinking: what peers can map without a SIGBUS
 * from a file cut under them (they check the size again themselves). */
static bool dx_fd_ok(int fd)
{
	int seals = fcntl(fd, F_GET_SEALS);

	return seals >= 0 && (seals & F_SEAL_SHRINK);
}

/* Take the fd of a PUT from c: a table is reopened read-only (peers map it
 * read-only; one that could write it could forge the owner's entries for
 * the owner's other peers), the rest kept as given.  The fd (c->in_fd is
 * -1 then, or still c's to close) or -errno. */
static int dx_take_fd(struct sibd_client *c, uint32_t kind)
{
	char path[64];
	int fd;

	if (kind != SIB_DX_KIND_TAB) {
		fd = c->in_fd;
		c->in_fd = -1; /* ours now: client_input does not close it */
		return fd;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", c->in_fd);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int sibd_cmd_dx_put(struct sibd *d, struct sibd_client *c, struct sib_ctl_msg *m, int *pass_fd)
{
	const struct sib_ctl_dx *x = &m->u.dx;
	struct sibd_dxfd *e;
	uint32_t inbox = 0;
	int ret, fd;

	(void)pass_fd;
	if (x->kind == 0 || x->kind >= SIB_DX_KIND_MAX || x->drop > 1 ||
	    (x->kind == SIB_DX_KIND_MR && !x->id) || (x->drop && x->kind != SIB_DX_KIND_MR))
		return -EINVAL;
	if (x->kind != SIB_DX_KIND_MR) {
		ret = sibd_dev_inbox(c, x->dev_handle, &inbox);
		if (ret)
			return ret;
	}
	e = dx_find(c, x->kind, inbox, x->id);
	if (x->drop) {
		if (!e)
			return -ENOENT;
		dx_remove(d, c, e);
		return 0;
	}
	if (c->in_fd < 0)
		return -EBADF;
	if (!dx_fd_ok(c->in_fd))
		return -EINVAL;
	if (!e) {
		ret = sibd_budget_take(d, c->proc, SIBD_RES_DX_FD);
		if (ret)
			return ret;
		if (c->ndx == c->dx_cap) {
			uint32_t cap = c->dx_cap ? c->dx_cap * 2 : 8;
			struct sibd_dxfd *n = realloc(c->dx, cap * sizeof(*n));

			if (!n)
				return -ENOMEM;
			c->dx = n;
			c->dx_cap = cap;
		}
	}
	fd = dx_take_fd(c, x->kind);
	if (fd < 0)
		return fd;
	if (e) { /* a new one replaces the old: no fd more */
		close(e->fd);
		e->fd = fd;
		return 0;
	}
	e = &c->dx[c->ndx++];
	e->kind = x->kind;
	e->inbox = inbox;
	e->id = x->kind == SIB_DX_KIND_MR ? x->id : 0;
	e->fd = fd;
	d->dx_fds++;
	return 0;
}

/* Refuse a GET for want of a right: counted, and EPERM. */
static int dx_refuse(struct sibd *d)
{
	d->ctr.dx_refused++;
	return -EPERM;
}

int sibd_cmd_dx_get(struct sibd *d, struct sibd_client *c, struct sib_ctl_msg *m, int *pass_fd)
{
	const struct sib_ctl_dx *x = &m->u.dx;
	uint32_t qp_type, my_inbox, gen;
	struct sibd_client *oc;
	struct sibd_dxfd *e;
	uint64_t ow;

	if (x->kind == 0 || x->kind >= SIB_DX_KIND_MAX || x->inbox >= SIB_MAX_INBOXES)
		return -EINVAL;
	/* The asker's right: one of its own connected QPs (RC, XRC) ... */
	if (sibd_qp_info(c, x->qp_handle, &qp_type, &my_inbox) ||
	    (qp_type != IBV_QPT_RC && qp_type != IBV_QPT_XRC_SEND && qp_type != IBV_QPT_XRC_RECV))
		return dx_refuse(d);
	gen = sibd_inbox_gen(d, x->inbox);
	oc = d->inbox[x->inbox].owner;
	if (d->inbox[x->inbox].fd < 0 || !(gen & 1) || gen != x->inbox_gen || !oc)
		return -ESTALE;
	/* ... and a QPN we gave to the owner's context (our own record of it:
	 * the map is written by softibd only). */
	if (x->qpn >= SIB_MAX_QPN)
		return dx_refuse(d);
	ow = __atomic_load_n(&d->shm->qp_owner[x->qpn], __ATOMIC_RELAXED);
	if (!(ow & SIB_QPO_VALID) || SIB_QPO_INBOX(ow) != x->inbox || SIB_QPO_GEN(ow) != gen ||
	    !(d->qpn_bits[x->qpn / 64] & (1ull << (x->qpn % 64))))
		return dx_refuse(d);
	e = dx_find(oc, x->kind, x->inbox, x->id);
	if (!e)
		return -ENOENT;
	d->ctr.dx_given++;
	*pass_fd = e->fd;
	return 0;
}
