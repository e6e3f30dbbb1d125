/* SPDX-License-Identifier: MIT */
/*
 * librdmacm's core: the process's control connection to softibd, devices
 * (one ibv_context per verbs device, rdma_get_devices, the per-device
 * default PD), event channels, ids (create, destroy, migrate) and the
 * blocking of synchronous ids (rdma-core v44 librdmacm/cma.c semantics,
 * man rdma_create_id, rdma_destroy_id, rdma_migrate_id).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <netinet/in.h>
#include <rdma/rdma_cma.h>
#include <infiniband/ib.h>

#include "common/ctl.h"
#include "common/fabric_view.h"
#include "rdmacm/cma_priv.h"

static pthread_mutex_t cma_lock = PTHREAD_MUTEX_INITIALIZER;  /* init, devices, ids */
static pthread_mutex_t ctl_lock = PTHREAD_MUTEX_INITIALIZER;  /* round trips on ctl_fd */
static bool cma_inited;
static int ctl_fd = -1;
static struct sib_fabric_view cma_view;       /* device names by fabric-map index */
static struct ibv_device **dev_list;
static struct cma_device *cma_devs;
static int num_devs;
static struct cma_id *id_list;                /* live ids (lookups of events) */
/* fds of channels rdma_destroy_event_channel closed (see cma_channel_was_closed) */
#define CMA_CLOSED_FDS 64
static int closed_fds[CMA_CLOSED_FDS];
static unsigned closed_next;

static int set_errno(int e)
{
	errno = e;
	return -1;
}

/* HELLO on our own control connection: the fabric map for device names. */
static int cma_connect(void)
{
	struct sib_ctl_msg m = { .hdr.op = SIB_CTL_HELLO };
	int fd, mfd = -1, rc;

	fd = sib_ctl_open(true);
	if (fd < 0)
		return -fd;
	m.u.hello.abi_version = SIB_ABI_VERSION;
	m.u.hello.pid = getpid();
	rc = sib_ctl_call(fd, &m, &mfd);
	if (rc < 0 || m.hdr.status || mfd < 0) {
		rc = rc < 0 ? -rc : m.hdr.status ? m.hdr.status : EPROTO;
		goto err;
	}
	rc = -sib_fabric_view_attach(&cma_view, mfd, m.u.hello.fabric_size);
	close(mfd);
	if (rc)
		goto err;
	ctl_fd = fd;
	return 0;
err:
	if (mfd >= 0)
		close(mfd);
	close(fd);
	return rc;
}

/*
 * Once per process: the verbs devices (ENODEV when there is none, as
 * rdma-core's ucma_init) and the control connection.  0 or -1/errno.
 */
int cma_init(void)
{
	int n = 0, rc;

	pthread_mutex_lock(&cma_lock);
	if (cma_inited) {
		pthread_mutex_unlock(&cma_lock);
		return 0;
	}
	dev_list = ibv_get_device_list(&n);
	if (!dev_list || n <= 0) {
		rc = ENODEV;
		goto err;
	}
	cma_devs = calloc((size_t)n, sizeof(*cma_devs));
	if (!cma_devs) {
		rc = ENOMEM;
		goto err;
	}
	rc = cma_connect();
	if (rc)
		goto err;
	for (int i = 0; i < n; i++) {
		cma_devs[i].ibdev = dev_list[i];
		snprintf(cma_devs[i].name, sizeof(cma_devs[i].name), "%s",
			 ibv_get_device_name(dev_list[i]));
	}
	num_devs = n;
	cma_inited = true;
	pthread_mutex_unlock(&cma_lock);
	return 0;
err:
	free(cma_devs);
	cma_devs = NULL;
	if (dev_list)
		ibv_free_device_list(dev_list);
	dev_list = NULL;
	pthread_mutex_unlock(&cma_lock);
	return set_errno(rc);
}

