/* SPDX-License-Identifier: MIT */
/*
 * rsockets (<rdma/rsocket.h>; rdma-core v44 man rsocket; docs/rdmacm.md
 * "rsockets"): the table of rsockets, their life (rsocket, rbind, rlisten,
 * raccept, rconnect, rshutdown, rclose), connection setup over the
 * library's own rdma_cm calls, options (rsetsockopt, rgetsockopt, rfcntl),
 * names, and the stream calls around rs_data.c's core.  SOCK_STREAM over
 * RC only; SOCK_DGRAM fails with ESOCKTNOSUPPORT.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <infiniband/ib.h>

#include "rdmacm/cma_priv.h"
#include "rdmacm/rs_priv.h"

static pthread_mutex_t tab_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rsocket **tab;      /* by index (the channel's fd) */
static int tab_size;

int rs_set_err(int e)
{
	errno = e;
	return -1;
}

/* The rsocket of number socket, locked; NULL with errno EBADF. */
struct rsocket *rs_get(int socket)
{
	struct rsocket *rs = NULL;

	pthread_mutex_lock(&tab_lock);
	if (socket >= 0 && socket < tab_size)
		rs = tab[socket];
	pthread_mutex_unlock(&tab_lock);
	if (!rs) {
		errno = EBADF;
		return NULL;
	}
	pthread_mutex_lock(&rs->lock);
	return rs;
}

void rs_put(struct rsocket *rs)
{
	pthread_mutex_unlock(&rs->lock);
}

bool rs_lookup_exists(int fd)
{
	bool r;

	pthread_mutex_lock(&tab_lock);
	r = fd >= 0 && fd < tab_size && tab[fd];
	pthread_mutex_unlock(&tab_lock);
	return r;
}

static int tab_insert(struct rsocket *rs)
{
	int i = rs->index;

	pthread_mutex_lock(&tab_lock);
	if (i >= tab_size) {
		int n = tab_size ? tab_size : 1024;
		struct rsocket **t;

		while (n <= i)
			n *= 2;
		t = realloc(tab, (size_t)n * sizeof(*t));
		if (!t) {
			pthread_mutex_unlock(&tab_lock);
			return rs_set_err(ENOMEM);
		}
		memset(t + tab_size, 0, (size_t)(n - tab_size) * sizeof(*t));
		tab = t;
		tab_size = n;
	}
	tab[i] = rs;
	pthread_mutex_unlock(&tab_lock);
	return 0;
}

static void tab_remove(struct rsocket *rs)
{
	pthread_mutex_lock(&tab_lock);
	if (rs->index >= 0 && rs->index < tab_size && tab[rs->index] == rs)
		tab[rs->index] = NULL;
	pthread_mutex_unlock(&tab_lock);
}

static void rs_free(struct rsocket *rs)
{
	int i;

	for (i = 0; i < rs->backlog_cnt; i++) {
		(void)rdma_reject(rs->backlog[i].id, NULL, 0);
		(void)rdma_destroy_id(rs->backlog[i].id);
	}
	free(rs->backlog);
	rs_destroy_resources(rs);
	if (rs->id)
		(void)rdma_destroy_id(rs->id);
	if (rs->ch)
		rdma_destroy_event_channel(rs->ch);
	pthread_mutex_destroy(&rs->lock);
	free(rs);
}

/* A new rsocket with its own event channel (non-blocking fd: the index)
 * and, unless id is given, a new RDMA_PS_TCP id.  NULL/errno. */
static struct rsocket *rs_alloc(const struct rsocket *inherit, struct rdma_cm_id *id)
{
	struct rsocket *rs = calloc(1, sizeof(*rs));
	int fl;

