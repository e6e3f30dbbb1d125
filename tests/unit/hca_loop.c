/* SPDX-License-Identifier: MIT */
/*
 * The loopback fabric of the HCA transport tests (hca_loop.h): a fabric
 * map and inbox rings in memory, a host that hands out handles and QPNs
 * as softibd would, and a pump between the two contexts.  Test-thread
 * only, except what the contexts' engine threads produce onto the wires.
 */
#include <endian.h>
#include <fcntl.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/sib_shm.h"
#include "hca/hca.h"
#include "hca/provider.h"
#include "hca_loop.h"
#include "iba/iba.h"

void *inbox_mem[NINBOX];
/* Pair rings: wire[s][d] is the sender's end of s -> d (what the pair hook
 * gives context s); the pump takes from it (wire_head) and publishes into
 * in[s][d] (in_tx), which context d accepts as its ring from s. */
static void *wire_mem[NINBOX][NINBOX], *in_mem[NINBOX][NINBOX];
static uint64_t wire_head[NINBOX][NINBOX];
static struct sib_pair_tx in_tx[NINBOX][NINBOX];
static bool in_announced[NINBOX][NINBOX], in_accepted[NINBOX][NINBOX];
static uint32_t next_handle = 1, next_qpn = 16;
static uint32_t qpn_of_handle[4096];
static uint32_t xrcd_of_handle[4096];     /* XRCD handles: their domain number */

/* ---- the host: what softibd would do ---- */

static int host_obj_create(uint32_t dev_handle, enum sib_obj_type type, uint32_t qp_type,
			   uint32_t *handle, uint32_t *qpn)
{
	(void)qp_type;
	*handle = next_handle++;
	if (type == SIB_OBJ_QP) {
		*qpn = next_qpn++;
		qpn_of_handle[*handle % 4096] = *qpn;
		/* The QPN now routes to the creating context's inbox (C's
		 * handle: EXTRA_HANDLE, on device B). */
		atomic_store(&sib_fabric->qp_owner[*qpn],
			     dev_handle == EXTRA_HANDLE ? SIB_QPO_MAKE(C, 1, B)
							: SIB_QPO_MAKE(dev_handle, 1, dev_handle));
	}
	return 0;
}

static void host_obj_destroy(uint32_t handle)
{
	uint32_t qpn = qpn_of_handle[handle % 4096];

	if (qpn) {
		atomic_store(&sib_fabric->qp_owner[qpn], 0);
		atomic_store(&sib_fabric->qp_xrcd[qpn], 0);
	}
	qpn_of_handle[handle % 4096] = 0;
	xrcd_of_handle[handle % 4096] = 0;
}

/* An XRC_RECV QP: its XRCD handle must be one host_xrcd_open gave; its
 * domain is published beside its owner, as softibd's fabmap.c does. */
static int host_xrc_tgt_create(uint32_t dev_handle, uint32_t xrcd_handle, uint32_t *handle,
			       uint32_t *qpn)
{
	uint32_t num = xrcd_of_handle[xrcd_handle % 4096];

	if (!num)
		return EBADF;
	host_obj_create(dev_handle, SIB_OBJ_QP, IBV_QPT_XRC_RECV, handle, qpn);
	atomic_store(&sib_fabric->qp_xrcd[*qpn], num);
	return 0;
}

/* Senders get the wire toward an inbox, not the inbox itself; the next
 * map_fail pairings fail (softibd short of fds, say).  Counted in map_calls. */
unsigned int map_fail, map_calls;

static unsigned int inbox_of(uint32_t dev_handle)
{
	return dev_handle == EXTRA_HANDLE ? C : dev_handle;
}

