/* SPDX-License-Identifier: MIT */
/*
 * rsockets' data path (rs_priv.h has the protocol; docs/rdmacm.md
 * "rsockets"): the verbs resources of a connection (PD, CQ with its
 * completion channel, RC QP, the receive ring, the send ring and the
 * receive slots), the completion queue, credits, FIN, the stream calls'
 * core (rs_sendv, rs_recvv) and riomap/riounmap/riowrite.
 *
 * Everything the peer sends is checked: a data write longer than the
 * free or contiguous part of our ring, data after FIN, a credit that
 * says more bytes were consumed than we sent or more receive WQEs than it
 * can have posted, a window slot beyond what it announced: counted in
 * rs->bad and the connection fails with ECONNRESET.  The peer's RDMA
 * writes can only reach the receive ring and riomap windows (their MRs).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <endian.h>

#include "rdmacm/cma_priv.h"
#include "rdmacm/rs_priv.h"

#define RS_WR_SEND   (1ull << 63)   /* wr_id of a send WR; a receive's is its slot */
#define RS_WR_IOMAP  (1ull << 62)   /* ... an RDMA WRITE of riowrite */
#define RS_SPIN_NS   20000          /* rpoll-like spin before sleeping (rdma-core polling_time) */

uint64_t rs_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *ring_alloc(size_t len)
{
	void *p = NULL;

	if (posix_memalign(&p, 4096, len))
		return NULL;
	memset(p, 0, len);
	return p;
}

/* The connection's PD, CQ (with its channel, non-blocking), rings and MRs
 * on rs->id->verbs.  0 or -1/errno (everything undone by
 * rs_destroy_resources). */
