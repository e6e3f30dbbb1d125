/* SPDX-License-Identifier: MIT */
/*
 * Object lifetime through the built library (docs/transport.md "Object
 * lifetime"): a peer floods RDMA WRITEs, READs and SENDs at a QP while
 * another thread deregisters, reregisters and destroys what they target.
 * Nothing crashes, nothing is written after dereg_mr/rereg_mr return (the
 * old buffer is poisoned and checked; under ASan it is freed, so a late
 * write is a use-after-free), and every signaled WR of the flooder
 * completes exactly once.  And a process that talks to N successive
 * short-lived peers does not keep their inboxes mapped.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "verbs_harness.h"

#define ROUNDS     12
#define VBUF       (256u << 10)     /* the victim's target buffer */
#define MSG_WRITE  (64u << 10)      /* multi-packet: the responder keeps the MR */
#define MSG_READ   (32u << 10)
#define MSG_SEND   512u
#define OUTSTANDING 48
#define POISON     0xa5

struct flood {
	struct end *a;                 /* the flooder */
	uint64_t raddr;
	uint32_t rkey;
	uint64_t posted, completed, errors;
	uint64_t remote_err;           /* of them REM_ACCESS_ERR */
};

static void *flooder(void *arg)
{
	struct flood *f = arg;
	struct ibv_wc wc[16];
	uint64_t deadline = now_ms() + 20000;
	bool failed = false;
	uint32_t k = 0;

	for (;;) {
		int n = ibv_poll_cq(f->a->cq, 16, wc);

		for (int i = 0; i < n; i++) {
			f->completed++;
			if (wc[i].status != IBV_WC_SUCCESS) {
				failed = true;
				f->errors++;
				if (wc[i].status == IBV_WC_REM_ACCESS_ERR)
					f->remote_err++;
			}
		}
		if (failed && f->completed == f->posted)
			break;
		if (now_ms() > deadline)
			break; /* the caller's accounting check fails */
		if (failed || f->posted - f->completed >= OUTSTANDING)
			continue;
		struct ibv_sge sge = { .addr = (uintptr_t)f->a->buf, .lkey = f->a->mr->lkey };
		enum ibv_wr_opcode op;

		switch (k++ % 3) {
		case 0:
			op = IBV_WR_RDMA_WRITE;
			sge.length = MSG_WRITE;
			break;
		case 1:
			op = IBV_WR_RDMA_READ;
			sge.length = MSG_READ;
			break;
		default:
			op = IBV_WR_SEND;
			sge.length = MSG_SEND;
			break;
		}
		uint64_t off = (k * 4096u) % (VBUF - MSG_WRITE);

		if (post_send(f->a, op, k, &sge, 1, IBV_SEND_SIGNALED, f->raddr + off, f->rkey, 0) == 0)
			f->posted++;
		else
			failed = true; /* the QP went to ERR under us: drain */
	}
	return NULL;
}

static struct ibv_qp *new_qp(struct end *e)
{
	struct ibv_qp_init_attr ia = {
		.cap = { .max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 4, .max_recv_sge = 4 },
		.qp_type = IBV_QPT_RC,
		.send_cq = e->cq,
		.recv_cq = e->cq,
	};
	struct ibv_qp *qp = ibv_create_qp(e->pd, &ia);

	assert_non_null(qp);
	return qp;
}

static void drain(struct ibv_cq *cq)
{
	struct ibv_wc wc[16];

	while (ibv_poll_cq(cq, 16, wc) > 0)
		;
}

static void sleep_us(unsigned int us)
{
	nanosleep(&(struct timespec){ .tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000L }, NULL);
}

static bool all_poison(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != POISON)
			return false;
	return true;
}

/*
 * mode 0: dereg the target MR, then destroy the QP; mode 1: rereg the
 * target MR to another buffer first (CHANGE_TRANSLATION), then dereg and
 * destroy.  Either way the old buffer is poisoned once the verb returned
 * and must stay so while the flood goes on.
 */