static int host_pair(uint32_t dev_handle, uint32_t inbox, uint32_t gen, void **ring, void **db)
{
	unsigned int s = inbox_of(dev_handle);

	map_calls++;
	*ring = *db = NULL;
	if (map_fail) {
		map_fail--;
		return EMFILE;
	}
	if (inbox >= NINBOX || gen != 1 || s >= NINBOX)
		return ESTALE;
	*ring = wire_mem[s][inbox];
	*db = inbox_mem[inbox];
	/* The pump takes from every wire at once. */
	atomic_store(&((struct sib_pair_hdr *)*ring)->attached, 1);
	return 0;
}

/* Context d's rings, announced by the pump's first packet s -> d. */
static void *host_accept(uint32_t dev_handle, uint32_t *from_inbox, uint32_t *from_gen)
{
	unsigned int d = inbox_of(dev_handle);

	for (unsigned int s = 0; d < NINBOX && s < NINBOX; s++)
		if (in_announced[s][d] && !in_accepted[s][d]) {
			in_accepted[s][d] = true;
			*from_inbox = s;
			*from_gen = 1;
			return in_mem[s][d];
		}
	return NULL;
}

/* XRC domains (test_hca_srq): one number per file (its inode), or a new
 * one for fd -1, as softibd's xrcd.c; closes are not counted. */
static int host_xrcd_open(uint32_t dev_handle, int fd, int oflags, uint32_t *handle, uint32_t *num)
{
	static uint32_t next_num = 1;
	struct stat st;

	(void)dev_handle;
	(void)oflags;
	*handle = next_handle++;
	*num = fd >= 0 && !fstat(fd, &st) ? 0x100000u | (uint32_t)st.st_ino : next_num++;
	xrcd_of_handle[*handle % 4096] = *num;
	return 0;
}

/* Routing as softibd would answer it over a fabric without switches:
 * a LID leads to the port lid_map names, except route_block, which the
 * tables drop (a test stands for an unprogrammed LFT entry with it).
 * Counted in route_calls; answers at the map's route_gen. */
unsigned int route_calls;
uint16_t route_block;

static int host_route(struct sib_ctl_route *r)
{
	uint16_t lm;

	route_calls++;
	r->route_gen = atomic_load(&sib_fabric->route_gen);
	if (r->dlid >= SIB_MCAST_LID_MIN) {
		memset(r->mcast_mask, r->dlid == route_block ? 0 : 0xff, sizeof(r->mcast_mask));
		r->verdict = 0;
		return 0;
	}
	lm = r->dlid ? atomic_load(&sib_fabric->lid_map[r->dlid]) : 0;
	r->verdict = !lm ? SIB_CTL_ROUTE_NOT_CA : r->dlid == route_block ? 4 /* LFT miss */ : 0;
	r->dst_dev = lm >> 8;
	r->dst_port = lm & 0xff;
	return 0;
}

/* Direct placement's broker as softibd's dx.c: the memfds the contexts
 * give (TAB and CNT per inbox, MR regions by id) and a GET that asks for
 * the right (a QP handle of ours, a QPN of the owner's inbox).  Counted:
 * dx_gets answered with an fd, dx_refused refused with EPERM. */
#define DX_IDS 4096
static int dx_tab[NINBOX], dx_cnt[NINBOX];
static struct { uint32_t id; int fd; } dx_mr[DX_IDS];
unsigned int dx_gets, dx_refused;
bool loop_dx_serve;

static int *dx_slot(uint32_t kind, uint32_t inbox, uint32_t id, bool add)
{
	if (kind == SIB_DX_KIND_TAB || kind == SIB_DX_KIND_CNT)
		return inbox >= NINBOX ? NULL : kind == SIB_DX_KIND_TAB ? &dx_tab[inbox] : &dx_cnt[inbox];
	if (kind != SIB_DX_KIND_MR || !id)
		return NULL;
	for (unsigned int i = 0; i < DX_IDS; i++)
		if (dx_mr[i].id == id)
			return &dx_mr[i].fd;
	for (unsigned int i = 0; add && i < DX_IDS; i++)
		if (!dx_mr[i].id) {
			dx_mr[i].id = id;
			dx_mr[i].fd = -1;
			return &dx_mr[i].fd;
		}
	return NULL;
}

