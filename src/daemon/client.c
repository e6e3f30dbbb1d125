// SPDX-License-Identifier: MIT
/*
 * Per-connection contexts of softibd: command dispatch, the handle table of
 * each connection, and the release of everything a connection held when it
 * closes, however its process ended (seed 003, "Resource management").
 * Single-threaded (the event loop).  A client's bytes are never trusted:
 * every field is range-checked before use, and no reply blocks the loop.
 */
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "common/ctl.h"
#include "daemon/linkcfg.h"
#include "daemon/mai_chan.h"
#include "daemon/softibd.h"
#include "daemon/ucma.h"

#define INPUT_BURST 32 /* messages per wakeup, for fairness between clients */
#define REPLIED     SIBD_REPLIED

struct sibd_obj {
	uint8_t type;          /* SIB_OBJ_*, or SIBD_OBJ_DEVICE */
	uint32_t dev_index;
	uint32_t dev_handle;   /* objects: the device they were created under */
	uint32_t inbox;        /* devices */
	uint32_t nchild;       /* devices: objects created under it */
	uint32_t qpn;          /* QPs */
	uint32_t qp_type;      /* QPs: enum ibv_qp_type */
	uint32_t xrcd;         /* XRCDs, XRC_RECV QPs: the domain's number, held (xrcd.c) */
	bool gone;             /* devices: unregistered; its objects are released */
	bool file;             /* XRCDs: opened on a file (counts in c->xrcd_files) */
};

/* A reply the socket did not take yet; fd is our own dup, or -1. */
/* A queued message: only the sib_ctl_msg_len() bytes that go out (an event
 * is ~100 bytes, not the 3 KiB of the union), so that a subscriber that
 * never reads pins little memory in softibd. */
struct sibd_out {
	struct sibd_out *next;
	int fd;
	size_t len;
	_Alignas(struct sib_ctl_msg) unsigned char bytes[];
};

typedef int (*sibd_cmd_fn)(struct sibd *d, struct sibd_client *c, struct sib_ctl_msg *m,
			   int *pass_fd);

/* ---- output ------------------------------------------------------------- */

/* Input while the socket takes our replies, output only once it stopped. */
static void client_arm(struct sibd *d, struct sibd_client *c)
{
	struct epoll_event ev = {
		.events = c->out_head ? EPOLLOUT : EPOLLIN,
		.data.ptr = c,
	};

	if (epoll_ctl(d->ep_fd, EPOLL_CTL_MOD, c->fd, &ev) < 0) {
		sibd_log("client pid %d: epoll_ctl: %s", (int)c->pid, strerror(errno));
		c->dead = true;
	}
}

/* Send a reply now, or queue it behind the ones the socket did not take. */
static void client_reply(struct sibd *d, struct sibd_client *c, const struct sib_ctl_msg *m,
			 int pass_fd)
{
	struct sibd_out *o;
	int ret;

	if (c->dead)
		return;
	if (!c->out_head) {
		ret = sib_ctl_send(c->fd, m, pass_fd);
		if (ret != -EAGAIN) {
			if (ret) /* EPIPE, ECONNRESET: the client is gone */
				c->dead = true;
			return;
		}
	}
	size_t len = sib_ctl_msg_len(m);

	o = malloc(sizeof(*o) + len);
	if (!o) {
		sibd_log("client pid %d: reply queue: %s", (int)c->pid, strerror(ENOMEM));
		c->dead = true;
		return;
	}
	o->next = NULL;
	o->len = len;
	memcpy(o->bytes, m, len);
	o->fd = pass_fd >= 0 ? fcntl(pass_fd, F_DUPFD_CLOEXEC, 0) : -1;
	if (pass_fd >= 0 && o->fd < 0) {
		sibd_log("client pid %d: dup: %s", (int)c->pid, strerror(errno));
		free(o);
		c->dead = true;
		return;
	}
	c->out_len++;
	if (c->out_tail)
		c->out_tail->next = o;
	else
		c->out_head = o;
	c->out_tail = o;
	if (o == c->out_head)
		client_arm(d, c);
}