	if (!rs)
		return NULL;
	pthread_mutex_init(&rs->lock, NULL);
	rs->index = -1;
	rs->type = SOCK_STREAM;
	rs->domain = AF_INET;
	rs->sbuf_size = rs->rbuf_size = RS_DEF_BUF;
	rs->sq_size = rs->rq_size = RS_DEF_QSIZE;
	rs->inline_size = RS_DEF_INLINE;
	if (inherit) {
		rs->domain = inherit->domain;
		rs->sbuf_size = inherit->sbuf_size;
		rs->rbuf_size = inherit->rbuf_size;
		rs->sq_size = inherit->sq_size;
		rs->rq_size = inherit->rq_size;
		rs->inline_size = inherit->inline_size;
		rs->iomap_size = inherit->iomap_size;
		rs->keepalive = inherit->keepalive;
		rs->keepidle = inherit->keepidle;
		rs->nodelay = inherit->nodelay;
		rs->oobinline = inherit->oobinline;
		rs->linger = inherit->linger;
	}
	rs->ch = rdma_create_event_channel();
	if (!rs->ch)
		goto err;
	fl = fcntl(rs->ch->fd, F_GETFL);
	if (fl < 0 || fcntl(rs->ch->fd, F_SETFL, fl | O_NONBLOCK) < 0)
		goto err;
	rs->index = rs->ch->fd;
	if (id) {
		if (rdma_migrate_id(id, rs->ch))
			goto err;
		rs->id = id;
		id->context = rs;
	} else if (rdma_create_id(rs->ch, &rs->id, rs, RDMA_PS_TCP)) {
		goto err;
	}
	return rs;
err:
	fl = errno;
	if (id && rs->id != id)
		rs->id = NULL;
	rs_free(rs);
	errno = fl;
	return NULL;
}

/* man rsocket: AF_INET, AF_INET6 or AF_IB; SOCK_STREAM (RC). */
RDMACM_EXPORT int rsocket(int domain, int type, int protocol)
{
	struct rsocket *rs;
	int base = type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC);

	if (domain != AF_INET && domain != AF_INET6 && domain != AF_IB)
		return rs_set_err(EAFNOSUPPORT);
	if (base == SOCK_DGRAM)
		return rs_set_err(ESOCKTNOSUPPORT);
	if (base != SOCK_STREAM)
		return rs_set_err(EPROTOTYPE);
	if (protocol && protocol != IPPROTO_TCP)
		return rs_set_err(EPROTONOSUPPORT);
	rs = rs_alloc(NULL, NULL);
	if (!rs)
		return -1;
	rs->domain = domain;
	rs->nonblock = (type & SOCK_NONBLOCK) != 0;
	if (tab_insert(rs)) {
		rs_free(rs);
		return -1;
	}
	return rs->index;
}

RDMACM_EXPORT int rbind(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	struct rsocket *rs = rs_get(socket);
	int r;

	if (!rs)
		return -1;
	if (rs->state != RS_INIT) {
		rs_put(rs);
		return rs_set_err(EINVAL);
	}
	if (!addr || addrlen < sizeof(sa_family_t)) {
		rs_put(rs);
		return rs_set_err(EINVAL);
	}
	r = rdma_bind_addr(rs->id, (struct sockaddr *)addr);
	if (!r)
		rs->state = RS_BOUND;
	rs_put(rs);
	return r;
}

RDMACM_EXPORT int rlisten(int socket, int backlog)
{
	struct rsocket *rs = rs_get(socket);
	int r = -1;

	if (!rs)
		return -1;
	if (rs->state == RS_LISTENING) {
		rs_put(rs);
		return 0;
	}
	if (rs->state != RS_BOUND && rs->state != RS_INIT) {
		rs_put(rs);
		return rs_set_err(EINVAL);
	}
	if (backlog <= 0 || backlog > RS_BACKLOG_MAX)
		backlog = RS_BACKLOG_MAX;
	rs->backlog = calloc((size_t)backlog, sizeof(*rs->backlog));
	if (!rs->backlog)
		errno = ENOMEM;
	else if (!(r = rdma_listen(rs->id, backlog))) {
		rs->backlog_max = backlog;
		rs->state = RS_LISTENING;
	}
	rs_put(rs);
	return r;
}

