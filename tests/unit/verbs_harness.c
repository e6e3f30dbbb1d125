/* SPDX-License-Identifier: MIT */
/*
 * The harness of the verbs tests (test_verbs.c, test_verbs_conform.c,
 * test_faults.c): a
 * private softibd per test program, two connected RC ends on softib0 and
 * softib1 in one process, bounded polling, and a hand-made producer into a
 * QP's inbox for forged packets.  Every wait has a timeout; the daemon is
 * stopped by PID.  Test code only: cmocka assertions, no locking.
 */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hca/hca.h"
#include "link/dest.h"
#include "verbs_harness.h"

/*
 * Both ends live in one process and each registers BUF_SIZE (4 MiB): 8 MiB
 * pinned, all of a container's default RLIMIT_MEMLOCK before any test's
 * own MRs, so without CAP_IPC_LOCK (a developer's shell) these programs
 * would fail where two processes on hardware would not.  They test verbs,
 * not the limit (test_memlock.c does): accounting off unless the caller
 * set SOFTIB_MEMLOCK.  Runs before main, so before any registration.
 */
__attribute__((constructor)) static void harness_memlock_off(void)
{
	setenv("SOFTIB_MEMLOCK", "0", 0);
}

/* Poll one completion, failing the test after timeout_ms. */
void poll_one(struct ibv_cq *cq, struct ibv_wc *wc, unsigned int timeout_ms)
{
	uint64_t end = now_ms() + timeout_ms;
	int n;

	while ((n = ibv_poll_cq(cq, 1, wc)) == 0) {
		if (now_ms() > end)
			fail_msg("no completion within %u ms", timeout_ms);
	}
	assert_int_equal(n, 1);
}

void expect_no_completion(struct ibv_cq *cq, unsigned int ms)
{
	struct ibv_wc wc;
	uint64_t end = now_ms() + ms;

	while (now_ms() < end)
		assert_int_equal(ibv_poll_cq(cq, 1, &wc), 0);
}

struct ibv_device *find_device(const char *name)
{
	static struct ibv_device **list;
	int n;

	if (!list)
		list = ibv_get_device_list(&n);
	assert_non_null(list);
	for (int i = 0; list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			return list[i];
	fail_msg("device %s not found", name);
	return NULL;
}

void end_open(struct end *e, const char *dev, int sq_sig_all, int qp_access)
{
	struct ibv_port_attr pa;
	struct ibv_qp_init_attr ia = {
		.cap = { .max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 4, .max_recv_sge = 4,
			 .max_inline_data = 256 },
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = sq_sig_all,
	};
	(void)qp_access;

	e->ctx = ibv_open_device(find_device(dev));
	assert_non_null(e->ctx);
	e->pd = ibv_alloc_pd(e->ctx);
	assert_non_null(e->pd);
	e->cq = ibv_create_cq(e->ctx, 256, NULL, NULL, 0);
	assert_non_null(e->cq);
	e->buf = aligned_alloc(4096, BUF_SIZE);
	assert_non_null(e->buf);
	memset(e->buf, 0, BUF_SIZE);
	e->mr = ibv_reg_mr(e->pd, e->buf, BUF_SIZE,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	assert_non_null(e->mr);
	ia.send_cq = ia.recv_cq = e->cq;
	e->qp = ibv_create_qp(e->pd, &ia);
	assert_non_null(e->qp);
	assert_int_equal(ibv_query_port(e->ctx, 1, &pa), 0);
	e->lid = pa.lid;
}


const struct conn_opts default_opts = {
	.mtu = IBV_MTU_1024, .timeout = 14, .retry_cnt = 7, .rnr_retry = 7, .min_rnr_timer = 1,
	.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
};

void qp_connect(struct end *self, const struct end *peer, const struct conn_opts *o)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.pkey_index = 0,
		.port_num = 1,
		.qp_access_flags = o->access,
	};

