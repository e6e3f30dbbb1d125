/* SPDX-License-Identifier: MIT */
/*
 * The inbox ring (src/hca/ring.h) on its own: all-zero memory is empty,
 * FIFO order, a full ring refuses without blocking, laps wrap, the stall
 * check, and several producer threads against one consumer lose nothing
 * and keep each producer's order.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hca/ring.h"

static void *ring_mem(struct sib_ring *r)
{
	void *base = calloc(1, SIB_INBOX_BYTES);

	assert_non_null(base);
	sib_ring_attach(r, base);
	return base;
}

static void push(struct sib_ring *r, uint32_t v)
{
	uint64_t t = 0;
	struct sib_ring_slot *s = sib_ring_reserve(r, &t);

	assert_non_null(s);
	memcpy(s->data, &v, sizeof(v));
	(void)sib_ring_publish(r, s, t, sizeof(v), 0);
}

static uint32_t pop(struct sib_ring *r)
{
	struct sib_ring_slot *s = sib_ring_peek(r);
	uint32_t v;

	assert_non_null(s);
	assert_int_equal(s->len, sizeof(v));
	memcpy(&v, s->data, sizeof(v));
	sib_ring_release(r, s);
	return v;
}

static void test_empty_fifo_full_wrap(void **state)
{
	struct sib_ring r;
	void *base = ring_mem(&r);
	uint64_t t;

	assert_null(sib_ring_peek(&r));
	assert_null(sib_ring_stalled(&r));
	/* Three laps: fill completely, refuse one more, drain in order. */
	for (uint32_t lap = 0; lap < 3; lap++) {
		for (uint32_t i = 0; i < SIB_INBOX_SLOTS; i++)
			push(&r, lap * SIB_INBOX_SLOTS + i);
		assert_null(sib_ring_reserve(&r, &t));
		for (uint32_t i = 0; i < SIB_INBOX_SLOTS; i++)
			assert_int_equal(pop(&r), lap * SIB_INBOX_SLOTS + i);
		assert_null(sib_ring_peek(&r));
	}
	/* Interleaved use across the wrap point. */
	for (uint32_t i = 0; i < 5 * SIB_INBOX_SLOTS; i++) {
		push(&r, i);
		push(&r, i + 1000000);
		assert_int_equal(pop(&r), i);
		assert_int_equal(pop(&r), i + 1000000);
	}
	free(base);
}

static void test_reserved_unpublished_blocks_and_stalls(void **state)
{
	struct sib_ring r;
	void *base = ring_mem(&r);
	uint64_t t1 = 0;
	struct sib_ring_slot *s1 = sib_ring_reserve(&r, &t1);

	assert_non_null(s1);
	push(&r, 7); /* published behind an unpublished slot */
	assert_null(sib_ring_peek(&r));
	assert_ptr_equal(sib_ring_stalled(&r), s1);
	(void)sib_ring_publish(&r, s1, t1, 0, 0);
	assert_null(sib_ring_stalled(&r));
	assert_non_null(sib_ring_peek(&r));
	sib_ring_release(&r, sib_ring_peek(&r));
	assert_int_equal(pop(&r), 7);
	free(base);
}

static void test_publish_reports_sleeping_consumer(void **state)
{
	struct sib_ring r;
	void *base = ring_mem(&r);
	uint64_t t = 0;
	struct sib_ring_slot *s;

	s = sib_ring_reserve(&r, &t);
	assert_false(sib_ring_publish(&r, s, t, 0, 0));
	atomic_store(&r.hdr->sleeping, 1);
	s = sib_ring_reserve(&r, &t);
	assert_true(sib_ring_publish(&r, s, t, 0, 0));
	/* A wait with a published slot returns at once; a wake bumps the seq. */
	uint32_t seq = sib_ring_wake_seq(&r);
	sib_ring_wait(&r, seq, -1);
	sib_ring_wake(&r);
	assert_int_not_equal(sib_ring_wake_seq(&r), seq);
	free(base);
}

#define PRODUCERS 4
#define PER_PRODUCER 300000u

struct producer {
	struct sib_ring *r;
	uint32_t id;
	uint64_t full;
};

static void *produce(void *arg)
{
	struct producer *p = arg;

	for (uint32_t i = 0; i < PER_PRODUCER; i++) {
		uint32_t v[2] = { p->id, i };
		struct sib_ring_slot *s;
		uint64_t t = 0;

		while (!(s = sib_ring_reserve(p->r, &t)))
			p->full++; /* full: the consumer will make room */
		memcpy(s->data, v, sizeof(v));
		(void)sib_ring_publish(p->r, s, t, sizeof(v), 0);
	}
	return NULL;
}

static void test_many_producers_one_consumer(void **state)
{
	struct sib_ring r;
	void *base = ring_mem(&r);
	struct producer prod[PRODUCERS];
	pthread_t th[PRODUCERS];
	uint32_t next[PRODUCERS] = { 0 };
	uint64_t got = 0;

	for (uint32_t i = 0; i < PRODUCERS; i++) {
		prod[i] = (struct producer){ .r = &r, .id = i };
		assert_int_equal(pthread_create(&th[i], NULL, produce, &prod[i]), 0);
	}
	while (got < (uint64_t)PRODUCERS * PER_PRODUCER) {
		struct sib_ring_slot *s = sib_ring_peek(&r);
		uint32_t v[2];

		if (!s)
			continue;
		assert_int_equal(s->len, sizeof(v));
		memcpy(v, s->data, sizeof(v));
		sib_ring_release(&r, s);
		assert_true(v[0] < PRODUCERS);
		assert_int_equal(v[1], next[v[0]]); /* each producer's order is kept */
		next[v[0]]++;
		got++;
	}
	for (uint32_t i = 0; i < PRODUCERS; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(next[i], PER_PRODUCER);
	}
	assert_null(sib_ring_peek(&r));
	free(base);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty_fifo_full_wrap),
		cmocka_unit_test(test_reserved_unpublished_blocks_and_stalls),
		cmocka_unit_test(test_publish_reports_sleeping_consumer),
		cmocka_unit_test(test_many_producers_one_consumer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