void sibd_client_send(struct sibd *d, struct sibd_client *c, const struct sib_ctl_msg *m,
		      int pass_fd)
{
	client_reply(d, c, m, pass_fd);
}

static void out_pop(struct sibd_client *c)
{
	struct sibd_out *o = c->out_head;

	c->out_head = o->next;
	c->out_len--;
	if (!c->out_head)
		c->out_tail = NULL;
	if (o->fd >= 0)
		close(o->fd);
	free(o);
}

static void client_flush(struct sibd *d, struct sibd_client *c)
{
	int ret;

	while (c->out_head && !c->dead) {
		/* sib_ctl_send reads no further than sib_ctl_msg_len() bytes */
		ret = sib_ctl_send(c->fd, (const struct sib_ctl_msg *)c->out_head->bytes,
				   c->out_head->fd);
		if (ret == -EAGAIN)
			return;
		if (ret)
			c->dead = true;
		else
			out_pop(c);
	}
	if (!c->dead && !c->out_head)
		sibd_event_drained(d, c); /* a marker of the last events lost */
	if (!c->dead)
		client_arm(d, c);
}

/* ---- objects ------------------------------------------------------------ */

static struct sibd_obj *lookup(struct sibd_client *c, uint32_t handle, bool device)
{
	struct sibd_obj *o = sib_ht_lookup(&c->ht, handle);

	if (!o || (o->type == SIBD_OBJ_DEVICE) != device)
		return NULL;
	return o;
}

static void obj_destroy(struct sibd *d, struct sibd_client *c, uint32_t handle)
{
	struct sibd_obj *o = sib_ht_remove(&c->ht, handle), *dev;

	if (o->type == SIB_OBJ_QP) {
		sibd_mcast_qp_gone(d, c, handle);
		sibd_qpn_free(d, o->qpn);
	}
	if (o->xrcd) /* an XRCD handle, or an XRC_RECV QP's hold on its domain */
		sibd_xrcd_put(d, o->dev_index, o->xrcd);
	c->xrcd_files -= o->file;
	dev = sib_ht_lookup(&c->ht, o->dev_handle);
	dev->nchild--;
	c->count[o->type]--;
	free(o);
}

/* Close a device: first the objects under it, then its inbox. */
static void dev_close(struct sibd *d, struct sibd_client *c, uint32_t handle)
{
	struct sibd_obj *dev = sib_ht_lookup(&c->ht, handle), *o;
	uint32_t pos = 0, h;

	while (dev->nchild && (o = sib_ht_next(&c->ht, &pos, &h)))
		if (o->type != SIBD_OBJ_DEVICE && o->dev_handle == handle)
			obj_destroy(d, c, h);
	sib_ht_remove(&c->ht, handle);
	if (!dev->gone) {
		sibd_dx_release(d, c, dev->inbox); /* its direct placement memfds (dx.c) */
		sibd_inbox_free(d, dev->inbox);
		c->inboxes--;
	}
	c->count[SIBD_OBJ_DEVICE]--;
	free(dev);
}

/* ---- commands ----------------------------------------------------------- */

static int cmd_hello(struct sibd *d, struct sibd_client *c, struct sib_ctl_msg *m, int *pass_fd)
{
	struct sib_ctl_hello *h = &m->u.hello;

	if (h->abi_version != SIB_ABI_VERSION) {
		h->abi_version = SIB_ABI_VERSION;
		return -EPROTO;
	}
	c->hello = true;
	h->fabric_size = (uint32_t)d->shm_size;
	h->num_devices = d->num_devices;
	*pass_fd = d->shm_fd;
	return 0;
}

