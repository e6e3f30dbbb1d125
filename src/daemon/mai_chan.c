// SPDX-License-Identifier: MIT
/*
 * MAI channels in softibd (seed 002; docs/mai.md "Channels"): MAI_OPEN's
 * socketpairs carrying mai_mmstream streams, filters (clients' and the
 * internal SMA/PMA's), TID stamping, mai_send_req timeouts (umad semantics),
 * OOB, privilege.  Never trusts or blocks on a client: bad bytes are counted;
 * a full socket holds the MAD and stops reading its sender's channel until
 * room comes (flow control), for at most HOLD_MS, then drops and counts.
 * Single-threaded; closed channels freed only by reap().
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon/mai_chan.h"
#include "daemon/softibd.h"
#include "iba/mad.h"

#define CHAN_BURST	32	/* messages read per channel per wakeup */
#define REQ_TRAILER	8	/* mai_send_req: timeout_ms, retries (big-endian u32 each) */
#define CAP_NET_ADMIN_BIT 12	/* linux/capability.h */
#define PEND_FIRST	8	/* pending entries a channel starts with; doubled up to the max */

unsigned int sibd_mai_chans_max = SIBD_MAI_CHANS_MAX;
#define HELD_MAX	64	/* MADs held for a full channel (flow control) */
#define HOLD_MS		2000	/* a full channel that takes nothing this long is stalled */

struct pending {
	mai_mad_t m;		/* the request as sent (TID stamped) */
	uint32_t timeout_ms;
	uint32_t retries;	/* resends left */
	long long deadline;	/* sibd_now_ms() */
};

/* A request the channel sent that may still be answered (docs/mai.md
 * "Responses"): a mai_send one until its first response, an answered one
 * for the RMPP segments after the first. */
struct answered {
	uint64_t tid;
	long long expires;	/* sibd_now_ms() */
	uint8_t mgmt_class;
	bool used;		/* a response came: only RMPP segments now */
};

struct filt {
	mai_filter_t f;
	uint64_t seq;
};

struct chan {
	struct chan *next;
	uint32_t num;
	int fd;			/* our end of the socketpair */
	struct sibd_client *owner;
	struct sib_fab_node *node;
	uint32_t dev_index;
	uint8_t port, qp;
	bool priv, dead;
	uint32_t next_handle;
	uint32_t nfilt;
	struct filt filt[SIBD_MAI_FILTERS_MAX];
	uint32_t npend, pend_cap;
	struct pending *pend;	/* pend_cap entries (<= SIBD_MAI_PENDING_MAX), grown on use */
	struct answered ans[SIBD_MAI_ANSWERED];	/* a ring, oldest overwritten */
	uint32_t ans_next;
	uint64_t rx, tx, dropped;
	/* flow control: streams its full socket did not take yet, in order */
	uint8_t (*held)[MAI_MSTREAM_SIZE]; /* HELD_MAX, allocated on first use */
	uint32_t nheld;
	long long held_since;	/* last progress of the held ones (sibd_now_ms) */
	bool stalled;		/* took nothing for HOLD_MS: drops until it takes one */
	struct chan *waits_on;	/* not read while this full channel holds its MAD */
};

struct sibd_mai {
	int ep_fd;
	struct chan *chans;
	uint32_t nchans;
	uint32_t next_num;
	uint64_t seq;
	struct chan *cur_src;	/* the channel whose message is being routed */
	/* scratch for sibd_mai_ents */
	struct mai_filter_ent *ents;
	size_t ents_cap;
};

/* ---- channels -------------------------------------------------------------- */

static struct chan *chan_find(struct sibd_mai *mai, uint32_t num)
{
	for (struct chan *ch = mai->chans; ch; ch = ch->next)
		if (ch->num == num && !ch->dead)
			return ch;
	return NULL;
}

/* The epoll events ch is watched for: EPOLLIN unless it waits on a full
 * channel, EPOLLOUT while it holds MADs. */
static void chan_watch(struct sibd *d, struct chan *ch)
{
	struct epoll_event ev = {
		.events = (ch->waits_on ? 0 : EPOLLIN) | (ch->nheld ? EPOLLOUT : 0),
		.data.ptr = ch,
	};

	if (!ch->dead)
		epoll_ctl(d->mai->ep_fd, EPOLL_CTL_MOD, ch->fd, &ev);
}