int loop_dx_fd(uint32_t kind, uint32_t inbox, uint32_t id)
{
	int *f = dx_slot(kind, inbox, id, false);

	return f && *f > 0 ? fcntl(*f, F_DUPFD_CLOEXEC, 0) : -1;
}

int loop_dx_put(uint32_t kind, uint32_t inbox, uint32_t id, int fd)
{
	int *f = dx_slot(kind, inbox, id, fd >= 0);

	if (!f)
		return fd < 0 ? ENOENT : EINVAL;
	if (*f > 0)
		close(*f);
	*f = fd >= 0 ? fcntl(fd, F_DUPFD_CLOEXEC, 0) : 0;
	if (fd < 0 && kind == SIB_DX_KIND_MR)
		for (unsigned int i = 0; i < DX_IDS; i++)
			if (dx_mr[i].id == id)
				dx_mr[i].id = 0;
	return 0;
}

static int host_dx(uint16_t op, const struct sib_ctl_dx *x, int pass_fd, int *recv_fd)
{
	uint32_t inbox = x->dev_handle == EXTRA_HANDLE ? C : x->dev_handle;
	uint32_t qpn = qpn_of_handle[x->qp_handle % 4096];
	uint64_t ow;

	if (op == SIB_CTL_DX_PUT)
		return loop_dx_put(x->kind, x->kind == SIB_DX_KIND_MR ? 0 : inbox, x->id,
				   x->drop ? -1 : pass_fd);
	if (!loop_dx_serve)
		return ENOENT; /* as a peer that gave nothing: packets */
	ow = x->qpn < SIB_MAX_QPN ? atomic_load(&sib_fabric->qp_owner[x->qpn]) : 0;
	if (!qpn || !(ow & SIB_QPO_VALID) || SIB_QPO_INBOX(ow) != x->inbox) {
		dx_refused++;
		return EPERM;
	}
	*recv_fd = loop_dx_fd(x->kind, x->inbox, x->id);
	dx_gets += *recv_fd >= 0;
	return *recv_fd >= 0 ? 0 : ENOENT;
}

static const struct sib_hca_host host = {
	.dx = host_dx,
	.obj_create = host_obj_create,
	.obj_destroy = host_obj_destroy,
	.link = { .pair = host_pair, .accept = host_accept, .route = host_route },
	.xrcd_open = host_xrcd_open,
	.xrc_tgt_create = host_xrc_tgt_create,
};

/* ---- the pump: every packet between the two contexts ---- */


struct seen plog[LOG_MAX];
unsigned int nlog;
enum verdict (*filter)(const struct seen *s);
static struct {
	unsigned int src, dst;
	uint32_t len, flags;
	uint8_t data[SIB_SLOT_DATA_BYTES];
} kept[KEEP_MAX];
unsigned int nkept;
bool wire_hold[NINBOX];

uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Publish one packet from context src into context d's ring from it
 * (waits, bounded, for room); the first tells d that the ring is there. */
static void deliver(unsigned int src, unsigned int d, const uint8_t *data, uint32_t len, uint32_t flags)
{
	uint64_t end = now_ms() + WAIT_MS;
	struct sib_pair_tx *t = &in_tx[src][d];
	struct sib_ring_slot *s;

	if (!in_announced[src][d]) {
		struct sib_ring_hdr *h = inbox_mem[d];

		in_announced[src][d] = true;
		if (sides[d].ctx) {
			/* Attached at once, as if d's engine thread took it the
			 * moment softibd made it (the tests time the transport,
			 * not the scheduler). */
			struct sib_context *c = to_sctx(sides[d].ctx);

			pthread_mutex_lock(&c->progress_lock);
			in_accepted[src][d] = sib_link_rx_attach(&c->link, in_mem[src][d], src, 1);
			pthread_mutex_unlock(&c->progress_lock);
		}
		atomic_fetch_add(&h->pairs_seq, 1);
		sib_ring_hdr_wake(h);
	}
	while (!(s = sib_pair_reserve(t))) {
		drive(d); /* the receiver consumes */
		if (now_ms() > end)
			fail_msg("ring %u -> %u stays full", src, d);
	}
	memcpy(s->data, data, len);
	s->src_inbox = src;
	if (sib_pair_publish(t, s, len, flags) > 0)
		sib_ring_wake(&t->db);
}