static int cmd_open_device(struct sibd *d, struct sibd_client *c, struct sib_ctl_msg *m,
			   int *pass_fd)
{
	struct sib_ctl_open_device *od = &m->u.open;
	struct sibd_obj *dev;
	uint32_t handle;
	int ret;

	if (!sibd_dev_present(d, od->dev_index) || od->dev_gen != d->devs[od->dev_index].gen)
		return -ENODEV;
	ret = sibd_budget_take(d, c->proc, SIBD_RES_INBOX);
	if (ret)
		return ret;
	ret = sib_ht_reserve(&c->ht, &handle);
	if (ret)
		return ret;
	dev = calloc(1, sizeof(*dev));
	if (!dev) {
		sib_ht_abort(&c->ht, handle);
		return -ENOMEM;
	}
	ret = sibd_inbox_alloc(d, c, od->dev_index, &dev->inbox);
	if (ret) {
		free(dev);
		sib_ht_abort(&c->ht, handle);
		return ret;
	}
	dev->type = SIBD_OBJ_DEVICE;
	dev->dev_index = od->dev_index;
	sib_ht_publish(&c->ht, handle, dev);
	c->count[SIBD_OBJ_DEVICE]++;
	c->inboxes++;

	od->handle = handle;
	od->inbox = dev->inbox;
	od->inbox_gen = sibd_inbox_gen(d, dev->inbox);
	od->inbox_size = SIB_INBOX_BYTES;
	*pass_fd = d->inbox[dev->inbox].fd;
	return 0;
}

static int cmd_close_device(struct sibd *d, struct sibd_client *c, struct sib_ctl_msg *m,
			    int *pass_fd)
{
	if (!lookup(c, m->u.handle, true))
		return -EBADF;
	dev_close(d, c, m->u.handle);
	return 0;
}

static int cmd_get_inbox(struct sibd *d, struct sibd_client *c, struct sib_ctl_msg *m,
			 int *pass_fd)
{
	struct sib_ctl_get_inbox *gi = &m->u.get_inbox;
	uint32_t gen;
	int ret;

	if (gi->inbox >= SIB_MAX_INBOXES)
		return -EINVAL;
	gen = sibd_inbox_gen(d, gi->inbox);
	if (d->inbox[gi->inbox].fd < 0 || !(gen & 1) || gen != gi->inbox_gen)
		return -ESTALE;
	ret = sibd_pair_check_doorbell(d, c, gi->dev_handle, gi->inbox, gen);
	if (ret)
		return ret;
	gi->inbox_size = SIB_INBOX_BYTES;
	*pass_fd = d->inbox[gi->inbox].fd;
	return 0;
}

static bool qp_type_ok(uint32_t t)
{
	switch (t) {
	case IBV_QPT_RC:
	case IBV_QPT_UC:
	case IBV_QPT_UD:
	case IBV_QPT_RAW_PACKET:
	case IBV_QPT_XRC_SEND:
	case IBV_QPT_XRC_RECV:
		return true;
	default:
		return false;
	}
}

/* A new object of `type` under device handle dev_handle, its handle
 * reserved: 0, or -EBADF (not a device of c), -EIO (the device was
 * removed, as uverbs after disassociation), -ENOMEM.  Then obj_commit,
 * or obj_abort. */
static int obj_begin(struct sibd_client *c, uint32_t dev_handle, uint8_t type, struct sibd_obj **dev,
		     struct sibd_obj **o, uint32_t *handle)
{
	int ret;

	*dev = lookup(c, dev_handle, true);
	if (!*dev)
		return -EBADF;
	if ((*dev)->gone)
		return -EIO;
	ret = sib_ht_reserve(&c->ht, handle);
	if (ret)
		return ret;
	*o = calloc(1, sizeof(**o));
	if (!*o) {
		sib_ht_abort(&c->ht, *handle);
		return -ENOMEM;
	}
	(*o)->type = type;
	(*o)->dev_index = (*dev)->dev_index;
	(*o)->dev_handle = dev_handle;
	return 0;
}

static void obj_abort(struct sibd_client *c, struct sibd_obj *o, uint32_t handle)
{
	free(o);
	sib_ht_abort(&c->ht, handle);
}

static void obj_commit(struct sibd_client *c, struct sibd_obj *dev, struct sibd_obj *o, uint32_t handle)
{
	sib_ht_publish(&c->ht, handle, o);
	dev->nchild++;
	c->count[o->type]++;
}

/* An XRC_RECV QP's domain: the XRCD handle it names must be an XRCD of c
 * under the same device handle (ibv_create_qp_ex's xrcd, XRC annex: a TGT
 * QP belongs to its domain).  Other QPs name none.  0 (*num: the domain, 0
 * for other QP types) or -EBADF. */