static void connect_fail(struct rsocket *rs, int e)
{
	rs->state = RS_ERROR;
	rs->err = e;
}

/* ROUTE_RESOLVED: resources, QP, the REQ with our ring. */
static void connect_step_route(struct rsocket *rs)
{
	struct rs_conn_data cd;
	struct rdma_conn_param p = {
		.private_data = &cd, .private_data_len = sizeof(cd),
		.responder_resources = 1, .initiator_depth = 1,
		.retry_count = 7, .rnr_retry_count = 7,
	};

	if (rs_create_resources(rs) || rs_create_qp(rs)) {
		connect_fail(rs, errno);
		return;
	}
	rs_fill_conn_data(rs, &cd);
	if (rdma_connect(rs->id, &p))
		connect_fail(rs, errno);
	else
		rs->state = RS_CONNECTING;
}

static void listen_event(struct rsocket *rs, struct rdma_cm_event *ev)
{
	struct rs_pending *p;

	if (rs->backlog_cnt >= rs->backlog_max) {
		(void)rdma_reject(ev->id, NULL, 0);
		(void)rdma_ack_cm_event(ev);
		(void)rdma_destroy_id(ev->id);
		return;
	}
	p = &rs->backlog[rs->backlog_cnt++];
	memset(p, 0, sizeof(*p));
	p->id = ev->id;
	if (ev->param.conn.private_data && ev->param.conn.private_data_len >= sizeof(p->peer)) {
		memcpy(&p->peer, ev->param.conn.private_data, sizeof(p->peer));
		p->pdata_ok = true;
	}
	(void)rdma_ack_cm_event(ev);
}

/* One cm event for rs (acked here). */
static void rs_cm_event(struct rsocket *rs, struct rdma_cm_event *ev)
{
	switch (ev->event) {
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		if (rs->state == RS_LISTENING) {
			listen_event(rs, ev);
			return;
		}
		break;
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (rs->state == RS_RESOLVING_ADDR) {
			if (rdma_resolve_route(rs->id, RS_CONNECT_TIMEOUT_MS))
				connect_fail(rs, errno);
			else
				rs->state = RS_RESOLVING_ROUTE;
		}
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		if (rs->state == RS_RESOLVING_ROUTE)
			connect_step_route(rs);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		if (rs->state == RS_CONNECTING) {
			if (rs_take_peer(rs, ev->param.conn.private_data, ev->param.conn.private_data_len)) {
				connect_fail(rs, EPROTO);
				(void)rdma_disconnect(rs->id);
			} else {
				rs->state = RS_CONNECTED;
			}
		}
		break;
	case RDMA_CM_EVENT_REJECTED:
		if (rs->state < RS_CONNECTED)
			connect_fail(rs, ECONNREFUSED);
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
		if (rs->state < RS_CONNECTED)
			connect_fail(rs, EHOSTUNREACH);
		break;
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_CONNECT_ERROR:
		if (rs->state < RS_CONNECTED)
			connect_fail(rs, ETIMEDOUT);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		rs->disconnected = true;
		if (rs->state < RS_CONNECTED)
			connect_fail(rs, ECONNRESET);
		break;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		rs->disconnected = true;
		connect_fail(rs, ENODEV);
		break;
	default:
		break;
	}
	(void)rdma_ack_cm_event(ev);
}

/* Every queued event of rs's channel.  0. */
int rs_cm_progress(struct rsocket *rs)
{
	struct rdma_cm_event *ev;

	while (rs->ch && rdma_get_cm_event(rs->ch, &ev) == 0)
		rs_cm_event(rs, ev);
	return 0;
}

/* Blocking sockets wait for the connection; others return EINPROGRESS. */
static int connect_wait(struct rsocket *rs);