/* ch holds nothing any more: the channels waiting on it are read again. */
static void chan_release(struct sibd *d, struct chan *ch)
{
	ch->nheld = 0;
	chan_watch(d, ch);
	for (struct chan *o = d->mai->chans; o; o = o->next)
		if (o->waits_on == ch) {
			o->waits_on = NULL;
			chan_watch(d, o);
		}
}

static void held_drop(struct sibd *d, struct chan *ch)
{
	ch->dropped += ch->nheld;
	sib_subnet_mad_count(d->sn, SIB_MAD_EV_QUEUE_FULL, ch->nheld);
	chan_release(d, ch);
}

/* Mark closed: the struct goes at the next reap (callers may hold it). */
static void chan_kill(struct sibd *d, struct chan *ch)
{
	if (ch->dead)
		return;
	held_drop(d, ch);
	ch->dead = true;
	epoll_ctl(d->mai->ep_fd, EPOLL_CTL_DEL, ch->fd, NULL);
	close(ch->fd);
	ch->fd = -1;
}

static void reap(struct sibd *d)
{
	struct sibd_mai *mai = d->mai;
	struct chan **pp = &mai->chans, *ch;

	while ((ch = *pp)) {
		if (!ch->dead) {
			pp = &ch->next;
			continue;
		}
		*pp = ch->next;
		mai->nchans--;
		free(ch->pend);
		free(ch->held);
		free(ch);
	}
}

/* A full channel keeps buf (after what it holds) unless it is stalled or
 * holds HELD_MAX; the channel being read stops until ch has room. */
static int chan_hold(struct sibd *d, struct chan *ch, const uint8_t *buf)
{
	struct chan *src = d->mai->cur_src;

	if (ch->stalled || ch->nheld >= HELD_MAX || (!ch->nheld && !src))
		return -EAGAIN;
	if (!ch->held)
		ch->held = malloc(HELD_MAX * sizeof(*ch->held));
	if (!ch->held)
		return -EAGAIN;
	if (!ch->nheld)
		ch->held_since = sibd_now_ms();
	memcpy(ch->held[ch->nheld++], buf, MAI_MSTREAM_SIZE);
	if (src && !src->dead)
		src->waits_on = ch;
	chan_watch(d, ch);
	if (src)
		chan_watch(d, src);
	return 0;
}