static int xrc_recv_domain(struct sibd_client *c, const struct sib_ctl_obj *co, uint32_t *num)
{
	struct sibd_obj *x;

	*num = 0;
	if (co->qp_type != IBV_QPT_XRC_RECV)
		return co->xrcd_handle ? -EINVAL : 0;
	x = lookup(c, co->xrcd_handle, false);
	if (!x || x->type != SIB_OBJ_XRCD || x->dev_handle != co->dev_handle)
		return -EBADF;
	*num = x->xrcd;
	return 0;
}

static int cmd_create_obj(struct sibd *d, struct sibd_client *c, struct sib_ctl_msg *m,
			  int *pass_fd)
{
	struct sib_ctl_obj *co = &m->u.obj;
	struct sibd_obj *dev, *o;
	uint32_t handle;
	int ret;

	if (co->type == 0 || co->type >= SIB_OBJ_TYPE_MAX || co->type == SIB_OBJ_XRCD)
		return -EINVAL; /* XRCDs come from XRCD_OPEN */
	if (co->type == SIB_OBJ_QP && !qp_type_ok(co->qp_type))
		return -EINVAL;
	ret = obj_begin(c, co->dev_handle, (uint8_t)co->type, &dev, &o, &handle);
	if (ret)
		return ret;
	o->qp_type = co->qp_type;
	if (co->type == SIB_OBJ_QP) {
		ret = xrc_recv_domain(c, co, &o->xrcd);
		if (!ret)
			ret = sibd_qpn_alloc(d, dev->inbox, dev->dev_index, o->xrcd, &o->qpn);
		if (ret) {
			obj_abort(c, o, handle);
			return ret;
		}
		if (o->xrcd)
			sibd_xrcd_hold(d, o->dev_index, o->xrcd);
	}
	obj_commit(c, dev, o, handle);
	co->handle = handle;
	co->qpn = o->qpn;
	return 0;
}

int sibd_dev_inbox(struct sibd_client *c, uint32_t handle, uint32_t *inbox)
{
	struct sibd_obj *dev = lookup(c, handle, true);

	if (!dev)
		return -EBADF;
	if (dev->gone)
		return -EIO;
	*inbox = dev->inbox;
	return 0;
}

int sibd_qp_info(struct sibd_client *c, uint32_t handle, uint32_t *qp_type, uint32_t *inbox)
{
	struct sibd_obj *o = lookup(c, handle, false), *dev;

	if (!o || o->type != SIB_OBJ_QP)
		return -EBADF;
	dev = lookup(c, o->dev_handle, true);
	if (!dev || dev->gone)
		return -EIO;
	*qp_type = o->qp_type;
	*inbox = dev->inbox;
	return 0;
}

/* XRCD_OPEN: the domain of the passed file (or a new private one),
 * and a handle on it that holds one reference (xrcd.c). */
static int cmd_xrcd_open(struct sibd *d, struct sibd_client *c, struct sib_ctl_msg *m, int *pass_fd)
{
	struct sib_ctl_xrcd *x = &m->u.xrcd;
	struct sibd_obj *dev, *o;
	uint32_t handle;
	int ret;

	if (x->oflags & ~(uint32_t)(O_CREAT | O_EXCL) || x->has_fd > 1)
		return -EINVAL;
	if (x->has_fd && c->in_fd < 0)
		return -EBADF;
	if (c->count[SIB_OBJ_XRCD] >= SIBD_XRCD_PER_CONN)
		return -ENOSPC; /* a connection's share of the domains (xrcd.c) */
	/* a domain on a file may cost softibd an fd: the process's budget */
	ret = x->has_fd ? sibd_budget_take(d, c->proc, SIBD_RES_XRCD_FILE) : 0;
	if (ret)
		return ret;
	ret = obj_begin(c, x->dev_handle, SIB_OBJ_XRCD, &dev, &o, &handle);
	if (ret)
		return ret;
	ret = sibd_xrcd_open(d, dev->dev_index, x->has_fd ? c->in_fd : -1, x->oflags, &o->xrcd);
	if (ret) {
		obj_abort(c, o, handle);
		return ret;
	}
	o->file = x->has_fd;
	c->xrcd_files += o->file;
	obj_commit(c, dev, o, handle);
	x->handle = handle;
	x->num = o->xrcd;
	return 0;
}