static struct seen *log_packet(unsigned int d, const uint8_t *data, uint32_t len, uint32_t flags)
{
	static struct seen scratch;
	struct seen *e = nlog < LOG_MAX ? &plog[nlog++] : &scratch;
	struct iba_pkt p;

	memset(e, 0, sizeof(*e));
	e->dst = d;
	e->sflags = flags;
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
	if (p.op->hdrs & IBA_HDR_ATOMICETH) {
		e->va = p.atomic.va;
		e->rkey = p.atomic.rkey;
		e->swap_add = p.atomic.swap_add;
		e->compare = p.atomic.compare;
	}
	e->atomic_ack = p.atomic_ack;
	e->dqpn = p.bth.dqpn;
	e->dlid = p.lrh.dlid;
	e->grh = p.lrh.lnh == IBA_LNH_GLOBAL;
	e->qkey = p.deth.qkey;
	e->src_qp = p.deth.src_qp;
	return e;
}

/* Move everything on the wires into the receivers' rings, through the filter. */
void pump(void)
{
	for (unsigned int d = 0; d < NINBOX; d++) {
		if (wire_hold[d])
			continue; /* its senders find it full */
		for (unsigned int src = 0; src < NINBOX; src++) {
			struct sib_pair w;

			sib_pair_attach(&w, wire_mem[src][d]);
			while (sib_pair_look(&w, wire_head[src][d]) > 0) {
				struct sib_ring_slot *s = &w.slots[wire_head[src][d] % SIB_PAIR_SLOTS];
				uint32_t len = s->len, flags = s->flags;
				struct seen *e;
				enum verdict v;

				assert_true(len <= SIB_SLOT_DATA_BYTES);
				e = log_packet(d, s->data, len, flags);
				e->src = src;
				v = filter ? filter(e) : PASS;
				if (v == KEEP || v == HOLD) {
					assert_true(nkept < KEEP_MAX);
					kept[nkept].src = src;
					kept[nkept].dst = d;
					kept[nkept].len = len;
					kept[nkept].flags = flags;
					memcpy(kept[nkept++].data, s->data, len);
				}
				if (v != DROP && v != HOLD)
					deliver(src, d, s->data, len, flags);
				if (v == DUP)
					deliver(src, d, s->data, len, flags);
				sib_pair_release(&w, wire_head[src][d]++);
			}
		}
	}
}

/* Send kept packet i again, as a duplicate on the wire would arrive. */
void replay(unsigned int i)
{
	assert_true(i < nkept);
	deliver(kept[i].src, kept[i].dst, kept[i].data, kept[i].len, kept[i].flags);
}

/* ---- one side of the connection ---- */

struct side sides[NINBOX];
static enum ibv_qp_type loop_qpt = IBV_QPT_RC; /* what up() asked for */
struct ibv_device *devices[NDEV]; /* never freed (as the library's) */

/* A long ACK timeout (1 s): tests that do not lose packets never time out. */
const struct opts def_opts = {
	.mtu = IBV_MTU_1024, .timeout = 18, .retry_cnt = 7, .rnr_retry = 7, .min_rnr_timer = 1,
	.psn = 100,
};

static uint32_t psn_of(unsigned int side)
{
	return (side == A ? 0 : 1000u);
}

void drive(unsigned int d)
{
	struct ibv_wc wc;

	if (!sides[d].cq)
		return; /* C, not open */
	(void)sib_hca_ops.poll_cq(sides[d].cq, 0, &wc); /* runs the engine inline */
}

