/* SPDX-License-Identifier: MIT */
/*
 * The inbox ring (src/link/ring.h) on its own: all-zero memory is empty,
 * FIFO order, a full ring refuses without blocking, laps wrap, several
 * producer threads against one consumer lose nothing; and the hostile
 * cases (issue 5 item 4): a producer killed or stopped at every step of a
 * slot claim, and garbage in head, tail and slot states, never hang the
 * consumer, which keeps receiving from honest producers.
 */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

/* Stop a producer at step `die_step` of its `die_nth` reserve/publish. */
static int die_step = -1, die_sig;
static void ring_step(int n)
{
	if (n == die_step)
		raise(die_sig);
}
#define SIB_RING_STEP(n) ring_step(n)

#include "link/ring.h"

#define MAGIC 0x484f4e45u /* an honest producer's packets */

static void *ring_mem(struct sib_ring_rx *c)
{
	/* Shared, so that forked producers write the same ring. */
	void *base = mmap(NULL, SIB_RING_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	assert_true(base != MAP_FAILED);
	sib_ring_rx_attach(c, base);
	return base;
}

/* False if the ring is full, or if the consumer took the slot for stalled
 * (then the packet is lost, and a sender resends it, as a requester would). */
static bool try_push(struct sib_ring *r, int32_t pid, uint32_t id, uint32_t v)
{
	uint64_t t = 0;
	struct sib_ring_slot *s = sib_ring_reserve(r, pid, &t);
	uint32_t w[3] = { MAGIC, id, v };

	if (!s)
		return false;
	memcpy(s->data, w, sizeof(w));
	return sib_ring_publish(r, s, t, pid, sizeof(w), 0) >= 0;
}

static void push(struct sib_ring *r, uint32_t v)
{
	assert_true(try_push(r, getpid(), 0, v));
}

/* The next honest packet's (id, value), or false if none now; garbage
 * that looks published is consumed and ignored. */
static bool pop_any(struct sib_ring_rx *c, uint32_t *id, uint32_t *v)
{
	struct sib_ring_slot *s;

	while ((s = sib_ring_peek(c))) {
		uint32_t w[3], len = s->len;

		memcpy(w, s->data, sizeof(w));
		sib_ring_release(c, s);
		if (len == sizeof(w) && w[0] == MAGIC) {
			*id = w[1];
			*v = w[2];
			return true;
		}
	}
	return false;
}

static uint32_t pop(struct sib_ring_rx *c)
{
	uint32_t id, v;

	assert_true(pop_any(c, &id, &v));
	return v;
}

static void test_empty_fifo_full_wrap(void **state)
{
	struct sib_ring_rx c;
	void *base = ring_mem(&c);
	uint64_t t;

	assert_null(sib_ring_peek(&c));
	assert_false(sib_ring_check(&c, 1, NULL));
	/* Three laps: fill completely, refuse one more, drain in order. */
	for (uint32_t lap = 0; lap < 3; lap++) {
		for (uint32_t i = 0; i < SIB_INBOX_SLOTS; i++)
			push(&c.r, lap * SIB_INBOX_SLOTS + i);
		assert_null(sib_ring_reserve(&c.r, getpid(), &t));
		for (uint32_t i = 0; i < SIB_INBOX_SLOTS; i++)
			assert_int_equal(pop(&c), lap * SIB_INBOX_SLOTS + i);
		assert_null(sib_ring_peek(&c));
	}
	/* Interleaved use across the wrap point. */
	for (uint32_t i = 0; i < 5 * SIB_INBOX_SLOTS; i++) {
		push(&c.r, i);
		push(&c.r, i + 1000000);
		assert_int_equal(pop(&c), i);
		assert_int_equal(pop(&c), i + 1000000);
	}
	assert_int_equal(c.bad_slots + c.bad_tail + c.skipped, 0);
	munmap(base, SIB_RING_BYTES);
}

/* A claim names its producer at once; an unpublished slot blocks the
 * ring until it is published or, by age, skipped; the late publish fails. */
static void test_stalled_slot_skipped_by_age(void **state)
{
	struct sib_ring_rx c;
	void *base = ring_mem(&c);
	uint64_t t1 = 0, next = 0;
	struct sib_ring_slot *s1 = sib_ring_reserve(&c.r, getpid(), &t1);

	assert_non_null(s1);
	assert_int_equal(SIB_SLOT_PID(atomic_load(&s1->state)), getpid());
	push(&c.r, 7); /* published behind an unpublished slot */
	assert_null(sib_ring_peek(&c));
	/* Published in time: delivered. */
	assert_false(sib_ring_check(&c, 1000, &next));
	assert_true(next > 1000);
	(void)sib_ring_publish(&c.r, s1, t1, getpid(), 0, 0);
	assert_non_null(sib_ring_peek(&c));
	sib_ring_release(&c, sib_ring_peek(&c));
	assert_int_equal(pop(&c), 7);

	/* Our own (live) PID: skipped only after SIB_RING_STALL_MAX_NS. */
	s1 = sib_ring_reserve(&c.r, getpid(), &t1);
	push(&c.r, 8);
	assert_false(sib_ring_check(&c, 1000, NULL));
	assert_false(sib_ring_check(&c, 1000 + SIB_RING_STALL_DEAD_NS, NULL));
	assert_null(sib_ring_peek(&c));
	assert_true(sib_ring_check(&c, 1000 + SIB_RING_STALL_MAX_NS, NULL));
	assert_int_equal(c.skipped, 1);
	assert_int_equal(pop(&c), 8);
	assert_int_equal(sib_ring_publish(&c.r, s1, t1, getpid(), 0, 0), -1);
	assert_null(sib_ring_peek(&c));

	/* A dead PID: skipped after SIB_RING_STALL_DEAD_NS. */
	pid_t dead = fork();

	if (dead == 0)
		_exit(0);
	waitpid(dead, NULL, 0);
	assert_non_null(sib_ring_reserve(&c.r, dead, &t1));
	push(&c.r, 9);
	assert_false(sib_ring_check(&c, 5000, NULL));
	assert_true(sib_ring_check(&c, 5000 + SIB_RING_STALL_DEAD_NS, NULL));
	assert_int_equal(c.skipped, 2);
	assert_int_equal(pop(&c), 9);
	munmap(base, SIB_RING_BYTES);
}

static void test_publish_reports_sleeping_consumer(void **state)
{
	struct sib_ring_rx c;
	void *base = ring_mem(&c);
	uint64_t t = 0;
	struct sib_ring_slot *s;

	s = sib_ring_reserve(&c.r, getpid(), &t);
	assert_false(sib_ring_publish(&c.r, s, t, getpid(), 0, 0));
	atomic_store(&c.r.hdr->sleeping, 1);
	s = sib_ring_reserve(&c.r, getpid(), &t);
	assert_true(sib_ring_publish(&c.r, s, t, getpid(), 0, 0));
	/* One wake per sleep: the first producer took it on, the next one
	 * makes no system call. */
	assert_int_equal(atomic_load(&c.r.hdr->sleeping), 0);
	s = sib_ring_reserve(&c.r, getpid(), &t);
	assert_false(sib_ring_publish(&c.r, s, t, getpid(), 0, 0));
	/* A wait with a published slot returns at once; a wake bumps the seq. */
	uint32_t seq = sib_ring_wake_seq(&c.r);
	sib_ring_wait(&c, seq, -1);
	sib_ring_wake(&c.r);
	assert_int_not_equal(sib_ring_wake_seq(&c.r), seq);
	munmap(base, SIB_RING_BYTES);
}

#define PRODUCERS 4
#define PER_PRODUCER 100000u

struct producer {
	struct sib_ring *r;
	uint32_t id, count;
	uint64_t full;
};

static void *produce(void *arg)
{
	struct producer *p = arg;
	int32_t pid = getpid(); /* a system call: not in the loop */

	for (uint32_t i = 0; i < p->count; i++)
		while (!try_push(p->r, pid, p->id, i))
			p->full++; /* full: the consumer will make room */
	return NULL;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * Consume until every honest producer 0..n-1 delivered want[i] packets in
 * order, checking the ring now and then; the whole thing must end
 * within 20 s.
 */
static void consume_from(struct sib_ring_rx *c, uint32_t base, uint32_t n, const uint32_t *want)
{
	uint32_t next[PRODUCERS + 1] = { 0 };
	uint64_t end = now_ns() + 20000000000ull;
	uint32_t empty = 0;
	bool done = false;

	while (!done) {
		uint32_t id, v;

		if (pop_any(c, &id, &v)) {
			/* Garbage may replay an old slot: ids of earlier rounds. */
			if (id - base >= n)
				continue;
			id -= base;
			assert_int_equal(v, next[id]); /* each producer's order is kept */
			next[id]++;
		} else if ((++empty & 255) == 0) {
			/* Now and then, as the engine does. */
			(void)sib_ring_check(c, now_ns(), NULL);
		}
		done = true;
		for (uint32_t i = 0; i < n; i++)
			done = done && next[i] >= want[i];
		if (now_ns() > end)
			fail_msg("consumer stuck: got %u of %u from producer 0", next[0], want[0]);
	}
}

static void consume_all(struct sib_ring_rx *c, uint32_t n, const uint32_t *want)
{
	consume_from(c, 0, n, want);
}

static void test_many_producers_one_consumer(void **state)
{
	struct sib_ring_rx c;
	void *base = ring_mem(&c);
	struct producer prod[PRODUCERS];
	pthread_t th[PRODUCERS];
	uint32_t want[PRODUCERS];

	for (uint32_t i = 0; i < PRODUCERS; i++) {
		prod[i] = (struct producer){ .r = &c.r, .id = i, .count = PER_PRODUCER };
		want[i] = PER_PRODUCER;
		assert_int_equal(pthread_create(&th[i], NULL, produce, &prod[i]), 0);
	}
	consume_all(&c, PRODUCERS, want);
	for (uint32_t i = 0; i < PRODUCERS; i++)
		pthread_join(th[i], NULL);
	assert_null(sib_ring_peek(&c));
	assert_int_equal(c.bad_slots + c.bad_tail + c.skipped, 0);
	munmap(base, SIB_RING_BYTES);
}

/*
 * A forked producer sends two packets, then is killed or stopped at step
 * `step` of its third (0: before the claim, 1: claimed, 2: tail moved,
 * 3: length written, 4: published).  Meanwhile two honest threads keep
 * sending; the consumer gets everything of theirs, and the victim's first
 * two (and its third only if it was published).
 */
static void victim_case(int step, int sig)
{
	struct sib_ring_rx c;
	void *base = ring_mem(&c);
	struct producer prod[2];
	pthread_t th[2];
	uint32_t want[3] = { 3000, 3000, 2 };
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		try_push(&c.r, getpid(), 2, 0);
		try_push(&c.r, getpid(), 2, 1);
		die_step = step;
		die_sig = sig;
		try_push(&c.r, getpid(), 2, 2);
		_exit(0);
	}
	/* Wait until it is dead or stopped (bounded). */
	int st = 0;
	uint64_t end = now_ns() + 5000000000ull;

	while (waitpid(pid, &st, WUNTRACED | WNOHANG) == 0)
		assert_true(now_ns() < end);
	for (uint32_t i = 0; i < 2; i++) {
		prod[i] = (struct producer){ .r = &c.r, .id = i, .count = want[i] };
		assert_int_equal(pthread_create(&th[i], NULL, produce, &prod[i]), 0);
	}
	if (step == 4)
		want[2] = 3;
	consume_all(&c, 3, want);
	for (uint32_t i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	if (step >= 1 && step <= 3)
		assert_int_equal(c.skipped, 1);
	else
		assert_int_equal(c.skipped, 0);
	if (sig == SIGSTOP) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	munmap(base, SIB_RING_BYTES);
}

/*
 * A producer stopped mid-build is skipped; when it resumes it writes its
 * packet into the slot it claimed, whatever lap the ring is in by then.
 * Laps later, that slot must not hold anyone else's packet (it is
 * quarantined): every packet sent after the skip arrives as it was sent.
 * Once the producer is gone the slot is used again.
 */
static void test_skipped_producer_never_corrupts(void **state)
{
	struct sib_ring_rx *c = calloc(1, sizeof(*c));
	void *base;
	uint64_t t1 = 0, now = 1000;
	pid_t stopped = fork();
	struct sib_ring_slot *late;
	uint32_t sent = 0, got = 0, hits = 0;

	assert_non_null(c);
	assert_true(stopped >= 0);
	if (stopped == 0) {
		alarm(60); /* gone even if the test fails before it kills us */
		pause();
		_exit(0);
	}
	base = ring_mem(c);
	late = sib_ring_reserve(&c->r, stopped, &t1); /* claimed, then "stopped" */
	assert_non_null(late);
	push(&c->r, sent++);
	assert_false(sib_ring_check(c, now, NULL));
	assert_true(sib_ring_check(c, now + SIB_RING_STALL_MAX_NS, NULL));
	assert_int_equal(c->skipped, 1);
	now += SIB_RING_STALL_MAX_NS;

	/* Three laps; whenever an honest producer claims `late`, the stopped
	 * one resumes right then and writes its packet there. */
	for (uint32_t i = 0; i < 3 * SIB_INBOX_SLOTS; i++) {
		uint64_t t = 0;
		struct sib_ring_slot *s = sib_ring_reserve(&c->r, getpid(), &t);
		uint32_t w[3] = { MAGIC, 0, sent };

		assert_non_null(s);
		memcpy(s->data, w, sizeof(w));
		if (s == late) {
			hits++;
			memset(late->data, 0xee, 64);
		}
		assert_true(sib_ring_publish(&c->r, s, t, getpid(), sizeof(w), 0) >= 0);
		sent++;
		for (int n = 0; n < 4 && got < sent; n++) {
			uint32_t id, v;

			while (pop_any(c, &id, &v))
				assert_int_equal(v, got++); /* all there, none damaged */
			now += 1000;
			(void)sib_ring_check(c, now, NULL);
		}
		assert_int_equal(got, sent);
	}
	assert_int_equal(hits, 0);
	assert_int_equal(c->quarantined, 1);
	/* Its late publish fails: the packet is lost, nothing else is. */
	assert_int_equal(sib_ring_publish(&c->r, late, t1, stopped, 12, 0), -1);

	/* Gone: the slot goes back to producers on the next lap. */
	kill(stopped, SIGKILL);
	waitpid(stopped, NULL, 0);
	for (uint32_t i = 0; i < 3 * SIB_INBOX_SLOTS; i++) {
		uint32_t id, v;

		push(&c->r, sent++);
		while (pop_any(c, &id, &v))
			assert_int_equal(v, got++);
		(void)sib_ring_check(c, now += 1000, NULL);
		while (pop_any(c, &id, &v))
			assert_int_equal(v, got++);
	}
	assert_int_equal(got, sent);
	assert_int_equal(c->quarantined, 0);
	assert_int_equal(c->quarantine_freed, 1);
	assert_int_equal(c->bad_slots + c->bad_tail, 0);
	munmap(base, SIB_RING_BYTES);
	free(c);
}

static void test_producer_killed_at_every_step(void **state)
{
	for (int step = 0; step <= 4; step++)
		victim_case(step, SIGKILL);
}

static void test_producer_stopped_at_every_step(void **state)
{
	for (int step = 0; step <= 4; step++)
		victim_case(step, SIGSTOP);
}

/* Garbage in the shared head, tail and slot states, over and over: every
 * call returns, and honest producers still get through. */
static void test_garbage_never_hangs(void **state)
{
	struct sib_ring_rx c;
	void *base = ring_mem(&c);
	uint64_t tails[] = { UINT64_MAX, 1ull << 40, 5, SIB_INBOX_SLOTS * 3 + 1 };

	srand(1);
	for (int round = 0; round < 40; round++) {
		struct producer prod[2];
		pthread_t th[2];
		uint32_t want[2] = { 500, 500 };

		atomic_store(&c.r.hdr->head, ((uint64_t)rand() << 32) | (uint64_t)rand());
		atomic_store(&c.r.hdr->tail, round < 4 ? tails[round] : ((uint64_t)rand() << 31) ^ (uint64_t)rand());
		for (int i = 0; i < 16; i++) {
			struct sib_ring_slot *s = &c.r.slots[(uint32_t)rand() % SIB_INBOX_SLOTS];

			atomic_store(&s->state, ((uint64_t)rand() << 33) ^ ((uint64_t)rand() << 8) ^ (uint64_t)rand());
			s->len = (uint32_t)rand();
		}
		/* Also the very slot the consumer looks at next, in each way. */
		struct sib_ring_slot *h = &c.r.slots[c.head % SIB_INBOX_SLOTS];
		uint32_t want_turn = sib_ring_turn(c.head);
		uint64_t hs[] = { SIB_SLOT_STATE(want_turn + 7, 0), SIB_SLOT_STATE(want_turn - 3, 1),
				  SIB_SLOT_STATE(want_turn, 1) /* "claimed" by init */,
				  SIB_SLOT_STATE(want_turn + 1, 0) /* "published" garbage */ };

		atomic_store(&h->state, hs[round % 4]);
		for (uint32_t i = 0; i < 2; i++) {
			prod[i] = (struct producer){ .r = &c.r, .id = 100 + 2 * round + i, .count = want[i] };
			assert_int_equal(pthread_create(&th[i], NULL, produce, &prod[i]), 0);
		}
		consume_from(&c, 100 + 2 * round, 2, want);
		for (uint32_t i = 0; i < 2; i++)
			pthread_join(th[i], NULL);
	}
	assert_true(c.bad_slots > 0);
	assert_true(c.bad_tail > 0);
	assert_true(c.skipped > 0);
	munmap(base, SIB_RING_BYTES);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty_fifo_full_wrap),
		cmocka_unit_test(test_stalled_slot_skipped_by_age),
		cmocka_unit_test(test_publish_reports_sleeping_consumer),
		cmocka_unit_test(test_many_producers_one_consumer),
		cmocka_unit_test(test_producer_killed_at_every_step),
		cmocka_unit_test(test_producer_stopped_at_every_step),
		cmocka_unit_test(test_skipped_producer_never_corrupts),
		cmocka_unit_test(test_garbage_never_hangs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
