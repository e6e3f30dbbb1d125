// SPDX-License-Identifier: MIT
/*
 * softibd's ucma (ucma.h, docs/rdmacm.md): SIB_CTL_CM commands
 * (common/sib_ctl_cm.h) on the subnet's rdma_cm (subnet/cma.h), as the
 * kernel's ucma.c serves /dev/infiniband/rdma_cm.
 *  - Channels: a SOCK_SEQPACKET socketpair each, one end passed to the
 *    library; softibd writes one SIB_CTL_CM_EVENT message per event, non
 *    blocking; what the socket does not take waits in a per-channel queue
 *    flushed on EPOLLOUT (never dropped, never blocking).  The channel ends
 *    when the library's end closes (EPOLLHUP) or with CHANNEL_CLOSE; its
 *    ids are destroyed.
 *  - Ids: handles (one table for softibd, each id checked against the
 *    connection that made it) bound to a channel.  events_reported counts
 *    the events written to the channel for the id (a CONNECT_REQUEST counts
 *    on its listener, as the kernel's ucma_get_event); events still queued
 *    in softibd when the id is destroyed are dropped, as ucma_cleanup_events.
 *  - Budgets (budget.c): ids and channels per process (EMFILE, ENFILE).
 *  - CONNECT and ACCEPT name a QP of the same process (SO_PEERCRED pid: the
 *    verbs library uses another connection) on the id's device: else EINVAL.
 * Everything a client sends is checked: handles, lengths, states.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/ctl.h"
#include "daemon/softibd.h"
#include "daemon/ucma.h"
#include "subnet/cma.h"

struct ucma_out {                   /* an event the socket did not take yet */
	struct ucma_out *next;
	struct ucma_id *id;         /* whose (for events_reported), NULL once gone */
	struct sib_ctl_cm_event ev;
};

struct ucma_chan {
	struct sibd_client *owner;
	uint32_t handle;
	int fd;                     /* our end */
	struct ucma_out *head, *tail;
	uint32_t qlen;
	uint64_t written;
};

struct ucma_id {
	struct sibd_client *owner;
	uint32_t handle;
	struct ucma_chan *chan;
	struct sib_cma_id *id;
	uint32_t reported;          /* events written to the channel for it */
};

struct ucma_ctr {
	uint64_t commands, bad_commands, events_written, events_queued, conn_refused;
	uint64_t chans_opened, chans_closed;
};

struct sibd_ucma {
	int ep_fd;
	struct sib_cma *cma;
	struct sib_htable ids, chans;
	uint32_t nids, nchans;
	struct ucma_ctr ctr;
	bool in_dispatch;
	bool trace;                 /* SOFTIBD_CM_TRACE set: every command and event logged */
};

static uint64_t host_now(void *ctx);

/* ---- channels ---- */

static void chan_arm(struct sibd_ucma *u, struct ucma_chan *ch)
{
	struct epoll_event ev = { .events = EPOLLIN | (ch->head ? EPOLLOUT : 0), .data.ptr = ch };

	epoll_ctl(u->ep_fd, EPOLL_CTL_MOD, ch->fd, &ev);
}

static int chan_write(struct ucma_chan *ch, const struct sib_ctl_cm_event *ev)
{
	struct sib_ctl_msg m;

	memset(&m.hdr, 0, sizeof(m.hdr));
	m.hdr.magic = SIB_CTL_MAGIC;
	m.hdr.op = SIB_CTL_CM_EVENT;
	m.u.cm_event = *ev;
	return sib_ctl_send(ch->fd, &m, -1);
}

/* Write what the socket takes, in order. */
static void chan_flush(struct sibd_ucma *u, struct ucma_chan *ch)
{
	struct ucma_out *o;
	bool had = ch->head != NULL;

	while ((o = ch->head)) {
		int ret = chan_write(ch, &o->ev);

		if (ret == -EAGAIN)
			break;
		if (!ret) {
			ch->written++;
			u->ctr.events_written++;
			if (o->id)
				o->id->reported++;
		}
		/* another error: the library's end is gone; EPOLLHUP reaps it */
		ch->head = o->next;
		if (!ch->head)
			ch->tail = NULL;
		ch->qlen--;
		free(o);
	}
	if (had && !ch->head)
		chan_arm(u, ch);
}

