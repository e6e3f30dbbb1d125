/* SPDX-License-Identifier: MIT */
/*
 * riostream's pattern through verbs (issue 16): two RC QPs, each side with
 * ONE window used both as the target of the peer's RDMA WRITEs and as the
 * source of its own.  Each side's thread spins on the window's last byte
 * (no verbs call while it spins) until the peer's marker lands, stores its
 * own marker there and WRITEs the whole window back; one side sends even
 * markers, the other odd ones.  The placing of the data must store each
 * byte once: glibc's memcpy stores the last 64 (or 16..32) bytes twice, so
 * a marker stored between the two stores was undone and the program sent
 * the peer's marker back, and both sides spun forever (riostream -S 64 -C 1
 * hung in one run of two).  Inline and not, 64 bytes (one vector for
 * glibc's AVX-512 memcpy), 32, 100 and 4096 (one MTU); both ends in this
 * process, each context's engine thread places the peer's data (or the
 * peer places it directly: run again with SOFTIB_DIRECT=0 for the packet
 * path).  A side that waits longer than WAIT_MS fails with what it saw.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "verbs_harness.h"

#define WAIT_MS 20000u
#define ROUNDS  1500u                 /* 64 bytes: glibc's double store */
#define ROUNDS_OTHER 300u

struct side {
	struct end *self, *peer;
	uint32_t off, len;             /* the window: buf + off, len bytes (both sides) */
	bool inl, odd;
	uint32_t rounds;
	char err[160];                 /* empty: passed */
};

static _Atomic int failed;

static uint64_t ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Spin on memory, as riostream does, until the last byte is `want`. */
static bool spin_for(struct side *s, volatile uint8_t *last, uint8_t want)
{
	uint64_t deadline = ms_now() + WAIT_MS;

	for (uint32_t n = 1; *last != want; n++) {
		if (n % 65536 == 0 && (ms_now() > deadline || atomic_load(&failed))) {
			snprintf(s->err, sizeof(s->err), "%s side, len %u%s: last byte 0x%02x, want 0x%02x",
				 s->odd ? "odd" : "even", s->len, s->inl ? " inline" : "", *last, want);
			return false;
		}
	}
	return true;
}

/* Reap send completions (signaled WRITEs); none may fail. */
static bool reap(struct side *s, uint32_t *outstanding)
{
	struct ibv_wc wc[16];
	int n = ibv_poll_cq(s->self->cq, 16, wc);

	for (int i = 0; i < n; i++) {
		if (wc[i].status != IBV_WC_SUCCESS) {
			snprintf(s->err, sizeof(s->err), "WRITE completed with %s",
				 ibv_wc_status_str(wc[i].status));
			return false;
		}
		(*outstanding)--;
	}
	return n >= 0;
}

static bool write_window(struct side *s, uint32_t *outstanding)
{
	struct ibv_sge sge = { .addr = (uintptr_t)s->self->buf + s->off, .length = s->len,
			       .lkey = s->self->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = 1, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED | (s->inl ? IBV_SEND_INLINE : 0),
		.wr.rdma = { .remote_addr = (uintptr_t)s->peer->buf + s->off, .rkey = s->peer->mr->rkey },
	}, *bad;
	uint64_t deadline = ms_now() + WAIT_MS;

	while (*outstanding >= 32) { /* the SQ holds 64 */
		if (!reap(s, outstanding))
			return false;
		if (ms_now() > deadline) {
			snprintf(s->err, sizeof(s->err), "WRITE completions do not come");
			return false;
		}
	}
	if (ibv_post_send(s->self->qp, &wr, &bad)) {
		snprintf(s->err, sizeof(s->err), "ibv_post_send failed");
		return false;
	}
	(*outstanding)++;
	return reap(s, outstanding);
}

static void *side_main(void *arg)
{
	struct side *s = arg;
	volatile uint8_t *last = s->self->buf + s->off + s->len - 1;
	uint32_t outstanding = 0;
	uint8_t marker = s->odd ? 1 : 0;

	for (uint32_t i = 0; i < s->rounds; i++) {
		if (s->odd && !spin_for(s, last, (uint8_t)(marker - 1)))
			goto fail;
		*last = marker;
		if (!write_window(s, &outstanding))
			goto fail;
		if (!s->odd && i + 1 < s->rounds && !spin_for(s, last, (uint8_t)(marker + 1)))
			goto fail;
		marker = (uint8_t)(marker + 2);
	}
	/* The last WRITEs complete before the QPs go. */
	for (uint64_t deadline = ms_now() + WAIT_MS; outstanding && ms_now() < deadline;)
		if (!reap(s, &outstanding))
			goto fail;
	return NULL;
fail:
	atomic_store(&failed, 1);
	return NULL;
}

static void run(uint32_t off, uint32_t len, bool inl)
{
	uint32_t rounds = len == 64 ? ROUNDS : ROUNDS_OTHER;
	struct pair p;
	struct side s[2] = {
		{ .self = &p.e[0], .peer = &p.e[1], .odd = false },
		{ .self = &p.e[1], .peer = &p.e[0], .odd = true },
	};
	pthread_t t[2];

	atomic_store(&failed, 0);
	pair_open(&p, 0, NULL, NULL);
	for (int i = 0; i < 2; i++) {
		s[i].off = off;
		s[i].len = len;
		s[i].inl = inl;
		s[i].rounds = rounds;
		memset(s[i].self->buf + off, 0x5a, len);
		s[i].self->buf[off + len - 1] = 0xff; /* riostream: *poll_byte = -1 */
	}
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&t[i], NULL, side_main, &s[i]), 0);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < 2; i++)
		if (s[i].err[0])
			fail_msg("%s", s[i].err);
	/* Both windows end with the odd side's last marker, the rest as sent. */
	for (int i = 0; i < 2; i++) {
		for (uint32_t k = 0; k + 1 < len; k++)
			assert_int_equal(p.e[i].buf[off + k], 0x5a);
		assert_int_equal(p.e[i].buf[off + len - 1], (uint8_t)(2 * (rounds - 1) + 1));
	}
	pair_close(&p);
}

/* riostream's malloc'd 64 bytes: inside a page, at an odd 16-byte offset. */
static void test_inline_64(void **st) { (void)st; run(0x2d0, 64, true); }
static void test_packets_64(void **st) { (void)st; run(0x2d0, 64, false); }
static void test_inline_32(void **st) { (void)st; run(0x1010, 32, true); }
static void test_inline_100(void **st) { (void)st; run(0x2003, 100, true); }
static void test_packets_4096(void **st) { (void)st; run(0x8000, 4096, false); }
static void test_packets_4096_unaligned(void **st) { (void)st; run(0x10040, 4096, false); }

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_inline_64),
		cmocka_unit_test(test_packets_64),
		cmocka_unit_test(test_inline_32),
		cmocka_unit_test(test_inline_100),
		cmocka_unit_test(test_packets_4096),
		cmocka_unit_test(test_packets_4096_unaligned),
	};

	return cmocka_run_group_tests(tests, start_daemon, stop_daemon);
}