/* EPOLLOUT: what ch holds, in order, as far as its socket takes it. */
static void chan_flush(struct sibd *d, struct chan *ch)
{
	uint32_t i = 0;

	while (i < ch->nheld && !ch->dead) {
		ssize_t w = send(ch->fd, ch->held[i], MAI_MSTREAM_SIZE, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (w != (ssize_t)MAI_MSTREAM_SIZE) {
			if (w < 0 && errno != EAGAIN && errno != ENOBUFS)
				chan_kill(d, ch);
			break;
		}
		ch->rx++;
		sib_subnet_mad_count(d->sn, SIB_MAD_EV_DELIVERED, 1);
		i++;
	}
	if (ch->dead || !i)
		return;
	memmove(ch->held, ch->held + i, (ch->nheld - i) * sizeof(*ch->held));
	ch->nheld -= i;
	ch->held_since = sibd_now_ms();
	if (!ch->nheld)
		chan_release(d, ch);
}

/* Write m to the channel's socket: never blocks; a full socket holds it
 * (chan_hold) or drops it. */
static int chan_write(struct sibd *d, struct chan *ch, const mai_mad_t *m)
{
	uint8_t buf[MAI_MSTREAM_SIZE];
	int n = mai_mmstream(m, buf, sizeof(buf));
	ssize_t w = -1;

	if (n != MAI_MSTREAM_SIZE || ch->dead)
		return -EINVAL;
	errno = EAGAIN;
	if (!ch->nheld) /* else behind what it holds, to keep the order */
		w = send(ch->fd, buf, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (w == n) {
		ch->rx++;
		ch->stalled = false;
		sib_subnet_mad_count(d->sn, SIB_MAD_EV_DELIVERED, 1);
		return 0;
	}
	if (w < 0 && (errno == EAGAIN || errno == ENOBUFS) && !chan_hold(d, ch, buf))
		return 0;
	ch->dropped++;
	if (w < 0 && (errno == EAGAIN || errno == ENOBUFS)) {
		sib_subnet_mad_count(d->sn, SIB_MAD_EV_QUEUE_FULL, 1);
		return -EAGAIN;
	}
	chan_kill(d, ch); /* EPIPE, ECONNRESET: the client end is gone */
	return -EPIPE;
}

int sibd_mai_push(struct sibd *d, uint32_t chan, const mai_mad_t *m)
{
	struct chan *ch = chan_find(d->mai, chan);

	if (!ch)
		return -ENOENT;
	return chan_write(d, ch, m);
}

/* Remember that ch sent request (tid, class), or that it was answered
 * (used): responses to it are taken for SIBD_MAI_ANSWER_MS. */
static void answered_add(struct chan *ch, uint64_t tid, uint8_t cls, bool used)
{
	struct answered *a = NULL;

	for (uint32_t i = 0; i < SIBD_MAI_ANSWERED && !a; i++)
		if (ch->ans[i].expires && ch->ans[i].tid == tid && ch->ans[i].mgmt_class == cls)
			a = &ch->ans[i];
	if (!a)
		a = &ch->ans[ch->ans_next++ % SIBD_MAI_ANSWERED];
	*a = (struct answered){ .tid = tid, .mgmt_class = cls, .used = used,
				.expires = sibd_now_ms() + SIBD_MAI_ANSWER_MS };
}

/* An RMPP segment with RMPPFlags.Active (MAD byte 26 bit 0; IBA 13.6.2.1)
 * of a class that uses RMPP (SA, DevMgt, CC, vendor range 2). */
static bool rmpp_active(const mai_mad_t *m)
{
	uint8_t c = m->mgmt_class;

	return (c == 0x03 || c == 0x06 || c == 0x21 || (c >= 0x30 && c <= 0x4F)) &&
	       (m->data[26 - 24] & 1);
}

int sibd_mai_response(struct sibd *d, uint32_t chan, const struct sib_fab_node *n, uint8_t port,
		      uint8_t qp, const mai_mad_t *m)
{
	struct chan *ch = chan_find(d->mai, chan);
	long long now;

	if (!ch || ch->node != n || ch->port != port || ch->qp != qp)
		return -ENOENT;
	for (uint32_t i = 0; i < ch->npend; i++)
		if (ch->pend[i].m.tid == m->tid && ch->pend[i].m.mgmt_class == m->mgmt_class) {
			ch->pend[i] = ch->pend[--ch->npend];
			answered_add(ch, m->tid, m->mgmt_class, true);
			chan_write(d, ch, m);
			return 0;
		}
	now = sibd_now_ms();
	for (uint32_t i = 0; i < SIBD_MAI_ANSWERED; i++) {
		struct answered *a = &ch->ans[i];

		if (a->expires <= now || a->tid != m->tid || a->mgmt_class != m->mgmt_class ||
		    (a->used && !rmpp_active(m)))
			continue;
		a->used = true;
		a->expires = now + SIBD_MAI_ANSWER_MS;
		chan_write(d, ch, m);
		return 0;
	}
	return -ESRCH;
}

/* Appends ch's filters to mai->ents[cnt..]; returns the new count (what
 * fits if memory runs out: those still decide). */
static size_t ents_add(struct sibd_mai *mai, size_t cnt, const struct chan *ch)
{
	for (uint32_t i = 0; i < ch->nfilt; i++) {
		if (cnt == mai->ents_cap) {
			size_t cap = mai->ents_cap ? mai->ents_cap * 2 : 256;
			struct mai_filter_ent *e = realloc(mai->ents, cap * sizeof(*e));

			if (!e)
				return cnt;
			mai->ents = e;
			mai->ents_cap = cap;
		}
		mai->ents[cnt++] = (struct mai_filter_ent){
			.chan = ch->num, .seq = ch->filt[i].seq, .f = &ch->filt[i].f,
		};
	}
	return cnt;
}

size_t sibd_mai_ents(struct sibd *d, const struct sib_fab_node *n, uint8_t port, uint8_t qp,
		     const struct mai_filter_ent *tail, size_t ntail,
		     const struct mai_filter_ent **ents)
{
	struct sibd_mai *mai = d->mai;
	size_t cnt = 0;

	for (struct chan *ch = mai ? mai->chans : NULL; ch; ch = ch->next)
		if (!ch->dead && ch->node == n && ch->port == port && ch->qp == qp)
			cnt = ents_add(mai, cnt, ch);
	if (cnt == 0) {
		/* the common case: only the subnet's agents */
		*ents = tail;
		return ntail;
	}
	if (cnt + ntail > mai->ents_cap) {
		size_t cap = cnt + ntail;
		struct mai_filter_ent *e = realloc(mai->ents, cap * sizeof(*e));

		if (!e) {
			*ents = mai->ents;
			return cnt;
		}
		mai->ents = e;
		mai->ents_cap = cap;
	}
	memcpy(mai->ents + cnt, tail, ntail * sizeof(*mai->ents));
	*ents = mai->ents;
	return cnt + ntail;
}

/* ---- what a channel sends ---------------------------------------------------- */

static bool is_request(const mai_mad_t *m)
{
	return !(m->method & MAD_METHOD_RESP_MASK) && m->method != MAD_METHOD_TRAP_REPRESS;
}

/* The request's header back to its channel as MAI_TYPE_TIMEOUT. */
static void timeout_msg(struct sibd *d, struct chan *ch, const mai_mad_t *req)
{
	mai_mad_t t = *req;

	t.type = MAI_TYPE_TIMEOUT;
	t.data_len = 0;
	memset(t.data, 0, sizeof(t.data));
	sib_subnet_mad_count(d->sn, SIB_MAD_EV_TIMEOUT, 1);
	chan_write(d, ch, &t);
}

/* OOB (seed 002): wrapped back to every channel on the same device and QP
 * whose filters pass it, consuming or not. */
static void oob_wrap(struct sibd *d, struct chan *from, const mai_mad_t *m)
{
	struct sibd_mai *mai = d->mai;
	uint32_t out[256];
	size_t cnt = 0;
	int r;

	for (struct chan *ch = mai->chans; ch; ch = ch->next)
		if (!ch->dead && ch->node == from->node && ch->qp == from->qp)
			cnt = ents_add(mai, cnt, ch);
	sib_subnet_mad_count(d->sn, SIB_MAD_EV_OOB, 1);
	r = mai_match(mai->ents, cnt, m, out, sizeof(out) / sizeof(out[0]));
	if (r > (int)(sizeof(out) / sizeof(out[0])))
		r = (int)(sizeof(out) / sizeof(out[0]));
	for (int i = 0; i < r; i++)
		sibd_mai_push(d, out[i], m);
}

/* The LRH a normal MAD gets from softibd (IBA 7.7): SLID of the port,
 * VL15 for QP0, LNH by GRH, PktLen in words. */
static void fill_lrh(const struct chan *ch, mai_mad_t *m)
{
	m->lrh.slid = sib_mad_port_lid(ch->node, ch->port);
	m->lrh.vl = ch->qp == 0 ? 15 : 0;
	m->lrh.lver = 0;
	m->lrh.lnh = m->has_grh ? 3 : 2;
	m->lrh.pktlen = (uint16_t)((8 + (m->has_grh ? 40 : 0) + 12 + 8 + MAI_MAD_SIZE + 4) / 4);
}

static void chan_send(struct sibd *d, struct chan *ch, mai_mad_t *m, uint32_t timeout_ms,
		      uint32_t retries)
{

	ch->tx++;
	if (m->type == MAI_TYPE_OOB) {
		oob_wrap(d, ch, m);
		return;
	}
	/* RAW needs privilege, and so does the CM's class: softibd's CM owns
	 * class 0x07 on every CA port as the kernel's ib_cm does (behind a
	 * root-only umad); a forged REQ, REJ or DREQ from another process
	 * would tear down connections it is no party to (docs/threat-model.md). */
	if ((m->type == MAI_TYPE_RAW || m->mgmt_class == MAD_MGMT_CLASS_CM) && !ch->priv) {
		sib_subnet_mad_count(d->sn, SIB_MAD_EV_NOT_PRIV, 1);
		return;
	}
	if (m->qp != ch->qp) {
		sib_subnet_mad_count(d->sn, SIB_MAD_EV_QP_MISMATCH, 1);
		return;
	}
	m->port = ch->port;
	if (m->type == MAI_TYPE_MAD) {
		fill_lrh(ch, m);
		if (is_request(m))
			m->tid = (m->tid & ((1ull << MAI_TID_CHAN_SHIFT) - 1)) |
				 (uint64_t)ch->num << MAI_TID_CHAN_SHIFT;
	}
	if (timeout_ms && m->type == MAI_TYPE_MAD && is_request(m)) {
		struct pending *p;

		for (uint32_t i = 0; i < ch->npend; i++)
			if (ch->pend[i].m.tid == m->tid && ch->pend[i].m.mgmt_class == m->mgmt_class) {
				/* the kernel refuses it (EINVAL) */
				sib_subnet_mad_count(d->sn, SIB_MAD_EV_DUP_TID, 1);
				timeout_msg(d, ch, m);
				return;
			}
		if (ch->npend == ch->pend_cap) {
			uint32_t cap = ch->pend_cap ? ch->pend_cap * 2 : PEND_FIRST;
			struct pending *np = cap <= SIBD_MAI_PENDING_MAX ?
					     realloc(ch->pend, cap * sizeof(*np)) : NULL;

			if (!np) {
				timeout_msg(d, ch, m); /* no room to wait: it times out now */
				return;
			}
			ch->pend = np;
			ch->pend_cap = cap;
		}
		if (timeout_ms > SIBD_MAI_TIMEOUT_MAX)
			timeout_ms = SIBD_MAI_TIMEOUT_MAX;
		if (timeout_ms < SIBD_MAI_TIMEOUT_MIN) /* no resend storm */
			timeout_ms = SIBD_MAI_TIMEOUT_MIN;
		if (retries > SIBD_MAI_RETRIES_MAX)
			retries = SIBD_MAI_RETRIES_MAX;
		p = &ch->pend[ch->npend++];
		p->m = *m;
		p->timeout_ms = timeout_ms;
		p->retries = retries;
		p->deadline = sibd_now_ms() + timeout_ms;
	} else if (m->type == MAI_TYPE_MAD && is_request(m)) {
		answered_add(ch, m->tid, m->mgmt_class, false);
	}
	/* the answer may come back (and end the pending entry) inside this call */
	sib_mad_send(d->sn, ch->node, ch->port, m);
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void chan_input(struct sibd *d, struct chan *ch)
{
	uint8_t buf[MAI_MSTREAM_SIZE + REQ_TRAILER + 1];
	mai_mad_t m;

	for (int i = 0; i < CHAN_BURST && !ch->dead && !ch->waits_on; i++) {
		ssize_t n = recv(ch->fd, buf, sizeof(buf), MSG_DONTWAIT);
		uint32_t tmo = 0, retries = 0;

		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0) {
			chan_kill(d, ch); /* the client closed its end */
			return;
		}
		if ((n != MAI_MSTREAM_SIZE && n != MAI_MSTREAM_SIZE + REQ_TRAILER) ||
		    mai_rmstream(buf, MAI_MSTREAM_SIZE, &m) != MAI_MSTREAM_SIZE ||
		    m.type == MAI_TYPE_TIMEOUT) {
			sib_subnet_mad_count(d->sn, SIB_MAD_EV_BAD_MESSAGE, 1);
			continue;
		}
		if (n == MAI_MSTREAM_SIZE + REQ_TRAILER) {
			tmo = be32(buf + MAI_MSTREAM_SIZE);
			retries = be32(buf + MAI_MSTREAM_SIZE + 4);
			if (m.type != MAI_TYPE_MAD || !is_request(&m)) {
				sib_subnet_mad_count(d->sn, SIB_MAD_EV_BAD_MESSAGE, 1);
				continue;
			}
		}
		d->mai->cur_src = ch;
		chan_send(d, ch, &m, tmo, retries);
		d->mai->cur_src = NULL;
	}
}

void sibd_mai_event(struct sibd *d)
{
	struct epoll_event ev[32];
	int n = epoll_wait(d->mai->ep_fd, ev, 32, 0);

	for (int i = 0; i < n; i++) {
		struct chan *ch = ev[i].data.ptr;

		if (ch->dead)
			continue;
		if (ev[i].events & EPOLLOUT)
			chan_flush(d, ch);
		if (!ch->dead && (ev[i].events & EPOLLIN))
			chan_input(d, ch);
		if (!ch->dead && (ev[i].events & (EPOLLHUP | EPOLLERR | EPOLLRDHUP)) &&
		    !(ev[i].events & EPOLLIN))
			chan_kill(d, ch);
	}
	reap(d);
}

/* ---- timeouts ------------------------------------------------------------------ */

int sibd_mai_timeout(struct sibd *d, int timeout)
{
	long long now = sibd_now_ms(), next = -1;

	if (!d->mai)
		return timeout;
	for (struct chan *ch = d->mai->chans; ch; ch = ch->next) {
		for (uint32_t i = 0; i < ch->npend && !ch->dead; i++)
			if (next < 0 || ch->pend[i].deadline < next)
				next = ch->pend[i].deadline;
		if (ch->nheld && !ch->dead && (next < 0 || ch->held_since + HOLD_MS < next))
			next = ch->held_since + HOLD_MS;
	}
	if (next < 0)
		return timeout;
	next = next > now ? next - now : 0;
	return timeout < 0 || next < timeout ? (int)next : timeout;
}

void sibd_mai_timers(struct sibd *d)
{
	long long now = sibd_now_ms();

	if (!d->mai)
		return;
	for (struct chan *ch = d->mai->chans; ch; ch = ch->next) {
		if (ch->nheld && !ch->dead && now - ch->held_since >= HOLD_MS) {
			ch->stalled = true; /* its reader is gone: the others go on */
			held_drop(d, ch);
		}
		for (uint32_t i = 0; i < ch->npend && !ch->dead;) {
			struct pending *p = &ch->pend[i];
			mai_mad_t m;

			if (p->deadline > now) {
				i++;
				continue;
			}
			m = p->m;
			if (p->retries) {
				p->retries--;
				p->deadline = now + p->timeout_ms;
				sib_subnet_mad_count(d->sn, SIB_MAD_EV_RESENT, 1);
				/* may deliver the response and remove entry i */
				sib_mad_send(d->sn, ch->node, ch->port, &m);
				i = 0; /* the array may have changed: rescan (deadlines moved on) */
				continue;
			}
			ch->pend[i] = ch->pend[--ch->npend];
			timeout_msg(d, ch, &m);
		}
	}
	reap(d);
}

/* ---- commands ------------------------------------------------------------------- */

/* Privileged: uid 0, or CAP_NET_ADMIN in the effective set, of the peer
 * (as opening /dev/infiniband/umad* needs root on most systems), read at
 * MAI_OPEN (peer.c). */
static bool peer_privileged(int fd)
{
	struct sibd_peer_cred pc;

	if (sibd_peer_cred(fd, &pc))
		return false;
	return pc.uid == 0 || ((pc.cap_eff >> CAP_NET_ADMIN_BIT) & 1);
}

static uint32_t next_num(struct sibd_mai *mai)
{
	for (uint32_t tries = 0; tries <= MAI_TID_CHAN_MASK; tries++) {
		uint32_t n = mai->next_num++;

		if (mai->next_num > MAI_TID_CHAN_MASK)
			mai->next_num = SIBD_MAI_CHAN_FIRST;
		if (n >= SIBD_MAI_CHAN_FIRST && !chan_find(mai, n))
			return n;
	}
	return 0;
}

int sibd_cmd_mai_open(struct sibd *d, struct sibd_client *c, struct sib_ctl_msg *m, int *pass_fd)
{
	struct sib_ctl_mai_open *o = &m->u.mai_open;
	struct sibd_mai *mai = d->mai;
	struct epoll_event ev = { .events = EPOLLIN };
	struct sib_fab_node *node = NULL;
	uint32_t idx, mine = 0, all = 0, num;
	struct chan *ch;
	int sv[2];

	if (o->abi_version != SIB_ABI_VERSION) {
		o->abi_version = SIB_ABI_VERSION;
		return -EPROTO;
	}
	if (!memchr(o->dev, '\0', sizeof(o->dev)) || o->qp > 1)
		return -EINVAL;
	for (idx = 0; idx < d->num_devices; idx++)
		if (sibd_dev_present(d, idx) && !strcmp(d->devs[idx].name, o->dev)) {
			node = d->dev_node[idx];
			break;
		}
	if (!node)
		return -ENODEV;
	if (o->port == 0)
		return -EINVAL;
	if (o->port > node->num_ports)
		return -ENODEV;
	bool priv = peer_privileged(c->fd);

	if (o->qp == 0 && !priv)
		return -EACCES;
	for (ch = mai->chans; ch; ch = ch->next) {
		mine += ch->owner == c && !ch->dead;
		all += !ch->dead;
	}
	if (mine >= SIBD_MAI_CHANS_PER_CONN || all >= sibd_mai_chans_max)
		return -ENOSPC;
	num = next_num(mai);
	if (!num)
		return -ENOSPC;
	ch = calloc(1, sizeof(*ch));
	if (!ch)
		return -ENOMEM;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) < 0) {
		free(ch);
		return -errno;
	}
	ch->fd = sv[0];
	ev.data.ptr = ch;
	if (epoll_ctl(mai->ep_fd, EPOLL_CTL_ADD, sv[0], &ev) < 0) {
		int err = errno;

		close(sv[0]);
		close(sv[1]);
		free(ch);
		return -err;
	}
	ch->num = num;
	ch->owner = c;
	ch->node = node;
	ch->dev_index = idx;
	ch->port = (uint8_t)o->port;
	ch->qp = (uint8_t)o->qp;
	ch->priv = priv;
	ch->next_handle = 1;
	ch->next = mai->chans;
	mai->chans = ch;
	mai->nchans++;
	o->chan = num;
	o->flags = priv ? SIB_MAI_F_PRIV : 0;
	/* The reply carries sv[1]; our copy goes once it is sent or queued
	 * (client.c dups a queued fd), so we reply here and say so. */
	m->hdr.magic = SIB_CTL_MAGIC;
	m->hdr.flags = 0;
	m->hdr.status = 0;
	sibd_client_send(d, c, m, sv[1]);
	close(sv[1]);
	return SIBD_REPLIED;
}