/* Queue (or write) ev for id on its channel.  0 or -ENOMEM. */
static int chan_push(struct sibd_ucma *u, struct ucma_chan *ch, struct ucma_id *id,
		     const struct sib_ctl_cm_event *ev)
{
	struct ucma_out *o;

	if (!ch->head) {
		int ret = chan_write(ch, ev);

		if (ret != -EAGAIN) {
			if (!ret) {
				ch->written++;
				u->ctr.events_written++;
				id->reported++;
			}
			return 0;
		}
	}
	if (!(o = calloc(1, sizeof(*o))))
		return -ENOMEM;
	o->id = id;
	o->ev = *ev;
	if (ch->tail)
		ch->tail->next = o;
	else
		ch->head = o;
	ch->tail = o;
	ch->qlen++;
	u->ctr.events_queued++;
	if (ch->head == o)
		chan_arm(u, ch);
	return 0;
}

/* Forget id's events in ch's queue, unsent: all of them (mc NULL: the
 * kernel's ucma_cleanup_events), or those of its multicast group *mc (a
 * leave: ucma_cleanup_mc_events, so that join/leave loops on a channel
 * nobody reads do not grow softibd). */
static void chan_forget(struct ucma_chan *ch, const struct ucma_id *id, const uint64_t *mc)
{
	struct ucma_out **pp = &ch->head, *o;

	ch->tail = NULL;
	while ((o = *pp)) {
		if (o->id == id && (!mc || (o->ev.listen_uid == *mc &&
					    (o->ev.event == SIB_CMA_EV_MULTICAST_JOIN ||
					     o->ev.event == SIB_CMA_EV_MULTICAST_ERROR)))) {
			*pp = o->next;
			ch->qlen--;
			free(o);
			continue;
		}
		ch->tail = o;
		pp = &o->next;
	}
}

static void id_free(struct sibd *d, struct ucma_id *id)
{
	struct sibd_ucma *u = d->ucma;

	if (id->chan)
		chan_forget(id->chan, id, NULL);
	sib_ht_remove(&u->ids, id->handle);
	u->nids--;
	free(id);
}

/* Destroy id (the rdma_cm's part first); returns its events_reported. */
static uint32_t id_destroy(struct sibd *d, struct ucma_id *id)
{
	uint32_t n;

	sib_cma_destroy_id(id->id);
	n = id->reported;
	id_free(d, id);
	return n;
}

static void chan_close(struct sibd *d, struct ucma_chan *ch)
{
	struct sibd_ucma *u = d->ucma;
	struct ucma_id *id;
	uint32_t pos = 0, h;

	while ((id = sib_ht_next(&u->ids, &pos, &h)))
		if (id->chan == ch)
			id_destroy(d, id);
	while (ch->head) {
		struct ucma_out *o = ch->head;

		ch->head = o->next;
		free(o);
	}
	epoll_ctl(u->ep_fd, EPOLL_CTL_DEL, ch->fd, NULL);
	close(ch->fd);
	sib_ht_remove(&u->chans, ch->handle);
	u->nchans--;
	u->ctr.chans_closed++;
	free(ch);
}

/* ---- the rdma_cm's host table ---- */

/* A new id of a CONNECT_REQUEST: a handle of the listener's connection on
 * its channel, if its process's budget and the channel's queue allow. */
static struct ucma_id *conn_req_id(struct sibd *d, struct sib_cma_id *cid,
				   const struct ucma_id *l)
{
	struct sibd_ucma *u = d->ucma;
	struct ucma_id *id;
	uint32_t h;

	if (!l || !l->chan || l->chan->qlen >= SIBD_UCMA_QUEUE_MAX ||
	    sibd_budget_take(d, l->owner->proc, SIBD_RES_CM_ID) ||
	    !(id = calloc(1, sizeof(*id))))
		return NULL;
	if (sib_ht_reserve(&u->ids, &h)) {
		free(id);
		return NULL;
	}
	id->owner = l->owner;
	id->handle = h;
	id->chan = l->chan;
	id->id = cid;
	sib_ht_publish(&u->ids, h, id);
	u->nids++;
	sib_cma_id_set_host(cid, id);
	return id;
}

static int host_event(void *ctx, struct sib_cma_id *cid, struct sib_ctl_cm_event *ev)
{
	struct sibd *d = ctx;
	struct sibd_ucma *u = d->ucma;
	struct ucma_id *id = sib_cma_id_host(cid), *l = NULL;

	if (ev->event == SIB_CMA_EV_CONNECT_REQUEST && !id) {
		struct sib_cma_id *lc = sib_cma_id_listener(cid);

		l = lc ? sib_cma_id_host(lc) : NULL;
		if (!(id = conn_req_id(d, cid, l))) {
			u->ctr.conn_refused++;
			return 1;
		}
		ev->listen_id = l->handle;
	}
	if (!id || !id->chan)
		return 0;
	ev->id = id->handle;
	if (u->trace)
		sibd_log("ucma: %llu.%03llu pid %d event %u status %d id %u",
			 (unsigned long long)(host_now(NULL) / 1000000000u),
			 (unsigned long long)(host_now(NULL) / 1000000u % 1000u), (int)id->owner->pid,
			 ev->event, ev->status, id->handle);
	/* a CONNECT_REQUEST is reported on its listener (ucma_get_event) */
	if (!chan_push(u, id->chan, l ? l : id, ev))
		return 0;
	if (!l)
		return 0; /* out of memory: the event is lost (logged by nobody) */
	sib_cma_id_set_host(cid, NULL); /* refused: the rdma_cm destroys cid itself */
	id_free(d, id);
	u->ctr.conn_refused++;
	return 1;
}

