// SPDX-License-Identifier: MIT
/*
 * libibumad's MAD transport (umad_open_port .. umad_get_fd) on MAI channels
 * (include/softib/mai.h), with the kernel umad semantics rdma-core's users
 * rely on (research mgmt.md 1.4; Linux user_mad.c behaviour, not its code):
 * agents (<= 32 per port) by class, version, method mask and OUI, TID bits
 * 39..32 = agent id on requests (softibd stamps 63..40), timeouts/retries
 * with the header back as status 110, responses demuxed by TID, the
 * ENOSPC protocol of umad_recv, and RMPP (IBA 13.6) segmentation and
 * reassembly of SA MADs in the library (docs/umad.md).
 * Locking: ports_lock guards the port list; each port's lock guards its
 * agents, pending message and reassemblies, and is never held across a
 * blocking wait.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <softib/mai.h>

#include "iba/mad.h"
#include "iba/sa.h"
#include "umad/umad_priv.h"

#define MAX_AGENTS      UMAD_CA_MAX_AGENTS    /* 32, IB_UMAD_MAX_AGENTS */
#define MAX_REASM       16                    /* RMPP messages being reassembled per port */
#define REASM_CAP       (MAD_SA_HDR_SIZE + SA_RMPP_MAX_DATA)
#define OPENIB_OUI      0x001405u             /* libibumad's OUI for non-vendor classes */
#define METHOD_TRAP_REPRESS 0x07
#define RMPP_FLAG_ACTIVE 0x01                 /* MAD byte 26, IBA 13.6.2.1 */
#define RMPP_TYPE_DATA  1
#define VENDOR2_OUI_OFF 37                    /* vendor class 0x30-0x4f: OUI at bytes 37..39 */
#define TID_AGENT_SHIFT 32
#define SEND_WAIT_MS    2000                  /* umad_send's wait for room in a full channel */
#define SEND_WAIT_STEP_MS 50
#define RMPP_PACE_SEGS  16                    /* segments in flight to softibd, see pace() */

struct agent {
	bool used;
	uint8_t qp;                 /* 0: SMI (class 0x01, 0x81), 1: GSI */
	uint8_t mgmt_class, class_version, rmpp_version;
	uint32_t flags;             /* UMAD_USER_RMPP */
	uint32_t oui;               /* 24 bits, vendor range 2 only */
	uint64_t method_mask[2];
	uint32_t nfilters;
	uint32_t filters[128];      /* MAI filter handles, one per method */
};

struct reasm {
	bool used;
	uint8_t agent;
	uint64_t tid;
	uint16_t slid;
	uint32_t qpn;
	uint64_t age;
	uint8_t *buf;
	struct sa_rmpp_recv r;
};

struct uport {
	struct uport *next;
	int id;                     /* epoll fd: the port id umad_open_port returns */
	int chan[2];                /* MAI channels on QP0 and QP1, -1 if not open */
	int evfd;                   /* readable while `pending` waits for a later call */
	bool pending_signalled;     /* evfd was written for `pending` */
	uint8_t portnum;
	pthread_mutex_t lock;
	struct agent agents[MAX_AGENTS];
	uint8_t *pending;           /* struct ib_user_mad + MAD, for umad_recv */
	size_t pending_len;         /* MAD bytes after the 64-byte header */
	struct reasm reasm[MAX_REASM];
	uint64_t reasm_age;
	uint64_t dropped;           /* received MADs no agent takes, bad RMPP */
	bool dead;                  /* a channel ended: softibd is gone */
	int refs;                   /* calls using the port (ports_lock) */
	bool closed;                /* umad_close_port done: freed by the last call */
};

static pthread_mutex_t ports_lock = PTHREAD_MUTEX_INITIALIZER;
static struct uport *ports;

static void port_free(struct uport *p);

/* The open port with this id, held until port_put (a close meanwhile
 * frees it only then), or NULL. */
static struct uport *port_get(int id)
{
	struct uport *p;

	pthread_mutex_lock(&ports_lock);
	for (p = ports; p && p->id != id; p = p->next)
		;
	if (p)
		p->refs++;
	pthread_mutex_unlock(&ports_lock);
	return p;
}

static void port_put(struct uport *p)
{
	bool last;

	if (!p)
		return;
	pthread_mutex_lock(&ports_lock);
	last = --p->refs == 0 && p->closed;
	pthread_mutex_unlock(&ports_lock);
	if (last)
		port_free(p);
}

