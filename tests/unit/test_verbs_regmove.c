/* SPDX-License-Identifier: MIT */
/*
 * Receives placed while ibv_reg_mr moves the same pages onto a memfd,
 * found by Open MPI's btl openib: it registers a pipeline fragment of a
 * large message (with remote write, so softib's direct placement moves
 * its whole pages onto a memfd, docs/transport.md "Direct placement")
 * while the engine thread still places the previous fragment, whose last
 * page the new MR covers.  Before the fix, registration copied the pages,
 * asked softibd to keep the memfd and only then mapped it over them: a
 * receive the engine placed in between went into the old private page,
 * which the mapping then replaced, and the completion said the bytes had
 * arrived (MPI saw the tail of 16 KiB and 2 MiB messages still holding
 * its guard bytes).
 *
 * Each round: a fresh buffer of NPG pages registered for local write only
 * (no pages move), one receive per page, NPG sends of a page each posted
 * by the peer, and at once (after a delay that differs each round, so
 * that the registration falls at different points of the stream) a
 * second MR over the same buffer with remote write, which moves its
 * pages.  Every receive completion's page must then hold that message.
 * SOFTIB_REGMOVE_SEED replays the delays.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "verbs_harness.h"

#define NPG     64                     /* pages (and messages) per round */
#define ROUNDS  300
#define WAIT_MS 10000

static uint8_t pat(uint32_t round, uint32_t msg, size_t i)
{
	return (uint8_t)(round * 131u + msg * 29u + (uint32_t)(i * 7u) + (uint32_t)(i >> 8) + 1u);
}

static void test_reg_during_receives(void **st)
{
	(void)st;
	size_t page = (size_t)sysconf(_SC_PAGESIZE), len = NPG * page;
	const char *env = getenv("SOFTIB_REGMOVE_SEED");
	unsigned int seed = env ? (unsigned int)strtoul(env, NULL, 0) : (unsigned int)time(NULL);
	struct pair p;
	struct end *s = &p.e[0], *r = &p.e[1];
	unsigned int wrong_rounds = 0;

	printf("SOFTIB_REGMOVE_SEED=%u\n", seed);
	srand(seed);
	pair_open(&p, 1, NULL, NULL);
	for (uint32_t round = 0; round < ROUNDS; round++) {
		uint8_t *t = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		struct ibv_mr *lmr, *rmr;
		struct ibv_wc wc;
		bool bad = false;

		assert_true(t != MAP_FAILED);
		memset(t, 0xee, len); /* touched: registration copies every page */
		lmr = ibv_reg_mr(r->pd, t, len, IBV_ACCESS_LOCAL_WRITE);
		assert_non_null(lmr);
		for (uint32_t k = 0; k < NPG; k++) {
			struct ibv_sge sge = { .addr = (uintptr_t)t + k * page, .length = (uint32_t)page,
					       .lkey = lmr->lkey };
			struct ibv_recv_wr wr = { .wr_id = k, .sg_list = &sge, .num_sge = 1 }, *badr;

			assert_int_equal(ibv_post_recv(r->qp, &wr, &badr), 0);
		}
		for (uint32_t k = 0; k < NPG; k++) {
			uint8_t *src = s->buf + k * page;
			struct ibv_sge sge = { .addr = (uintptr_t)src, .length = (uint32_t)page,
					       .lkey = s->mr->lkey };

			for (size_t i = 0; i < page; i++)
				src[i] = pat(round, k, i);
			assert_int_equal(post_send(s, IBV_WR_SEND, k, &sge, 1, 0, 0, 0, 0), 0);
		}
		/* the sends are on their way, placed by the receiver's engine
		 * thread: move the pages under them */
		struct timespec d = { 0, (long)(rand() % 100) * 1000 };

		nanosleep(&d, NULL);
		rmr = ibv_reg_mr(r->pd, t, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
		assert_non_null(rmr);
		for (uint32_t k = 0; k < NPG; k++) {
			poll_one(s->cq, &wc, WAIT_MS);
			assert_int_equal(wc.status, IBV_WC_SUCCESS);
		}
		for (uint32_t k = 0; k < NPG; k++) {
			poll_one(r->cq, &wc, WAIT_MS);
			assert_int_equal(wc.status, IBV_WC_SUCCESS);
			assert_int_equal(wc.byte_len, page);
			const uint8_t *q = t + wc.wr_id * page;
			size_t first = page, n = 0;

			for (size_t i = 0; i < page; i++)
				if (q[i] != pat(round, (uint32_t)wc.wr_id, i)) {
					if (first == page)
						first = i;
					n++;
				}
			if (n) {
				printf("round %u message %llu: %zu bytes wrong from %zu (0x%02x)\n", round,
				       (unsigned long long)wc.wr_id, n, first, q[first]);
				bad = true;
			}
		}
		wrong_rounds += bad;
		assert_int_equal(ibv_dereg_mr(rmr), 0);
		assert_int_equal(ibv_dereg_mr(lmr), 0);
		munmap(t, len);
	}
	pair_close(&p);
	assert_int_equal(wrong_rounds, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reg_during_receives),
	};

	return cmocka_run_group_tests(tests, start_daemon, stop_daemon);
}
