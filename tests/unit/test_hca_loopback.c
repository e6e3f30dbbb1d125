/* SPDX-License-Identifier: MIT */
/*
 * The HCA's transport stages (IBA vol. 1 ch. 9) over a loopback link, with
 * no verbs library and no softibd: two device contexts on a fabric map and
 * inbox rings in this process's memory, driven through the provider API
 * (provider.h) only.  Each sender's packets go to a "wire" ring the test
 * owns; the test's pump decodes every packet into a log, may drop,
 * duplicate or keep it for a later replay, then publishes it into the
 * receiver's inbox.  Per stage: segmentation at the path MTU, AckReq and
 * ACK coalescing, the responder's duplicates (C9-105), PSN sequence NAK
 * and rewind, RNR NAK and rnr_retry, ACK timeout and retry_cnt,
 * R_Key/access/bounds NAKs, flush in ERR, a transfer under the link's
 * fault wrapper (SOFTIB_FAULTS), and the engine thread sleeping (little
 * CPU) while a long fault delay fills the wrapper's queue.  Links sib_hca and lower.  Only the test
 * thread pumps; the contexts' engine threads produce concurrently.
 */
#include <endian.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/sib_shm.h"
#include "hca/hca.h"
#include "hca/provider.h"
#include "iba/iba.h"
#include "link/link.h"
#include "stream_fill.h"

#define NDEV     2
#define BUF      (1u << 20)
#define LOG_MAX  16384
#define KEEP_MAX 8
#define WAIT_MS  10000             /* every wait is bounded */
#define A        0                 /* requester side in most tests */
#define B        1

static void *inbox_mem[NDEV], *wire_mem[NDEV];
static struct sib_ring wires[NDEV];
static struct sib_ring inbox_tx[NDEV];  /* the pump's producer view of each inbox */
static struct sib_ring_rx wire_rx[NDEV]; /* the pump's consumer view of each wire */
static uint32_t next_handle = 1, next_qpn = 16;
static uint32_t qpn_of_handle[4096];

/* ---- the host: what softibd would do ---- */

static int host_obj_create(uint32_t dev_handle, enum sib_obj_type type, uint32_t qp_type,
			   uint32_t *handle, uint32_t *qpn)
{
	(void)qp_type;
	*handle = next_handle++;
	if (type == SIB_OBJ_QP) {
		*qpn = next_qpn++;
		qpn_of_handle[*handle % 4096] = *qpn;
		/* The QPN now routes to the creating context's inbox. */
		atomic_store(&sib_fabric->qp_owner[*qpn], SIB_QPO_MAKE(dev_handle, 1, dev_handle));
	}
	return 0;
}

static void host_obj_destroy(uint32_t handle)
{
	uint32_t qpn = qpn_of_handle[handle % 4096];

	if (qpn)
		atomic_store(&sib_fabric->qp_owner[qpn], 0);
	qpn_of_handle[handle % 4096] = 0;
}

/* Senders get the wire toward an inbox, not the inbox itself. */
static struct sib_ring *host_peer_ring(uint32_t inbox, uint32_t gen)
{
	return inbox < NDEV && gen == 1 ? &wires[inbox] : NULL;
}

static const struct sib_hca_host host = {
	.obj_create = host_obj_create,
	.obj_destroy = host_obj_destroy,
	.peer_ring = host_peer_ring,
};

/* ---- the pump: every packet between the two contexts ---- */

/* One packet as the pump saw it (decoded; ICRC not checked). */
struct seen {
	unsigned int dst;              /* the device it went to */
	uint8_t opc;                   /* BTH opcode */
	uint32_t psn;
	bool ackreq;
	uint8_t syn;                   /* AETH syndrome (responses) */
	uint32_t msn;
	uint32_t paylen;
	uint64_t va;                   /* RETH */
	uint32_t rkey, dmalen;
	uint8_t head;                  /* first payload byte */
};

enum verdict { PASS, DROP, DUP, KEEP /* pass it, and keep a copy for replay() */ };

static struct seen plog[LOG_MAX];
static unsigned int nlog;
static enum verdict (*filter)(const struct seen *s);
static struct {
	unsigned int dst;
	uint32_t len, flags;
	uint8_t data[SIB_SLOT_DATA_BYTES];
} kept[KEEP_MAX];
static unsigned int nkept;

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void drive(unsigned int d);

/* Publish one packet into device d's inbox (waits, bounded, for room). */
static void deliver(unsigned int d, const uint8_t *data, uint32_t len, uint32_t flags)
{
	uint64_t end = now_ms() + WAIT_MS, ticket;
	struct sib_ring_slot *s;

	while (!(s = sib_ring_reserve(&inbox_tx[d], getpid(), &ticket))) {
		drive(d); /* the receiver consumes */
		if (now_ms() > end)
			fail_msg("inbox %u stays full", d);
	}
	memcpy(s->data, data, len);
	s->src_inbox = 1 - d;
	if (sib_ring_publish(&inbox_tx[d], s, ticket, getpid(), len, flags) > 0)
		sib_ring_wake(&inbox_tx[d]);
}

static struct seen *log_packet(unsigned int d, const uint8_t *data, uint32_t len)
{
	static struct seen scratch;
	struct seen *e = nlog < LOG_MAX ? &plog[nlog++] : &scratch;
	struct iba_pkt p;

	memset(e, 0, sizeof(*e));
	e->dst = d;
	/* Every packet ends with the 2 VCRC bytes (zero when not computed). */
	assert_int_equal(iba_decode(data, len, IBA_HAS_VCRC, &p), IBA_OK);
	e->opc = p.bth.opcode;
	e->psn = p.bth.psn;
	e->ackreq = p.bth.ackreq;
	e->syn = p.aeth.syndrome;
	e->msn = p.aeth.msn;
	e->paylen = p.paylen;
	e->va = p.reth.va;
	e->rkey = p.reth.rkey;
	e->dmalen = p.reth.dmalen;
	e->head = p.paylen ? p.payload[0] : 0;
	return e;
}

/* Move everything on both wires into the inboxes, through the filter. */
static void pump(void)
{
	for (unsigned int d = 0; d < NDEV; d++) {
		struct sib_ring_slot *s;

		while ((s = sib_ring_peek(&wire_rx[d]))) {
			uint32_t len = s->len, flags = s->flags;
			const struct seen *e;
			enum verdict v;

			assert_true(len <= SIB_SLOT_DATA_BYTES);
			e = log_packet(d, s->data, len);
			v = filter ? filter(e) : PASS;
			if (v == KEEP) {
				assert_true(nkept < KEEP_MAX);
				kept[nkept].dst = d;
				kept[nkept].len = len;
				kept[nkept].flags = flags;
				memcpy(kept[nkept++].data, s->data, len);
			}
			if (v != DROP)
				deliver(d, s->data, len, flags);
			if (v == DUP)
				deliver(d, s->data, len, flags);
			sib_ring_release(&wire_rx[d], s);
		}
	}
}