/* A stream call on a socket still connecting (rconnect nonblocking):
 * progress it; 0 once connected, else -1 with EAGAIN (nonblocking),
 * the connection's error, or ENOTCONN when it is not connecting. */
int rs_connecting(struct rsocket *rs, bool nonblock)
{
	bool nb = rs->nonblock;
	int r;

	if (rs->state < RS_RESOLVING_ADDR || rs->state > RS_CONNECTING)
		return rs_set_err(ENOTCONN);
	rs->nonblock = nonblock;
	r = connect_wait(rs);
	rs->nonblock = nb;
	if (r && errno == EINPROGRESS)
		errno = EAGAIN;
	return r;
}

static int connect_wait(struct rsocket *rs)
{
	for (;;) {
		rs_cm_progress(rs);
		if (rs->state == RS_CONNECTED)
			return 0;
		if (rs->state == RS_ERROR) {
			int e = rs->err;

			rs->err = 0;
			return rs_set_err(e);
		}
		if (rs->nonblock)
			return rs_set_err(EINPROGRESS);
		rs_wait(rs, -1);
	}
}

RDMACM_EXPORT int rconnect(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	struct rsocket *rs = rs_get(socket);
	int r;

	if (!rs)
		return -1;
	switch (rs->state) {
	case RS_INIT:
	case RS_BOUND:
		if (!addr || addrlen < sizeof(sa_family_t)) {
			r = rs_set_err(EINVAL);
			break;
		}
		if (rdma_resolve_addr(rs->id, NULL, (struct sockaddr *)addr, RS_CONNECT_TIMEOUT_MS)) {
			r = -1;
			break;
		}
		rs->state = RS_RESOLVING_ADDR;
		/* nonblocking: the outcome through rpoll and SO_ERROR, as TCP's */
		r = rs->nonblock ? rs_set_err(EINPROGRESS) : connect_wait(rs);
		break;
	case RS_RESOLVING_ADDR:
	case RS_RESOLVING_ROUTE:
	case RS_CONNECTING:
		r = rs->nonblock ? rs_set_err(EALREADY) : connect_wait(rs);
		break;
	case RS_CONNECTED:
		r = rs_set_err(EISCONN);
		break;
	default:
		r = rs_set_err(EINVAL);
		break;
	}
	rs_put(rs);
	return r;
}

static void copy_addr(struct sockaddr *dst, socklen_t *len, const struct sockaddr *src)
{
	socklen_t n;

	if (!dst || !len)
		return;
	n = src->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
	    src->sa_family == AF_IB ? sizeof(struct sockaddr_ib) : sizeof(struct sockaddr_in);
	memcpy(dst, src, *len < n ? *len : n);
	*len = n;
}

/* The accepted connection: its own channel, resources, the REP. */
static struct rsocket *accept_one(struct rsocket *ls, struct rs_pending *p)
{
	struct rs_conn_data cd;
	struct rdma_conn_param prm = {
		.private_data = &cd, .private_data_len = sizeof(cd),
		.responder_resources = 1, .initiator_depth = 1,
		.retry_count = 7, .rnr_retry_count = 7,
	};
	struct rsocket *rs;
	int e;

	if (!p->pdata_ok) {
		ls->bad.bad_pdata++;
		(void)rdma_reject(p->id, NULL, 0);
		(void)rdma_destroy_id(p->id);
		errno = EPROTO;
		return NULL;
	}
	rs = rs_alloc(ls, p->id);
	if (!rs) {
		e = errno;
		(void)rdma_reject(p->id, NULL, 0);
		(void)rdma_destroy_id(p->id);
		errno = e;
		return NULL;
	}
	if (rs_create_resources(rs) || rs_create_qp(rs) ||
	    rs_take_peer(rs, &p->peer, sizeof(p->peer)))
		goto err;
	rs_fill_conn_data(rs, &cd);
	if (rdma_accept(rs->id, &prm))
		goto err;
	rs->state = RS_CONNECTED;
	if (tab_insert(rs))
		goto err;
	return rs;
err:
	e = errno;
	(void)rdma_reject(rs->id, NULL, 0);
	rs_free(rs);
	errno = e;
	return NULL;
}