/* obj.type, when non-zero, must be the type the handle was created with. */
static int cmd_destroy_obj(struct sibd *d, struct sibd_client *c, struct sib_ctl_msg *m,
			   int *pass_fd)
{
	struct sib_ctl_obj *co = &m->u.obj;
	struct sibd_obj *o = lookup(c, co->handle, false);

	if (!o || (co->type && co->type != o->type))
		return -EBADF;
	obj_destroy(d, c, co->handle);
	return 0;
}

/* The report in chunks of at most SIB_CTL_TEXT_MAX bytes, cut after a newline when possible. */
static int cmd_status(struct sibd *d, struct sibd_client *c, struct sib_ctl_msg *m, int *pass_fd)
{
	size_t len, off = 0, n;
	char *text, *nl;
	int ret;

	ret = sibd_status_text(d, &text, &len);
	if (ret)
		return ret;
	do {
		n = len - off;
		if (n > SIB_CTL_TEXT_MAX) {
			n = SIB_CTL_TEXT_MAX;
			nl = memrchr(text + off, '\n', n);
			if (nl)
				n = (size_t)(nl - (text + off)) + 1;
		}
		memcpy(m->u.text.text, text + off, n);
		m->u.text.len = (uint32_t)n;
		off += n;
		m->hdr.status = 0;
		m->hdr.flags = off < len ? SIB_CTL_F_MORE : 0;
		client_reply(d, c, m, -1);
	} while (off < len);
	free(text);
	return REPLIED;
}

static int cmd_shutdown(struct sibd *d, struct sibd_client *c, struct sib_ctl_msg *m,
			int *pass_fd)
{
	sibd_log("shutdown requested by pid %d", (int)c->pid);
	d->stop = true;
	return 0;
}

/* MAI_OPEN: a channel holds an fd of softibd's, so the process's budget
 * first (budget.c), then the channel (mai_chan.c). */
static int cmd_mai_open(struct sibd *d, struct sibd_client *c, struct sib_ctl_msg *m, int *pass_fd)
{
	int ret = sibd_budget_take(d, c->proc, SIBD_RES_CHAN);

	return ret ? ret : sibd_cmd_mai_open(d, c, m, pass_fd);
}

/* CAPABLE: the connecting process's capability, read by softibd (peer.c). */
static int cmd_capable(struct sibd *d, struct sibd_client *c, struct sib_ctl_msg *m, int *pass_fd)
{
	if (m->u.capable.cap > 63)
		return -EINVAL;
	return sibd_peer_capable(c->fd, m->u.capable.cap) ? 0 : -EPERM;
}