static struct sib_fab_node *host_device(void *ctx, uint32_t dev_index, uint32_t *gen)
{
	struct sibd *d = ctx;

	if (!sibd_dev_present(d, dev_index))
		return NULL;
	*gen = d->devs[dev_index].gen;
	return d->dev_node[dev_index];
}

static uint64_t host_now(void *ctx)
{
	struct timespec ts;

	(void)ctx;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static const struct sib_cma_host cma_host = {
	.event = host_event, .device = host_device, .now_ns = host_now,
};

/* ---- life ---- */

/* Index of the present device called name (NUL within 64 bytes), or -1. */
static int dev_by_name(const struct sibd *d, const char *name)
{
	if (!memchr(name, '\0', 64))
		return -1;
	for (uint32_t i = 0; i < d->num_devices && i < SIB_MAX_DEVICES; i++)
		if (sibd_dev_present(d, i) && !strcmp(d->devs[i].name, name))
			return (int)i;
	return -1;
}

/* sockaddr_in/in6 bytes of (family, addr) into sa: its length, 0 for
 * another family. */
static uint32_t ip_sockaddr(uint16_t fam, const uint8_t addr[16], uint8_t sa[SIB_CM_ADDR_LEN])
{
	memset(sa, 0, SIB_CM_ADDR_LEN);
	if (fam != AF_INET && fam != AF_INET6)
		return 0;
	memcpy(sa, &fam, 2);
	memcpy(sa + (fam == AF_INET ? 4 : 8), addr, fam == AF_INET ? 4 : 16);
	return fam == AF_INET ? 16 : 28;
}

/* --ip DEV:PORT=ADDR[/PREFIX]: one more address of a CA port.  0 or
 * -EINVAL (syntax, no such device or port), -EEXIST, -ENOSPC. */
static int add_ip(struct sibd *d, struct sib_cma *cma, const char *spec)
{
	char dev[64], addr[64], *slash;
	unsigned int port, prefix;
	uint8_t ip[16], sa[SIB_CM_ADDR_LEN];
	uint32_t len;
	uint16_t fam;
	int n = 0, i;

	if (sscanf(spec, "%63[^:]:%u=%63s%n", dev, &port, addr, &n) != 3 || spec[n] != '\0' ||
	    port == 0 || port > 255)
		return -EINVAL;
	slash = strchr(addr, '/');
	if (slash)
		*slash++ = '\0';
	fam = strchr(addr, ':') ? AF_INET6 : AF_INET;
	prefix = fam == AF_INET ? 32 : 128;
	if (slash && (sscanf(slash, "%u%n", &prefix, &n) != 1 || slash[n] != '\0' || prefix > 128))
		return -EINVAL;
	if (inet_pton(fam, addr, ip) != 1 || (i = dev_by_name(d, dev)) < 0 ||
	    port > d->dev_node[i]->num_ports)
		return -EINVAL;
	len = ip_sockaddr(fam, ip, sa);
	return sib_cma_addr_add(cma, (uint32_t)i, (uint8_t)port, sa, len, (uint8_t)prefix);
}

/*
 * IPADDR (sib_ctl.h): add, delete or list an address of a CA port in the
 * rdma_cm's table.  Every client may (softibd is per-uid; as PORT_SET).
 */
int sibd_cmd_ipaddr(struct sibd *d, struct sibd_client *c, struct sib_ctl_msg *m, int *pass_fd)
{
	struct sib_ctl_ipaddr *ia = &m->u.ipaddr;
	struct sib_cma_addr_info info;
	uint8_t sa[SIB_CM_ADDR_LEN];
	char text[INET6_ADDRSTRLEN];
	uint32_t len;
	int idx, ret;

	(void)pass_fd;
	if (!d->ucma)
		return -EOPNOTSUPP;
	if ((idx = dev_by_name(d, ia->dev)) < 0)
		return memchr(ia->dev, '\0', sizeof(ia->dev)) ? -ENODEV : -EINVAL;
	if (ia->port == 0 || ia->port > d->dev_node[idx]->num_ports)
		return -EINVAL;
	if (ia->op == SIB_IPADDR_GET) {
		ret = sib_cma_addr_get(d->ucma->cma, (uint32_t)idx, (uint8_t)ia->port, ia->index,
				       &info);
		if (ret)
			return ret;
		ia->family = info.family == 2 ? AF_INET : AF_INET6;
		ia->prefix = info.prefix;
		ia->flags = info.is_default ? SIB_IPADDR_F_DEFAULT : 0;
		memcpy(ia->addr, info.addr, 16);
		return 0;
	}
	if ((ia->op != SIB_IPADDR_ADD && ia->op != SIB_IPADDR_DEL) ||
	    !(len = ip_sockaddr(ia->family, ia->addr, sa)))
		return -EINVAL;
	if (ia->op == SIB_IPADDR_ADD)
		ret = sib_cma_addr_add(d->ucma->cma, (uint32_t)idx, (uint8_t)ia->port, sa, len,
				       ia->prefix);
	else
		ret = sib_cma_addr_del(d->ucma->cma, (uint32_t)idx, (uint8_t)ia->port, sa, len,
				       ia->prefix);
	if (ret)
		return ret;
	inet_ntop(ia->family, ia->addr, text, sizeof(text));
	sibd_log("%s port %u: address %s/%u %s (pid %d)", ia->dev, ia->port, text, ia->prefix,
		 ia->op == SIB_IPADDR_ADD ? "added" : "deleted", (int)c->pid);
	return 0;
}

/* The topology's caip= addresses of every CA (fabric.h) into the table.
 * 0, or the first error (logged). */
static int add_topology_ips(struct sibd *d, struct sib_cma *cma)
{
	uint8_t sa[SIB_CM_ADDR_LEN];
	char text[INET6_ADDRSTRLEN];

	for (uint32_t i = 0; i < d->num_devices && i < SIB_MAX_DEVICES; i++) {
		const struct sib_fab_node *n = d->dev_node[i];

		if (!sibd_dev_present(d, i) || !n)
			continue;
		for (unsigned int k = 0; k < n->n_ips; k++) {
			const struct sib_fab_ip *ip = &n->ips[k];
			uint32_t len = ip_sockaddr(ip->family, ip->addr, sa);
			int ret = sib_cma_addr_add(cma, i, ip->port, sa, len, ip->prefix);

			if (ret) {
				inet_ntop(ip->family, ip->addr, text, sizeof(text));
				sibd_log("topology: caip=%u:%s/%u of %s: %s", ip->port, text,
					 ip->prefix, d->devs[i].name, strerror(-ret));
				return ret;
			}
		}
	}
	return 0;
}

int sibd_ucma_init(struct sibd *d)
{
	struct sibd_ucma *u = calloc(1, sizeof(*u));

	if (!u)
		return -ENOMEM;
	u->ep_fd = epoll_create1(EPOLL_CLOEXEC);
	if (u->ep_fd < 0) {
		free(u);
		return -errno;
	}
	if (!(u->cma = sib_cma_new(d->sn, &cma_host, d))) {
		close(u->ep_fd);
		free(u);
		return -ENOMEM;
	}
	sib_cma_seed(u->cma, host_now(NULL) ^ (uint64_t)getpid() << 32);
	u->trace = getenv("SOFTIBD_CM_TRACE") != NULL;
	d->ucma = u;
	for (unsigned int i = 0; i <= d->ncm_ips; i++) {
		int ret = i == d->ncm_ips ? add_topology_ips(d, u->cma) :
			  add_ip(d, u->cma, d->cm_ips[i]);

		if (ret) {
			if (i < d->ncm_ips)
				sibd_log("--ip %s: %s", d->cm_ips[i], strerror(-ret));
			d->ucma = NULL;
			sib_cma_delete(u->cma);
			close(u->ep_fd);
			free(u);
			return ret;
		}
	}
	sib_ht_init(&u->ids, SIBD_UCMA_IDS_MAX);
	sib_ht_init(&u->chans, SIBD_UCMA_CHANS_MAX);
	return 0;
}

void sibd_ucma_fini(struct sibd *d)
{
	struct sibd_ucma *u = d->ucma;
	struct ucma_chan *ch;
	uint32_t pos = 0, h;

	if (!u)
		return;
	while ((ch = sib_ht_next(&u->chans, &pos, &h)))
		chan_close(d, ch);
	sib_cma_delete(u->cma);
	sib_ht_fini(&u->ids);
	sib_ht_fini(&u->chans);
	close(u->ep_fd);
	free(u);
	d->ucma = NULL;
}

int sibd_ucma_poll_fd(const struct sibd *d)
{
	return d->ucma ? d->ucma->ep_fd : -1;
}

void sibd_ucma_dispatch(struct sibd *d)
{
	struct sibd_ucma *u = d->ucma;

	if (!u || u->in_dispatch)
		return;
	u->in_dispatch = true;
	sib_cma_dispatch(u->cma);
	u->in_dispatch = false;
}

void sibd_ucma_event(struct sibd *d)
{
	struct sibd_ucma *u = d->ucma;
	struct epoll_event ev[32];
	int n = epoll_wait(u->ep_fd, ev, 32, 0);

	for (int i = 0; i < n; i++) {
		struct ucma_chan *ch = ev[i].data.ptr;
		char junk[64];

		if (ev[i].events & (EPOLLHUP | EPOLLERR)) {
			chan_close(d, ch);
			continue;
		}
		if (ev[i].events & EPOLLIN) { /* the library writes nothing: EOF or junk */
			ssize_t r = recv(ch->fd, junk, sizeof(junk), MSG_DONTWAIT);

			if (r == 0) {
				chan_close(d, ch);
				continue;
			}
			if (r > 0)
				u->ctr.bad_commands++;
		}
		if (ev[i].events & EPOLLOUT)
			chan_flush(u, ch);
	}
	sibd_ucma_dispatch(d);
}

int sibd_ucma_timeout(struct sibd *d, int timeout)
{
	struct sibd_ucma *u = d->ucma;
	uint64_t now, next;
	long long ms;

	if (!u)
		return timeout;
	now = host_now(NULL);
	next = sib_cma_tick(u->cma, now);
	if (!next)
		return timeout;
	ms = next <= now ? 0 : (long long)((next - now + 999999) / 1000000);
	if (ms > 60000)
		ms = 60000;
	return timeout < 0 || ms < timeout ? (int)ms : timeout;
}

void sibd_ucma_timers(struct sibd *d)
{
	if (d->ucma)
		sib_cma_tick(d->ucma->cma, host_now(NULL));
}

void sibd_ucma_device_gone(struct sibd *d, uint32_t dev_index)
{
	if (!d->ucma || dev_index >= SIB_MAX_DEVICES || !d->dev_node[dev_index])
		return;
	sib_cma_node_gone(d->ucma->cma, d->dev_node[dev_index]);
	sib_cma_addr_flush(d->ucma->cma, dev_index); /* a netdev's addresses go with it */
	sibd_ucma_dispatch(d);
}

void sibd_ucma_client_gone(struct sibd *d, struct sibd_client *c)
{
	struct sibd_ucma *u = d->ucma;
	struct ucma_chan *ch;
	struct ucma_id *id;
	uint32_t pos = 0, h;

	if (!u)
		return;
	while ((id = sib_ht_next(&u->ids, &pos, &h)))
		if (id->owner == c)
			id_destroy(d, id);
	pos = 0;
	while ((ch = sib_ht_next(&u->chans, &pos, &h)))
		if (ch->owner == c)
			chan_close(d, ch);
	sibd_ucma_dispatch(d);
}

uint32_t sibd_ucma_ids_of(const struct sibd *d, const struct sibd_proc *p)
{
	const struct sibd_ucma *u = d->ucma;
	struct ucma_id *id;
	uint32_t pos = 0, h, n = 0;

	if (!u)
		return 0;
	if (!p)
		return u->nids;
	while ((id = sib_ht_next(&u->ids, &pos, &h)))
		n += id->owner->proc == p;
	return n;
}

uint32_t sibd_ucma_chans_of(const struct sibd *d, const struct sibd_proc *p)
{
	const struct sibd_ucma *u = d->ucma;
	struct ucma_chan *ch;
	uint32_t pos = 0, h, n = 0;

	if (!u)
		return 0;
	if (!p)
		return u->nchans;
	while ((ch = sib_ht_next(&u->chans, &pos, &h)))
		n += ch->owner->proc == p;
	return n;
}

/* "rdma_cm_addrs added=N" and one "rdma_cm_addr DEV:PORT ADDR/PREFIX" line
 * per address added (--ip, IPADDR; not the defaults). */
static void ucma_status_addrs(struct sibd *d, FILE *f)
{
	struct sib_cma_addr_info info;
	char text[INET6_ADDRSTRLEN];

	fprintf(f, "rdma_cm_addrs added=%u\n", sib_cma_addr_count(d->ucma->cma));
	for (uint32_t i = 0; i < d->num_devices && i < SIB_MAX_DEVICES; i++) {
		if (!sibd_dev_present(d, i))
			continue;
		for (uint8_t p = 1; p <= d->dev_node[i]->num_ports; p++)
			for (uint32_t k = 2; !sib_cma_addr_get(d->ucma->cma, i, p, k, &info); k++) {
				inet_ntop(info.family == 2 ? AF_INET : AF_INET6, info.addr, text,
					  sizeof(text));
				fprintf(f, "rdma_cm_addr %s:%u %s/%u\n", d->devs[i].name, p, text,
					info.prefix);
			}
	}
}

void sibd_ucma_status(struct sibd *d, FILE *f)
{
	const struct sibd_ucma *u = d->ucma;
	const struct sib_cma_counters *k;
	struct ucma_chan *ch;
	uint32_t pos = 0, h, queued = 0;

	if (!u)
		return;
	k = sib_cma_counters(u->cma);
	while ((ch = sib_ht_next(&u->chans, &pos, &h)))
		queued += ch->qlen;
	fprintf(f, "ucma ids=%u channels=%u events_queued=%u commands=%llu bad_commands=%llu "
		"events_written=%llu events_waited=%llu conn_req_refused=%llu channels_opened=%llu "
		"channels_closed=%llu\n", u->nids, u->nchans, queued,
		(unsigned long long)u->ctr.commands, (unsigned long long)u->ctr.bad_commands,
		(unsigned long long)u->ctr.events_written, (unsigned long long)u->ctr.events_queued,
		(unsigned long long)u->ctr.conn_refused, (unsigned long long)u->ctr.chans_opened,
		(unsigned long long)u->ctr.chans_closed);
	fprintf(f, "rdma_cm ids=%llu created=%llu destroyed=%llu events=%llu route_queries=%llu "
		"route_answers=%llu route_timeouts=%llu connects=%llu accepts=%llu rejects=%llu "
		"rejected=%llu established=%llu disconnects=%llu unreachable=%llu req_dropped=%llu "
		"listening=%u\n",
		(unsigned long long)k->ids, (unsigned long long)k->created,
		(unsigned long long)k->destroyed, (unsigned long long)k->events,
		(unsigned long long)k->route_queries, (unsigned long long)k->route_answers,
		(unsigned long long)k->route_timeouts, (unsigned long long)k->connects,
		(unsigned long long)k->accepts, (unsigned long long)k->rejects_sent,
		(unsigned long long)k->rejected, (unsigned long long)k->established,
		(unsigned long long)k->disconnects, (unsigned long long)k->unreachable,
		(unsigned long long)k->req_dropped, sib_cma_listening(u->cma));
	fprintf(f, "rdma_cm_mcast joins=%llu joined=%llu errors=%llu timeouts=%llu leaves=%llu "
		"bad_answers=%llu\n", (unsigned long long)k->mc_joins,
		(unsigned long long)k->mc_joined, (unsigned long long)k->mc_errors,
		(unsigned long long)k->mc_timeouts, (unsigned long long)k->mc_leaves,
		(unsigned long long)k->mc_bad_answers);
	ucma_status_addrs(d, f);
}

/* ---- commands ---- */

static struct ucma_id *id_of(struct sibd *d, struct sibd_client *c, uint32_t handle)
{
	struct ucma_id *id = sib_ht_lookup(&d->ucma->ids, handle);

	return id && id->owner == c ? id : NULL;
}

static struct ucma_chan *chan_of(struct sibd *d, struct sibd_client *c, uint32_t handle)
{
	struct ucma_chan *ch = sib_ht_lookup(&d->ucma->chans, handle);

	return ch && ch->owner == c ? ch : NULL;
}

static int cmd_channel_open(struct sibd *d, struct sibd_client *c, struct sib_ctl_msg *m)
{
	struct sibd_ucma *u = d->ucma;
	struct epoll_event ev = { .events = EPOLLIN };
	struct ucma_chan *ch;
	uint32_t h;
	int sv[2], ret;

	if ((ret = sibd_budget_take(d, c->proc, SIBD_RES_CM_CHAN)))
		return ret;
	if (!(ch = calloc(1, sizeof(*ch))))
		return -ENOMEM;
	if (sib_ht_reserve(&u->chans, &h)) {
		free(ch);
		return -ENFILE;
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) < 0) {
		ret = -errno;
		sib_ht_abort(&u->chans, h);
		free(ch);
		return ret;
	}
	/* the library's end blocks unless it asks otherwise (rdma_get_cm_event) */
	fcntl(sv[1], F_SETFL, fcntl(sv[1], F_GETFL) & ~O_NONBLOCK);
	ev.data.ptr = ch;
	if (epoll_ctl(u->ep_fd, EPOLL_CTL_ADD, sv[0], &ev) < 0) {
		ret = -errno;
		close(sv[0]);
		close(sv[1]);
		sib_ht_abort(&u->chans, h);
		free(ch);
		return ret;
	}
	ch->owner = c;
	ch->handle = h;
	ch->fd = sv[0];
	sib_ht_publish(&u->chans, h, ch);
	u->nchans++;
	u->ctr.chans_opened++;
	m->u.cm.channel = h;
	m->hdr.magic = SIB_CTL_MAGIC;
	m->hdr.flags = 0;
	m->hdr.status = 0;
	sibd_client_send(d, c, m, sv[1]);
	close(sv[1]);
	return SIBD_REPLIED;
}