static void run_rounds(int mode)
{
	struct end a, v;
	struct conn_opts o = default_opts;
	unsigned int seed = 12345u + (unsigned int)mode;

	o.timeout = 8;  /* ~1 ms: a gone peer ends the flood quickly */
	o.retry_cnt = 2;
	o.rnr_retry = 1;
	end_open(&a, "softib0", 0, 0);
	end_open(&v, "softib1", 0, 0);
	for (int r = 0; r < ROUNDS; r++) {
		uint8_t *vb = aligned_alloc(4096, VBUF), *nb = aligned_alloc(4096, VBUF);
		struct ibv_mr *vmr, *rmr;
		struct flood f = { .a = &a };
		pthread_t t;

		assert_non_null(vb);
		assert_non_null(nb);
		memset(vb, 0, VBUF);
		vmr = ibv_reg_mr(v.pd, vb, VBUF, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				 IBV_ACCESS_REMOTE_READ);
		assert_non_null(vmr);
		rmr = v.mr;
		ibv_destroy_qp(a.qp);
		ibv_destroy_qp(v.qp);
		a.qp = new_qp(&a);
		v.qp = new_qp(&v);
		qp_connect(&a, &v, &o);
		qp_connect(&v, &a, &o);
		for (int i = 0; i < 32; i++) {
			struct ibv_sge s = { .addr = (uintptr_t)v.buf + (uint64_t)i * MSG_SEND,
					     .length = MSG_SEND, .lkey = rmr->lkey };
			struct ibv_recv_wr wr = { .wr_id = (uint64_t)i, .sg_list = &s, .num_sge = 1 }, *bad;

			assert_int_equal(ibv_post_recv(v.qp, &wr, &bad), 0);
		}
		f.raddr = (uintptr_t)vb;
		f.rkey = vmr->rkey;
		assert_int_equal(pthread_create(&t, NULL, flooder, &f), 0);
		sleep_us(2000 + rand_r(&seed) % 4000);
		if (mode == 1) {
			assert_int_equal(ibv_rereg_mr(vmr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, nb, VBUF, 0), 0);
			memset(vb, POISON, VBUF);
			sleep_us(2000 + rand_r(&seed) % 2000); /* the flood goes on */
			assert_true(all_poison(vb, VBUF));
		}
		uint8_t *cur = mode == 1 ? nb : vb;

		assert_int_equal(ibv_dereg_mr(vmr), 0);
		memset(cur, POISON, VBUF);
		sleep_us(1000 + rand_r(&seed) % 2000);
		assert_true(all_poison(cur, VBUF));
		free(vb);
		free(nb);                      /* ASan: a late write is a use-after-free */
		sleep_us(rand_r(&seed) % 2000);
		assert_int_equal(ibv_destroy_qp(v.qp), 0);
		v.qp = new_qp(&v);             /* end_close destroys one */
		pthread_join(t, NULL);
		/* Every signaled WR completed exactly once, and the flood ended
		 * in an error (its target went away under it). */
		assert_int_equal(f.completed, f.posted);
		assert_true(f.posted > 0);
		assert_true(f.errors > 0);
		drain(a.cq);
		drain(v.cq);
	}
	end_close(&a);
	end_close(&v);
}

static void test_destroy_under_flood(void **state)
{
	(void)state;
	run_rounds(0);
}

static void test_rereg_under_flood(void **state)
{
	(void)state;
	run_rounds(1);
}

/* Mappings of softibd inboxes in this process (/proc/self/maps lines). */
static int inbox_mappings(void)
{
	FILE *fp = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;

	assert_non_null(fp);
	while (fgets(line, sizeof(line), fp))
		if (strstr(line, "softib-inbox-"))
			n++;
	fclose(fp);
	return n;
}

/*
 * A long-lived end talks to N short-lived peers in turn (each its own
 * context, so its own inbox and generation): once a peer and the QP that
 * talked to it are gone, its inbox is no longer mapped here.
 */
static void test_peer_mappings_do_not_grow(void **state)
{
	struct end a;
	(void)state;
	end_open(&a, "softib0", 0, 0);
	for (int r = 0; r < 16; r++) {
		struct end p;
		struct ibv_wc wc;
		struct ibv_sge s = { .addr = (uintptr_t)a.buf, .length = 64, .lkey = a.mr->lkey };

		end_open(&p, "softib1", 0, 0);
		ibv_destroy_qp(a.qp);
		a.qp = new_qp(&a);
		qp_connect(&a, &p, &default_opts);
		qp_connect(&p, &a, &default_opts);
		post_recv(&p, 1, 0, 64);
		assert_int_equal(post_send(&a, IBV_WR_SEND, 2, &s, 1, IBV_SEND_SIGNALED, 0, 0, 0), 0);
		poll_one(a.cq, &wc, 5000);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		poll_one(p.cq, &wc, 5000);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		/* ours, the peer's own, and each one's mapping of the other */
		assert_int_equal(inbox_mappings(), 4);
		end_close(&p);
		/* Talking to the next peer: the old one's mapping must go. */
		assert_int_equal(ibv_destroy_qp(a.qp), 0);
		a.qp = new_qp(&a);
		assert_int_equal(inbox_mappings(), 1); /* our own inbox only */
	}
	end_close(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_destroy_under_flood),
		cmocka_unit_test(test_rereg_under_flood),
		cmocka_unit_test(test_peer_mappings_do_not_grow),
	};

	return cmocka_run_group_tests(tests, start_daemon, stop_daemon);
}