/* One round trip of SIB_CTL_CM; c is the body in and out.  0 or -1/errno. */
int cma_call(struct sib_ctl_cm *c, int *recv_fd)
{
	struct sib_ctl_msg *m;
	int rc;

	if (recv_fd)
		*recv_fd = -1;
	m = calloc(1, sizeof(*m));
	if (!m)
		return set_errno(ENOMEM);
	m->hdr.op = SIB_CTL_CM;
	m->u.cm = *c;
	pthread_mutex_lock(&ctl_lock);
	rc = ctl_fd < 0 ? -ENOTCONN : sib_ctl_call(ctl_fd, m, recv_fd);
	pthread_mutex_unlock(&ctl_lock);
	if (rc < 0) {
		free(m);
		return set_errno(-rc);
	}
	if (m->hdr.status) {
		rc = m->hdr.status > 0 ? m->hdr.status : EPROTO;
		free(m);
		if (recv_fd && *recv_fd >= 0) {
			close(*recv_fd);
			*recv_fd = -1;
		}
		return set_errno(rc);
	}
	*c = m->u.cm;
	free(m);
	return 0;
}

/* Open device d (once) and read the limits rdma_connect/accept check. */
int cma_dev_open(struct cma_device *d)
{
	struct ibv_device_attr attr;
	struct ibv_context *ctx;
	int rc = 0;

	pthread_mutex_lock(&cma_lock);
	if (d->ctx)
		goto out;
	ctx = ibv_open_device(d->ibdev);
	if (!ctx) {
		rc = errno ? errno : ENODEV;
		goto out;
	}
	if (ibv_query_device(ctx, &attr)) {
		rc = errno ? errno : EIO;
		ibv_close_device(ctx);
		goto out;
	}
	d->max_init_depth = attr.max_qp_init_rd_atom > 255 ? 255 : (uint8_t)attr.max_qp_init_rd_atom;
	d->max_resp_res = attr.max_qp_rd_atom > 255 ? 255 : (uint8_t)attr.max_qp_rd_atom;
	d->max_qp_wr = attr.max_qp_wr;
	d->max_cqe = attr.max_cqe;
	d->ctx = ctx;
out:
	pthread_mutex_unlock(&cma_lock);
	return rc ? set_errno(rc) : 0;
}

/* The device's default PD (rdma-core allocates it when an id acquires the device). */
struct ibv_pd *cma_dev_pd(struct cma_device *d)
{
	struct ibv_pd *pd;

	pthread_mutex_lock(&cma_lock);
	if (!d->pd && d->ctx)
		d->pd = ibv_alloc_pd(d->ctx);
	pd = d->pd;
	pthread_mutex_unlock(&cma_lock);
	return pd;
}

/* The device softibd names by its fabric-map slot, opened; NULL if unknown. */
struct cma_device *cma_dev_from_map(uint32_t dev_index, uint32_t dev_gen)
{
	const struct sib_shm_device *sd;
	char name[SIB_DEV_NAME_MAX];
	struct cma_device *d = NULL;

	if (dev_index == SIB_CM_NO_DEVICE)
		return NULL;
	pthread_mutex_lock(&cma_lock);
	sib_fabric_view_refresh(&cma_view);
	sd = sib_fabric_view_dev(&cma_view, dev_index);
	if (sd && (!dev_gen || atomic_load(&sd->gen) == dev_gen)) {
		memcpy(name, sd->name, sizeof(name));
		name[sizeof(name) - 1] = '\0';
		for (int i = 0; i < num_devs; i++)
			if (!strcmp(cma_devs[i].name, name))
				d = &cma_devs[i];
	}
	pthread_mutex_unlock(&cma_lock);
	if (d && cma_dev_open(d))
		d = NULL;
	return d;
}

/* Attach id p to device d: id->verbs, id->pd (the default PD), port_num. */
void cma_id_set_dev(struct cma_id *p, struct cma_device *d, uint8_t port_num)
{
	p->dev = d;
	p->id.verbs = d->ctx;
	p->id.pd = cma_dev_pd(d);
	if (port_num)
		p->id.port_num = port_num;
}

RDMACM_EXPORT struct ibv_context **rdma_get_devices(int *num_devices)
{
	struct ibv_context **list;
	int n = 0;

	if (cma_init())
		goto none;
	list = calloc((size_t)num_devs + 1, sizeof(*list));
	if (!list)
		goto none;
	for (int i = 0; i < num_devs; i++)
		if (!cma_dev_open(&cma_devs[i]))
			list[n++] = cma_devs[i].ctx;
	if (num_devices)
		*num_devices = n;
	return list;
none:
	if (num_devices)
		*num_devices = 0;
	return NULL;
}

RDMACM_EXPORT void rdma_free_devices(struct ibv_context **list)
{
	free(list);
}

/* ---- event channels ---------------------------------------------------- */