static int cmd_create_id(struct sibd *d, struct sibd_client *c, struct sib_ctl_cm *cm)
{
	struct sibd_ucma *u = d->ucma;
	struct ucma_chan *ch = chan_of(d, c, cm->channel);
	struct ucma_id *id;
	uint32_t h;
	int ret;

	if (!ch)
		return -EBADF;
	if ((ret = sibd_budget_take(d, c->proc, SIBD_RES_CM_ID)))
		return ret;
	if (!(id = calloc(1, sizeof(*id))))
		return -ENOMEM;
	if (sib_ht_reserve(&u->ids, &h)) {
		free(id);
		return -ENFILE;
	}
	ret = sib_cma_create_id(u->cma, (uint64_t)(uintptr_t)c, cm->uid, cm->ps, cm->qp_type,
				&id->id);
	if (ret) {
		sib_ht_abort(&u->ids, h);
		free(id);
		return ret;
	}
	id->owner = c;
	id->handle = h;
	id->chan = ch;
	sib_cma_id_set_host(id->id, id);
	sib_ht_publish(&u->ids, h, id);
	u->nids++;
	cm->id = h;
	return 0;
}

/* Is qpn a QP of c's process on device dev?  0 or -EINVAL. */
static int check_qp(struct sibd *d, struct sibd_client *c, uint32_t dev, uint32_t qpn)
{
	uint32_t qp_dev;

	if (dev == SIB_CM_NO_DEVICE || sibd_proc_qpn(d, c->proc, qpn, &qp_dev) || qp_dev != dev)
		return -EINVAL;
	return 0;
}