int rs_create_resources(struct rsocket *rs)
{
	struct ibv_context *v = rs->id->verbs;
	int fl;

	if (!v)
		return rs_set_err(ENODEV);
	rs->pd = ibv_alloc_pd(v);
	rs->cch = rs->pd ? ibv_create_comp_channel(v) : NULL;
	if (!rs->cch)
		return -1;
	fl = fcntl(rs->cch->fd, F_GETFL);
	if (fl < 0 || fcntl(rs->cch->fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -1;
	rs->cq = ibv_create_cq(v, (int)(rs->sq_size + rs->rq_size + 8), rs, rs->cch, 0);
	if (!rs->cq)
		return -1;
	rs->rbuf = ring_alloc(rs->rbuf_size);
	rs->sbuf = ring_alloc(rs->sbuf_size);
	rs->rslots = ring_alloc((size_t)rs->rq_size * RS_RECV_SLOT);
	rs->sq_bytes = calloc(rs->sq_size, sizeof(*rs->sq_bytes));
	rs->iomr = calloc(rs->iomap_size ? rs->iomap_size : 1, sizeof(*rs->iomr));
	if (!rs->rbuf || !rs->sbuf || !rs->rslots || !rs->sq_bytes || !rs->iomr)
		return rs_set_err(ENOMEM);
	rs->rbuf_mr = ibv_reg_mr(rs->pd, rs->rbuf, rs->rbuf_size,
				 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	rs->sbuf_mr = rs->rbuf_mr ? ibv_reg_mr(rs->pd, rs->sbuf, rs->sbuf_size, IBV_ACCESS_LOCAL_WRITE) : NULL;
	rs->rslots_mr = rs->sbuf_mr ? ibv_reg_mr(rs->pd, rs->rslots, (size_t)rs->rq_size * RS_RECV_SLOT,
						 IBV_ACCESS_LOCAL_WRITE) : NULL;
	return rs->rslots_mr ? 0 : -1;
}

/* The RC QP on rs->id (rdma_create_qp: INIT), every send signaled. */
int rs_create_qp(struct rsocket *rs)
{
	struct ibv_qp_init_attr a = {
		.send_cq = rs->cq,
		.recv_cq = rs->cq,
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = 1,
		.cap = {
			.max_send_wr = rs->sq_size,
			.max_recv_wr = rs->rq_size,
			.max_send_sge = 1,
			.max_recv_sge = 1,
			.max_inline_data = rs->inline_size > sizeof(struct rs_ctrl) ?
					   rs->inline_size : RS_DEF_INLINE,
		},
	};

	if (rdma_create_qp(rs->id, rs->pd, &a))
		return -1;
	return rs_post_recvs(rs);
}

void rs_destroy_resources(struct rsocket *rs)
{
	uint32_t i;

	if (rs->id && rs->id->qp)
		rdma_destroy_qp(rs->id);
	for (i = 0; rs->iomr && i < rs->iomap_size; i++)
		if (rs->iomr[i].mr)
			ibv_dereg_mr(rs->iomr[i].mr);
	if (rs->rslots_mr)
		ibv_dereg_mr(rs->rslots_mr);
	if (rs->sbuf_mr)
		ibv_dereg_mr(rs->sbuf_mr);
	if (rs->rbuf_mr)
		ibv_dereg_mr(rs->rbuf_mr);
	if (rs->cq) {
		if (rs->cq_events)
			ibv_ack_cq_events(rs->cq, rs->cq_events);
		ibv_destroy_cq(rs->cq);
	}
	if (rs->cch)
		ibv_destroy_comp_channel(rs->cch);
	if (rs->pd)
		ibv_dealloc_pd(rs->pd);
	free(rs->rbuf);
	free(rs->sbuf);
	free(rs->rslots);
	free(rs->sq_bytes);
	free(rs->iomr);
	free(rs->peer_iomap);
	rs->rslots_mr = rs->sbuf_mr = rs->rbuf_mr = NULL;
	rs->cq = NULL;
	rs->cch = NULL;
	rs->pd = NULL;
	rs->rbuf = rs->sbuf = rs->rslots = NULL;
	rs->sq_bytes = NULL;
	rs->iomr = NULL;
	rs->peer_iomap = NULL;
	rs->cq_events = 0;
}

void rs_fill_conn_data(struct rsocket *rs, struct rs_conn_data *cd)
{
	memset(cd, 0, sizeof(*cd));
	cd->version = RS_PROTO_VERSION;
	cd->credits = htobe16((uint16_t)rs->rq_size);
	cd->iomap_size = htobe32(rs->iomap_size);
	cd->rbuf_rkey = htobe32(rs->rbuf_mr->rkey);
	cd->rbuf_size = htobe32(rs->rbuf_size);
	cd->rbuf_addr = htobe64((uintptr_t)rs->rbuf);
}

/* The peer's private data: its ring and credits.  0, or -1 with errno
 * EPROTO for what no softib rsocket sends (counted). */
int rs_take_peer(struct rsocket *rs, const void *pdata, size_t len)
{
	struct rs_conn_data cd;

	if (!pdata || len < sizeof(cd))
		goto bad;
	memcpy(&cd, pdata, sizeof(cd));
	rs->peer_rbuf_addr = be64toh(cd.rbuf_addr);
	rs->peer_rbuf_size = be32toh(cd.rbuf_size);
	rs->peer_rkey = be32toh(cd.rbuf_rkey);
	rs->peer_credits = be16toh(cd.credits);
	rs->peer_iomap_size = be32toh(cd.iomap_size);
	if (cd.version != RS_PROTO_VERSION || rs->peer_rbuf_size < RS_MIN_BUF ||
	    rs->peer_rbuf_size > RS_MAX_BUF || rs->peer_credits < RS_MIN_QSIZE / 2 ||
	    rs->peer_credits > RS_MAX_QSIZE || rs->peer_iomap_size > RS_MAX_IOMAP)
		goto bad;
	rs->peer_granted = rs->peer_credits;
	rs->peer_iomap = calloc(rs->peer_iomap_size ? rs->peer_iomap_size : 1, sizeof(*rs->peer_iomap));
	if (!rs->peer_iomap)
		return rs_set_err(ENOMEM);
	return 0;
bad:
	rs->bad.bad_pdata++;
	return rs_set_err(EPROTO);
}

static int post_recv(struct rsocket *rs, uint32_t slot)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(rs->rslots + (size_t)slot * RS_RECV_SLOT),
		.length = RS_RECV_SLOT,
		.lkey = rs->rslots_mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = slot, .sg_list = &sge, .num_sge = 1 }, *bad;
	int e = ibv_post_recv(rs->id->qp, &wr, &bad);

	return e ? rs_set_err(e) : 0;
}

int rs_post_recvs(struct rsocket *rs)
{
	uint32_t i;

	for (i = 0; i < rs->rq_size; i++)
		if (post_recv(rs, i))
			return -1;
	rs->granted = rs->rq_size;
	rs->granted_told = rs->rq_size;
	return 0;
}

/* The connection failed: reads drain what arrived, then report e. */
static void rs_fail(struct rsocket *rs, int e)
{
	if (rs->state == RS_CONNECTED) {
		rs->state = RS_ERROR;
		rs->err = e;
	}
}

/* Peer receive WQEs we may still use (wrap-safe). */
static int32_t msg_credits(const struct rsocket *rs)
{
	return (int32_t)(rs->peer_granted - rs->msgs_sent);
}

static bool sq_room(const struct rsocket *rs, uint32_t keep)
{
	return rs->sq_outstanding + keep < rs->sq_size;
}

static int post_send(struct rsocket *rs, struct ibv_send_wr *wr, uint32_t ring_bytes)
{
	struct ibv_send_wr *bad;
	int e;

	wr->send_flags |= IBV_SEND_SIGNALED;
	e = ibv_post_send(rs->id->qp, wr, &bad);
	if (e) {
		rs_fail(rs, ECONNRESET);
		return rs_set_err(e);
	}
	rs->sq_bytes[rs->sq_head % rs->sq_size] = ring_bytes;
	rs->sq_head++;
	rs->sq_outstanding++;
	return 0;
}

/* One control message (inline SEND); the credits ride along.  0, or -1
 * when it cannot go now (no credit or SQ slot: errno EAGAIN). */
static int send_ctrl(struct rsocket *rs, uint8_t op, uint16_t slot, const struct rs_iomap *w)
{
	struct rs_ctrl c = { .op = op, .slot = htobe16(slot) };
	struct ibv_sge sge = { .addr = (uintptr_t)&c, .length = sizeof(c) };
	struct ibv_send_wr wr = {
		.wr_id = RS_WR_SEND, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_INLINE,
	};

	if (msg_credits(rs) <= 0 || !sq_room(rs, 0))
		return rs_set_err(EAGAIN);
	c.granted = htobe32(rs->granted);
	c.consumed = htobe64(rs->rtail);
	if (w) {
		c.io_offset = htobe64(w->offset);
		c.io_addr = htobe64(w->addr);
		c.io_len = htobe32((uint32_t)w->len);
		c.io_rkey = htobe32(w->rkey);
	}
	if (post_send(rs, &wr, 0))
		return -1;
	rs->msgs_sent++;
	rs->granted_told = rs->granted;
	rs->consumed_told = rs->rtail;
	return 0;
}

/* The control messages owed: unannounced riomap windows, FIN, credits when
 * half the ring or half the receive WQEs came back since the last ones. */
static void send_owed(struct rsocket *rs)
{
	uint32_t i;

	if (rs->state != RS_CONNECTED || !rs->id->qp)
		return;
	if (rs->iomap_pending) {
		rs->iomap_pending = false;
		for (i = 0; i < rs->iomap_size; i++) {
			struct rs_iomr *m = &rs->iomr[i];
			struct rs_iomap w;

			if (!m->used || m->announced)
				continue;
			w = (struct rs_iomap){ .offset = (uint64_t)m->offset, .len = m->len,
					       .addr = (uintptr_t)m->buf, .rkey = m->mr->rkey };
			if (send_ctrl(rs, RS_CTRL_IOMAP, (uint16_t)i, &w)) {
				rs->iomap_pending = true;
				return;
			}
			m->announced = true;
		}
	}
	if (rs->fin_pending) {
		if (send_ctrl(rs, RS_CTRL_FIN, 0, NULL))
			return;
		rs->fin_pending = false;
		rs->fin_sent = true;
	}
	if (rs->credit_pending || rs->rtail - rs->consumed_told >= rs->rbuf_size / 2 ||
	    rs->granted - rs->granted_told >= rs->rq_size / 2)
		rs->credit_pending = send_ctrl(rs, RS_CTRL_CREDIT, 0, NULL) != 0;
}

static void on_data(struct rsocket *rs, uint32_t len)
{
	uint64_t used = rs->rhead - rs->rtail;
	uint64_t contig = rs->rbuf_size - rs->rhead % rs->rbuf_size;

	if (len == 0 || len > rs->rbuf_size - used || len > contig || rs->fin_rcvd) {
		rs->bad.bad_data++;
		rs_fail(rs, ECONNRESET);
		return;
	}
	rs->rhead += len;
}

static void on_ctrl(struct rsocket *rs, const uint8_t *slot, uint32_t len)
{
	struct rs_ctrl c;
	uint64_t consumed;
	uint32_t granted;
	uint16_t s;

	if (len != sizeof(c))
		goto bad;
	memcpy(&c, slot, sizeof(c));
	consumed = be64toh(c.consumed);
	granted = be32toh(c.granted);
	/* the reader cannot consume what we never sent, nor go back; the peer
	 * cannot have posted more receive WQEs than its RQ beyond what we sent */
	if (consumed < rs->peer_consumed || consumed > rs->sent ||
	    (int32_t)(granted - rs->peer_granted) < 0 ||
	    (int32_t)(granted - rs->msgs_sent) > (int32_t)rs->peer_credits)
		goto bad;
	rs->peer_consumed = consumed;
	rs->peer_granted = granted;
	s = be16toh(c.slot);
	switch (c.op) {
	case RS_CTRL_CREDIT:
		return;
	case RS_CTRL_FIN:
		rs->fin_rcvd = true;
		return;
	case RS_CTRL_IOMAP:
	case RS_CTRL_IOUNMAP:
		if (s >= rs->peer_iomap_size)
			goto bad;
		if (c.op == RS_CTRL_IOUNMAP) {
			rs->peer_iomap[s].valid = false;
			return;
		}
		rs->peer_iomap[s] = (struct rs_iomap){
			.valid = true, .offset = be64toh(c.io_offset), .len = be32toh(c.io_len),
			.addr = be64toh(c.io_addr), .rkey = be32toh(c.io_rkey),
		};
		if (!rs->peer_iomap[s].len || rs->peer_iomap[s].offset + rs->peer_iomap[s].len <
		    rs->peer_iomap[s].offset) {
			rs->peer_iomap[s].valid = false;
			goto bad;
		}
		return;
	default:
		break;
	}
bad:
	rs->bad.bad_ctrl++;
	rs_fail(rs, ECONNRESET);
}

static void on_wc(struct rsocket *rs, const struct ibv_wc *wc)
{
	if (wc->wr_id & RS_WR_SEND) {
		if (rs->sq_outstanding) {
			rs->sbuf_tail += rs->sq_bytes[rs->sq_tail % rs->sq_size];
			rs->sq_tail++;
			rs->sq_outstanding--;
		}
		if (wc->status != IBV_WC_SUCCESS && wc->status != IBV_WC_WR_FLUSH_ERR)
			rs_fail(rs, ECONNRESET);
		return;
	}
	if (wc->status != IBV_WC_SUCCESS) {
		if (wc->status != IBV_WC_WR_FLUSH_ERR)
			rs_fail(rs, ECONNRESET);
		return;
	}
	if (wc->wr_id >= rs->rq_size) {
		rs->bad.bad_completion++;
		return;
	}
	if (wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM && (wc->wc_flags & IBV_WC_WITH_IMM))
		on_data(rs, be32toh(wc->imm_data));
	else if (wc->opcode == IBV_WC_RECV)
		on_ctrl(rs, rs->rslots + wc->wr_id * RS_RECV_SLOT, wc->byte_len);
	else {
		rs->bad.bad_completion++;
		rs_fail(rs, ECONNRESET);
	}
	if (rs->state == RS_CONNECTED && !post_recv(rs, (uint32_t)wc->wr_id))
		rs->granted++;
}

/* Drain the CQ and send what is owed.  The number of completions. */
int rs_progress(struct rsocket *rs)
{
	struct ibv_wc wc[16];
	int n, i, total = 0;

	if (!rs->cq)
		return 0;
	while ((n = ibv_poll_cq(rs->cq, 16, wc)) > 0) {
		for (i = 0; i < n; i++)
			on_wc(rs, &wc[i]);
		total += n;
	}
	send_owed(rs);
	return total;
}

void rs_get_cq_events(struct rsocket *rs)
{
	struct ibv_cq *cq;
	void *ctx;

	if (!rs->cch)
		return;
	while (ibv_get_cq_event(rs->cch, &cq, &ctx) == 0) {
		rs->cq_armed = false;
		if (++rs->cq_events >= 64) {
			ibv_ack_cq_events(rs->cq, rs->cq_events);
			rs->cq_events = 0;
		}
	}
}

void rs_arm(struct rsocket *rs)
{
	/* every time: arming also wakes softib's napping engine thread
	 * (docs/transport.md "The engine"), which must progress while we sleep */
	if (rs->cq && !ibv_req_notify_cq(rs->cq, 0))
		rs->cq_armed = true;
}

/*
 * Wait for something to happen on rs: spin on the CQ for a moment, then
 * arm it and sleep in poll() on the completion channel and the cm channel
 * with rs unlocked (at most timeout_ms, -1: 100 ms, so a lost wakeup
 * costs a look, not a hang).  0 (the caller looks again).
 */
int rs_wait(struct rsocket *rs, int timeout_ms)
{
	struct pollfd p[2];
	uint64_t t0 = now_ns();
	int n = 0;

	while (now_ns() - t0 < RS_SPIN_NS)
		if (rs_progress(rs) > 0)
			return 0;
	rs_arm(rs);
	if (rs_progress(rs) > 0)
		return 0;
	p[n++] = (struct pollfd){ .fd = rs->ch->fd, .events = POLLIN };
	if (rs->cch)
		p[n++] = (struct pollfd){ .fd = rs->cch->fd, .events = POLLIN };
	if (timeout_ms < 0 || timeout_ms > 100)
		timeout_ms = 100;
	pthread_mutex_unlock(&rs->lock);
	(void)poll(p, (nfds_t)n, timeout_ms);
	pthread_mutex_lock(&rs->lock);
	rs_get_cq_events(rs);
	(void)rs_cm_progress(rs);
	return 0;
}

static uint64_t sbuf_free(const struct rsocket *rs)
{
	return rs->sbuf_size - (rs->sbuf_head - rs->sbuf_tail);
}

/* Can one byte of data go now (credits, ring, SQ, send ring)? */
bool rs_can_send(const struct rsocket *rs)
{
	/* a window announcement still owed goes first: RC order makes it
	 * reach the peer before the data that may tell it to riowrite */
	return rs->state == RS_CONNECTED && !rs->shut_wr && !rs->fin_sent && !rs->fin_pending &&
	       !rs->iomap_pending &&
	       rs->sent - rs->peer_consumed < rs->peer_rbuf_size &&
	       msg_credits(rs) > RS_CTRL_RESERVE && sq_room(rs, 1) && sbuf_free(rs) > 0;
}

/* Will a read return now (data, EOF or an error)? */
bool rs_can_recv(const struct rsocket *rs)
{
	return rs->rhead != rs->rtail || rs->fin_rcvd || rs->disconnected || rs->shut_rd ||
	       rs->state != RS_CONNECTED;
}

/* Copy len bytes at position skip of iov to/from p. */
static void iov_copy(const struct iovec *iov, int iovcnt, size_t skip, uint8_t *p, size_t len, bool to_iov)
{
	int i;

	for (i = 0; i < iovcnt && len; i++) {
		size_t l = iov[i].iov_len, n;

		if (skip >= l) {
			skip -= l;
			continue;
		}
		n = l - skip < len ? l - skip : len;
		if (to_iov)
			memcpy((uint8_t *)iov[i].iov_base + skip, p, n);
		else
			memcpy(p, (const uint8_t *)iov[i].iov_base + skip, n);
		p += n;
		len -= n;
		skip = 0;
	}
}

static size_t min_sz(size_t a, uint64_t b)
{
	return (uint64_t)a < b ? a : (size_t)b;
}

/* Post one chunk of data from iov (at skip): its length, 0 if none fits.
 * Up to inline_size bytes go inline (copied at post time, no send-ring
 * space); larger chunks are copied into the send ring, freed when their
 * completion comes. */
static size_t send_chunk(struct rsocket *rs, const struct iovec *iov, int iovcnt, size_t skip, size_t len)
{
	uint64_t roff = rs->sent % rs->peer_rbuf_size;
	uint64_t soff = rs->sbuf_head % rs->sbuf_size;
	uint8_t tmp[RS_MAX_INLINE];
	size_t n = len;
	struct ibv_sge sge = { .lkey = rs->sbuf_mr->lkey };
	struct ibv_send_wr wr = { .wr_id = RS_WR_SEND, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE_WITH_IMM };
	bool inl;

	n = min_sz(n, rs->peer_rbuf_size - (rs->sent - rs->peer_consumed));
	n = min_sz(n, rs->peer_rbuf_size - roff);
	n = min_sz(n, RS_MAX_TRANSFER);
	inl = n <= rs->inline_size;
	if (inl) {
		iov_copy(iov, iovcnt, skip, tmp, n, false);
		sge.addr = (uintptr_t)tmp;
		wr.send_flags = IBV_SEND_INLINE;
	} else {
		n = min_sz(n, sbuf_free(rs));
		n = min_sz(n, rs->sbuf_size - soff);
		iov_copy(iov, iovcnt, skip, rs->sbuf + soff, n, false);
		sge.addr = (uintptr_t)(rs->sbuf + soff);
	}
	if (!n)
		return 0;
	sge.length = (uint32_t)n;
	wr.imm_data = htobe32((uint32_t)n);
	wr.wr.rdma.remote_addr = rs->peer_rbuf_addr + roff;
	wr.wr.rdma.rkey = rs->peer_rkey;
	if (post_send(rs, &wr, inl ? 0 : (uint32_t)n))
		return 0;
	if (!inl)
		rs->sbuf_head += n;
	rs->sent += n;
	rs->msgs_sent++;
	return n;
}

static int write_error(const struct rsocket *rs)
{
	if (rs->state == RS_ERROR)
		return rs->err ? rs->err : ECONNRESET;
	if (rs->shut_wr || rs->fin_sent || rs->fin_pending || rs->disconnected)
		return EPIPE;
	if (rs->state != RS_CONNECTED)
		return ENOTCONN;
	return 0;
}

/* The core of rsend/rwrite/rsendmsg: bytes queued, or -1/errno (EAGAIN
 * when nonblocking and nothing fits, EPIPE after shutdown, ECONNRESET). */
static ssize_t sendv_core(struct rsocket *rs, const struct iovec *iov, int iovcnt, int flags)
{
	size_t total = 0, done = 0, n;
	bool nb = rs->nonblock || (flags & MSG_DONTWAIT);
	int i, e;

	for (i = 0; i < iovcnt; i++)
		total += iov[i].iov_len;
	if (rs->state < RS_CONNECTED && rs_connecting(rs, nb))
		return -1;
	while (done < total || !total) {
		rs_progress(rs);
		e = write_error(rs);
		if (e)
			return done ? (ssize_t)done : rs_set_err(e);
		if (!total)
			return 0;
		if (!rs_can_send(rs)) {
			if (nb)
				return done ? (ssize_t)done : rs_set_err(EAGAIN);
			rs_wait(rs, -1);
			continue;
		}
		n = send_chunk(rs, iov, iovcnt, done, total - done);
		if (!n && rs->state != RS_CONNECTED)
			continue;
		done += n;
	}
	return (ssize_t)done;
}

/*
 * The core of rsend/rwrite/rsendmsg (above).  On the way back to the
 * application the CQ is armed: the program may now spin on its own memory
 * (riostream) or sleep elsewhere, and softib's engine thread, told so,
 * carries our sends and the peer's writes instead of napping
 * (docs/transport.md "The engine").
 */
ssize_t rs_sendv(struct rsocket *rs, const struct iovec *iov, int iovcnt, int flags)
{
	ssize_t r = sendv_core(rs, iov, iovcnt, flags);

	rs_arm(rs);
	return r;
}

/* The core of rrecv/rread/rrecvmsg: bytes, 0 at EOF, or -1/errno. */
ssize_t rs_recvv(struct rsocket *rs, const struct iovec *iov, int iovcnt, int flags)
{
	size_t total = 0, done = 0;
	bool nb = rs->nonblock || (flags & MSG_DONTWAIT);
	int i;

	for (i = 0; i < iovcnt; i++)
		total += iov[i].iov_len;
	if (rs->state < RS_CONNECTED && rs_connecting(rs, nb))
		return -1;
	while (done < total) {
		uint64_t avail, off, n, first;

		rs_progress(rs);
		avail = rs->rhead - rs->rtail - ((flags & MSG_PEEK) ? done : 0);
		if (rs->shut_rd)
			avail = 0;
		if (avail) {
			n = min_sz(total - done, avail);
			off = (rs->rtail + ((flags & MSG_PEEK) ? done : 0)) % rs->rbuf_size;
			first = min_sz(n, rs->rbuf_size - off);
			iov_copy(iov, iovcnt, done, rs->rbuf + off, first, true);
			if (n > first)
				iov_copy(iov, iovcnt, done + first, rs->rbuf, n - first, true);
			done += n;
			if (!(flags & MSG_PEEK)) {
				rs->rtail += n;
				send_owed(rs);
			}
			if (!(flags & MSG_WAITALL) || (flags & MSG_PEEK))
				break;
			continue;
		}
		if (rs->fin_rcvd || rs->disconnected || rs->shut_rd)
			break;
		if (rs->state == RS_ERROR)
			return done ? (ssize_t)done : rs_set_err(rs->err);
		if (rs->state != RS_CONNECTED)
			break;
		if (done && !(flags & MSG_WAITALL))
			break;
		if (nb)
			return done ? (ssize_t)done : rs_set_err(EAGAIN);
		rs_wait(rs, -1);
	}
	return (ssize_t)done;
}

/* Queue FIN after the data sent so far (SHUT_WR). */
int rs_send_fin(struct rsocket *rs)
{
	if (rs->fin_sent || rs->fin_pending || rs->state != RS_CONNECTED)
		return 0;
	rs->fin_pending = true;
	send_owed(rs);
	return 0;
}

/* rclose: wait (at most timeout_ms) until every send completed and FIN
 * went.  0, or -1 ETIMEDOUT (the data may not have arrived). */
int rs_drain_sends(struct rsocket *rs, int timeout_ms)
{
	uint64_t end = rs_now_ms() + (uint64_t)timeout_ms;

	while (rs->state == RS_CONNECTED && !rs->disconnected && (rs->sq_outstanding || rs->fin_pending)) {
		if (rs_now_ms() >= end)
			return rs_set_err(ETIMEDOUT);
		rs_wait(rs, (int)(end - rs_now_ms()));
		rs_progress(rs);
	}
	return 0;
}

/* ---- riomap, riounmap, riowrite (man riomap, man riowrite) ---- */

RDMACM_EXPORT off_t riomap(int socket, void *buf, size_t len, int prot, int flags, off_t offset)
{
	struct rsocket *rs = rs_get(socket);
	struct rs_iomr *m = NULL;
	uint32_t i;

	if (!rs)
		return -1;
	if (rs->state != RS_CONNECTED || !buf || !len || len > UINT32_MAX || prot != PROT_WRITE ||
	    flags || offset < -1) {
		errno = rs->state != RS_CONNECTED ? ENOTCONN : EINVAL;
		goto fail;
	}
	for (i = 0; i < rs->iomap_size && !m; i++)
		if (!rs->iomr[i].used)
			m = &rs->iomr[i];
	if (!m) {
		errno = ENOMEM;
		goto fail;
	}
	m->mr = ibv_reg_mr(rs->pd, buf, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!m->mr)
		goto fail;
	m->used = true;
	m->buf = buf;
	m->len = len;
	m->offset = offset == -1 ? (off_t)(uintptr_t)buf : offset;
	offset = m->offset;
	rs->iomap_pending = true;
	rs_progress(rs);
	rs_put(rs);
	return offset;
fail:
	rs_put(rs);
	return -1;
}

RDMACM_EXPORT int riounmap(int socket, void *buf, size_t len)
{
	struct rsocket *rs = rs_get(socket);
	uint32_t i;

	if (!rs)
		return -1;
	for (i = 0; i < rs->iomap_size; i++) {
		struct rs_iomr *m = &rs->iomr[i];

		if (!m->used || m->buf != buf || m->len != len)
			continue;
		/* the peer must hear of it before the MR goes (its writes would
		 * then fail and break the connection): wait for a credit, bounded */
		uint64_t end = rs_now_ms() + RS_CLOSE_DRAIN_MS;

		rs_progress(rs);
		while (rs->state == RS_CONNECTED && m->announced &&
		       send_ctrl(rs, RS_CTRL_IOUNMAP, (uint16_t)i, NULL) && rs_now_ms() < end)
			rs_wait(rs, 10);
		ibv_dereg_mr(m->mr);
		memset(m, 0, sizeof(*m));
		rs_put(rs);
		return 0;
	}
	rs_put(rs);
	return rs_set_err(EINVAL);
}

static const struct rs_iomap *find_window(const struct rsocket *rs, uint64_t off)
{
	uint32_t i;

	for (i = 0; i < rs->peer_iomap_size; i++) {
		const struct rs_iomap *w = &rs->peer_iomap[i];

		if (w->valid && off >= w->offset && off - w->offset < w->len)
			return w;
	}
	return NULL;
}

/* One RDMA WRITE of riowrite into window w at off: its length or 0
 * (inline or through the send ring, as send_chunk). */
static size_t iowrite_chunk(struct rsocket *rs, const struct rs_iomap *w, const uint8_t *p, size_t len,
			    uint64_t off)
{
	uint64_t soff = rs->sbuf_head % rs->sbuf_size;
	size_t n = len;
	struct ibv_sge sge = { .lkey = rs->sbuf_mr->lkey };
	struct ibv_send_wr wr = { .wr_id = RS_WR_SEND | RS_WR_IOMAP, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE };
	bool inl;

	n = min_sz(n, w->len - (off - w->offset));
	n = min_sz(n, RS_MAX_TRANSFER);
	inl = n <= rs->inline_size;
	if (inl) {
		sge.addr = (uintptr_t)p;   /* inline: copied by ibv_post_send */
		wr.send_flags = IBV_SEND_INLINE;
	} else {
		n = min_sz(n, sbuf_free(rs));
		n = min_sz(n, rs->sbuf_size - soff);
		memcpy(rs->sbuf + soff, p, n);
		sge.addr = (uintptr_t)(rs->sbuf + soff);
	}
	if (!n)
		return 0;
	sge.length = (uint32_t)n;
	wr.wr.rdma.remote_addr = w->addr + (off - w->offset);
	wr.wr.rdma.rkey = w->rkey;
	if (post_send(rs, &wr, inl ? 0 : (uint32_t)n))
		return 0;
	if (!inl)
		rs->sbuf_head += n;
	return n;
}

/*
 * man riowrite: bytes written (up to the window's end), or (size_t)-1 with
 * errno EINVAL (no window of the peer's there), EAGAIN, EPIPE, ECONNRESET.
 * When there is room the source is copied (inline or into the send ring)
 * before anything drives softib's progress: riostream passes the window it
 * spins on as the source.
 */
RDMACM_EXPORT size_t riowrite(int socket, const void *buf, size_t count, off_t offset, int flags)
{
	struct rsocket *rs = rs_get(socket);
	bool nb, looked = false;
	size_t done = 0, n;
	int e;

	if (!rs)
		return (size_t)-1;
	nb = rs->nonblock || (flags & MSG_DONTWAIT);
	while (done < count) {
		const struct rs_iomap *w;
		bool room;

		e = write_error(rs);
		if (!e && offset < 0)
			e = EINVAL;
		if (e) {
			errno = e;
			break;
		}
		w = find_window(rs, (uint64_t)offset + done);
		room = sq_room(rs, 1) && (sbuf_free(rs) || count - done <= rs->inline_size);
		if (!w || !room) {
			if (!looked) {  /* completions, the peer's window announcements */
				rs_progress(rs);
				looked = true;
				continue;
			}
			if (!w) {
				errno = EINVAL;
				break;
			}
			if (nb) {
				errno = EAGAIN;
				break;
			}
			rs_wait(rs, -1);
			rs_progress(rs);
			continue;
		}
		looked = false;
		n = iowrite_chunk(rs, w, (const uint8_t *)buf + done, count - done, (uint64_t)offset + done);
		if (!n && rs->state != RS_CONNECTED)
			continue;
		done += n;
	}
	rs_progress(rs);
	rs_arm(rs);   /* the caller may spin on memory next: see rs_sendv */
	rs_put(rs);
	return done ? done : (count ? (size_t)-1 : 0);
}
