/* SPDX-License-Identifier: MIT */
/*
 * Echo trials of the traffic test (traffic.h; issue 16): the pattern of
 * rdma-core's riostream, which the rest of the model never has, since
 * there every target region is only read when its writer is idle.  Two RC
 * QPs (softib0 and softib1), each side ONE window that is both the target
 * of the peer's RDMA WRITEs and the source of its own, and a thread per
 * side that spins on the window's last byte without any verbs call until
 * the peer's marker lands.  The model: when the marker shows, every byte
 * before it must already be the peer's body for that round (messages are
 * placed in ascending order, each byte once: docs/transport.md "Placing
 * data"); the side then writes its own body and marker into the same
 * window and WRITEs it back.  A byte stored twice by the placing (glibc's
 * memcpy did it) undoes the marker and both sides spin: a stall, failed
 * after ECHO_WAIT_MS with the seed.  Per trial, drawn from the seed: the
 * window's length (1 byte to three MTUs) and offset, inline or not, the
 * path MTU, a page-aligned window (direct placement may take it) or a
 * malloc'd one, and the bodies of every round.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "traffic.h"

#define ECHO_TRIALS  4
#define ECHO_ROUNDS  150u              /* per trial; TR_ECHO_ROUNDS=N for a soak */
#define ECHO_WAIT_MS 20000u
#define ECHO_SQ      64
#define ECHO_STREAM  0xEC40u           /* rng streams of the trials */

struct echo_side {
	struct tr_world *w;
	int trial, idx;                /* idx 0 sends even markers, 1 odd ones */
	uint32_t rounds;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *mem, *win;            /* the allocation, the window in it */
	uint64_t peer_addr;
	uint32_t peer_rkey, len;
	bool inl;
	struct tr_rng own, peer;       /* the bodies this side and its peer send */
	uint64_t checked;
};

static enum ibv_mtu mtu_of(uint32_t bytes)
{
	return bytes == 256 ? IBV_MTU_256 : bytes == 1024 ? IBV_MTU_1024 : IBV_MTU_4096;
}

static void qp_rts(struct tr_world *w, struct echo_side *s, const struct echo_side *p, uint32_t mtu,
		   uint32_t psn, uint32_t peer_psn)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE };
	int rc = ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				 IBV_QP_ACCESS_FLAGS);

	if (!rc) {
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTR;
		a.path_mtu = mtu_of(mtu);
		a.dest_qp_num = p->qp->qp_num;
		a.rq_psn = peer_psn;
		a.ah_attr.dlid = w->ctx[p->idx].lid;
		a.ah_attr.port_num = 1;
		a.max_dest_rd_atomic = 1;
		a.min_rnr_timer = 1;
		rc = ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				   IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	}
	if (!rc) {
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTS;
		a.sq_psn = psn;
		a.timeout = 14;
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		a.max_rd_atomic = 1;
		rc = ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				   IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
	}
	if (rc)
		tr_fail(w, "echo trial %d: ibv_modify_qp: %s", s->trial, strerror(rc));
}

/* Reap the signaled WRITEs' completions: each one a success. */
static int reap(struct echo_side *s)
{
	struct ibv_wc wc[16];
	int n = ibv_poll_cq(s->cq, 16, wc);

	if (n < 0)
		tr_fail(s->w, "echo trial %d: ibv_poll_cq: %d", s->trial, n);
	for (int i = 0; i < n; i++)
		if (wc[i].status != IBV_WC_SUCCESS)
			tr_fail(s->w, "echo trial %d side %d: WRITE completed with %s", s->trial, s->idx,
				ibv_wc_status_str(wc[i].status));
	return n;
}

/* Spin on the last byte (no verbs call) until it is `want`, then store
 * `mine` there at once, as riostream does (the window of a double store
 * is nanoseconds wide). */
static void await(struct echo_side *s, uint8_t want, uint8_t mine, uint32_t round)
{
	volatile uint8_t *last = s->win + s->len - 1;
	uint64_t deadline = tr_now_ms() + ECHO_WAIT_MS;

	for (uint32_t n = 1; *last != want; n++)
		if (n % 65536 == 0 && tr_now_ms() > deadline)
			tr_fail(s->w, "echo trial %d side %d (len %u%s), round %u: the last byte is 0x%02x, "
				"want the peer's marker 0x%02x (lost)", s->trial, s->idx, s->len,
				s->inl ? ", inline" : "", round, *last, want);
	*last = mine;
}