/* Poll side s for one completion, pumping and driving both sides. */
struct ibv_wc poll_wc(unsigned int s)
{
	uint64_t end = now_ms() + WAIT_MS;
	struct ibv_wc wc;

	for (;;) {
		int n = sib_hca_ops.poll_cq(sides[s].cq, 1, &wc);

		assert_true(n >= 0);
		if (n == 1)
			return wc;
		pump();
		for (unsigned int d = 0; d < NINBOX; d++)
			if (d != s)
				drive(d);
		if (now_ms() > end)
			fail_msg("no completion on side %u within %u ms", s, WAIT_MS);
	}
}

/* Pump and drive for ms, taking no completion. */
void settle(unsigned int ms)
{
	uint64_t end = now_ms() + ms;

	while (now_ms() < end) {
		pump();
		drive(A);
		drive(B);
		drive(C);
	}
}

void expect_no_wc(unsigned int s)
{
	struct ibv_wc wc;

	assert_int_equal(sib_hca_ops.poll_cq(sides[s].cq, 1, &wc), 0);
}

void fabric_setup(void)
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
		sides[i].lid = p->lid;
	}
	for (unsigned int i = 0; i < NINBOX; i++) {
		atomic_store(&sib_fabric->inboxes[i].gen, 1);
		sib_fabric->inboxes[i].dev_index = i < NDEV ? i : B; /* C is on B's device */
		inbox_mem[i] = calloc(1, SIB_INBOX_BYTES);
		assert_non_null(inbox_mem[i]);
		for (unsigned int d = 0; d < NINBOX; d++) {
			wire_mem[i][d] = calloc(1, SIB_PAIR_BYTES);
			in_mem[i][d] = calloc(1, SIB_PAIR_BYTES);
			assert_true(wire_mem[i][d] && in_mem[i][d]);
		}
	}
	sides[C].lid = sides[B].lid;
	sib_hca_set_host(&host);
}

int group_setup(void **state)
{
	(void)state;
	fabric_setup();
	return 0;
}

int group_teardown(void **state)
{
	(void)state;
	for (unsigned int i = 0; i < NINBOX; i++) {
		free(inbox_mem[i]);
		for (unsigned int d = 0; d < NINBOX; d++) {
			free(wire_mem[i][d]);
			free(in_mem[i][d]);
		}
	}
	free(sib_fabric);
	sib_fabric = NULL;
	return 0;
}

void side_open(unsigned int i)
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
	qa.qp_type = loop_qpt;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 64;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	s->qp = ops->create_qp(s->pd, &qa);
	assert_non_null(s->qp);
}