RDMACM_EXPORT struct rdma_event_channel *rdma_create_event_channel(void)
{
	struct sib_ctl_cm c = { .cmd = SIB_CM_CMD_CHANNEL_OPEN };
	struct cma_channel *ch;
	int fd, fl;

	if (cma_init())
		return NULL;
	ch = calloc(1, sizeof(*ch));
	if (!ch)
		return NULL;
	if (cma_call(&c, &fd))
		goto err;
	if (fd < 0) {
		errno = EPROTO;
		goto err;
	}
	fl = fcntl(fd, F_GETFL);
	if (fl >= 0 && (fl & O_NONBLOCK))
		(void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	ch->ch.fd = fd;
	ch->handle = c.channel;
	pthread_mutex_lock(&cma_lock);
	for (unsigned i = 0; i < CMA_CLOSED_FDS; i++)
		if (closed_fds[i] == fd + 1)
			closed_fds[i] = 0;
	pthread_mutex_unlock(&cma_lock);
	return &ch->ch;
err:
	free(ch);
	return NULL;
}

RDMACM_EXPORT void rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	struct cma_channel *ch = (struct cma_channel *)channel;
	struct sib_ctl_cm c = { .cmd = SIB_CM_CMD_CHANNEL_CLOSE };

	if (!ch)
		return;
	c.channel = ch->handle;
	pthread_mutex_lock(&cma_lock);
	closed_fds[closed_next++ % CMA_CLOSED_FDS] = ch->ch.fd + 1;
	pthread_mutex_unlock(&cma_lock);
	(void)cma_call(&c, NULL);
	close(ch->ch.fd);
	free(ch);
}

/*
 * Did the library itself destroy the channel whose fd was fd?  A thread
 * blocked in rdma_get_cm_event on it then sees the socket end; with the
 * kernel's ucma its read would never return (rping's event thread relies
 * on that and exits the process on an error).
 */
bool cma_channel_was_closed(int fd)
{
	bool was = false;

	pthread_mutex_lock(&cma_lock);
	for (unsigned i = 0; i < CMA_CLOSED_FDS; i++)
		was |= closed_fds[i] == fd + 1;
	pthread_mutex_unlock(&cma_lock);
	return was;
}

/* ---- ids ---------------------------------------------------------------- */

/* A new id on channel ch (NULL: a private channel, synchronous). */
struct cma_id *cma_alloc_id(struct rdma_event_channel *ch, void *context,
			    enum rdma_port_space ps, enum ibv_qp_type qp_type)
{
	struct cma_id *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	pthread_mutex_init(&p->mut, NULL);
	pthread_cond_init(&p->cond, NULL);
	p->id.context = context;
	p->id.ps = ps;
	p->id.qp_type = qp_type;
	if (!ch) {
		ch = rdma_create_event_channel();
		if (!ch) {
			cma_free_id(p);
			return NULL;
		}
		p->sync = true;
	}
	p->id.channel = ch;
	return p;
}

void cma_free_id(struct cma_id *p)
{
	struct cma_mc *mc;

	if (p->sync && p->id.channel)
		rdma_destroy_event_channel(p->id.channel);
	while ((mc = p->mc_list)) {
		p->mc_list = mc->next;
		free(mc);
	}
	free(p->id.route.path_rec);
	free(p->qp_init_attr);
	pthread_cond_destroy(&p->cond);
	pthread_mutex_destroy(&p->mut);
	free(p);
}

void cma_id_insert(struct cma_id *p)
{
	pthread_mutex_lock(&cma_lock);
	p->prev = NULL;
	p->next = id_list;
	if (id_list)
		id_list->prev = p;
	id_list = p;
	pthread_mutex_unlock(&cma_lock);
}

static void cma_id_remove(struct cma_id *p)
{
	pthread_mutex_lock(&cma_lock);
	if (p->prev)
		p->prev->next = p->next;
	else if (id_list == p)
		id_list = p->next;
	if (p->next)
		p->next->prev = p->prev;
	p->next = p->prev = NULL;
	pthread_mutex_unlock(&cma_lock);
}

/*
 * The live id with softibd handle `handle` (and cookie uid, when softibd
 * gives one), counted as having one more event delivered, so that
 * rdma_destroy_id waits for its ack.  NULL: unknown (destroyed): the
 * event is dropped.
 */
struct cma_id *cma_id_lookup_deliver(uint32_t handle, uint64_t uid)
{
	struct cma_id *p;