/*
 * A port's lock, taken with thread cancellation off: OpenSM stops its
 * receiver thread with pthread_cancel while it waits in umad_recv, and a
 * thread cancelled inside a send or receive (both cancellation points)
 * would leave the lock held for ever.  The only cancellation point of
 * umad_recv is its wait, outside the lock.
 */
static void port_lock(struct uport *p, int *cancel_state)
{
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, cancel_state);
	pthread_mutex_lock(&p->lock);
}

static void port_unlock(struct uport *p, int cancel_state)
{
	pthread_mutex_unlock(&p->lock);
	pthread_setcancelstate(cancel_state, NULL);
}

static void port_free(struct uport *p)
{
	int i;

	for (i = 0; i < 2; i++)
		if (p->chan[i] >= 0)
			mai_close(p->chan[i]);
	for (i = 0; i < MAX_REASM; i++)
		free(p->reasm[i].buf);
	if (p->evfd >= 0)
		close(p->evfd);
	if (p->id >= 0)
		close(p->id);
	free(p->pending);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

static int epoll_add(int ep, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

	return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

/* A port of CA (NULL: resolved) portnum (0: resolved): opens a MAI channel
 * on its QP1 and, for a privileged caller, its QP0 (SMI agents need it).
 * The port id is an epoll descriptor over both channels: pollable, as the
 * kernel's umad fd.  -ENODEV (resolution failed), -EINVAL (no such port,
 * as libibumad without a umadN for it), -EIO (softibd refused or is not
 * reachable), -ENOMEM. */
UMAD_EXPORT int umad_open_port(const char *ca_name, int portnum)
{
	char name[UMAD_CA_NAME_LEN];
	struct uport *p;
	int ret;

	if (sib_umad_resolve(ca_name, &portnum, name))
		return -ENODEV;
	if (portnum <= 0 || portnum > 255)
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->id = p->evfd = p->chan[0] = p->chan[1] = -1;
	p->portnum = (uint8_t)portnum;
	pthread_mutex_init(&p->lock, NULL);
	p->chan[1] = mai_open(name, p->portnum, 1);
	if (p->chan[1] < 0) {
		ret = p->chan[1] == -ENODEV ? -EINVAL : -EIO; /* libibumad: no umad<N> / open failed */
		UMAD_DEBUG("mai_open %s port %d QP1: %s", name, portnum, strerror(-p->chan[1]));
		p->chan[1] = -1;
		port_free(p);
		return ret;
	}
	p->chan[0] = mai_open(name, p->portnum, 0);
	if (p->chan[0] < 0) {
		UMAD_DEBUG("mai_open %s port %d QP0: %s (no SMI agents)", name, portnum,
			   strerror(-p->chan[0]));
		p->chan[0] = -1;
	}
	p->id = epoll_create1(EPOLL_CLOEXEC);
	p->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (p->id < 0 || p->evfd < 0 || epoll_add(p->id, p->chan[1]) || epoll_add(p->id, p->evfd) ||
	    (p->chan[0] >= 0 && epoll_add(p->id, p->chan[0]))) {
		port_free(p);
		return -EIO;
	}
	pthread_mutex_lock(&ports_lock);
	p->next = ports;
	ports = p;
	pthread_mutex_unlock(&ports_lock);
	UMAD_DEBUG("opened %s port %d: port id %d", name, portnum, p->id);
	return p->id;
}

/* Closes the port, its channels and agents.  0 (as libibumad, whatever
 * the id). */
UMAD_EXPORT int umad_close_port(int portid)
{
	struct uport **pp, *p = NULL;
	bool now = false;

	pthread_mutex_lock(&ports_lock);
	for (pp = &ports; *pp; pp = &(*pp)->next)
		if ((*pp)->id == portid) {
			p = *pp;
			*pp = p->next;
			p->closed = true;
			now = p->refs == 0;
			break;
		}
	pthread_mutex_unlock(&ports_lock);
	if (now)
		port_free(p);
	return 0;
}

/* The descriptor to poll for the port: the port id itself. */
UMAD_EXPORT int umad_get_fd(int portid)
{
	return portid;
}

/* ---- agents ------------------------------------------------------------------ */

static bool vendor2(uint8_t mgmt_class)
{
	return mgmt_class >= 0x30 && mgmt_class <= 0x4f;
}

static void agent_drop_filters(struct uport *p, struct agent *a)
{
	uint32_t i;

	for (i = 0; i < a->nfilters; i++)
		mai_filter_delete(p->chan[a->qp], a->filters[i]);
	a->nfilters = 0;
}

/* Register an agent: one consuming MAI filter per method of its mask
 * (unsolicited MADs of that class, version, method and, for vendor range
 * 2, OUI, arriving on this port).  The agent id, or -errno. */
static int agent_add_on(struct uport *p, const struct umad_reg_attr *at)
{
	struct agent *a = NULL;
	uint8_t qp = at->mgmt_class == 0x01 || at->mgmt_class == 0x81 ? 0 : 1;
	bool all;
	int id, ret = 0, cs;

	if (!p)
		return -EBADF;
	port_lock(p, &cs);
	for (id = 0; id < MAX_AGENTS && p->agents[id].used; id++)
		;
	if (id == MAX_AGENTS)
		ret = -ENOMEM;
	else if (p->chan[qp] < 0)
		ret = -EPERM; /* QP0 refused to this caller */
	if (ret) {
		port_unlock(p, cs);
		return ret;
	}
	a = &p->agents[id];
	memset(a, 0, sizeof(*a));
	a->qp = qp;
	a->mgmt_class = at->mgmt_class;
	a->class_version = at->mgmt_class_version;
	a->rmpp_version = at->rmpp_version;
	a->flags = at->flags;
	a->oui = at->oui & 0xffffff;
	memcpy(a->method_mask, at->method_mask, sizeof(a->method_mask));
	all = ~a->method_mask[0] == 0 && ~a->method_mask[1] == 0;
	for (unsigned int m = 0; m < 128 && !ret; m++) {
		mai_filter_t f = {
			/* a second agent for the same class, version, method
			 * (and OUI) on this CA port is refused, as the kernel's
			 * "method in use" (EINVAL) */
			.flags = MAI_F_CONSUME | MAI_F_EXCLUSIVE,
			.match = MAI_M_PORT | MAI_M_CLASS | MAI_M_CLASS_VER | MAI_M_METHOD,
			.port = p->portnum,
			.mgmt_class = a->mgmt_class,
			.class_version = a->class_version,
			.method = (uint8_t)m,
		};

		if (!(a->method_mask[m / 64] >> (m % 64) & 1) || (all && m > 0))
			continue;
		if (all) /* every method: the class is the agent's (one filter, not 128) */
			f.match &= ~(uint32_t)MAI_M_METHOD;
		if (vendor2(a->mgmt_class)) {
			f.nquant = 1;
			f.quant[0].offset = VENDOR2_OUI_OFF;
			f.quant[0].length = 3;
			f.quant[0].value = a->oui;
		}
		ret = mai_filter_create(p->chan[qp], &f);
		if (!ret)
			a->filters[a->nfilters++] = f.handle;
	}
	if (ret) {
		agent_drop_filters(p, a);
		port_unlock(p, cs);
		return ret == -EBUSY ? -EINVAL : ret;
	}
	a->used = true;
	port_unlock(p, cs);
	UMAD_DEBUG("port %d agent %d: class 0x%x version %u rmpp %u", p->id, id, a->mgmt_class,
		   a->class_version, a->rmpp_version);
	return id;
}

static int agent_add(int portid, const struct umad_reg_attr *at)
{
	struct uport *p = port_get(portid);
	int ret = agent_add_on(p, at);

	port_put(p);
	return ret;
}

static void mask_from_longs(uint64_t out[2], long method_mask[16 / sizeof(long)])
{
	memset(out, 0, 2 * sizeof(uint64_t));
	if (method_mask)
		memcpy(out, method_mask, 16);
}

/* libibumad: the agent id, or -EPERM whatever went wrong. */
UMAD_EXPORT int umad_register(int portid, int mgmt_class, int mgmt_version, uint8_t rmpp_version,
			      long method_mask[16 / sizeof(long)])
{
	struct umad_reg_attr at = {
		.mgmt_class = (uint8_t)mgmt_class,
		.mgmt_class_version = (uint8_t)mgmt_version,
		.oui = OPENIB_OUI,
		.rmpp_version = rmpp_version,
	};
	int ret;

	mask_from_longs(at.method_mask, method_mask);
	ret = agent_add(portid, &at);
	if (ret < 0)
		errno = -ret; /* the ioctl's: EINVAL for a method in use */
	return ret < 0 ? -EPERM : ret;
}

/* Vendor range 2 only (0x30-0x4f, class version 1): else -EINVAL; other
 * failures -EPERM. */
UMAD_EXPORT int umad_register_oui(int portid, int mgmt_class, uint8_t rmpp_version, uint8_t oui[3],
				  long method_mask[16 / sizeof(long)])
{
	struct umad_reg_attr at = {
		.mgmt_class = (uint8_t)mgmt_class,
		.mgmt_class_version = 1,
		.rmpp_version = rmpp_version,
	};
	int ret;

	if (!vendor2((uint8_t)mgmt_class) || mgmt_class != (uint8_t)mgmt_class)
		return -EINVAL;
	at.oui = (uint32_t)oui[0] << 16 | (uint32_t)oui[1] << 8 | oui[2];
	mask_from_longs(at.method_mask, method_mask);
	ret = agent_add(portid, &at);
	if (ret < 0)
		errno = -ret;
	return ret < 0 ? -EPERM : ret;
}

/* 0 and *agent_id, or a positive errno: EINVAL (NULL, vendor class with
 * an OUI that is 0 or wider than 24 bits, unknown flags: attr->flags is
 * set to those supported), EBADF, EPERM, ENOMEM. */
UMAD_EXPORT int umad_register2(int port_fd, struct umad_reg_attr *attr, uint32_t *agent_id)
{
	int ret;

	if (!attr || !agent_id)
		return EINVAL;
	if (vendor2(attr->mgmt_class) && ((attr->oui & 0xffffff) == 0 || (attr->oui >> 24) != 0))
		return EINVAL;
	if (attr->flags & ~(uint32_t)UMAD_USER_RMPP) {
		attr->flags = UMAD_USER_RMPP;
		return EINVAL;
	}
	ret = agent_add(port_fd, attr);
	if (ret < 0)
		return -ret;
	*agent_id = (uint32_t)ret;
	return 0;
}

/* 0, or -1 with errno EINVAL (no such agent) / ENOTTY (not a umad port),
 * as the kernel's ioctl. */
static int unregister_on(struct uport *p, int agentid)
{
	int i, cs;

	if (!p) {
		errno = ENOTTY;
		return -1;
	}
	port_lock(p, &cs);
	if (agentid < 0 || agentid >= MAX_AGENTS || !p->agents[agentid].used) {
		port_unlock(p, cs);
		errno = EINVAL;
		return -1;
	}
	agent_drop_filters(p, &p->agents[agentid]);
	p->agents[agentid].used = false;
	for (i = 0; i < MAX_REASM; i++)
		if (p->reasm[i].used && p->reasm[i].agent == agentid)
			p->reasm[i].used = false;
	port_unlock(p, cs);
	return 0;
}

UMAD_EXPORT int umad_unregister(int portid, int agentid)
{
	struct uport *p = port_get(portid);
	int ret = unregister_on(p, agentid);

	port_put(p);
	return ret;
}

/* ---- sending --------------------------------------------------------------------- */

static bool is_request(uint8_t method)
{
	return !(method & 0x80) && method != METHOD_TRAP_REPRESS;
}

/* Does the agent leave RMPP to this library (SA class, registered with an
 * RMPP version, not UMAD_USER_RMPP)? */
static bool lib_rmpp(const struct agent *a)
{
	return a->rmpp_version && !(a->flags & UMAD_USER_RMPP) &&
	       a->mgmt_class == MAD_MGMT_CLASS_SUBN_ADM;
}

/* The routing fields of a send from the umad header.  Its Q_Key is not
 * used: the kernel's MAD layer sends every MAD with the QP's own
 * (IB_QP_SET_QKEY in linux drivers/infiniband/core/mad.c
 * ib_create_send_mad), so a GMP leaves QP1 with the GSI Q_Key whatever
 * the caller wrote (softibd drops a GMP with another, docs/mai.md). */
static void addr_to_mai(const ib_mad_addr_t *ad, const struct agent *a, uint8_t port, mai_mad_t *m)
{
	m->type = MAI_TYPE_MAD;
	m->port = port;
	m->qp = a->qp;
	m->remote_qpn = ntohl(ad->qpn) & 0xffffff;
	m->remote_qkey = a->qp ? UMAD_QKEY : 0;
	m->pkey_index = ad->pkey_index;
	m->lrh.dlid = ntohs(ad->lid);
	m->lrh.sl = ad->sl & 0xf;
	m->has_grh = ad->grh_present ? 1 : 0;
	if (m->has_grh) {
		m->grh.ipver = 6;
		m->grh.tclass = ad->traffic_class;
		m->grh.flow_label = ntohl(ad->flow_label) & 0xfffff;
		m->grh.hoplmt = ad->hop_limit;
		memcpy(m->grh.dgid, ad->gid, 16);
	}
}

/* One 256-byte MAD to its channel: a request with a timeout goes through
 * mai_send_req (softibd's retries and TIMEOUT).  0 or -errno. */
static int send_one(struct uport *p, const struct agent *a, const ib_mad_addr_t *ad,
		    const uint8_t *wire, uint32_t timeout_ms, uint32_t retries)
{
	mai_mad_t m;

	memset(&m, 0, sizeof(m));
	if (mai_fromwire(wire, MAD_SIZE, &m) != MAD_SIZE)
		return -EINVAL;
	addr_to_mai(ad, a, p->portnum, &m);
	for (int tries = 0;; tries++) {
		struct pollfd pfd = { .fd = p->chan[a->qp], .events = POLLOUT };
		int ret = timeout_ms && is_request(m.method) ?
			  mai_send_req(p->chan[a->qp], &m, timeout_ms, retries) :
			  mai_send(p->chan[a->qp], &m);

		/* a full channel (a long RMPP message): wait for room, at most
		 * SEND_WAIT_MS in all, as the kernel queues a writer's MADs */
		if (ret != -EAGAIN || tries * SEND_WAIT_STEP_MS >= SEND_WAIT_MS)
			return ret;
		poll(&pfd, 1, SEND_WAIT_STEP_MS);
	}
}

/*
 * No ACK windows between softib's RMPP ends (docs/umad.md), so a long
 * message is paced instead: every RMPP_PACE_SEGS segments, wait (at most
 * SEND_WAIT_MS) until softibd has read all but RMPP_PACE_SEGS of what this
 * channel sent (SIOCOUTQ: bytes the peer has not taken yet), so that the
 * receiver's queue in softibd is not flooded faster than softibd forwards.
 */
static void pace(int chan)
{
	int outq = 0;

	for (int waited = 0; waited < SEND_WAIT_MS; waited++) {
		if (ioctl(chan, SIOCOUTQ, &outq) < 0 ||
		    outq <= RMPP_PACE_SEGS * (int)MAI_MSTREAM_SIZE)
			return;
		poll(NULL, 0, 1);
	}
}

static int do_send(struct uport *p, int agentid, struct ib_user_mad *u, int length,
		   uint32_t timeout_ms, uint32_t retries)
{
	uint8_t wire[MAD_SIZE];
	const struct agent *a;
	uint8_t *mad = u->data;
	uint32_t nsegs, s;
	int ret = 0;

	if (agentid < 0 || agentid >= MAX_AGENTS || !p->agents[agentid].used ||
	    length < MAI_MAD_HDR_SIZE)
		return -EINVAL;
	a = &p->agents[agentid];
	if (is_request(mad[3])) /* TID bits 39..32 (byte 11): the agent; softibd writes 63..40 */
		mad[11] = (uint8_t)agentid;
	if (lib_rmpp(a) && (mad[26] & RMPP_FLAG_ACTIVE) && length >= MAD_SA_HDR_SIZE) {
		nsegs = sa_rmpp_nsegs((size_t)length - MAD_SA_HDR_SIZE);
		for (s = 1; s <= nsegs && !ret; s++) {
			if (s % RMPP_PACE_SEGS == 0)
				pace(p->chan[a->qp]);
			ret = sa_rmpp_build_seg(mad, (size_t)length, s, wire);
			if (!ret) /* the timeout runs on the last segment only */
				ret = send_one(p, a, &u->addr, wire, s == nsegs ? timeout_ms : 0,
					       retries);
		}
		return ret;
	}
	if (length > MAD_SIZE)
		return -EMSGSIZE;
	memset(wire, 0, sizeof(wire));
	memcpy(wire, mad, (size_t)length);
	return send_one(p, a, &u->addr, wire, timeout_ms, retries);
}

/* Send the MAD of umad (length bytes after the 64-byte header) for agent
 * agentid.  0, or -EIO with errno set (EINVAL: bad agent, length, class;
 * EBADF: not a port; EMSGSIZE: longer than a MAD without RMPP; EAGAIN;
 * ECONNRESET: softibd is gone), as libibumad reports a failed write. */
static int send_on(struct uport *p, int agentid, void *umad, int length, int timeout_ms,
		   int retries)
{
	struct ib_user_mad *u = umad;
	int ret, cs;

	if (!p || !u) {
		errno = p ? EINVAL : EBADF;
		return -EIO;
	}
	u->agent_id = (uint32_t)agentid;
	u->timeout_ms = (uint32_t)timeout_ms;
	u->retries = (uint32_t)retries;
	if (sib_umad_debug_level > 1)
		umad_dump(u);
	port_lock(p, &cs);
	ret = do_send(p, agentid, u, length, timeout_ms > 0 ? (uint32_t)timeout_ms : 0,
		      retries > 0 ? (uint32_t)retries : 0);
	port_unlock(p, cs);
	if (!ret)
		return 0;
	UMAD_DEBUG("port %d agent %d: send failed: %s", p->id, agentid, strerror(-ret));
	errno = -ret;
	return -EIO;
}

UMAD_EXPORT int umad_send(int portid, int agentid, void *umad, int length, int timeout_ms,
			  int retries)
{
	struct uport *p = port_get(portid);
	int ret = send_on(p, agentid, umad, length, timeout_ms, retries);

	port_put(p);
	return ret;
}

/* ---- receiving ------------------------------------------------------------------- */

static void set_pending(struct uport *p, uint8_t *buf, size_t mad_len)
{
	p->pending = buf;
	p->pending_len = mad_len;
}

/* The pending message stays for a later call (ENOSPC): make the port id
 * readable for poll() until it is taken.  Only then: a message taken in
 * the call that read it needs no eventfd round trip (two system calls
 * per MAD on OpenSM's receive path). */
static void signal_pending(struct uport *p)
{
	uint64_t one = 1;

	if (p->pending_signalled)
		return;
	if (write(p->evfd, &one, sizeof(one)) < 0)
		UMAD_DEBUG("eventfd: %s", strerror(errno));
	p->pending_signalled = true;
}

static void clear_pending(struct uport *p)
{
	uint64_t v;

	free(p->pending);
	p->pending = NULL;
	p->pending_len = 0;
	if (!p->pending_signalled)
		return;
	p->pending_signalled = false;
	if (read(p->evfd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		UMAD_DEBUG("eventfd: %s", strerror(errno));
}

/* A received message as the kernel hands it over: header with the
 * sender's address, then mad_len MAD bytes.  NULL without memory. */
static uint8_t *make_umad(const mai_mad_t *m, int agent, uint32_t status, const uint8_t *mad,
			  size_t mad_len)
{
	uint8_t *buf = calloc(1, sizeof(struct ib_user_mad) + mad_len);
	struct ib_user_mad *u = (struct ib_user_mad *)buf;

	if (!buf)
		return NULL;
	u->agent_id = (uint32_t)agent;
	u->status = status;
	u->length = (uint32_t)(sizeof(*u) + mad_len);
	u->addr.qpn = htonl(m->remote_qpn);
	u->addr.qkey = htonl(m->remote_qkey);
	u->addr.lid = htons(m->lrh.slid);
	u->addr.sl = m->lrh.sl;
	u->addr.pkey_index = m->pkey_index;
	if (m->has_grh) {
		u->addr.grh_present = 1;
		u->addr.hop_limit = m->grh.hoplmt;
		u->addr.traffic_class = m->grh.tclass;
		u->addr.flow_label = htonl(m->grh.flow_label);
		memcpy(u->addr.gid, m->grh.sgid, 16);
	}
	memcpy(u->data, mad, mad_len);
	return buf;
}

/* The agent an unsolicited MAD is for: class, version, method, OUI. */
static int match_agent(const struct uport *p, uint8_t qp, const uint8_t *wire)
{
	uint32_t oui = (uint32_t)wire[37] << 16 | (uint32_t)wire[38] << 8 | wire[39];
	int i;

	for (i = 0; i < MAX_AGENTS; i++) {
		const struct agent *a = &p->agents[i];

		if (a->used && a->qp == qp && a->mgmt_class == wire[1] &&
		    a->class_version == wire[2] &&
		    (a->method_mask[wire[3] / 64] >> (wire[3] % 64) & 1) &&
		    (!vendor2(a->mgmt_class) || a->oui == oui))
			return i;
	}
	return -1;
}

static struct reasm *reasm_find(struct uport *p, int agent, const mai_mad_t *m, bool create)
{
	struct reasm *r, *oldest = &p->reasm[0];
	int i;

	for (i = 0; i < MAX_REASM; i++) {
		r = &p->reasm[i];
		if (r->used && r->agent == agent && r->tid == m->tid && r->slid == m->lrh.slid &&
		    r->qpn == m->remote_qpn)
			return r;
		if (!r->used || (oldest->used && r->age < oldest->age))
			oldest = r;
	}
	if (!create)
		return NULL;
	r = oldest; /* a free slot, else the oldest unfinished message goes */
	if (!r->buf)
		r->buf = malloc(REASM_CAP);
	if (!r->buf)
		return NULL;
	r->used = true;
	r->agent = (uint8_t)agent;
	r->tid = m->tid;
	r->slid = m->lrh.slid;
	r->qpn = m->remote_qpn;
	r->age = ++p->reasm_age;
	sa_rmpp_recv_init(&r->r, r->buf, REASM_CAP, SA_RMPP_MAX_SEGS); /* no ACK windows */
	return r;
}

/* Take one message from softibd: 1 and *out (a whole umad) when one is
 * ready for the user, 0 when it was consumed (a segment, or dropped). */
static int take(struct uport *p, uint8_t qp, const mai_mad_t *m, uint8_t **out, size_t *out_len)
{
	uint8_t wire[MAD_SIZE], ack[MAD_SIZE];
	mai_mad_t t = *m;
	struct reasm *r;
	bool reply;
	int agent;

	if (m->type == MAI_TYPE_TIMEOUT) {
		t.type = MAI_TYPE_MAD;
		t.data_len = MAI_MAD_DATA_SIZE;
		memset(t.data, 0, sizeof(t.data));
	} else if (m->type != MAI_TYPE_MAD) {
		return 0;
	}
	if (mai_towire(&t, wire, sizeof(wire)) != MAD_SIZE)
		return 0;
	if (m->type == MAI_TYPE_TIMEOUT || !is_request(m->method)) {
		agent = (int)((m->tid >> TID_AGENT_SHIFT) & 0xff);
		if (agent >= MAX_AGENTS || !p->agents[agent].used || p->agents[agent].qp != qp)
			agent = -1;
	} else {
		agent = match_agent(p, qp, wire);
	}
	if (agent < 0) {
		p->dropped++;
		return 0;
	}
	if (m->type == MAI_TYPE_TIMEOUT) {
		/* the kernel hands back the send as written: its address is the
		 * request's destination, not a source */
		t.lrh.slid = m->lrh.dlid;
		memcpy(t.grh.sgid, m->grh.dgid, 16);
		*out = make_umad(&t, agent, ETIMEDOUT, wire, MAI_MAD_HDR_SIZE);
		*out_len = MAI_MAD_HDR_SIZE;
		return *out ? 1 : 0;
	}
	if (lib_rmpp(&p->agents[agent]) && (wire[26] & RMPP_FLAG_ACTIVE)) {
		if (wire[25] != RMPP_TYPE_DATA)
			return 0; /* ACK/STOP/ABORT: no windows between softib's ends */
		r = reasm_find(p, agent, m, true);
		if (!r) {
			p->dropped++;
			return 0;
		}
		switch (sa_rmpp_recv_seg(&r->r, wire, ack, &reply)) {
		case SA_RMPP_ACCEPTED:
		case SA_RMPP_DUPLICATE:
			return 0;
		case SA_RMPP_COMPLETE:
			r->used = false;
			*out = make_umad(m, agent, 0, r->buf, r->r.len);
			*out_len = r->r.len;
			return *out ? 1 : 0;
		default:
			r->used = false;
			p->dropped++;
			return 0;
		}
	}
	*out = make_umad(m, agent, 0, wire, MAD_SIZE);
	*out_len = MAD_SIZE;
	return *out ? 1 : 0;
}

/* Read what the channels hold until a message is pending.  Port locked. */
static void fill_pending(struct uport *p)
{
	mai_mad_t m;
	uint8_t *buf;
	size_t len;
	int qp, n;

	for (qp = 0; qp < 2 && !p->pending; qp++) {
		if (p->chan[qp] < 0)
			continue;
		for (n = 0; n < 64 && !p->pending; n++) {
			int r = mai_recv(p->chan[qp], &m, 0);

			if (r == -EBADMSG)
				continue;
			if (r == -ECONNRESET)
				p->dead = true;
			if (r)
				break;
			if (take(p, (uint8_t)qp, &m, &buf, &len))
				set_pending(p, buf, len);
		}
	}
}

static long long mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* Wait for the port id to be readable: 0, -ETIMEDOUT, -EIO (libibumad's
 * dev_poll). */
static int port_wait(int id, int timeout_ms)
{
	struct pollfd pfd = { .fd = id, .events = POLLIN };
	int n = poll(&pfd, 1, timeout_ms);

	if (n == 1)
		return pfd.revents & POLLIN ? 0 : -EIO; /* POLLNVAL: closed meanwhile */
	return n == 0 ? -ETIMEDOUT : -EIO;
}

/*
 * Receive into umad (*length bytes of room after the 64-byte header),
 * waiting timeout_ms first (0: no wait, < 0: forever).  Returns the agent
 * id with *length = the MAD's bytes; -ETIMEDOUT; -EAGAIN (nothing, no
 * wait); -ENOSPC when the MAD is longer than *length: the header is copied
 * (its length = 64 + the MAD's bytes), *length set to the MAD's bytes and
 * the message kept for the next call (libibumad's realloc protocol);
 * -EINVAL (NULL arguments), -EIO.  errno is set likewise.
 */
static int recv_on(struct uport *p, void *umad, int *length, int timeout_ms)
{
	long long end = timeout_ms > 0 ? mono_ms() + timeout_ms : 0;
	struct ib_user_mad *u = umad;
	int ret, agent, cs;

	if (!umad || !length || *length < 0) {
		errno = EINVAL;
		return -EINVAL;
	}
	if (!p) {
		errno = EBADF;
		return -EBADF;
	}
	for (;;) {
		port_lock(p, &cs);
		fill_pending(p);
		if (p->pending) {
			const struct ib_user_mad *pu = (const struct ib_user_mad *)p->pending;

			if (p->pending_len > (size_t)*length) {
				memcpy(u, pu, sizeof(*u));
				*length = (int)p->pending_len;
				signal_pending(p);
				port_unlock(p, cs);
				errno = ENOSPC;
				return -ENOSPC;
			}
			memcpy(u, pu, sizeof(*u) + p->pending_len);
			*length = (int)p->pending_len;
			agent = (int)pu->agent_id;
			clear_pending(p);
			port_unlock(p, cs);
			return agent;
		}
		port_unlock(p, cs);
		if (p->dead) { /* softibd is gone: nothing will come; wait as asked */
			long long left = end - mono_ms();

			if (timeout_ms)
				poll(NULL, 0, timeout_ms < 0 ? -1 : left > 0 ? (int)left : 0);
			errno = ECONNRESET;
			return -EIO;
		}
		if (timeout_ms == 0) {
			errno = EWOULDBLOCK;
			return -EWOULDBLOCK;
		}
		if (timeout_ms > 0) {
			long long left = end - mono_ms();

			if (left <= 0) {
				errno = ETIMEDOUT;
				return -ETIMEDOUT;
			}
			ret = port_wait(p->id, (int)left);
		} else {
			ret = port_wait(p->id, -1);
		}
		if (ret == -ETIMEDOUT) {
			errno = ETIMEDOUT;
			return ret;
		}
		if (ret) {
			errno = EIO;
			return ret;
		}
	}
}

/* umad_recv: recv_on on the port held for the call. */
UMAD_EXPORT int umad_recv(int portid, void *umad, int *length, int timeout_ms)
{
	struct uport *p = port_get(portid);
	int ret = recv_on(p, umad, length, timeout_ms);

	port_put(p);
	return ret;
}

/* Wait until the port has something to read: 0, -ETIMEDOUT, -EIO. */
UMAD_EXPORT int umad_poll(int portid, int timeout_ms)
{
	return port_wait(portid, timeout_ms);
}