/* A second context on B's device, inbox C: PD, an MR, a CQ of 4096, no QP. */
void side_open_c(void)
{
	const struct sib_hca_ops *ops = &sib_hca_ops;
	struct side *s = &sides[C];
	struct sib_hca_attach at = { .dev_handle = EXTRA_HANDLE, .inbox_idx = C, .inbox_gen = 1,
				     .inbox_base = inbox_mem[C] };

	s->ctx = sib_hca_device_ops.alloc_context(devices[B], &at);
	assert_non_null(s->ctx);
	s->pd = ops->alloc_pd(s->ctx);
	assert_non_null(s->pd);
	s->buf = calloc(1, BUF);
	s->buf2 = calloc(1, 4096);
	assert_true(s->buf && s->buf2);
	s->mr = ops->reg_mr(s->pd, s->buf, BUF, (uintptr_t)s->buf,
			    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	assert_non_null(s->mr);
	s->cq = ops->create_cq(s->ctx, 4096, NULL, 0);
	assert_non_null(s->cq);
}

/* Publish a packet into inbox d as if it came off a wire (slot flags),
 * from its peer's context (A's for B and C, B's for A). */
void inject(unsigned int d, const uint8_t *data, uint32_t len, uint32_t flags)
{
	deliver(d == A ? B : A, d, data, len, flags);
}

void inject_from(unsigned int src, unsigned int d, const uint8_t *data, uint32_t len, uint32_t flags)
{
	deliver(src, d, data, len, flags);
}

/* RESET -> INIT -> RTR -> RTS, each QP to the other (IBA 10.3.1). */
void connect_qp(unsigned int i, const struct opts *o)
{
	connect_pair(i, sides[i].qp, sides[1 - i].qp, o, iba_psn_add(o->psn, psn_of(i)),
		     iba_psn_add(o->psn, psn_of(1 - i)), IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
}

/* connect_qp for any QP qp of side i to peer (a QP of the other side). */
void connect_pair(unsigned int i, struct ibv_qp *qp, struct ibv_qp *peer, const struct opts *o,
		  uint32_t sq_psn, uint32_t rq_psn, unsigned int access)
{
	const struct sib_hca_ops *ops = &sib_hca_ops;
	struct ibv_qp_attr a = { 0 };
	bool rc = qp->qp_type != IBV_QPT_UC; /* UC: no ACK, retry or READ attributes */

	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = access;
	assert_int_equal(ops->modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = o->mtu;
	a.dest_qp_num = peer->qp_num;
	a.rq_psn = rq_psn;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = o->min_rnr_timer;
	a.ah_attr.dlid = sides[1 - i].lid;
	a.ah_attr.port_num = 1;
	assert_int_equal(ops->modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | (rc ?
					IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER : 0)), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = o->timeout;
	a.retry_cnt = o->retry_cnt;
	a.rnr_retry = o->rnr_retry;
	a.sq_psn = sq_psn;
	a.max_rd_atomic = 4;
	assert_int_equal(ops->modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | (rc ?
					IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					IBV_QP_MAX_QP_RD_ATOMIC : 0)), 0);
}

/* An empty pair ring: its header and every slot's state (the data need
 * not be cleared). */
static void ring_reset(void *base)
{
	struct sib_pair p;

	memset(base, 0, SIB_PAIR_HDR_BYTES);
	sib_pair_attach(&p, base);
	for (unsigned int i = 0; i < SIB_PAIR_SLOTS; i++)
		atomic_store(&p.slots[i].state, 0);
}

/* Fresh inboxes, wires, contexts and a connected QP pair per test. */
void up(const struct opts *o)
{
	filter = NULL;
	nlog = nkept = 0;
	memset(wire_hold, 0, sizeof(wire_hold));
	loop_qpt = o->qpt ? o->qpt : IBV_QPT_RC;
	for (unsigned int i = 0; i < NINBOX; i++) {
		memset(inbox_mem[i], 0, SIB_INBOX_BYTES);
		for (unsigned int d = 0; d < NINBOX; d++) {
			ring_reset(wire_mem[i][d]);
			ring_reset(in_mem[i][d]);
			wire_head[i][d] = 0;
			memset(&in_tx[i][d], 0, sizeof(in_tx[i][d]));
			sib_pair_attach(&in_tx[i][d].r, in_mem[i][d]);
			sib_ring_attach(&in_tx[i][d].db, inbox_mem[d]);
			in_announced[i][d] = in_accepted[i][d] = false;
		}
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

void swap_wr_qps(const uint64_t ops[NDEV], const struct opts *o)
{
	for (unsigned int i = 0; i < NDEV; i++) {
		struct ibv_qp_init_attr_ex xa = { 0 };

		assert_int_equal(sib_hca_ops.destroy_qp(sides[i].qp), 0);
		xa.qp_type = loop_qpt;
		xa.send_cq = xa.recv_cq = sides[i].cq;
		xa.cap.max_send_wr = xa.cap.max_recv_wr = 64;
		xa.cap.max_send_sge = xa.cap.max_recv_sge = 1;
		xa.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		xa.pd = sides[i].pd;
		xa.send_ops_flags = ops[i];
		sides[i].qp = sib_hca_ops.create_qp_ex(sides[i].ctx, &xa);
		assert_non_null(sides[i].qp);
	}
	for (unsigned int i = 0; i < NDEV; i++)
		connect_qp(i, o);
}

int down(void **state)
{
	const struct sib_hca_ops *ops = &sib_hca_ops;

	(void)state;
	filter = NULL;
	for (unsigned int i = 0; i < NINBOX; i++) {
		struct side *s = &sides[i];

		if (!s->ctx)
			continue;
		if (s->qp)
			assert_int_equal(ops->destroy_qp(s->qp), 0);
		assert_int_equal(ops->destroy_cq(s->cq), 0);
		assert_int_equal(ops->dereg_mr(s->mr), 0);
		if (s->mr_local)
			assert_int_equal(ops->dereg_mr(s->mr_local), 0);
		if (s->mr_ro)
			assert_int_equal(ops->dereg_mr(s->mr_ro), 0);
		assert_int_equal(ops->dealloc_pd(s->pd), 0);
		ops->free_context(s->ctx);
		free(s->buf);
		free(s->buf2);
		s->ctx = NULL;
		s->qp = NULL;
		s->cq = NULL;
		s->mr_local = s->mr_ro = NULL;
	}
	return 0;
}

/* ---- XRC ---- */

struct ibv_xrcd *loop_xrcd_open(unsigned int s, int fd)
{
	struct ibv_xrcd_init_attr a = { .comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
					.fd = fd, .oflags = O_CREAT };
	struct ibv_xrcd *xd = sib_hca_ops.open_xrcd(sides[s].ctx, &a);

	assert_non_null(xd);
	return xd;
}

struct ibv_srq *loop_xsrq_new(unsigned int s, struct ibv_xrcd *xd, uint32_t max_wr, uint32_t *srqn)
{
	struct ibv_srq_init_attr_ex a = { 0 };
	struct ibv_srq *srq;

	a.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_XRCD |
		      IBV_SRQ_INIT_ATTR_CQ;
	a.srq_type = IBV_SRQT_XRC;
	a.pd = sides[s].pd;
	a.xrcd = xd;
	a.cq = sides[s].cq;
	a.attr.max_wr = max_wr;
	a.attr.max_sge = 1;
	srq = sib_hca_ops.create_srq_ex(sides[s].ctx, &a);
	assert_non_null(srq);
	if (srqn)
		assert_int_equal(sib_hca_ops.get_srq_num(srq, srqn), 0);
	return srq;
}

/* ---- verbs through the ops table ---- */

/*
 * Wait until what side s just posted has been sent.  ibv_post_send runs
 * the engine inline only when it gets the progress lock; when the
 * engine thread holds it (a timer, a look at idle QPs), that thread
 * sends the WQEs a moment later, after it sees the kick (`armed`).
 * Taking the lock once is not enough: the holder may have let go between
 * its last look at `armed` and its next trylock, and the lock is then ours
 * first.  So: while a kick is still unseen under the lock, run the engine
 * ourselves, so that a test may change the source buffer or count packets
 * on the wire right after posting.
 */
static void engine_quiet(unsigned int s)
{
	struct sib_context *ctx = to_sctx(sides[s].ctx);

	for (;;) {
		int unseen;

		pthread_mutex_lock(&ctx->progress_lock);
		unseen = atomic_load(&ctx->eng.armed);
		pthread_mutex_unlock(&ctx->progress_lock);
		if (!unseen)
			return;
		sib_progress(ctx);
	}
}

void post_send_sge(unsigned int s, enum ibv_wr_opcode op, uint64_t addr, uint32_t len,
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
	engine_quiet(s);
}

/* A WR from side s's buf + off. */
void post_send(unsigned int s, enum ibv_wr_opcode op, uint64_t off, uint32_t len,
		      uint64_t raddr, uint32_t rkey, uint64_t wr_id)
{
	post_send_sge(s, op, (uintptr_t)sides[s].buf + off, len, sides[s].mr->lkey, raddr, rkey, wr_id);
}

void post_recv_qp(struct ibv_qp *qp, unsigned int s, uint64_t off, uint32_t len, uint64_t wr_id)
{
	struct ibv_sge sge = { .addr = (uintptr_t)sides[s].buf + off, .length = len,
			       .lkey = sides[s].mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad = NULL;

	assert_int_equal(sib_hca_ops.post_recv(qp, &wr, &bad), 0);
}

void post_recv(unsigned int s, uint64_t off, uint32_t len, uint64_t wr_id)
{
	post_recv_qp(sides[s].qp, s, off, len, wr_id);
}

enum ibv_qp_state qp_state(unsigned int s)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	assert_int_equal(sib_hca_ops.query_qp(sides[s].qp, &a, IBV_QP_STATE, &ia), 0);
	return a.qp_state;
}

struct ibv_qp *ud_qp_create(unsigned int s, uint32_t qkey, uint32_t create_flags)
{
	struct ibv_qp_init_attr_ex qa = { 0 };
	struct ibv_qp_attr a = { 0 };
	struct ibv_qp *qp;

	qa.send_cq = qa.recv_cq = sides[s].cq;
	qa.qp_type = IBV_QPT_UD;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 64;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	qa.comp_mask = IBV_QP_INIT_ATTR_PD | (create_flags ? IBV_QP_INIT_ATTR_CREATE_FLAGS : 0);
	qa.pd = sides[s].pd;
	qa.create_flags = create_flags;
	qp = sib_hca_ops.create_qp_ex(sides[s].ctx, &qa);
	assert_non_null(qp);
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qkey = qkey;
	assert_int_equal(sib_hca_ops.modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					       IBV_QP_QKEY), 0);
	a.qp_state = IBV_QPS_RTR;
	assert_int_equal(sib_hca_ops.modify_qp(qp, &a, IBV_QP_STATE), 0);
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 7;
	assert_int_equal(sib_hca_ops.modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN), 0);
	return qp;
}

void expect_wc(unsigned int s, uint64_t wr_id, enum ibv_wc_status st)
{
	struct ibv_wc wc = poll_wc(s);

	if (wc.wr_id != wr_id || wc.status != st)
		fail_msg("side %u: wr_id %llu status %d, want wr_id %llu status %d", s,
			 (unsigned long long)wc.wr_id, wc.status, (unsigned long long)wr_id, st);
}

void fill(uint8_t *p, uint32_t len, uint8_t seed)
{
	for (uint32_t i = 0; i < len; i++)
		p[i] = (uint8_t)(seed + i * 7);
}

/* ---- the log ---- */

bool is_req(uint8_t opc)
{
	return iba_opcode_info(opc)->flags & IBA_OP_REQ;
}

/* Packets from `from` on that went to dst with opcode opc (-1: requests). */
unsigned int count(unsigned int from, unsigned int dst, int opc, uint32_t psn, bool any_psn)
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
unsigned int nth(unsigned int from, unsigned int dst, int opc, unsigned int k)
{
	for (unsigned int i = from; i < nlog; i++)
		if (plog[i].dst == dst && (opc < 0 ? is_req(plog[i].opc) : plog[i].opc == opc) && !k--)
			return i;
	fail_msg("no packet %d #%u to %u in the log (%u packets)", opc, k, dst, nlog);
	return 0;
}

void expect_pkt(unsigned int i, uint8_t opc, uint32_t psn, uint32_t paylen, bool ackreq)
{
	const struct seen *e = &plog[i];

	if (e->opc != opc || e->psn != psn || e->paylen != paylen || e->ackreq != ackreq)
		fail_msg("packet %u: %s PSN %u len %u AckReq %d, want %s PSN %u len %u AckReq %d", i,
			 iba_opcode_info(e->opc)->name, e->psn, e->paylen, e->ackreq,
			 iba_opcode_info(opc)->name, psn, paylen, ackreq);
}

bool is_ack_of_type(const struct seen *e, uint8_t type)
{
	return e->opc == IBA_OPC_ACKNOWLEDGE && (e->syn & IBA_AETH_TYPE_MASK) == type;
}