/* Send kept packet i again, as a duplicate on the wire would arrive. */
static void replay(unsigned int i)
{
	assert_true(i < nkept);
	deliver(kept[i].dst, kept[i].data, kept[i].len, kept[i].flags);
}

/* ---- one side of the connection ---- */

struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;             /* buf, local write + remote read/write */
	struct ibv_mr *mr_local;       /* buf2, local write only */
	struct ibv_mr *mr_ro;          /* buf2, remote read only */
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	uint8_t *buf, *buf2;
	uint16_t lid;
};

static struct side sides[NDEV];
static struct ibv_device *devices[NDEV]; /* never freed (as the library's) */

/* How up() connects the two QPs. */
struct opts {
	enum ibv_mtu mtu;
	uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer;
	uint32_t psn;                  /* A's send PSN (B's is psn + 1000) */
	const char *faults;            /* SOFTIB_FAULTS for both links, or NULL */
};

/* A long ACK timeout (1 s): tests that do not lose packets never time out. */
static const struct opts def_opts = {
	.mtu = IBV_MTU_1024, .timeout = 18, .retry_cnt = 7, .rnr_retry = 7, .min_rnr_timer = 1,
	.psn = 100,
};

static uint32_t psn_of(unsigned int side)
{
	return (side == A ? 0 : 1000u);
}

static void drive(unsigned int d)
{
	struct ibv_wc wc;

	(void)sib_hca_ops.poll_cq(sides[d].cq, 0, &wc); /* runs the engine inline */
}

/* Poll side s for one completion, pumping and driving both sides. */
static struct ibv_wc poll_wc(unsigned int s)
{
	uint64_t end = now_ms() + WAIT_MS;
	struct ibv_wc wc;

	for (;;) {
		int n = sib_hca_ops.poll_cq(sides[s].cq, 1, &wc);

		assert_true(n >= 0);
		if (n == 1)
			return wc;
		pump();
		drive(1 - s);
		if (now_ms() > end)
			fail_msg("no completion on side %u within %u ms", s, WAIT_MS);
	}
}

/* Pump and drive for ms, taking no completion. */
static void settle(unsigned int ms)
{
	uint64_t end = now_ms() + ms;

	while (now_ms() < end) {
		pump();
		drive(A);
		drive(B);
	}
}

static void expect_no_wc(unsigned int s)
{
	struct ibv_wc wc;

	assert_int_equal(sib_hca_ops.poll_cq(sides[s].cq, 1, &wc), 0);
}

static void fabric_setup(void)
{
	sib_fabric = calloc(1, sizeof(*sib_fabric));
	assert_non_null(sib_fabric);
	sib_fabric->magic = SIB_SHM_MAGIC;
	sib_fabric->num_devices = NDEV;
	for (unsigned int i = 0; i < NDEV; i++) {
		struct sib_shm_device *d = &sib_fabric->devs[i];
		struct sib_shm_port *p = &d->ports[0];

		snprintf(d->name, sizeof(d->name), "loop%u", i);
		d->node_guid = 0x1000 + i;
		d->num_ports = 1;
		atomic_store(&d->gen, 1); /* registered (docs/events.md) */
		p->port_guid = 0x2000 + i;
		p->gid_prefix = 0xfe80000000000000ull;
		p->lid = (uint16_t)(1 + i);
		p->state = IBV_PORT_ACTIVE;
		p->max_mtu = p->active_mtu = IBV_MTU_4096;
		p->pkey[0] = 0xffff;
		atomic_store(&sib_fabric->lid_map[p->lid], SIB_LIDM_MAKE(i, 1));
		atomic_store(&sib_fabric->inboxes[i].gen, 1);
		inbox_mem[i] = calloc(1, SIB_INBOX_BYTES);
		wire_mem[i] = calloc(1, SIB_INBOX_BYTES);
		assert_true(inbox_mem[i] && wire_mem[i]);
		sides[i].lid = p->lid;
	}
	sib_hca_set_host(&host);
}

static int group_setup(void **state)
{
	(void)state;
	fabric_setup();
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	for (unsigned int i = 0; i < NDEV; i++) {
		free(inbox_mem[i]);
		free(wire_mem[i]);
	}
	free(sib_fabric);
	sib_fabric = NULL;
	return 0;
}