	pthread_mutex_lock(&cma_lock);
	for (p = id_list; p; p = p->next)
		if (p->handle == handle && (!uid || uid == (uint64_t)(uintptr_t)p))
			break;
	if (p) {
		pthread_mutex_lock(&p->mut);
		p->events_delivered++;
		pthread_mutex_unlock(&p->mut);
	}
	pthread_mutex_unlock(&cma_lock);
	return p;
}

/* An event of p acknowledged (or dropped inside the library). */
void cma_complete_event(struct cma_id *p)
{
	pthread_mutex_lock(&p->mut);
	p->events_completed++;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->mut);
}

static void cma_wait_events(struct cma_id *p)
{
	pthread_mutex_lock(&p->mut);
	while (p->events_completed != p->events_delivered)
		pthread_cond_wait(&p->cond, &p->mut);
	pthread_mutex_unlock(&p->mut);
}

/* Start a command body for id p. */
void cma_id_cmd(const struct cma_id *p, struct sib_ctl_cm *c, uint32_t cmd)
{
	memset(c, 0, sizeof(*c));
	c->cmd = cmd;
	c->id = p->handle;
	c->uid = (uint64_t)(uintptr_t)p;
	c->channel = ((const struct cma_channel *)p->id.channel)->handle;
}

RDMACM_EXPORT int rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id,
				 void *context, enum rdma_port_space ps)
{
	enum ibv_qp_type qp_type;
	struct sib_ctl_cm c;
	struct cma_id *p;

	if (!id)
		return set_errno(EINVAL);
	if (cma_init())
		return -1;
	switch (ps) {
	case RDMA_PS_TCP:
	case RDMA_PS_IB:
		qp_type = IBV_QPT_RC;
		break;
	case RDMA_PS_UDP:
	case RDMA_PS_IPOIB:
		qp_type = IBV_QPT_UD;
		break;
	default:
		return set_errno(EINVAL);
	}
	p = cma_alloc_id(channel, context, ps, qp_type);
	if (!p)
		return -1;
	cma_id_cmd(p, &c, SIB_CM_CMD_CREATE_ID);
	c.ps = ps;
	c.qp_type = qp_type;
	if (cma_call(&c, NULL)) {
		int e = errno;

		cma_free_id(p);
		return set_errno(e);
	}
	p->handle = c.id;
	cma_id_insert(p);
	*id = &p->id;
	return 0;
}

/*
 * rdma_destroy_id (man page): softibd forgets the id (no event of it
 * follows), then wait until every event handed out for it is
 * acknowledged, as rdma-core waits for the kernel's events_reported.
 */
RDMACM_EXPORT int rdma_destroy_id(struct rdma_cm_id *id)
{
	struct cma_id *p = (struct cma_id *)id;
	struct sib_ctl_cm c;
	int rc;

	if (!id)
		return set_errno(EINVAL);
	cma_id_remove(p);
	cma_id_cmd(p, &c, SIB_CM_CMD_DESTROY_ID);
	rc = cma_call(&c, NULL);
	if (p->id.event) {
		rdma_ack_cm_event(p->id.event);
		p->id.event = NULL;
	}
	cma_wait_events(p);
	cma_free_id(p);
	(void)rc; /* the id is gone either way (the connection's close cleans softibd) */
	return 0;
}

/* A synchronous id's call: wait for its event (rdma-core ucma_complete). */
int cma_complete(struct cma_id *p)
{
	struct rdma_cm_event *ev;

	if (!p->sync)
		return 0;
	if (p->id.event) {
		rdma_ack_cm_event(p->id.event);
		p->id.event = NULL;
	}
	if (rdma_get_cm_event(p->id.channel, &p->id.event))
		return -1;
	ev = p->id.event;
	if (!ev->status)
		return 0;
	if (ev->event == RDMA_CM_EVENT_REJECTED)
		return set_errno(ECONNREFUSED);
	return set_errno(ev->status < 0 ? -ev->status : ev->status);
}

/*
 * Move id p to channel ch (NULL: a new private channel, the id becomes
 * synchronous), after the events handed out on the old one are acked.
 */