static const struct sibd_cmd {
	sibd_cmd_fn fn;
	bool needs_hello;  /* only after a HELLO with our ABI */
} sibd_cmds[SIB_CTL_OP_MAX] = {
	[SIB_CTL_HELLO] = { cmd_hello, false },
	[SIB_CTL_OPEN_DEVICE] = { cmd_open_device, true },
	[SIB_CTL_CLOSE_DEVICE] = { cmd_close_device, true },
	[SIB_CTL_GET_INBOX] = { cmd_get_inbox, true },
	[SIB_CTL_CREATE_OBJ] = { cmd_create_obj, true },
	[SIB_CTL_DESTROY_OBJ] = { cmd_destroy_obj, true },
	[SIB_CTL_STATUS] = { cmd_status, false },
	[SIB_CTL_SHUTDOWN] = { cmd_shutdown, false },
	[SIB_CTL_SUBSCRIBE] = { sibd_cmd_subscribe, false },
	[SIB_CTL_DEVICE_ADD] = { sibd_cmd_device_add, false },
	[SIB_CTL_DEVICE_REMOVE] = { sibd_cmd_device_remove, false },
	[SIB_CTL_PORT_SET] = { sibd_cmd_port_set, false },
	[SIB_CTL_LINK_CAPTURE] = { sibd_link_capture, true },   /* linkcfg.c */
	[SIB_CTL_GET_CAPTURE] = { sibd_link_get_capture, true },
	[SIB_CTL_LINK_FAULTS] = { sibd_link_faults, true },
	[SIB_CTL_MCAST] = { sibd_cmd_mcast, true },             /* mcast.c */
	[SIB_CTL_XRCD_OPEN] = { cmd_xrcd_open, true },
	[SIB_CTL_MAI_OPEN] = { cmd_mai_open, false },           /* mai_chan.c */
	[SIB_CTL_MAI_FILTER] = { sibd_cmd_mai_filter, false },
	[SIB_CTL_MGMT_QUERY] = { sibd_cmd_mgmt_query, false },  /* mgmt_query.c */
	[SIB_CTL_ROUTE] = { sibd_cmd_route, true },             /* route.c */
	[SIB_CTL_CAPABLE] = { cmd_capable, false },             /* peer.c */
	[SIB_CTL_PAIR_OPEN] = { sibd_cmd_pair_open, true },     /* pair.c */
	[SIB_CTL_PAIR_ACCEPT] = { sibd_cmd_pair_accept, true },
	[SIB_CTL_DX_PUT] = { sibd_cmd_dx_put, true },           /* dx.c */
	[SIB_CTL_DX_GET] = { sibd_cmd_dx_get, true },
	[SIB_CTL_CM] = { sibd_cmd_cm, true },                   /* ucma.c */
	[SIB_CTL_IPADDR] = { sibd_cmd_ipaddr, false },          /* ucma.c */
};

/*
 * Check and run one message of n bytes (or -EMSGSIZE: longer than a
 * message), then reply with the same op and seq.
 */
static void client_command(struct sibd *d, struct sibd_client *c, struct sib_ctl_msg *m, int n)
{
	const struct sibd_cmd *cmd = NULL;
	int pass_fd = -1, ret;

	d->ctr.commands++;
	if (n < (int)sizeof(m->hdr) || n == -EMSGSIZE)
		ret = -EINVAL;
	else if (m->hdr.magic != SIB_CTL_MAGIC)
		ret = -EPROTO;
	else if (m->hdr.op == 0 || m->hdr.op >= SIB_CTL_OP_MAX || !sibd_cmds[m->hdr.op].fn)
		ret = -EINVAL; /* unknown, or not a request (EVENT) */
	else if (m->hdr.op != SIB_CTL_STATUS && (size_t)n < sib_ctl_msg_len(m))
		ret = -EINVAL;
	else if ((cmd = &sibd_cmds[m->hdr.op])->needs_hello && !c->hello)
		ret = -EPROTO;
	else
		ret = cmd->fn(d, c, m, &pass_fd);

	if (ret == -EINVAL || ret == -EPROTO || ret == -EBADF || ret == -ENODEV)
		d->ctr.bad_commands++;
	if (ret == REPLIED)
		return;
	m->hdr.magic = SIB_CTL_MAGIC;
	m->hdr.flags = 0;
	m->hdr.status = -ret;
	client_reply(d, c, m, ret ? -1 : pass_fd);
	if (d->pass_owned) { /* the command gave its fd away with the reply */
		close(pass_fd);
		d->pass_owned = false;
	}
}

/* Read and run messages until the socket is empty, a reply is queued, or INPUT_BURST. */
static void client_input(struct sibd *d, struct sibd_client *c)
{
	struct sib_ctl_msg m;
	int i, n;

	for (i = 0; i < INPUT_BURST && !c->dead && !c->out_head && !d->stop; i++) {
		/* A passed fd lives for its command only (XRCD_OPEN reads it;
		 * DX_PUT keeps it, leaving in_fd -1). */
		n = sib_ctl_recv(c->fd, &m, &c->in_fd);
		if (n == -EAGAIN)
			return;
		if (n == 0 || (n < 0 && n != -EMSGSIZE)) {
			if (c->in_fd >= 0)
				close(c->in_fd);
			c->in_fd = -1;
			c->dead = true; /* closed, ECONNRESET */
			return;
		}
		client_command(d, c, &m, n);
		if (c->in_fd >= 0)
			close(c->in_fd);
		c->in_fd = -1;
	}
}