static int cmd_migrate(struct sibd *d, struct sibd_client *c, struct ucma_id *id,
		       struct sib_ctl_cm *cm)
{
	struct sibd_ucma *u = d->ucma;
	struct ucma_chan *to = chan_of(d, c, cm->channel), *from = id->chan;
	struct ucma_out **pp, *o;

	if (!to)
		return -EBADF;
	cm->events_reported = id->reported;
	if (to == from)
		return 0;
	/* its events still in softibd move along (ucma_migrate_id) */
	for (pp = &from->head; (o = *pp);) {
		if (o->id != id) {
			pp = &o->next;
			continue;
		}
		*pp = o->next;
		from->qlen--;
		o->next = NULL;
		if (to->tail)
			to->tail->next = o;
		else
			to->head = o;
		to->tail = o;
		to->qlen++;
	}
	from->tail = NULL;
	for (o = from->head; o; o = o->next)
		from->tail = o;
	id->chan = to;
	chan_arm(u, from);
	chan_arm(u, to);
	return 0;
}

/* Does cmd queue an event of its own (its answer comes as one)? */
static bool makes_event(uint32_t cmd)
{
	switch (cmd) {
	case SIB_CM_CMD_RESOLVE_ADDR:
	case SIB_CM_CMD_RESOLVE_ROUTE:
	case SIB_CM_CMD_CONNECT:
	case SIB_CM_CMD_ACCEPT:
	case SIB_CM_CMD_REJECT:
	case SIB_CM_CMD_DISCONNECT:
	case SIB_CM_CMD_JOIN_MCAST:
		return true;
	default:
		return false;
	}
}