	assert_int_equal(ibv_modify_qp(self->qp, &a,
				       IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = o->mtu;
	a.dest_qp_num = o->force_dest_qpn ? o->force_dest_qpn : peer->qp->qp_num;
	a.rq_psn = o->psn ? o->psn : 0x123456;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = o->min_rnr_timer;
	a.ah_attr.dlid = peer->lid;
	a.ah_attr.port_num = 1;
	if (o->global) {
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.hop_limit = 1;
		assert_int_equal(ibv_query_gid(peer->ctx, 1, 0, &a.ah_attr.grh.dgid), 0);
	}
	assert_int_equal(ibv_modify_qp(self->qp, &a,
				       IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				       IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = o->timeout;
	a.retry_cnt = o->retry_cnt;
	a.rnr_retry = o->rnr_retry;
	a.sq_psn = o->psn ? o->psn : 0x123456;
	a.max_rd_atomic = 4;
	assert_int_equal(ibv_modify_qp(self->qp, &a,
				       IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				       IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC), 0);
}

void pair_open(struct pair *p, int sq_sig_all, const struct conn_opts *oa, const struct conn_opts *ob)
{
	end_open(&p->e[0], "softib0", sq_sig_all, 0);
	end_open(&p->e[1], "softib1", sq_sig_all, 0);
	qp_connect(&p->e[0], &p->e[1], oa ? oa : &default_opts);
	qp_connect(&p->e[1], &p->e[0], ob ? ob : &default_opts);
}

void end_close(struct end *e)
{
	assert_int_equal(ibv_destroy_qp(e->qp), 0);
	assert_int_equal(ibv_dereg_mr(e->mr), 0);
	assert_int_equal(ibv_destroy_cq(e->cq), 0);
	assert_int_equal(ibv_dealloc_pd(e->pd), 0);
	assert_int_equal(ibv_close_device(e->ctx), 0);
	free(e->buf);
}

void end_open_ex(struct end *e, const char *dev, enum ibv_qp_type type, uint32_t sq, uint32_t rq,
		 uint32_t send_sge, int sq_sig_all, uint32_t cqe, size_t bufsize)
{
	struct ibv_port_attr pa;
	struct ibv_qp_init_attr_ex ia = {
		.cap = { .max_send_wr = sq, .max_recv_wr = rq, .max_send_sge = send_sge, .max_recv_sge = 1,
			 .max_inline_data = 64 },
		.qp_type = type,
		.sq_sig_all = sq_sig_all,
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.send_ops_flags = IBV_QP_EX_WITH_SEND,
	};

	e->ctx = ibv_open_device(find_device(dev));
	assert_non_null(e->ctx);
	e->pd = ibv_alloc_pd(e->ctx);
	assert_non_null(e->pd);
	e->cq = ibv_create_cq(e->ctx, (int)cqe, NULL, NULL, 0);
	assert_non_null(e->cq);
	e->buf = calloc(1, bufsize);
	assert_non_null(e->buf);
	e->mr = ibv_reg_mr(e->pd, e->buf, bufsize, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(e->mr);
	ia.pd = e->pd;
	ia.send_cq = ia.recv_cq = e->cq;
	e->qp = ibv_create_qp_ex(e->ctx, &ia);
	assert_non_null(e->qp);
	assert_int_equal(ibv_query_port(e->ctx, 1, &pa), 0);
	e->lid = pa.lid;
}

void end_to_rts(struct end *e, const struct end *peer, uint32_t qkey)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = qkey };

	if (e->qp->qp_type != IBV_QPT_UD) {
		qp_connect(e, peer, &default_opts);
		return;
	}
	assert_int_equal(ibv_modify_qp(e->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	assert_int_equal(ibv_modify_qp(e->qp, &a, IBV_QP_STATE), 0);
	a.qp_state = IBV_QPS_RTS;
	assert_int_equal(ibv_modify_qp(e->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN), 0);
}

void pair_close(struct pair *p)
{
	end_close(&p->e[0]);
	end_close(&p->e[1]);
}

void post_recv(struct end *e, uint64_t wr_id, uint32_t off, uint32_t len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)e->buf + off, .length = len, .lkey = e->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad;

	assert_int_equal(ibv_post_recv(e->qp, &wr, &bad), 0);
}

int post_send(struct end *e, enum ibv_wr_opcode op, uint64_t wr_id, struct ibv_sge *sge, int nsge,
		     int flags, uint64_t raddr, uint32_t rkey, uint32_t imm)
{
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = sge, .num_sge = nsge, .opcode = op, .send_flags = flags,
		.imm_data = htobe32(imm),
	}, *bad = NULL;
	int rc;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	rc = ibv_post_send(e->qp, &wr, &bad);
	if (rc)
		assert_ptr_equal(bad, &wr);
	return rc;
}

enum ibv_qp_state qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	assert_int_equal(ibv_query_qp(qp, &a, IBV_QP_STATE, &ia), 0);
	return a.qp_state;
}

/* ---- a hand-made producer into a QP's inbox ---- */

/* A connection of our own and the fabric map (HELLO). */
static void forger_hello(struct inbox_map *m)
{
	struct sib_ctl_msg msg = { .hdr.op = SIB_CTL_HELLO };
	int mfd;

	memset(m, 0, sizeof(*m));
	m->fd = sib_ctl_open(false);
	assert_true(m->fd >= 0);
	msg.u.hello.abi_version = SIB_ABI_VERSION;
	msg.u.hello.pid = getpid();
	assert_int_equal(sib_ctl_call(m->fd, &msg, &mfd), 0);
	assert_int_equal(msg.hdr.status, 0);
	m->fab_size = msg.u.hello.fabric_size;
	m->fab = mmap(NULL, m->fab_size, PROT_READ, MAP_SHARED, mfd, 0);
	assert_true(m->fab != MAP_FAILED);
	close(mfd);
}

void inbox_map(struct inbox_map *m, uint32_t qpn)
{
	struct sib_ctl_msg msg;
	uint64_t w, end;
	int ifd;

	forger_hello(m);
	w = atomic_load(&m->fab->qp_owner[qpn]);
	assert_true(w & SIB_QPO_VALID);
	/* Our own context on the QP's device. */
	memset(&msg, 0, sizeof(msg));
	msg.hdr.op = SIB_CTL_OPEN_DEVICE;
	msg.u.open.dev_index = SIB_QPO_DEV(w);
	msg.u.open.dev_gen = atomic_load(&m->fab->devs[SIB_QPO_DEV(w)].gen);
	assert_int_equal(sib_ctl_call(m->fd, &msg, &ifd), 0);
	assert_int_equal(msg.hdr.status, 0);
	close(ifd);
	m->dev_handle = msg.u.open.handle;
	m->inbox = msg.u.open.inbox;
	/* The ring from it to the QP's context, and that context's page. */
	memset(&msg, 0, sizeof(msg));
	msg.hdr.op = SIB_CTL_PAIR_OPEN;
	msg.u.pair.dev_handle = m->dev_handle;
	msg.u.pair.inbox = SIB_QPO_INBOX(w);
	msg.u.pair.inbox_gen = SIB_QPO_GEN(w);
	assert_int_equal(sib_ctl_call(m->fd, &msg, &ifd), 0);
	assert_int_equal(msg.hdr.status, 0);
	m->base = mmap(NULL, SIB_PAIR_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, ifd, 0);
	assert_true(m->base != MAP_FAILED);
	close(ifd);
	memset(&msg, 0, sizeof(msg));
	msg.hdr.op = SIB_CTL_GET_INBOX;
	msg.u.get_inbox.inbox = SIB_QPO_INBOX(w);
	msg.u.get_inbox.inbox_gen = SIB_QPO_GEN(w);
	msg.u.get_inbox.dev_handle = m->dev_handle;
	assert_int_equal(sib_ctl_call(m->fd, &msg, &ifd), 0);
	assert_int_equal(msg.hdr.status, 0);
	m->db = mmap(NULL, SIB_INBOX_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, ifd, 0);
	assert_true(m->db != MAP_FAILED);
	close(ifd);
	sib_pair_attach(&m->own.r, m->base);
	sib_ring_attach(&m->own.db, m->db);
	m->tx = &m->own;
	/* The receiver takes its end (its engine thread): bounded wait. */
	end = now_ms() + 5000;
	while (!atomic_load(&m->own.r.hdr->attached)) {
		if (now_ms() > end)
			fail_msg("the receiver never took the pair ring");
		usleep(1000);
	}
}

void inbox_map_peer(struct inbox_map *m, struct ibv_context *from, uint32_t qpn)
{
	struct sib_context *c = to_sctx(from);
	uint64_t w, end = now_ms() + 5000;
	struct sib_link_asks a;

	forger_hello(m);
	/* The link functions of this binary's own copy (the library's are
	 * not exported) read the map through this copy's sib_fabric. */
	if (!sib_fabric)
		sib_fabric = m->fab;
	w = atomic_load(&m->fab->qp_owner[qpn]);
	assert_true(w & SIB_QPO_VALID);
	m->peer = c;
	for (;;) {
		pthread_mutex_lock(&c->progress_lock);
		if (sib_link_dest_get(&c->link, SIB_QPO_INBOX(w), SIB_QPO_GEN(w), &m->dest) == SIB_LINK_OK &&
		    sib_link_dest_attached(m->dest))
			break;
		if (m->dest)
			sib_link_dest_put(m->dest);
		m->dest = NULL;
		sib_link_asks_take(&c->link, &a); /* as a slow-path verb answers them */
		pthread_mutex_unlock(&c->progress_lock);
		sib_link_asks_answer(&c->link, &a);
		pthread_mutex_lock(&c->progress_lock);
		sib_link_asks_apply(&c->link, &a);
		pthread_mutex_unlock(&c->progress_lock);
		if (now_ms() > end)
			fail_msg("no ring from the peer's context");
		usleep(1000);
	}
	m->tx = &m->dest->tx;
	pthread_mutex_unlock(&c->progress_lock);
}

void inbox_unmap(struct inbox_map *m)
{
	if (m->peer) {
		pthread_mutex_lock(&m->peer->progress_lock);
		sib_link_dest_put(m->dest);
		pthread_mutex_unlock(&m->peer->progress_lock);
		if (sib_fabric == m->fab)
			sib_fabric = NULL;
		munmap(m->fab, m->fab_size);
		close(m->fd);
		return;
	}
	munmap(m->base, SIB_PAIR_BYTES);
	munmap(m->db, SIB_INBOX_BYTES);
	munmap(m->fab, m->fab_size);
	close(m->fd); /* its context and pairs go with the connection */
}

struct sib_ring_slot *forge_slot(struct inbox_map *m)
{
	struct sib_ring_slot *s;

	if (m->peer) /* the peer's own ring: one producer at a time */
		pthread_mutex_lock(&m->peer->progress_lock);
	s = sib_pair_reserve(m->tx);
	if (!s)
		fail_msg("the forger's ring is full");
	return s;
}

void forge_publish(struct inbox_map *m, struct sib_ring_slot *s, uint32_t len, uint32_t flags)
{
	if (sib_pair_publish(m->tx, s, len, flags))
		sib_ring_wake(&m->tx->db);
	if (m->peer)
		pthread_mutex_unlock(&m->peer->progress_lock);
}

/* Build a packet from h and payload straight into the inbox and publish it. */
void inject(struct inbox_map *m, const struct iba_pkt *h, const void *payload, size_t paylen)
{
	struct sib_ring_slot *s = forge_slot(m);
	size_t hl, l;

	hl = iba_build_headers(s->data, h);
	if (hl > IBA_MAX_HDR_BYTES || paylen > SIB_SLOT_DATA_BYTES - IBA_MAX_HDR_BYTES - 9)
		fail_msg("packet too large for a slot");
	memcpy(s->data + hl, payload, paylen);
	l = iba_finish(s->data, hl, paylen, 0);
	s->data[l] = s->data[l + 1] = 0;
	forge_publish(m, s, (uint32_t)l + 2, 0);
}