/* The body before the marker: the peer's for this round (placed before
 * its marker); then ours, and our marker still there (not undone). */
static void check_and_fill(struct echo_side *s, uint8_t mine, uint32_t round, uint8_t *body, bool peer)
{
	if (peer) {
		tr_rng_fill(&s->peer, body, s->len - 1);
		for (uint32_t k = 0; k + 1 < s->len; k++)
			if (s->win[k] != body[k])
				tr_fail(s->w, "echo trial %d side %d (len %u%s), round %u: byte %u is 0x%02x, "
					"want 0x%02x (the marker landed before the bytes before it)", s->trial,
					s->idx, s->len, s->inl ? ", inline" : "", round, k, s->win[k], body[k]);
		s->checked += s->len;
	}
	/* The program's own stores into the window it was just written. */
	tr_rng_fill(&s->own, s->win, s->len - 1);
	if (((volatile uint8_t *)s->win)[s->len - 1] != mine)
		tr_fail(s->w, "echo trial %d side %d (len %u%s), round %u: our marker 0x%02x, stored after "
			"the peer's showed, became 0x%02x (a byte placed twice)", s->trial, s->idx, s->len,
			s->inl ? ", inline" : "", round, mine, ((volatile uint8_t *)s->win)[s->len - 1]);
}

static void *side_main(void *arg)
{
	struct echo_side *s = arg;
	uint8_t *body = malloc(s->len);
	uint32_t outstanding = 0;

	if (!body)
		tr_fail(s->w, "echo: out of memory");
	for (uint32_t i = 0; i < s->rounds; i++) {
		uint8_t marker = (uint8_t)(2 * i + (uint32_t)s->idx);
		struct ibv_sge sge = { .addr = (uintptr_t)s->win, .length = s->len, .lkey = s->mr->lkey };
		struct ibv_send_wr wr = {
			.wr_id = i, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
			.send_flags = IBV_SEND_SIGNALED | (s->inl ? IBV_SEND_INLINE : 0),
			.wr.rdma = { .remote_addr = s->peer_addr, .rkey = s->peer_rkey },
		}, *bad;
		uint64_t deadline = tr_now_ms() + ECHO_WAIT_MS;
		int rc;

		if (s->idx)
			await(s, (uint8_t)(marker - 1), marker, i);
		else if (i == 0)
			s->win[s->len - 1] = marker;
		check_and_fill(s, marker, i, body, s->idx || i > 0);
		while (outstanding >= ECHO_SQ / 2) {
			outstanding -= (uint32_t)reap(s);
			if (tr_now_ms() > deadline)
				tr_fail(s->w, "echo trial %d side %d: WRITE completions stall", s->trial, s->idx);
		}
		rc = ibv_post_send(s->qp, &wr, &bad);
		if (rc)
			tr_fail(s->w, "echo trial %d side %d: ibv_post_send: %s", s->trial, s->idx, strerror(rc));
		outstanding++;
		outstanding -= (uint32_t)reap(s);
		if (!s->idx && i + 1 < s->rounds)
			await(s, (uint8_t)(marker + 1), (uint8_t)(marker + 2), i);
	}
	for (uint64_t deadline = tr_now_ms() + ECHO_WAIT_MS; outstanding;) {
		outstanding -= (uint32_t)reap(s);
		if (tr_now_ms() > deadline)
			tr_fail(s->w, "echo trial %d side %d: the last WRITEs never complete", s->trial, s->idx);
	}
	free(body);
	return NULL;
}