static void side_open(unsigned int i)
{
	const struct sib_hca_ops *ops = &sib_hca_ops;
	struct side *s = &sides[i];
	struct sib_hca_attach at = { .dev_handle = i, .inbox_idx = i, .inbox_gen = 1,
				     .inbox_base = inbox_mem[i] };
	struct ibv_qp_init_attr qa = { 0 };

	if (!devices[i])
		devices[i] = sib_hca_device_ops.alloc_device(i, 1);
	assert_non_null(devices[i]);
	s->ctx = sib_hca_device_ops.alloc_context(devices[i], &at);
	assert_non_null(s->ctx);
	s->pd = ops->alloc_pd(s->ctx);
	assert_non_null(s->pd);
	s->buf = calloc(1, BUF);
	s->buf2 = calloc(1, 4096);
	assert_true(s->buf && s->buf2);
	s->mr = ops->reg_mr(s->pd, s->buf, BUF, (uintptr_t)s->buf,
			    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	s->mr_local = ops->reg_mr(s->pd, s->buf2, 2048, (uintptr_t)s->buf2, IBV_ACCESS_LOCAL_WRITE);
	s->mr_ro = ops->reg_mr(s->pd, s->buf2 + 2048, 2048, (uintptr_t)s->buf2 + 2048,
			       IBV_ACCESS_REMOTE_READ);
	assert_true(s->mr && s->mr_local && s->mr_ro);
	s->cq = ops->create_cq(s->ctx, 256, NULL, 0);
	assert_non_null(s->cq);
	qa.send_cq = qa.recv_cq = s->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 64;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	s->qp = ops->create_qp(s->pd, &qa);
	assert_non_null(s->qp);
}

/* RESET -> INIT -> RTR -> RTS, each QP to the other (IBA 10.3.1). */
static void connect_qp(unsigned int i, const struct opts *o)
{
	const struct sib_hca_ops *ops = &sib_hca_ops;
	struct side *s = &sides[i], *peer = &sides[1 - i];
	struct ibv_qp_attr a = { 0 };

	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	assert_int_equal(ops->modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = o->mtu;
	a.dest_qp_num = peer->qp->qp_num;
	a.rq_psn = iba_psn_add(o->psn, psn_of(1 - i));
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = o->min_rnr_timer;
	a.ah_attr.dlid = peer->lid;
	a.ah_attr.port_num = 1;
	assert_int_equal(ops->modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = o->timeout;
	a.retry_cnt = o->retry_cnt;
	a.rnr_retry = o->rnr_retry;
	a.sq_psn = iba_psn_add(o->psn, psn_of(i));
	a.max_rd_atomic = 4;
	assert_int_equal(ops->modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
					IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
					IBV_QP_MAX_QP_RD_ATOMIC), 0);
}

/* Fresh inboxes, wires, contexts and a connected QP pair per test. */
static void up(const struct opts *o)
{
	filter = NULL;
	nlog = nkept = 0;
	for (unsigned int i = 0; i < NDEV; i++) {
		memset(inbox_mem[i], 0, SIB_INBOX_BYTES);
		memset(wire_mem[i], 0, SIB_INBOX_BYTES);
		sib_ring_attach(&inbox_tx[i], inbox_mem[i]);
		sib_ring_attach(&wires[i], wire_mem[i]);
		sib_ring_rx_attach(&wire_rx[i], wire_mem[i]);
	}
	/* The link wrappers read the environment when a context opens. */
	if (o->faults)
		setenv("SOFTIB_FAULTS", o->faults, 1);
	for (unsigned int i = 0; i < NDEV; i++)
		side_open(i);
	unsetenv("SOFTIB_FAULTS");
	for (unsigned int i = 0; i < NDEV; i++)
		connect_qp(i, o);
}

static int down(void **state)
{
	const struct sib_hca_ops *ops = &sib_hca_ops;

	(void)state;
	filter = NULL;
	for (unsigned int i = 0; i < NDEV; i++) {
		struct side *s = &sides[i];

		if (!s->ctx)
			continue;
		assert_int_equal(ops->destroy_qp(s->qp), 0);
		assert_int_equal(ops->destroy_cq(s->cq), 0);
		assert_int_equal(ops->dereg_mr(s->mr), 0);
		assert_int_equal(ops->dereg_mr(s->mr_local), 0);
		assert_int_equal(ops->dereg_mr(s->mr_ro), 0);
		assert_int_equal(ops->dealloc_pd(s->pd), 0);
		ops->free_context(s->ctx);
		free(s->buf);
		free(s->buf2);
		s->ctx = NULL;
	}
	return 0;
}

/* ---- verbs through the ops table ---- */

static void post_send_sge(unsigned int s, enum ibv_wr_opcode op, uint64_t addr, uint32_t len,
			  uint32_t lkey, uint64_t raddr, uint32_t rkey, uint64_t wr_id)
{
	struct ibv_sge sge = { .addr = addr, .length = len, .lkey = lkey };
	struct ibv_send_wr wr = { 0 }, *bad = NULL;

	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.imm_data = htobe32(0x1234);
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	assert_int_equal(sib_hca_ops.post_send(sides[s].qp, &wr, &bad), 0);
}

/* A WR from side s's buf + off. */
static void post_send(unsigned int s, enum ibv_wr_opcode op, uint64_t off, uint32_t len,
		      uint64_t raddr, uint32_t rkey, uint64_t wr_id)
{
	post_send_sge(s, op, (uintptr_t)sides[s].buf + off, len, sides[s].mr->lkey, raddr, rkey, wr_id);
}

static void post_recv(unsigned int s, uint64_t off, uint32_t len, uint64_t wr_id)
{
	struct ibv_sge sge = { .addr = (uintptr_t)sides[s].buf + off, .length = len,
			       .lkey = sides[s].mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad = NULL;

	assert_int_equal(sib_hca_ops.post_recv(sides[s].qp, &wr, &bad), 0);
}

static enum ibv_qp_state qp_state(unsigned int s)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	assert_int_equal(sib_hca_ops.query_qp(sides[s].qp, &a, IBV_QP_STATE, &ia), 0);
	return a.qp_state;
}

static void expect_wc(unsigned int s, uint64_t wr_id, enum ibv_wc_status st)
{
	struct ibv_wc wc = poll_wc(s);

	if (wc.wr_id != wr_id || wc.status != st)
		fail_msg("side %u: wr_id %llu status %d, want wr_id %llu status %d", s,
			 (unsigned long long)wc.wr_id, wc.status, (unsigned long long)wr_id, st);
}

static void fill(uint8_t *p, uint32_t len, uint8_t seed)
{
	for (uint32_t i = 0; i < len; i++)
		p[i] = (uint8_t)(seed + i * 7);
}

/* ---- the log ---- */

static bool is_req(uint8_t opc)
{
	return iba_opcode_info(opc)->flags & IBA_OP_REQ;
}

/* Packets from `from` on that went to dst with opcode opc (-1: requests). */
static unsigned int count(unsigned int from, unsigned int dst, int opc, uint32_t psn, bool any_psn)
{
	unsigned int n = 0;

	for (unsigned int i = from; i < nlog; i++)
		if (plog[i].dst == dst && (opc < 0 ? is_req(plog[i].opc) : plog[i].opc == opc) &&
		    (any_psn || plog[i].psn == psn))
			n++;
	return n;
}

/* The index of the k-th (0-based) packet from `from` on to dst with opcode
 * opc (-1: any request); fails if there is none. */
static unsigned int nth(unsigned int from, unsigned int dst, int opc, unsigned int k)
{
	for (unsigned int i = from; i < nlog; i++)
		if (plog[i].dst == dst && (opc < 0 ? is_req(plog[i].opc) : plog[i].opc == opc) && !k--)
			return i;
	fail_msg("no packet %d #%u to %u in the log (%u packets)", opc, k, dst, nlog);
	return 0;
}

static void expect_pkt(unsigned int i, uint8_t opc, uint32_t psn, uint32_t paylen, bool ackreq)
{
	const struct seen *e = &plog[i];

	if (e->opc != opc || e->psn != psn || e->paylen != paylen || e->ackreq != ackreq)
		fail_msg("packet %u: %s PSN %u len %u AckReq %d, want %s PSN %u len %u AckReq %d", i,
			 iba_opcode_info(e->opc)->name, e->psn, e->paylen, e->ackreq,
			 iba_opcode_info(opc)->name, psn, paylen, ackreq);
}

static bool is_ack_of_type(const struct seen *e, uint8_t type)
{
	return e->opc == IBA_OPC_ACKNOWLEDGE && (e->syn & IBA_AETH_TYPE_MASK) == type;
}

/* ================= Requester: segmentation (IBA 9.7.4, 9.5) ================= */

static void test_segmentation(void **state)
{
	struct opts o = def_opts;
	unsigned int i, mark;

	(void)state;
	o.psn = 0xfffffe; /* the 24-bit PSN wraps inside the first message */
	up(&o);

	/* SEND of 3000 bytes at MTU 1024: FIRST, MIDDLE, LAST; AckReq on the last. */
	fill(sides[A].buf, 3000, 1);
	post_recv(B, 0, 4096, 7);
	post_send(A, IBV_WR_SEND, 0, 3000, 0, 0, 1);
	expect_wc(A, 1, IBV_WC_SUCCESS);
	expect_wc(B, 7, IBV_WC_SUCCESS);
	assert_memory_equal(sides[A].buf, sides[B].buf, 3000);
	assert_int_equal(count(0, B, -1, 0, true), 3);
	i = nth(0, B, -1, 0);
	expect_pkt(i, IBA_OPC_SEND_FIRST, 0xfffffe, 1024, false);
	expect_pkt(nth(0, B, -1, 1), IBA_OPC_SEND_MIDDLE, 0xffffff, 1024, false);
	expect_pkt(nth(0, B, -1, 2), IBA_OPC_SEND_LAST, 0, 952, true);
	/* One ACK, for the last PSN, MSN 1. */
	assert_int_equal(count(0, A, IBA_OPC_ACKNOWLEDGE, 0, true), 1);
	i = nth(0, A, IBA_OPC_ACKNOWLEDGE, 0);
	assert_int_equal(plog[i].psn, 0);
	assert_int_equal(plog[i].syn & IBA_AETH_TYPE_MASK, IBA_AETH_ACK);
	assert_int_equal(plog[i].msn, 1);

	/* RDMA WRITE of 5000: RETH (VA, R_Key, DMALen = the whole message)
	 * only on FIRST; MIDDLE x3; LAST of 904. */
	mark = nlog;
	fill(sides[A].buf, 5000, 3);
	post_send(A, IBV_WR_RDMA_WRITE, 0, 5000, (uintptr_t)sides[B].buf + 100, sides[B].mr->rkey, 2);
	expect_wc(A, 2, IBV_WC_SUCCESS);
	assert_memory_equal(sides[A].buf, sides[B].buf + 100, 5000);
	assert_int_equal(count(mark, B, -1, 0, true), 5);
	i = nth(mark, B, -1, 0);
	expect_pkt(i, IBA_OPC_RDMA_WRITE_FIRST, 1, 1024, false);
	assert_int_equal(plog[i].va, (uintptr_t)sides[B].buf + 100);
	assert_int_equal(plog[i].rkey, sides[B].mr->rkey);
	assert_int_equal(plog[i].dmalen, 5000);
	for (unsigned int k = 1; k < 4; k++)
		expect_pkt(nth(mark, B, -1, k), IBA_OPC_RDMA_WRITE_MIDDLE, 1 + k, 1024, false);
	expect_pkt(nth(mark, B, -1, 4), IBA_OPC_RDMA_WRITE_LAST, 5, 904, true);
	expect_no_wc(B); /* a WRITE without immediate consumes no receive */

	/* RDMA READ of 6000: one request with DMALen 6000 that reserves one
	 * PSN per response packet; six responses FIRST, MIDDLE x4, LAST. */
	mark = nlog;
	fill(sides[B].buf, 6000, 9);
	post_send(A, IBV_WR_RDMA_READ, 8192, 6000, (uintptr_t)sides[B].buf, sides[B].mr->rkey, 3);
	expect_wc(A, 3, IBV_WC_SUCCESS);
	assert_memory_equal(sides[A].buf + 8192, sides[B].buf, 6000);
	assert_int_equal(count(mark, B, -1, 0, true), 1);
	i = nth(mark, B, -1, 0);
	expect_pkt(i, IBA_OPC_RDMA_READ_REQUEST, 6, 0, true);
	assert_int_equal(plog[i].dmalen, 6000);
	expect_pkt(nth(mark, A, IBA_OPC_RDMA_READ_RESPONSE_FIRST, 0), IBA_OPC_RDMA_READ_RESPONSE_FIRST,
		   6, 1024, false);
	for (unsigned int k = 0; k < 4; k++)
		expect_pkt(nth(mark, A, IBA_OPC_RDMA_READ_RESPONSE_MIDDLE, k),
			   IBA_OPC_RDMA_READ_RESPONSE_MIDDLE, 7 + k, 1024, false);
	expect_pkt(nth(mark, A, IBA_OPC_RDMA_READ_RESPONSE_LAST, 0), IBA_OPC_RDMA_READ_RESPONSE_LAST,
		   11, 880, false);

	/* The next message starts after the READ's PSNs; one MTU is ONLY,
	 * and so is an empty SEND. */
	mark = nlog;
	post_recv(B, 0, 4096, 8);
	post_recv(B, 0, 4096, 9);
	post_send(A, IBV_WR_SEND, 0, 1024, 0, 0, 4);
	post_send(A, IBV_WR_SEND, 0, 0, 0, 0, 5);
	expect_wc(A, 4, IBV_WC_SUCCESS);
	expect_wc(A, 5, IBV_WC_SUCCESS);
	expect_wc(B, 8, IBV_WC_SUCCESS);
	expect_wc(B, 9, IBV_WC_SUCCESS);
	expect_pkt(nth(mark, B, -1, 0), IBA_OPC_SEND_ONLY, 12, 1024, true);
	expect_pkt(nth(mark, B, -1, 1), IBA_OPC_SEND_ONLY, 13, 0, true);
}

/* ================= ACKs: AckReq and coalescing (IBA 9.7.5.1.1) ================= */

static unsigned int acks_to_drop;

static enum verdict drop_some_acks(const struct seen *s)
{
	if (s->dst == A && is_ack_of_type(s, IBA_AETH_ACK) && acks_to_drop) {
		acks_to_drop--;
		return DROP;
	}
	return PASS;
}

static void test_ack_coalescing(void **state)
{
	unsigned int asked = 0, last_ackreq = 0, n, mark;

	(void)state;
	up(&def_opts);

	/* A 40-packet WRITE: AckReq on the last packet and at least every 32;
	 * the responder ACKs only those, each with its PSN. */
	post_send(A, IBV_WR_RDMA_WRITE, 0, 40 * 1024, (uintptr_t)sides[B].buf, sides[B].mr->rkey, 1);
	expect_wc(A, 1, IBV_WC_SUCCESS);
	n = count(0, B, -1, 0, true);
	assert_int_equal(n, 40);
	for (unsigned int k = 0; k < n; k++) {
		const struct seen *e = &plog[nth(0, B, -1, k)];

		assert_int_equal(e->psn, iba_psn_add(def_opts.psn, k));
		if (e->ackreq) {
			assert_true(k + 1 - last_ackreq <= 32);
			last_ackreq = k + 1;
			assert_int_equal(count(0, A, IBA_OPC_ACKNOWLEDGE, e->psn, false), 1);
			asked++;
		}
	}
	assert_int_equal(last_ackreq, 40);
	assert_true(asked >= 2 && asked < 40);
	assert_int_equal(count(0, A, IBA_OPC_ACKNOWLEDGE, 0, true), asked);

	/* Four SENDs whose first three ACKs are lost: the fourth ACK covers
	 * them all (ACKs are cumulative), in order, with no retransmission;
	 * its MSN counts the four messages. */
	mark = nlog;
	for (unsigned int k = 0; k < 4; k++)
		post_recv(B, k * 256, 256, 10 + k);
	acks_to_drop = 3;
	filter = drop_some_acks;
	for (unsigned int k = 0; k < 4; k++)
		post_send(A, IBV_WR_SEND, k * 256, 100, 0, 0, 20 + k);
	for (unsigned int k = 0; k < 4; k++)
		expect_wc(A, 20 + k, IBV_WC_SUCCESS);
	for (unsigned int k = 0; k < 4; k++)
		expect_wc(B, 10 + k, IBV_WC_SUCCESS);
	assert_int_equal(acks_to_drop, 0);
	assert_int_equal(count(mark, B, -1, 0, true), 4); /* nothing sent twice */
	n = nth(mark, A, IBA_OPC_ACKNOWLEDGE, 3);
	assert_int_equal(plog[n].psn, iba_psn_add(def_opts.psn, 40 + 3));
	assert_int_equal(plog[n].msn, 1 + 4);
}

/* ================= Responder: duplicates (C9-105) ================= */

static enum verdict keep_first_request(const struct seen *s)
{
	return s->dst == B && is_req(s->opc) && nkept == 0 ? KEEP : PASS;
}

static void test_duplicate_send(void **state)
{
	unsigned int mark;

	(void)state;
	up(&def_opts);
	filter = keep_first_request;
	fill(sides[A].buf, 100, 5);
	post_recv(B, 0, 256, 1);
	post_recv(B, 256, 256, 2);
	post_send(A, IBV_WR_SEND, 0, 100, 0, 0, 11);
	expect_wc(A, 11, IBV_WC_SUCCESS);
	expect_wc(B, 1, IBV_WC_SUCCESS);
	assert_int_equal(nkept, 1);

	/* The same SEND again: ACKed with its PSN, not placed again, and
	 * receive 2 stays posted. */
	mark = nlog;
	replay(0);
	settle(50);
	expect_no_wc(B);
	expect_no_wc(A);
	assert_int_equal(count(mark, A, IBA_OPC_ACKNOWLEDGE, def_opts.psn, false), 1);
	assert_true(is_ack_of_type(&plog[nth(mark, A, IBA_OPC_ACKNOWLEDGE, 0)], IBA_AETH_ACK));

	/* The responder carries on: the next SEND takes receive 2. */
	fill(sides[A].buf, 100, 6);
	post_send(A, IBV_WR_SEND, 0, 100, 0, 0, 12);
	expect_wc(A, 12, IBV_WC_SUCCESS);
	expect_wc(B, 2, IBV_WC_SUCCESS);
	assert_memory_equal(sides[B].buf + 256, sides[A].buf, 100);
}

static void test_duplicate_write(void **state)
{
	unsigned int mark;
	uint8_t zero[64] = { 0 };

	(void)state;
	up(&def_opts);
	filter = keep_first_request;
	fill(sides[A].buf, 64, 7);
	post_send(A, IBV_WR_RDMA_WRITE, 0, 64, (uintptr_t)sides[B].buf + 512, sides[B].mr->rkey, 1);
	expect_wc(A, 1, IBV_WC_SUCCESS);
	assert_memory_equal(sides[B].buf + 512, sides[A].buf, 64);

	/* Replayed after the target changed: ACKed, not written again. */
	memset(sides[B].buf + 512, 0, 64);
	mark = nlog;
	replay(0);
	settle(50);
	assert_memory_equal(sides[B].buf + 512, zero, 64);
	assert_int_equal(count(mark, A, IBA_OPC_ACKNOWLEDGE, def_opts.psn, false), 1);
	expect_no_wc(A);

	/* WRITE with immediate consumes a receive once, not twice. */
	nkept = 0;
	post_recv(B, 0, 0, 3);
	post_recv(B, 0, 0, 4);
	post_send(A, IBV_WR_RDMA_WRITE_WITH_IMM, 0, 64, (uintptr_t)sides[B].buf + 1024,
		  sides[B].mr->rkey, 2);
	expect_wc(A, 2, IBV_WC_SUCCESS);
	expect_wc(B, 3, IBV_WC_SUCCESS);
	replay(0);
	settle(50);
	expect_no_wc(B);
	expect_no_wc(A);
}

static void test_duplicate_read(void **state)
{
	uint8_t before[3000];
	unsigned int mark, i;

	(void)state;
	up(&def_opts);
	filter = keep_first_request;
	fill(sides[B].buf, 3000, 21);
	post_send(A, IBV_WR_RDMA_READ, 0, 3000, (uintptr_t)sides[B].buf, sides[B].mr->rkey, 1);
	expect_wc(A, 1, IBV_WC_SUCCESS);
	assert_memory_equal(sides[A].buf, sides[B].buf, 3000);
	memcpy(before, sides[A].buf, sizeof(before));

	/* A duplicate READ is read again, from memory as it is now, with the
	 * same PSNs; the requester, which has it complete, ignores them. */
	fill(sides[B].buf, 3000, 99);
	mark = nlog;
	replay(0);
	settle(50);
	expect_no_wc(A);
	expect_no_wc(B);
	i = nth(mark, A, IBA_OPC_RDMA_READ_RESPONSE_FIRST, 0);
	assert_int_equal(plog[i].psn, def_opts.psn);
	assert_int_equal(plog[i].head, sides[B].buf[0]);
	i = nth(mark, A, IBA_OPC_RDMA_READ_RESPONSE_MIDDLE, 0);
	assert_int_equal(plog[i].psn, def_opts.psn + 1);
	assert_int_equal(plog[i].head, sides[B].buf[1024]);
	i = nth(mark, A, IBA_OPC_RDMA_READ_RESPONSE_LAST, 0);
	assert_int_equal(plog[i].psn, def_opts.psn + 2);
	assert_int_equal(plog[i].paylen, 3000 - 2048);
	assert_memory_equal(sides[A].buf, before, sizeof(before));
}

/* ================= PSN sequence error (IBA 9.7.5.2.1, 9.9.2.1) ================= */

static uint32_t drop_psn;
static bool dropped_once;

static enum verdict drop_psn_once(const struct seen *s)
{
	if (s->dst == B && is_req(s->opc) && s->psn == drop_psn && !dropped_once) {
		dropped_once = true;
		return DROP;
	}
	return PASS;
}

/* A SEND of len bytes A -> B whose packet `psn` is lost once: it still
 * arrives whole, once. */
static void send_losing_psn(uint32_t len, uint32_t psn)
{
	drop_psn = psn;
	dropped_once = false;
	filter = drop_psn_once;
	fill(sides[A].buf, len, (uint8_t)psn);
	post_recv(B, 0, 8192, 1);
	post_send(A, IBV_WR_SEND, 0, len, 0, 0, 2);
	expect_wc(A, 2, IBV_WC_SUCCESS);
	expect_wc(B, 1, IBV_WC_SUCCESS);
	assert_memory_equal(sides[B].buf, sides[A].buf, len);
	settle(20);
	expect_no_wc(B);
	assert_true(dropped_once);
}

static void test_psn_sequence_nak(void **state)
{
	uint32_t p = def_opts.psn;
	unsigned int nak, k;

	(void)state;
	up(&def_opts);
	send_losing_psn(5000, p + 1);

	/* Three packets arrived ahead of the hole: one NAK, with the
	 * expected PSN. */
	assert_true(dropped_once);
	assert_int_equal(count(0, A, IBA_OPC_ACKNOWLEDGE, 0, true) -
			 count(0, A, IBA_OPC_ACKNOWLEDGE, p + 4, false), 1);
	nak = nth(0, A, IBA_OPC_ACKNOWLEDGE, 0);
	assert_int_equal(plog[nak].syn, IBA_AETH_NAK | IBA_NAK_PSN_SEQ);
	assert_int_equal(plog[nak].psn, p + 1);
	/* The requester rewinds to it: go-back-N from the NAKed PSN, with
	 * the opcodes of those positions in the message. */
	expect_pkt(nth(nak, B, -1, 0), IBA_OPC_SEND_MIDDLE, p + 1, 1024, false);
	for (k = 1; k < 3; k++)
		expect_pkt(nth(nak, B, -1, k), IBA_OPC_SEND_MIDDLE, p + 1 + k, 1024, false);
	expect_pkt(nth(nak, B, -1, 3), IBA_OPC_SEND_LAST, p + 4, 904, true);
	assert_int_equal(count(0, B, -1, p, false), 1); /* PSNs before the hole once */
}

/* ================= RNR NAK and rnr_retry (IBA 9.7.5.2.8, 9.9.2.2) ================= */

static void test_rnr_retry_exceeded(void **state)
{
	struct opts o = def_opts;
	unsigned int i;

	(void)state;
	o.rnr_retry = 2;
	o.min_rnr_timer = 1; /* 0.01 ms */
	up(&o);
	post_send(A, IBV_WR_SEND, 0, 100, 0, 0, 1);
	post_send(A, IBV_WR_SEND, 0, 100, 0, 0, 2);
	expect_wc(A, 1, IBV_WC_RNR_RETRY_EXC_ERR);
	expect_wc(A, 2, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(qp_state(A), IBV_QPS_ERR);
	/* The first try and rnr_retry more, each answered by an RNR NAK
	 * carrying the responder's min_rnr_timer. */
	assert_int_equal(count(0, B, IBA_OPC_SEND_ONLY, o.psn, false), 3);
	assert_int_equal(count(0, A, IBA_OPC_ACKNOWLEDGE, o.psn, false), 3);
	for (unsigned int k = 0; k < 3; k++) {
		i = nth(0, A, IBA_OPC_ACKNOWLEDGE, k);
		assert_int_equal(plog[i].syn, IBA_AETH_RNR_NAK | 1);
	}
	/* The responder is not in error: class B. */
	assert_int_equal(qp_state(B), IBV_QPS_RTS);
}

static void test_rnr_then_receive(void **state)
{
	struct opts o = def_opts;
	uint64_t end;

	(void)state;
	o.rnr_retry = 7;        /* retry forever */
	o.min_rnr_timer = 14;   /* 1.28 ms */
	up(&o);
	fill(sides[A].buf, 2000, 44);
	post_send(A, IBV_WR_SEND, 0, 2000, 0, 0, 1);
	end = now_ms() + WAIT_MS;
	while (!count(0, A, IBA_OPC_ACKNOWLEDGE, o.psn, false)) {
		pump();
		drive(A);
		drive(B);
		if (now_ms() > end)
			fail_msg("no RNR NAK");
	}
	assert_true(is_ack_of_type(&plog[nth(0, A, IBA_OPC_ACKNOWLEDGE, 0)], IBA_AETH_RNR_NAK));
	post_recv(B, 0, 4096, 9);
	expect_wc(A, 1, IBV_WC_SUCCESS);
	expect_wc(B, 9, IBV_WC_SUCCESS);
	assert_memory_equal(sides[B].buf, sides[A].buf, 2000);
	assert_true(count(0, B, IBA_OPC_SEND_FIRST, o.psn, false) >= 2); /* sent again */
	settle(10);
	expect_no_wc(B);
}

/* ================= ACK timeout and retry_cnt (IBA 9.7.6.1, C9-140) ================= */

static enum verdict drop_to_b(const struct seen *s)
{
	return s->dst == B ? DROP : PASS;
}

static void test_ack_timeout_retransmits(void **state)
{
	struct opts o = def_opts;
	unsigned int second;

	(void)state;
	o.timeout = 8; /* 1 ms */
	up(&o);
	/* The LAST packet is lost: nothing after it shows a hole, so only the
	 * ACK timeout recovers, resending from the oldest unacknowledged PSN. */
	send_losing_psn(3000, o.psn + 2);
	second = nth(0, B, -1, 3);
	expect_pkt(second, IBA_OPC_SEND_FIRST, o.psn, 1024, false);
	expect_pkt(nth(second, B, -1, 1), IBA_OPC_SEND_MIDDLE, o.psn + 1, 1024, false);
	expect_pkt(nth(second, B, -1, 2), IBA_OPC_SEND_LAST, o.psn + 2, 952, true);
}

static void test_retry_exceeded(void **state)
{
	struct opts o = def_opts;

	(void)state;
	o.timeout = 8;
	o.retry_cnt = 3;
	up(&o);
	filter = drop_to_b;
	post_send(A, IBV_WR_SEND, 0, 64, 0, 0, 1);
	post_send(A, IBV_WR_SEND, 0, 64, 0, 0, 2);
	expect_wc(A, 1, IBV_WC_RETRY_EXC_ERR);
	expect_wc(A, 2, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(qp_state(A), IBV_QPS_ERR);
	/* The first transmission and retry_cnt retries. */
	assert_int_equal(count(0, B, IBA_OPC_SEND_ONLY, o.psn, false), 1 + 3);
}

/* ================= R_Key, access and bounds (IBA 9.7.5.2.4, C9-88) ================= */

enum access_case { BAD_RKEY, OUT_OF_BOUNDS, WRITE_NO_ACCESS, READ_NO_ACCESS };
static enum access_case access_cases[] = { BAD_RKEY, OUT_OF_BOUNDS, WRITE_NO_ACCESS, READ_NO_ACCESS };

static void remote_access_case(enum access_case c)
{
	static const uint8_t zero[63];
	struct side *b;
	uint8_t *target = NULL;
	unsigned int nak;

	up(&def_opts);
	b = &sides[B];
	fill(sides[A].buf, 64, 77);
	switch (c) {
	case BAD_RKEY:     /* a key byte that does not match */
		target = b->buf;
		post_send(A, IBV_WR_RDMA_WRITE, 0, 64, (uintptr_t)target, b->mr->rkey ^ 0x1, 1);
		break;
	case OUT_OF_BOUNDS: /* the last byte past the MR */
		target = b->buf + BUF - 63;
		post_send(A, IBV_WR_RDMA_WRITE, 0, 64, (uintptr_t)target, b->mr->rkey, 1);
		break;
	case WRITE_NO_ACCESS: /* an MR without remote write */
		target = b->buf2 + 2048;
		post_send(A, IBV_WR_RDMA_WRITE, 0, 64, (uintptr_t)target, b->mr_ro->rkey, 1);
		break;
	case READ_NO_ACCESS: /* an MR without remote read */
		post_send(A, IBV_WR_RDMA_READ, 0, 64, (uintptr_t)b->buf2, b->mr_local->rkey, 1);
		break;
	}
	post_send(A, IBV_WR_SEND, 0, 8, 0, 0, 2);
	expect_wc(A, 1, IBV_WC_REM_ACCESS_ERR);
	expect_wc(A, 2, IBV_WC_WR_FLUSH_ERR);
	nak = nth(0, A, IBA_OPC_ACKNOWLEDGE, 0);
	assert_int_equal(plog[nak].syn, IBA_AETH_NAK | IBA_NAK_REM_ACCESS);
	assert_int_equal(plog[nak].psn, def_opts.psn);
	/* Class C: both QPs end in ERR (IBA 9.9.3.1.3). */
	assert_int_equal(qp_state(A), IBV_QPS_ERR);
	assert_int_equal(qp_state(B), IBV_QPS_ERR);
	if (target) /* nothing was written */
		assert_memory_equal(target, zero, sizeof(zero));
}

/* One case per test (cmocka prestate): each needs a fresh connection. */
static void test_rem_access(void **state)
{
	remote_access_case(*(const enum access_case *)*state);
}

/* ================= Flush in ERR (IBA 10.3.1, 11.4.2.1) ================= */

static void test_flush_on_error(void **state)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	struct ibv_wc wc;

	(void)state;
	up(&def_opts);
	/* Receives outstanding when the QP goes to ERR are flushed in order. */
	for (unsigned int k = 0; k < 3; k++)
		post_recv(B, k * 64, 64, 100 + k);
	assert_int_equal(sib_hca_ops.modify_qp(sides[B].qp, &a, IBV_QP_STATE), 0);
	for (unsigned int k = 0; k < 3; k++) {
		wc = poll_wc(B);
		assert_int_equal(wc.wr_id, 100 + k);
		assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
		assert_int_equal(wc.qp_num, sides[B].qp->qp_num);
	}
	/* ... and so is one posted in ERR. */
	post_recv(B, 0, 64, 103);
	expect_wc(B, 103, IBV_WC_WR_FLUSH_ERR);

	/* Sends on the wire and not acknowledged are flushed too. */
	filter = drop_to_b;
	post_send(A, IBV_WR_SEND, 0, 64, 0, 0, 200);
	post_send(A, IBV_WR_RDMA_WRITE, 0, 64, (uintptr_t)sides[B].buf, sides[B].mr->rkey, 201);
	settle(5);
	expect_no_wc(A);
	assert_int_equal(sib_hca_ops.modify_qp(sides[A].qp, &a, IBV_QP_STATE), 0);
	expect_wc(A, 200, IBV_WC_WR_FLUSH_ERR);
	expect_wc(A, 201, IBV_WC_WR_FLUSH_ERR);
	post_send(A, IBV_WR_SEND, 0, 64, 0, 0, 202);
	expect_wc(A, 202, IBV_WC_WR_FLUSH_ERR);
	settle(5);
	expect_no_wc(A);
	expect_no_wc(B);
}

/* ================= Transfer under the link's fault wrapper ================= */

#define FMSG     3000u                 /* 3 packets at MTU 1024 */
#define FMSGS    400u
#define FWINDOW  16u
#define FWRITE   (256u * 1024)

static uint64_t link_counter(unsigned int d, enum sib_link_counter c)
{
	struct sib_link_stats *st = (void *)((char *)inbox_mem[d] + SIB_LINK_STATS_OFF);

	return atomic_load(&st->c[c]);
}

static void test_transfer_under_faults(void **state)
{
	struct opts o = def_opts;
	uint32_t sent = 0, completed = 0, received = 0, rq = 32;
	uint64_t end, loss = 0, dup = 0, reorder = 0, corrupt = 0, icrc = 0;
	uint8_t expect[FMSG];
	struct ibv_wc wc;

	(void)state;
	o.timeout = 10; /* 4 ms: losses recover quickly */
	o.psn = 0xffff00;
	o.faults = "seed=7,loss=0.02,dup=0.02,reorder=0.02,corrupt=0.02";
	up(&o);
	for (uint32_t k = 0; k < rq; k++)
		post_recv(B, k * FMSG, FMSG, k);

	/* SENDs A -> B, each checked on arrival: every one exactly once, in order. */
	end = now_ms() + 60000;
	while (received < FMSGS || completed < FMSGS) {
		while (sent < FMSGS && sent - completed < FWINDOW) {
			uint32_t off = 512 * 1024 + (sent % FWINDOW) * FMSG;

			stream_fill(sides[A].buf + off, FMSG, sent);
			post_send(A, IBV_WR_SEND, off, FMSG, 0, 0, sent++);
		}
		pump();
		if (sib_hca_ops.poll_cq(sides[A].cq, 1, &wc) == 1) {
			assert_int_equal(wc.status, IBV_WC_SUCCESS);
			assert_int_equal(wc.wr_id, completed++);
		}
		if (sib_hca_ops.poll_cq(sides[B].cq, 1, &wc) == 1) {
			uint32_t slot = (uint32_t)wc.wr_id;

			assert_int_equal(wc.status, IBV_WC_SUCCESS);
			assert_int_equal(wc.byte_len, FMSG);
			assert_int_equal(slot, received % rq);
			stream_fill(expect, FMSG, received++);
			assert_memory_equal(sides[B].buf + slot * FMSG, expect, FMSG);
			memset(sides[B].buf + slot * FMSG, 0, FMSG);
			post_recv(B, slot * FMSG, FMSG, slot);
		}
		if (now_ms() > end)
			fail_msg("stuck: sent %u completed %u received %u", sent, completed, received);
	}

	/* A large RDMA WRITE B -> A and a READ back, byte for byte. */
	for (uint32_t i = 0; i < FWRITE; i += FMSG)
		stream_fill(sides[B].buf + i, i + FMSG <= FWRITE ? FMSG : FWRITE - i, 100000 + i);
	post_send(B, IBV_WR_RDMA_WRITE, 0, FWRITE, (uintptr_t)sides[A].buf, sides[A].mr->rkey, 1);
	expect_wc(B, 1, IBV_WC_SUCCESS);
	assert_memory_equal(sides[A].buf, sides[B].buf, FWRITE);
	post_send(B, IBV_WR_RDMA_READ, FWRITE, FWRITE, (uintptr_t)sides[A].buf, sides[A].mr->rkey, 2);
	expect_wc(B, 2, IBV_WC_SUCCESS);
	assert_memory_equal(sides[B].buf + FWRITE, sides[B].buf, FWRITE);
	settle(20); /* what the wrappers still hold (reordered) goes out */
	expect_no_wc(B);
	expect_no_wc(A);

	for (unsigned int d = 0; d < NDEV; d++) {
		loss += link_counter(d, SIB_LC_LOSS);
		dup += link_counter(d, SIB_LC_DUP);
		reorder += link_counter(d, SIB_LC_REORDER);
		corrupt += link_counter(d, SIB_LC_CORRUPT);
		icrc += link_counter(d, SIB_LC_RX_ICRC);
	}
	print_message("loss=%llu dup=%llu reorder=%llu corrupt=%llu icrc_drops=%llu\n",
		      (unsigned long long)loss, (unsigned long long)dup, (unsigned long long)reorder,
		      (unsigned long long)corrupt, (unsigned long long)icrc);
	assert_true(loss > 0 && dup > 0 && reorder > 0 && corrupt > 0);
	/* Each corrupted packet was dropped by the receiver's ICRC check (twice
	 * if it was also duplicated). */
	assert_true(icrc >= corrupt && icrc <= corrupt + dup);
}

/* Nanoseconds of CPU the thread has used. */
static uint64_t thread_cpu_ns(pthread_t t)
{
	struct timespec ts;
	clockid_t cid;

	assert_int_equal(pthread_getcpuclockid(t, &cid), 0);
	assert_int_equal(clock_gettime(cid, &ts), 0);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A long delay fills the fault wrapper's queue: the requester is refused
 * room until the first held packet is due.  The engine thread then sleeps
 * until that due time (its deadline is far off and it uses little CPU)
 * instead of polling every 50 us, and the message arrives afterwards. */
static void test_delay_engine_sleeps(void **state)
{
	struct opts o = def_opts;
	struct sib_context *c;
	uint64_t end, cpu0, w0, cpu, wall, posted;
	unsigned int samples = 0;

	(void)state;
	o.faults = "delay_us=200000";
	up(&o);
	c = to_sctx(sides[A].ctx);
	fill(sides[A].buf, 100 * 1024, 5);
	post_recv(B, 0, 128 * 1024, 1);
	posted = sib_now_ns();
	post_send(A, IBV_WR_SEND, 0, 100 * 1024, 0, 0, 1); /* 100 packets, the queue holds 64 */
	end = now_ms() + WAIT_MS;
	while (!link_counter(A, SIB_LC_TX_FULL)) {
		if (now_ms() > end)
			fail_msg("the fault queue never filled");
		usleep(1000);
	}
	cpu0 = thread_cpu_ns(c->engine);
	w0 = sib_now_ns();
	/* Until shortly before the first packet is due (posted + 200 ms). */
	while (samples < 10 && sib_now_ns() < posted + 150000000ull) {
		uint64_t deadline, now;

		usleep(10000);
		deadline = atomic_load(&c->next_deadline);
		now = sib_now_ns();
		if (now >= posted + 180000000ull)
			break; /* slept too long: a deadline may be near now */
		if (deadline && deadline < now + 10000000ull)
			fail_msg("engine deadline %lld us away, while the queue waits for a 200 ms delay",
				 (long long)(deadline - now) / 1000);
		samples++;
	}
	assert_true(samples > 0);
	cpu = thread_cpu_ns(c->engine) - cpu0;
	wall = sib_now_ns() - w0;
	print_message("engine thread: %llu us CPU in %llu us\n", (unsigned long long)cpu / 1000,
		      (unsigned long long)wall / 1000);
	assert_true(cpu * 10 < wall * 3);
	/* After the delay, every packet goes. */
	expect_wc(A, 1, IBV_WC_SUCCESS);
	expect_wc(B, 1, IBV_WC_SUCCESS);
	assert_memory_equal(sides[B].buf, sides[A].buf, 100 * 1024);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_segmentation, down),
		cmocka_unit_test_teardown(test_ack_coalescing, down),
		cmocka_unit_test_teardown(test_duplicate_send, down),
		cmocka_unit_test_teardown(test_duplicate_write, down),
		cmocka_unit_test_teardown(test_duplicate_read, down),
		cmocka_unit_test_teardown(test_psn_sequence_nak, down),
		cmocka_unit_test_teardown(test_rnr_retry_exceeded, down),
		cmocka_unit_test_teardown(test_rnr_then_receive, down),
		cmocka_unit_test_teardown(test_ack_timeout_retransmits, down),
		cmocka_unit_test_teardown(test_retry_exceeded, down),
		cmocka_unit_test_prestate_setup_teardown(test_rem_access, NULL, down, &access_cases[0]),
		cmocka_unit_test_prestate_setup_teardown(test_rem_access, NULL, down, &access_cases[1]),
		cmocka_unit_test_prestate_setup_teardown(test_rem_access, NULL, down, &access_cases[2]),
		cmocka_unit_test_prestate_setup_teardown(test_rem_access, NULL, down, &access_cases[3]),
		cmocka_unit_test_teardown(test_flush_on_error, down),
		cmocka_unit_test_teardown(test_transfer_under_faults, down),
		cmocka_unit_test_teardown(test_delay_engine_sleeps, down),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