/* The commands on an id. */
static int cmd_on_id(struct sibd *d, struct sibd_client *c, struct sib_ctl_cm *cm)
{
	struct ucma_id *id = id_of(d, c, cm->id);
	struct sib_cma_id *k;
	int ret;

	if (!id)
		return -EBADF;
	k = id->id;
	if (cm->pdata_len > SIB_CM_PDATA_MAX || cm->src_len > SIB_CM_ADDR_LEN ||
	    cm->dst_len > SIB_CM_ADDR_LEN)
		return -EINVAL;
	/* A channel whose reader let SIBD_UCMA_QUEUE_MAX events pile up takes
	 * no command that would queue another: softibd's memory is everyone's
	 * (the kernel queues without bound, charged to the process). */
	if (id->chan && id->chan->qlen >= SIBD_UCMA_QUEUE_MAX && makes_event(cm->cmd))
		return -ENOBUFS;
	switch (cm->cmd) {
	case SIB_CM_CMD_DESTROY_ID:
		cm->events_reported = id_destroy(d, id);
		return 0;
	case SIB_CM_CMD_BIND:
		ret = sib_cma_bind(k, cm->src_addr, cm->src_len);
		if (!ret)
			sib_cma_query(k, cm);
		return ret;
	case SIB_CM_CMD_RESOLVE_ADDR:
		return sib_cma_resolve_addr(k, cm->src_addr, cm->src_len, cm->dst_addr, cm->dst_len,
					    cm->timeout_ms);
	case SIB_CM_CMD_RESOLVE_ROUTE:
		return sib_cma_resolve_route(k, cm->timeout_ms);
	case SIB_CM_CMD_QUERY:
		sib_cma_query(k, cm);
		return 0;
	case SIB_CM_CMD_CONNECT:
		/* an RC/UC id's REQ names the caller's QP (the id's type, never
		 * what the message says); a UD id's SIDR_REQ names none */
		if (sib_cma_id_qp_type(k) != IBV_QPT_UD &&
		    check_qp(d, c, sib_cma_id_dev(k), cm->conn.qp_num))
			return -EINVAL;
		return sib_cma_connect(k, &cm->conn, cm->pdata, cm->pdata_len);
	case SIB_CM_CMD_LISTEN:
		return sib_cma_listen(k, cm->backlog);
	case SIB_CM_CMD_ACCEPT:
		/* the active side's RTU names no QP; the passive side's must be ours */
		if (cm->conn.qp_num && check_qp(d, c, sib_cma_id_dev(k), cm->conn.qp_num))
			return -EINVAL;
		ret = sib_cma_accept(k, &cm->conn, cm->pdata, cm->pdata_len);
		if (!ret && cm->uid)
			sib_cma_id_set_uid(k, cm->uid);
		return ret;
	case SIB_CM_CMD_REJECT:
		return sib_cma_reject(k, cm->reason, cm->pdata, cm->pdata_len);
	case SIB_CM_CMD_DISCONNECT:
		return sib_cma_disconnect(k);
	case SIB_CM_CMD_INIT_QP_ATTR:
		return sib_cma_init_qp_attr(k, cm->qp_state, &cm->qp_attr);
	case SIB_CM_CMD_NOTIFY:
		return sib_cma_notify(k, cm->event);
	case SIB_CM_CMD_SET_OPTION:
		if (cm->optlen > sizeof(cm->optval))
			return -EINVAL;
		return sib_cma_set_option(k, cm->level, cm->optname, cm->optval, cm->optlen);
	case SIB_CM_CMD_MIGRATE_ID:
		return cmd_migrate(d, c, id, cm);
	case SIB_CM_CMD_JOIN_MCAST: /* uid: the group's cookie (the kernel's ucma) */
		return sib_cma_join_mcast(k, cm->uid, cm->dst_addr, cm->dst_len, cm->join_flags);
	case SIB_CM_CMD_LEAVE_MCAST: {
		uint64_t cookie;

		cm->events_reported = 0; /* the library counts none per group */
		ret = sib_cma_leave_mcast(k, cm->dst_addr, cm->dst_len, &cookie);
		if (!ret && id->chan)
			chan_forget(id->chan, id, &cookie);
		return ret;
	}
	default:
		return -EINVAL;
	}
}