/* MAI_F_EXCLUSIVE: is f's template consumed on ch's device, port and QP
 * (any channel, ch included)? */
static bool template_taken(struct sibd_mai *mai, const struct chan *ch, const mai_filter_t *f)
{
	for (const struct chan *o = mai->chans; o; o = o->next)
		if (!o->dead && o->node == ch->node && o->port == ch->port && o->qp == ch->qp)
			for (uint32_t i = 0; i < o->nfilt; i++)
				if (mai_filter_same(&o->filt[i].f, f))
					return true;
	return false;
}

int sibd_cmd_mai_filter(struct sibd *d, struct sibd_client *c, struct sib_ctl_msg *m,
			int *pass_fd)
{
	struct sib_ctl_mai_filter *mf = &m->u.mai_filter;
	struct chan *ch = chan_find(d->mai, mf->chan);
	mai_filter_t f;

	if (!ch || ch->owner != c)
		return -EBADF;
	if (mf->op == SIB_MAI_FILTER_DELETE) {
		for (uint32_t i = 0; i < ch->nfilt; i++)
			if (ch->filt[i].f.handle == mf->handle) {
				memmove(&ch->filt[i], &ch->filt[i + 1],
					(ch->nfilt - i - 1) * sizeof(ch->filt[0]));
				ch->nfilt--;
				return 0;
			}
		return -ENOENT;
	}
	if (mf->op != SIB_MAI_FILTER_CREATE || mf->len > sizeof(mf->fstream) ||
	    mai_rfstream(mf->fstream, mf->len, &f) < 0)
		return -EINVAL;
	/* Without privilege a filter names its class, and not the CM's: the
	 * CM MADs of other processes' connections are nobody else's to read. */
	if (!ch->priv && (!(f.match & MAI_M_CLASS) || f.mgmt_class == MAD_MGMT_CLASS_CM))
		return -EACCES;
	if (ch->nfilt >= SIBD_MAI_FILTERS_MAX)
		return -ENOMEM;
	if ((f.flags & MAI_F_EXCLUSIVE) && template_taken(d->mai, ch, &f))
		return -EBUSY;
	f.handle = ch->next_handle++;
	if (!ch->next_handle)
		ch->next_handle = 1;
	ch->filt[ch->nfilt].f = f;
	ch->filt[ch->nfilt].seq = ++d->mai->seq;
	ch->nfilt++;
	mf->handle = f.handle;
	return 0;
}