RDMACM_EXPORT int raccept(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	struct rsocket *ls = rs_get(socket), *rs;
	struct rs_pending p;
	int r;

	if (!ls)
		return -1;
	if (ls->state != RS_LISTENING) {
		rs_put(ls);
		return rs_set_err(EINVAL);
	}
	for (;;) {
		rs_cm_progress(ls);
		if (!ls->backlog_cnt) {
			if (ls->nonblock) {
				rs_put(ls);
				return rs_set_err(EAGAIN);
			}
			rs_wait(ls, -1);
			continue;
		}
		p = ls->backlog[0];
		memmove(ls->backlog, ls->backlog + 1, (size_t)(--ls->backlog_cnt) * sizeof(p));
		rs = accept_one(ls, &p);
		if (rs)
			break;
		if (errno == EPROTO)
			continue;
		rs_put(ls);
		return -1;
	}
	rs_put(ls);
	copy_addr(addr, addrlen, rdma_get_peer_addr(rs->id));
	r = rs->index;
	return r;
}

RDMACM_EXPORT int rshutdown(int socket, int how)
{
	struct rsocket *rs = rs_get(socket);

	if (!rs)
		return -1;
	if (how != SHUT_RD && how != SHUT_WR && how != SHUT_RDWR) {
		rs_put(rs);
		return rs_set_err(EINVAL);
	}
	if (rs->state != RS_CONNECTED && rs->state != RS_ERROR) {
		rs_put(rs);
		return rs_set_err(ENOTCONN);
	}
	if (how != SHUT_WR)
		rs->shut_rd = true;
	if (how != SHUT_RD) {
		rs->shut_wr = true;
		rs_progress(rs);
		rs_send_fin(rs);
	}
	rs_put(rs);
	return 0;
}

/* man rclose: FIN after the data, the sends drained (at most
 * RS_CLOSE_DRAIN_MS), the disconnect, everything freed. */
RDMACM_EXPORT int rclose(int socket)
{
	struct rsocket *rs = rs_get(socket);

	if (!rs)
		return -1;
	tab_remove(rs);
	if (rs->state == RS_CONNECTED) {
		rs_progress(rs);
		rs_send_fin(rs);
		(void)rs_drain_sends(rs, RS_CLOSE_DRAIN_MS);
	}
	if (rs->id && rs->id->qp)
		(void)rdma_disconnect(rs->id);
	pthread_mutex_unlock(&rs->lock);
	rs_free(rs);
	return 0;
}

/* ---- the stream calls ---- */

RDMACM_EXPORT ssize_t rsend(int socket, const void *buf, size_t len, int flags)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct rsocket *rs = rs_get(socket);
	ssize_t r;

	if (!rs)
		return -1;
	r = rs_sendv(rs, &iov, 1, flags);
	rs_put(rs);
	return r;
}

RDMACM_EXPORT ssize_t rsendto(int socket, const void *buf, size_t len, int flags,
			      const struct sockaddr *dest_addr, socklen_t addrlen)
{
	if (dest_addr || addrlen)
		return rs_lookup_exists(socket) ? rs_set_err(EISCONN) : rs_set_err(EBADF);
	return rsend(socket, buf, len, flags);
}

RDMACM_EXPORT ssize_t rsendmsg(int socket, const struct msghdr *msg, int flags)
{
	struct rsocket *rs;
	ssize_t r;

	if (!msg || msg->msg_iovlen > INT32_MAX)
		return rs_set_err(EINVAL);
	if (msg->msg_control && msg->msg_controllen)
		return rs_set_err(ENOTSUP);
	rs = rs_get(socket);
	if (!rs)
		return -1;
	r = rs_sendv(rs, msg->msg_iov, (int)msg->msg_iovlen, flags);
	rs_put(rs);
	return r;
}