static void side_open(struct tr_world *w, struct echo_side *s, int trial, int idx, struct tr_rng *r,
		      uint32_t len, bool aligned, uint32_t off)
{
	struct ibv_qp_init_attr ia = {
		.cap = { .max_send_wr = ECHO_SQ, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1,
			 .max_inline_data = TR_MAX_INLINE },
		.qp_type = IBV_QPT_RC,
	};
	size_t sz = (size_t)off + len;

	(void)r;
	s->w = w;
	s->trial = trial;
	s->idx = idx;
	s->len = len;
	s->mem = aligned ? aligned_alloc(4096, (sz + 4095) & ~(size_t)4095) : malloc(sz);
	if (!s->mem)
		tr_fail(w, "echo: out of memory");
	s->win = s->mem + off;
	memset(s->mem, 0, sz);
	s->win[len - 1] = 0xff; /* riostream: *poll_byte = -1 */
	s->mr = ibv_reg_mr(w->ctx[idx].pd, s->mem, sz, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	s->cq = ibv_create_cq(w->ctx[idx].ctx, ECHO_SQ, NULL, NULL, 0);
	if (!s->mr || !s->cq)
		tr_fail(w, "echo: ibv_reg_mr / ibv_create_cq: %s", strerror(errno));
	ia.send_cq = ia.recv_cq = s->cq;
	s->qp = ibv_create_qp(w->ctx[idx].pd, &ia);
	if (!s->qp)
		tr_fail(w, "echo: ibv_create_qp: %s", strerror(errno));
	/* Both sides can compute both streams of bodies: the model. */
	tr_rng_seed(&s->own, w->o.seed, ECHO_STREAM + 0x100u + (uint64_t)trial * 2 + (uint64_t)idx);
	tr_rng_seed(&s->peer, w->o.seed, ECHO_STREAM + 0x100u + (uint64_t)trial * 2 + (uint64_t)(1 - idx));
}

static void side_close(struct tr_world *w, struct echo_side *s)
{
	if (ibv_destroy_qp(s->qp) || ibv_destroy_cq(s->cq) || ibv_dereg_mr(s->mr))
		tr_fail(w, "echo trial %d: teardown failed", s->trial);
	free(s->mem);
}

/* One trial: its shape drawn from the seed, ECHO_ROUNDS round trips. */
static uint64_t trial_run(struct tr_world *w, int trial, uint32_t rounds)
{
	static const uint32_t mtus[] = { 256, 1024, 4096 };
	struct tr_rng r;
	struct echo_side s[2];
	pthread_t t[2];
	uint32_t mtu, len, off;
	bool inl, aligned;

	tr_rng_seed(&r, w->o.seed, ECHO_STREAM + (uint64_t)trial);
	mtu = mtus[tr_rng_below(&r, 3)];
	switch (tr_rng_below(&r, 4)) {
	case 0: len = 64; break;                               /* riostream -S 64 */
	case 1: len = 1 + tr_rng_below(&r, 64); break;
	case 2: len = 65 + tr_rng_below(&r, TR_MAX_INLINE); break;
	default: len = 1 + tr_rng_below(&r, 3 * mtu); break;   /* up to three packets */
	}
	inl = len <= TR_MAX_INLINE && tr_rng_pct(&r, 50);
	aligned = tr_rng_pct(&r, 50);
	off = aligned ? 0 : tr_rng_below(&r, 256);
	memset(s, 0, sizeof(s));
	for (int i = 0; i < 2; i++) {
		side_open(w, &s[i], trial, i, &r, len, aligned, off);
		s[i].inl = inl;
		s[i].rounds = rounds;
	}
	for (int i = 0; i < 2; i++) {
		s[i].peer_addr = (uintptr_t)s[1 - i].win;
		s[i].peer_rkey = s[1 - i].mr->rkey;
	}
	uint32_t psn0 = tr_rng_below(&r, 1u << 24), psn1 = tr_rng_below(&r, 1u << 24);

	qp_rts(w, &s[0], &s[1], mtu, psn0, psn1);
	qp_rts(w, &s[1], &s[0], mtu, psn1, psn0);
	if (w->o.verbose)
		printf("traffic: echo trial %d: %u bytes%s, MTU %u, %s window\n", trial, len,
		       inl ? " inline" : "", mtu, aligned ? "page-aligned" : "malloc'd");
	for (int i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, side_main, &s[i]))
			tr_fail(w, "echo: pthread_create");
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < 2; i++)
		side_close(w, &s[i]);
	return s[0].checked + s[1].checked;
}

void tr_echo_run(struct tr_world *w)
{
	const char *env = getenv("TR_ECHO_ROUNDS");
	uint32_t rounds = env && atoi(env) > 1 ? (uint32_t)atoi(env) : ECHO_ROUNDS;
	uint64_t bytes = 0;

	for (int i = 0; i < ECHO_TRIALS; i++)
		bytes += trial_run(w, i, rounds);
	printf("traffic: echo: %d trials of %u round trips, %llu bytes checked as a spinning reader saw them\n",
	       ECHO_TRIALS, rounds, (unsigned long long)bytes);
	fflush(stdout);
}