int sibd_cmd_cm(struct sibd *d, struct sibd_client *c, struct sib_ctl_msg *m, int *pass_fd)
{
	struct sib_ctl_cm *cm = &m->u.cm;
	struct sibd_ucma *u = d->ucma;
	struct ucma_chan *ch;
	int ret;

	(void)pass_fd;
	if (!u)
		return -ENODEV;
	u->ctr.commands++;
	switch (cm->cmd) {
	case SIB_CM_CMD_CHANNEL_OPEN:
		ret = cmd_channel_open(d, c, m);
		break;
	case SIB_CM_CMD_CHANNEL_CLOSE:
		ret = (ch = chan_of(d, c, cm->channel)) ? (chan_close(d, ch), 0) : -EBADF;
		break;
	case SIB_CM_CMD_CREATE_ID:
		ret = cmd_create_id(d, c, cm);
		break;
	default:
		ret = cm->cmd > 0 && cm->cmd < SIB_CM_CMD_MAX ? cmd_on_id(d, c, cm) : -EINVAL;
		break;
	}
	if (ret && ret != SIBD_REPLIED)
		u->ctr.bad_commands++;
	if (u->trace)
		sibd_log("ucma: %llu.%03llu pid %d cmd %u id %u channel %u: %d",
			 (unsigned long long)(host_now(NULL) / 1000000000u),
			 (unsigned long long)(host_now(NULL) / 1000000u % 1000u), (int)c->pid, cm->cmd,
			 cm->id, cm->channel, ret == SIBD_REPLIED ? 0 : ret);
	sibd_ucma_dispatch(d);
	return ret;
}