RDMACM_EXPORT ssize_t rwrite(int socket, const void *buf, size_t count)
{
	return rsend(socket, buf, count, 0);
}

RDMACM_EXPORT ssize_t rwritev(int socket, const struct iovec *iov, int iovcnt)
{
	struct msghdr m = { .msg_iov = (struct iovec *)iov, .msg_iovlen = iovcnt > 0 ? (size_t)iovcnt : 0 };

	if (iovcnt < 0)
		return rs_set_err(EINVAL);
	return rsendmsg(socket, &m, 0);
}

RDMACM_EXPORT ssize_t rrecv(int socket, void *buf, size_t len, int flags)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct rsocket *rs = rs_get(socket);
	ssize_t r;

	if (!rs)
		return -1;
	r = rs_recvv(rs, &iov, 1, flags);
	rs_put(rs);
	return r;
}

RDMACM_EXPORT ssize_t rrecvfrom(int socket, void *buf, size_t len, int flags,
				struct sockaddr *src_addr, socklen_t *addrlen)
{
	ssize_t r = rrecv(socket, buf, len, flags);

	if (r >= 0 && src_addr && addrlen) {
		int e = errno;

		if (rgetpeername(socket, src_addr, addrlen))
			*addrlen = 0;
		errno = e;
	}
	return r;
}

RDMACM_EXPORT ssize_t rrecvmsg(int socket, struct msghdr *msg, int flags)
{
	struct rsocket *rs;
	ssize_t r;

	if (!msg || msg->msg_iovlen > INT32_MAX)
		return rs_set_err(EINVAL);
	if (msg->msg_control && msg->msg_controllen)
		return rs_set_err(ENOTSUP);
	rs = rs_get(socket);
	if (!rs)
		return -1;
	r = rs_recvv(rs, msg->msg_iov, (int)msg->msg_iovlen, flags);
	msg->msg_flags = 0;
	rs_put(rs);
	return r;
}

RDMACM_EXPORT ssize_t rread(int socket, void *buf, size_t count)
{
	return rrecv(socket, buf, count, 0);
}

RDMACM_EXPORT ssize_t rreadv(int socket, const struct iovec *iov, int iovcnt)
{
	struct msghdr m = { .msg_iov = (struct iovec *)iov, .msg_iovlen = iovcnt > 0 ? (size_t)iovcnt : 0 };

	if (iovcnt < 0)
		return rs_set_err(EINVAL);
	return rrecvmsg(socket, &m, 0);
}

/* ---- names ---- */

RDMACM_EXPORT int rgetpeername(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	struct rsocket *rs = rs_get(socket);

	if (!rs)
		return -1;
	if (!addr || !addrlen) {
		rs_put(rs);
		return rs_set_err(EFAULT);
	}
	if (rs->state < RS_CONNECTED) {
		rs_put(rs);
		return rs_set_err(ENOTCONN);
	}
	copy_addr(addr, addrlen, rdma_get_peer_addr(rs->id));
	rs_put(rs);
	return 0;
}

RDMACM_EXPORT int rgetsockname(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	struct rsocket *rs = rs_get(socket);

	if (!rs)
		return -1;
	if (!addr || !addrlen) {
		rs_put(rs);
		return rs_set_err(EFAULT);
	}
	copy_addr(addr, addrlen, rdma_get_local_addr(rs->id));
	rs_put(rs);
	return 0;
}

/* ---- options (man rsocket "rsetsockopt"; rdma-core v44 rsocket.c) ---- */

static uint32_t clamp_u32(int v, uint32_t lo, uint32_t hi)
{
	if (v < 0 || (uint32_t)v < lo)
		return lo;
	return (uint32_t)v > hi ? hi : (uint32_t)v;
}