/*
 * Device dev_index was unregistered (registry.c): every context of c on it
 * loses its objects, QPNs and inbox now, as uverbs disassociates a ucontext;
 * the device handle stays, answering EIO, until c closes it.
 */
void sibd_client_device_gone(struct sibd *d, struct sibd_client *c, uint32_t dev_index)
{
	struct sibd_obj *dev, *o;
	uint32_t pos = 0, cpos, h, ch;

	while ((dev = sib_ht_next(&c->ht, &pos, &h))) {
		if (dev->type != SIBD_OBJ_DEVICE || dev->dev_index != dev_index || dev->gone)
			continue;
		cpos = 0;
		while (dev->nchild && (o = sib_ht_next(&c->ht, &cpos, &ch)))
			if (o->type != SIBD_OBJ_DEVICE && o->dev_handle == h)
				obj_destroy(d, c, ch);
		sibd_dx_release(d, c, dev->inbox);
		sibd_inbox_free(d, dev->inbox);
		c->inboxes--;
		dev->gone = true;
	}
}

/* ---- lifetime ----------------------------------------------------------- */

struct sibd_client *sibd_client_new(struct sibd *d, int fd, struct sibd_proc *p)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct sibd_client *c = calloc(1, sizeof(*c));
	pid_t pid = p->pid;

	if (!c)
		return NULL;
	c->fd = fd;
	c->in_fd = -1;
	c->pid = pid;
	sib_ht_init(&c->ht, SIBD_MAX_HANDLES);
	ev.data.ptr = c;
	if (epoll_ctl(d->ep_fd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		sibd_log("client pid %d: epoll_ctl: %s", (int)pid, strerror(errno));
		free(c);
		return NULL;
	}
	c->prev = d->clients_tail;
	if (d->clients_tail)
		d->clients_tail->next = c;
	else
		d->clients = c;
	d->clients_tail = c;
	d->nclients++;
	d->ctr.connections++;
	c->proc = p;
	p->conns++;
	return c;
}

void sibd_client_event(struct sibd *d, struct sibd_client *c, uint32_t events)
{
	if (events & EPOLLOUT)
		client_flush(d, c);
	if (events & EPOLLIN)
		client_input(d, c);
	if (events & (EPOLLHUP | EPOLLERR))
		c->dead = true;
	if (c->dead)
		sibd_client_release(d, c);
}

int sibd_proc_qpn(struct sibd *d, const struct sibd_proc *p, uint32_t qpn, uint32_t *dev)
{
	for (struct sibd_client *c = d->clients; c; c = c->next) {
		struct sibd_obj *o;
		uint32_t pos = 0, h;

		if (c->proc != p || c->dead)
			continue;
		while ((o = sib_ht_next(&c->ht, &pos, &h)))
			if (o->type == SIB_OBJ_QP && o->qpn == qpn) {
				*dev = o->dev_index;
				return 0;
			}
	}
	return -ENOENT;
}

/* Release everything the connection held (devices take their objects along), then it. */
void sibd_client_release(struct sibd *d, struct sibd_client *c)
{
	struct sibd_obj *o;
	uint32_t pos = 0, h;

	while ((o = sib_ht_next(&c->ht, &pos, &h)))
		if (o->type == SIBD_OBJ_DEVICE)
			dev_close(d, c, h);
	sib_ht_fini(&c->ht);
	sibd_dx_release(d, c, UINT32_MAX);
	sibd_link_client_gone(d, c);
	sibd_mai_client_gone(d, c);
	sibd_ucma_client_gone(d, c);
	while (c->out_head)
		out_pop(c);
	epoll_ctl(d->ep_fd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	if (c->prev)
		c->prev->next = c->next;
	else
		d->clients = c->next;
	if (c->next)
		c->next->prev = c->prev;
	else
		d->clients_tail = c->prev;
	if (--d->nclients == 0)
		d->idle_since_ms = sibd_now_ms();
	c->proc->conns--;
	sibd_proc_put(d, c->proc);
	free(c);
}