void sibd_mai_device_gone(struct sibd *d, uint32_t dev_index)
{
	if (!d->mai)
		return;
	for (struct chan *ch = d->mai->chans; ch; ch = ch->next)
		if (ch->dev_index == dev_index)
			chan_kill(d, ch);
	reap(d);
}

void sibd_mai_client_gone(struct sibd *d, struct sibd_client *c)
{
	if (!d->mai)
		return;
	for (struct chan *ch = d->mai->chans; ch; ch = ch->next)
		if (ch->owner == c)
			chan_kill(d, ch);
	reap(d);
}

uint32_t sibd_mai_chans_of(const struct sibd *d, const struct sibd_proc *p)
{
	uint32_t n = 0;

	for (const struct chan *ch = d->mai ? d->mai->chans : NULL; ch; ch = ch->next)
		n += !ch->dead && (!p || ch->owner->proc == p);
	return n;
}

/* ---- lifetime and report -------------------------------------------------------- */

int sibd_mai_poll_fd(const struct sibd *d)
{
	return d->mai ? d->mai->ep_fd : -1;
}

int sibd_mai_init(struct sibd *d)
{
	struct sibd_mai *mai = calloc(1, sizeof(*mai));

	if (!mai)
		return -ENOMEM;
	mai->next_num = SIBD_MAI_CHAN_FIRST;
	mai->ep_fd = epoll_create1(EPOLL_CLOEXEC);
	if (mai->ep_fd < 0) {
		sibd_log("MAI: %s", strerror(errno));
		free(mai);
		return -1;
	}
	d->mai = mai;
	return sib_mad_init(d->sn);
}