static int set_sol_socket(struct rsocket *rs, int optname, const void *optval, socklen_t optlen, int v)
{
	switch (optname) {
	case SO_REUSEADDR:
		rs->reuseaddr = v != 0;
		if (rs->id && rs->state == RS_INIT)
			(void)rdma_set_option(rs->id, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &v, sizeof(v));
		return 0;
	case SO_RCVBUF:
		/* doubled, as Linux and rdma-core do; fixed once connecting */
		if (rs->state < RS_RESOLVING_ADDR || rs->state == RS_LISTENING)
			rs->rbuf_size = clamp_u32(v > INT32_MAX / 2 ? INT32_MAX : v * 2, RS_MIN_BUF, RS_MAX_BUF);
		return 0;
	case SO_SNDBUF:
		if (rs->state < RS_RESOLVING_ADDR || rs->state == RS_LISTENING)
			rs->sbuf_size = clamp_u32(v > INT32_MAX / 2 ? INT32_MAX : v * 2, RS_MIN_BUF, RS_MAX_BUF);
		return 0;
	case SO_LINGER:
		if (optlen < sizeof(struct linger))
			return rs_set_err(EINVAL);
		memcpy(&rs->linger, optval, sizeof(rs->linger));
		return 0;
	case SO_KEEPALIVE:
		rs->keepalive = v != 0;
		return 0;
	case SO_OOBINLINE:
		rs->oobinline = v != 0;
		return 0;
	default:
		return rs_set_err(ENOTSUP);
	}
}

static int set_sol_rdma(struct rsocket *rs, int optname, int v)
{
	bool fixed = rs->state >= RS_RESOLVING_ADDR && rs->state != RS_LISTENING;

	if (optname == RDMA_ROUTE)
		return 0;  /* softib resolves routes itself; the path given is not used */
	if (optname == RDMA_INLINE) {
		/* the QP's inline size is fixed at creation: later only lower */
		uint32_t cap = fixed ? (rs->inline_size > RS_DEF_INLINE ? rs->inline_size : RS_DEF_INLINE) :
				       RS_MAX_INLINE;

		rs->inline_size = clamp_u32(v, 0, cap);
		return 0;
	}
	if (fixed)
		return rs_set_err(EINVAL);
	switch (optname) {
	case RDMA_SQSIZE:
		rs->sq_size = clamp_u32(v, RS_MIN_QSIZE, RS_MAX_QSIZE);
		return 0;
	case RDMA_RQSIZE:
		rs->rq_size = clamp_u32(v, RS_MIN_QSIZE, RS_MAX_QSIZE);
		return 0;
	case RDMA_IOMAPSIZE:
		rs->iomap_size = clamp_u32(v, 0, RS_MAX_IOMAP);
		return 0;
	default:
		return rs_set_err(ENOTSUP);
	}
}

RDMACM_EXPORT int rsetsockopt(int socket, int level, int optname, const void *optval, socklen_t optlen)
{
	struct rsocket *rs = rs_get(socket);
	int v = 0, r;

	if (!rs)
		return -1;
	if (!optval || (optlen < sizeof(int) && !(level == SOL_RDMA && optname == RDMA_ROUTE))) {
		rs_put(rs);
		return rs_set_err(EINVAL);
	}
	if (optlen >= sizeof(int))
		memcpy(&v, optval, sizeof(v));
	switch (level) {
	case SOL_SOCKET:
		r = set_sol_socket(rs, optname, optval, optlen, v);
		break;
	case IPPROTO_TCP:
		if (optname == TCP_NODELAY) {
			rs->nodelay = v != 0;
			r = 0;
		} else if (optname == TCP_KEEPIDLE) {
			r = v <= 0 ? rs_set_err(EINVAL) : 0;
			if (!r)
				rs->keepidle = v;
		} else if (optname == TCP_MAXSEG) {
			r = 0;
		} else {
			r = rs_set_err(ENOTSUP);
		}
		break;
	case IPPROTO_IPV6:
		r = optname == IPV6_V6ONLY ?
		    rdma_set_option(rs->id, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, &v, sizeof(v)) :
		    rs_set_err(ENOTSUP);
		break;
	case SOL_RDMA:
		r = set_sol_rdma(rs, optname, v);
		break;
	default:
		r = rs_set_err(ENOTSUP);
		break;
	}
	rs_put(rs);
	return r;
}