int cma_migrate(struct cma_id *p, struct rdma_event_channel *ch)
{
	struct rdma_event_channel *old = p->id.channel;
	bool was_sync = p->sync, sync = false;
	struct sib_ctl_cm c;

	if (!ch) {
		ch = rdma_create_event_channel();
		if (!ch)
			return -1;
		sync = true;
	}
	cma_id_cmd(p, &c, SIB_CM_CMD_MIGRATE_ID);
	c.channel = ((struct cma_channel *)ch)->handle;
	if (cma_call(&c, NULL)) {
		int e = errno;

		if (sync)
			rdma_destroy_event_channel(ch);
		return set_errno(e);
	}
	if (p->id.event) {
		rdma_ack_cm_event(p->id.event);
		p->id.event = NULL;
	}
	cma_wait_events(p);
	p->id.channel = ch;
	p->sync = sync;
	if (was_sync)
		rdma_destroy_event_channel(old);
	return 0;
}

RDMACM_EXPORT int rdma_migrate_id(struct rdma_cm_id *id, struct rdma_event_channel *channel)
{
	if (!id)
		return set_errno(EINVAL);
	return cma_migrate((struct cma_id *)id, channel);
}

/* ---- addresses and QUERY ---------------------------------------------- */

socklen_t cma_addrlen(const struct sockaddr *sa)
{
	if (!sa)
		return 0;
	switch (sa->sa_family) {
	case AF_INET:
		return sizeof(struct sockaddr_in);
	case AF_INET6:
		return sizeof(struct sockaddr_in6);
	case AF_IB:
		return sizeof(struct sockaddr_ib);
	default:
		return 0;
	}
}

static void path_from_wire(struct ibv_sa_path_rec *r, const struct sib_cm_path *w)
{
	memset(r, 0, sizeof(*r));
	memcpy(r->dgid.raw, w->dgid, 16);
	memcpy(r->sgid.raw, w->sgid, 16);
	r->dlid = htobe16(w->dlid);
	r->slid = htobe16(w->slid);
	r->raw_traffic = 0;
	r->flow_label = htobe32(w->flow_label & 0xfffff);
	r->hop_limit = w->hop_limit;
	r->traffic_class = w->traffic_class;
	r->reversible = htobe32(w->reversible ? 1 : 0);
	r->numb_path = w->numb_path;
	r->pkey = htobe16(w->pkey);
	r->sl = w->sl & 0xf;
	r->mtu_selector = 2;              /* exactly */
	r->mtu = w->mtu;
	r->rate_selector = 2;
	r->rate = w->rate;
	r->packet_life_time_selector = 2;
	r->packet_life_time = w->packet_life_time & 0x1f;
}

/* Copy what BIND or QUERY answered into the id (lengths bounded). */
void cma_apply_query(struct cma_id *p, const struct sib_ctl_cm *c)
{
	struct rdma_addr *a = &p->id.route.addr;
	struct cma_device *d;
	unsigned n;

	if (c->src_len && c->src_len <= SIB_CM_ADDR_LEN) {
		memset(&a->src_storage, 0, sizeof(a->src_storage));
		memcpy(&a->src_storage, c->src_addr, c->src_len);
	}
	if (c->dst_len && c->dst_len <= SIB_CM_ADDR_LEN) {
		memset(&a->dst_storage, 0, sizeof(a->dst_storage));
		memcpy(&a->dst_storage, c->dst_addr, c->dst_len);
	}
	d = cma_dev_from_map(c->dev_index, c->dev_gen);
	if (d)
		cma_id_set_dev(p, d, c->port_num);
	if (c->dev_index == SIB_CM_NO_DEVICE)
		return;
	memcpy(a->addr.ibaddr.sgid.raw, c->sgid, 16);
	memcpy(a->addr.ibaddr.dgid.raw, c->dgid, 16);
	a->addr.ibaddr.pkey = htobe16(c->pkey);
	n = c->num_paths > SIB_CM_PATHS_MAX ? SIB_CM_PATHS_MAX : c->num_paths;
	if (n) {
		struct ibv_sa_path_rec *r = realloc(p->id.route.path_rec, n * sizeof(*r));

		if (!r)
			return;
		for (unsigned i = 0; i < n; i++)
			path_from_wire(&r[i], &c->paths[i]);
		p->id.route.path_rec = r;
		p->id.route.num_paths = (int)n;
	}
}

int cma_query(struct cma_id *p)
{
	struct sib_ctl_cm c;

	cma_id_cmd(p, &c, SIB_CM_CMD_QUERY);
	if (cma_call(&c, NULL))
		return -1;
	cma_apply_query(p, &c);
	return 0;
}