void sibd_mai_fini(struct sibd *d)
{
	struct sibd_mai *mai = d->mai;

	if (!mai)
		return;
	for (struct chan *ch = mai->chans; ch; ch = ch->next)
		chan_kill(d, ch);
	reap(d);
	close(mai->ep_fd);
	free(mai->ents);
	free(mai);
	d->mai = NULL;
	sib_mad_fini(d->sn);
}

void sibd_mai_status(struct sibd *d, FILE *f)
{
	const struct sib_mad_counters *c;
	uint32_t nf = 0, np = 0;

	if (!d->mai)
		return;
	c = sib_subnet_mad_counters(d->sn);
	fprintf(f, "mad sent=%llu delivered=%llu sma=%llu pma=%llu unsupported=%llu forwarded=%llu"
		" oob=%llu resent=%llu timeouts=%llu dup_tid=%llu bad_messages=%llu\n",
		(unsigned long long)c->sent, (unsigned long long)c->delivered,
		(unsigned long long)c->sma, (unsigned long long)c->pma,
		(unsigned long long)c->unsupported, (unsigned long long)c->forwarded,
		(unsigned long long)c->oob, (unsigned long long)c->resent,
		(unsigned long long)c->timeouts, (unsigned long long)c->dup_tid,
		(unsigned long long)c->bad_messages);
	fprintf(f, "mad_drop");
	for (int i = 0; i < SIB_MAD_DROP_MAX; i++)
		fprintf(f, " %s=%llu", sib_mad_drop_str((enum sib_mad_drop)i),
			(unsigned long long)c->drop[i]);
	fputc('\n', f);
	for (struct chan *ch = d->mai->chans; ch; ch = ch->next) {
		if (ch->dead)
			continue;
		nf += ch->nfilt;
		np += ch->npend;
		fprintf(f, "mai_chan num=%u dev=%s port=%u qp=%u priv=%d pid=%d filters=%u"
			" pending=%u rx=%llu tx=%llu dropped=%llu\n",
			ch->num, d->devs[ch->dev_index].name, ch->port, ch->qp, ch->priv,
			(int)ch->owner->pid, ch->nfilt, ch->npend, (unsigned long long)ch->rx,
			(unsigned long long)ch->tx, (unsigned long long)ch->dropped);
	}
	fprintf(f, "mai channels=%u filters=%u pending=%u agent_filters=%zu\n", d->mai->nchans,
		nf, np, sib_mad_agent_filters());
}