static int get_int_opt(struct rsocket *rs, int level, int optname, int *v)
{
	switch (level) {
	case SOL_SOCKET:
		switch (optname) {
		case SO_REUSEADDR: *v = rs->reuseaddr; return 0;
		case SO_KEEPALIVE: *v = rs->keepalive; return 0;
		case SO_OOBINLINE: *v = rs->oobinline; return 0;
		case SO_RCVBUF: *v = (int)rs->rbuf_size; return 0;
		case SO_SNDBUF: *v = (int)rs->sbuf_size; return 0;
		case SO_TYPE: *v = rs->type; return 0;
		case SO_ERROR:
			*v = rs->err;
			if (rs->state != RS_ERROR)
				rs->err = 0;
			return 0;
		default: return rs_set_err(ENOTSUP);
		}
	case IPPROTO_TCP:
		switch (optname) {
		case TCP_NODELAY: *v = rs->nodelay; return 0;
		case TCP_MAXSEG: *v = 2048; return 0;
		case TCP_KEEPIDLE: *v = rs->keepidle ? rs->keepidle : 7200; return 0;
		default: return rs_set_err(ENOTSUP);
		}
	case SOL_RDMA:
		switch (optname) {
		case RDMA_SQSIZE: *v = (int)rs->sq_size; return 0;
		case RDMA_RQSIZE: *v = (int)rs->rq_size; return 0;
		case RDMA_INLINE: *v = (int)rs->inline_size; return 0;
		case RDMA_IOMAPSIZE: *v = (int)rs->iomap_size; return 0;
		default: return rs_set_err(ENOTSUP);
		}
	default:
		return rs_set_err(ENOTSUP);
	}
}

RDMACM_EXPORT int rgetsockopt(int socket, int level, int optname, void *optval, socklen_t *optlen)
{
	struct rsocket *rs = rs_get(socket);
	int v = 0, r;

	if (!rs)
		return -1;
	if (!optval || !optlen) {
		rs_put(rs);
		return rs_set_err(EFAULT);
	}
	if (level == SOL_SOCKET && optname == SO_LINGER) {
		r = *optlen < sizeof(struct linger) ? rs_set_err(EINVAL) : 0;
		if (!r) {
			memcpy(optval, &rs->linger, sizeof(rs->linger));
			*optlen = sizeof(rs->linger);
		}
	} else if (*optlen < sizeof(int)) {
		r = rs_set_err(EINVAL);
	} else if (!(r = get_int_opt(rs, level, optname, &v))) {
		memcpy(optval, &v, sizeof(v));
		*optlen = sizeof(v);
	}
	rs_put(rs);
	return r;
}

/* man rsocket: F_GETFL and F_SETFL (O_NONBLOCK) only. */
RDMACM_EXPORT int rfcntl(int socket, int cmd, ...)
{
	struct rsocket *rs = rs_get(socket);
	va_list ap;
	int r;

	if (!rs)
		return -1;
	switch (cmd) {
	case F_GETFL:
		r = O_RDWR | (rs->nonblock ? O_NONBLOCK : 0);
		break;
	case F_SETFL:
		va_start(ap, cmd);
		rs->nonblock = (va_arg(ap, int) & O_NONBLOCK) != 0;
		va_end(ap);
		r = 0;
		break;
	default:
		r = rs_set_err(ENOTSUP);
		break;
	}
	rs_put(rs);
	return r;
}
