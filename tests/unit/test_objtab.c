/* SPDX-License-Identifier: MIT */
/*
 * The object table protocol (src/common/objtab.c): reserve/publish/abort,
 * stale handles fail after destroy and after the slot is reused, destroy
 * waits for a held reference (and gives up at its bound), and a stress run
 * of N threads destroying and re-creating while M threads look up: no
 * lookup ever sees an object after its destroy returned (the objects are
 * poisoned, then freed: the ASan build turns a late use into a crash).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/objtab.h"

#define ALIVE 0xa11fe00du
#define DEAD  0xdeadbeefu

struct obj {
	_Atomic uint32_t magic;
	uint32_t index;
};

static void test_publish_protocol(void **state)
{
	struct sib_objtab t;
	struct obj a = { ALIVE, 0 }, b = { ALIVE, 0 };
	uint64_t h, h2, h3, seen;

	assert_int_equal(sib_objtab_init(&t, "t", 1, 8), 0);
	assert_int_equal(sib_objtab_reserve(&t, &h), 0);
	assert_int_equal(SIB_OBJTAB_INDEX(h), 1);       /* min is honoured */
	assert_null(sib_objtab_get(&t, h));             /* reserved: invisible */
	assert_null(sib_objtab_get_index(&t, 1, NULL));
	sib_objtab_publish(&t, h, &a);
	assert_ptr_equal(sib_objtab_get(&t, h), &a);
	sib_objtab_put(&t, h);
	assert_ptr_equal(sib_objtab_get_index(&t, 1, &seen), &a);
	assert_true(seen == h);
	sib_objtab_put(&t, seen);
	/* A handle of another generation fails. */
	assert_null(sib_objtab_get(&t, h + (2ull << 32)));

	/* Destroy: the handle goes stale, a second destroy says ENOENT. */
	assert_int_equal(sib_objtab_destroy(&t, h, 1000000000ull), 0);
	assert_null(sib_objtab_get(&t, h));
	assert_null(sib_objtab_get_index(&t, 1, NULL));
	assert_int_equal(sib_objtab_destroy(&t, h, 1000000000ull), ENOENT);

	/* Cyclic: the freed index is not the next one handed out. */
	assert_int_equal(sib_objtab_reserve(&t, &h2), 0);
	assert_int_equal(SIB_OBJTAB_INDEX(h2), 2);
	sib_objtab_abort(&t, h2);
	assert_null(sib_objtab_get(&t, h2));

	/* reserve_at, EEXIST, and a stale handle against a reused slot. */
	assert_int_equal(sib_objtab_reserve_at(&t, 1, &h3), 0);
	assert_int_equal(SIB_OBJTAB_INDEX(h3), 1);
	assert_int_not_equal(SIB_OBJTAB_GEN(h3), SIB_OBJTAB_GEN(h));
	assert_int_equal(sib_objtab_reserve_at(&t, 1, &h2), EEXIST);
	assert_int_equal(sib_objtab_reserve_at(&t, 8, &h2), EINVAL);
	sib_objtab_publish(&t, h3, &b);
	assert_null(sib_objtab_get(&t, h));             /* old generation */
	assert_ptr_equal(sib_objtab_get(&t, h3), &b);
	sib_objtab_put(&t, h3);
	assert_int_equal(sib_objtab_destroy(&t, h, 1000000000ull), ENOENT);
	assert_int_equal(sib_objtab_destroy(&t, h3, 1000000000ull), 0);
	sib_objtab_fini(&t);
}

static void test_full_and_next(void **state)
{
	struct sib_objtab t;
	struct obj o[4];
	uint64_t h[4], x;
	uint32_t i = 0, n = 0;

	assert_int_equal(sib_objtab_init(&t, "t", 0, 4), 0);
	for (int k = 0; k < 4; k++) {
		assert_int_equal(sib_objtab_reserve(&t, &h[k]), 0);
		if (k != 2)
			sib_objtab_publish(&t, h[k], &o[k]);
	}
	assert_int_equal(sib_objtab_reserve(&t, &x), ENOSPC);
	/* next() visits published objects only, in index order. */
	for (struct obj *p; (p = sib_objtab_next(&t, &i)); i++, n++) {
		assert_ptr_equal(p, &o[i]);
		assert_int_not_equal(i, 2);
		sib_objtab_put(&t, i);
	}
	assert_int_equal(n, 3);
	sib_objtab_abort(&t, h[2]);
	for (int k = 0; k < 4; k++)
		if (k != 2)
			assert_int_equal(sib_objtab_destroy(&t, h[k], 1000000000ull), 0);
	sib_objtab_fini(&t);
}

struct holder {
	struct sib_objtab *t;
	uint64_t h;
	_Atomic int released;
};

static void *hold_then_put(void *arg)
{
	struct holder *hd = arg;

	usleep(100000);
	atomic_store(&hd->released, 1);
	sib_objtab_put(hd->t, hd->h);
	return NULL;
}

static void test_destroy_waits(void **state)
{
	struct sib_objtab t;
	struct obj a = { ALIVE, 0 };
	struct holder hd = { &t, 0, 0 };
	pthread_t th;

	assert_int_equal(sib_objtab_init(&t, "t", 0, 4), 0);
	assert_int_equal(sib_objtab_reserve(&t, &hd.h), 0);
	sib_objtab_publish(&t, hd.h, &a);
	assert_non_null(sib_objtab_get(&t, hd.h));
	/* Held: a short bound gives up, and the object stays out of reach. */
	assert_int_equal(sib_objtab_destroy(&t, hd.h, 1000000ull), ETIMEDOUT);
	assert_null(sib_objtab_get(&t, hd.h));
	sib_objtab_put(&t, hd.h);
	sib_objtab_fini(&t);

	/* Held for 100 ms: destroy returns only after the put. */
	assert_int_equal(sib_objtab_init(&t, "t", 0, 4), 0);
	assert_int_equal(sib_objtab_reserve(&t, &hd.h), 0);
	sib_objtab_publish(&t, hd.h, &a);
	assert_non_null(sib_objtab_get(&t, hd.h));
	assert_int_equal(pthread_create(&th, NULL, hold_then_put, &hd), 0);
	assert_int_equal(sib_objtab_destroy(&t, hd.h, 5000000000ull), 0);
	assert_int_equal(atomic_load(&hd.released), 1);
	pthread_join(th, NULL);
	sib_objtab_fini(&t);
}

/* hold: a second reference on a held object, taken even after unpublish
 * (where get fails), counts until put like any other. */
static void test_hold(void **state)
{
	struct sib_objtab t;
	struct obj a = { ALIVE, 0 };
	uint64_t h;

	(void)state;
	assert_int_equal(sib_objtab_init(&t, "t", 0, 4), 0);
	assert_int_equal(sib_objtab_reserve(&t, &h), 0);
	sib_objtab_publish(&t, h, &a);
	assert_non_null(sib_objtab_get(&t, h));
	assert_int_equal(sib_objtab_unpublish(&t, h), 0);
	assert_null(sib_objtab_get(&t, h));
	sib_objtab_hold(&t, h);
	sib_objtab_put(&t, h);
	assert_int_equal(sib_objtab_wait(&t, h, 1000000ull, NULL, NULL), ETIMEDOUT);
	sib_objtab_put(&t, h);
	assert_int_equal(sib_objtab_wait(&t, h, 1000000ull, NULL, NULL), 0);
	sib_objtab_release(&t, h);
	sib_objtab_fini(&t);
}

/* A holder that keeps a reference across operations and lets go when it
 * sees the generation move: the poke of a wait plays its next pass. */
struct keeper {
	struct sib_objtab *t;
	uint64_t h;
	bool held;
	int pokes;
};

static void keeper_poke(void *arg)
{
	struct keeper *k = arg;

	k->pokes++;
	if (k->held && !sib_objtab_live(k->t, k->h)) {
		k->held = false;
		sib_objtab_put(k->t, k->h);
	}
}

static void test_unpublish_wait_republish(void **state)
{
	struct sib_objtab t;
	struct obj a = { ALIVE, 0 };
	struct keeper k = { &t, 0, true, 0 };
	uint64_t h, h2, other;

	(void)state;
	assert_int_equal(sib_objtab_init(&t, "t", 0, 4), 0);
	assert_int_equal(sib_objtab_reserve(&t, &h), 0);
	sib_objtab_publish(&t, h, &a);
	assert_true(sib_objtab_live(&t, h));
	assert_ptr_equal(sib_objtab_get(&t, h), &a);    /* the keeper's reference */
	k.h = h;
	assert_int_equal(sib_objtab_unpublish(&t, h), 0);
	assert_false(sib_objtab_live(&t, h));
	assert_null(sib_objtab_get_index(&t, SIB_OBJTAB_INDEX(h), NULL));
	assert_int_equal(sib_objtab_unpublish(&t, h), ENOENT);
	/* Without a poke the keeper never looks: the bound ends the wait. */
	assert_int_equal(sib_objtab_wait(&t, h, 1000000ull, NULL, NULL), ETIMEDOUT);
	assert_true(k.held);
	/* With one, the keeper notices and lets go. */
	assert_int_equal(sib_objtab_wait(&t, h, 1000000000ull, keeper_poke, &k), 0);
	assert_false(k.held);
	assert_true(k.pokes > 0);
	/* The slot is still busy (not released): nobody can take it. */
	assert_int_equal(sib_objtab_reserve_at(&t, SIB_OBJTAB_INDEX(h), &other), EEXIST);
	/* Published again at the same index, under a new generation. */
	sib_objtab_republish(&t, h, &a, &h2);
	assert_int_equal(SIB_OBJTAB_INDEX(h2), SIB_OBJTAB_INDEX(h));
	assert_int_not_equal(SIB_OBJTAB_GEN(h2), SIB_OBJTAB_GEN(h));
	assert_false(sib_objtab_live(&t, h));
	assert_true(sib_objtab_live(&t, h2));
	assert_null(sib_objtab_get(&t, h));
	assert_ptr_equal(sib_objtab_get(&t, h2), &a);
	sib_objtab_put(&t, h2);
	assert_ptr_equal(sib_objtab_get_index(&t, SIB_OBJTAB_INDEX(h), &other), &a);
	assert_int_equal(other, h2);
	sib_objtab_put(&t, other);
	/* And destroyed by its new name only. */
	assert_int_equal(sib_objtab_destroy(&t, h, 1000000ull), ENOENT);
	assert_int_equal(sib_objtab_destroy(&t, h2, 1000000ull), 0);
	assert_int_equal(sib_objtab_reserve_at(&t, SIB_OBJTAB_INDEX(h), &other), 0);
	sib_objtab_abort(&t, other);
	sib_objtab_fini(&t);
}

/* ---- stress: N destroyers, M lookers ---- */

#define SLOTS      64
#define DESTROYERS 4
#define LOOKERS    4
#define ROUNDS     4000          /* per destroyer */
#define MIN_LOOKUPS 1000         /* successful lookups that must overlap the destroyers */

static struct sib_objtab stress_tab;
static _Atomic int stop_lookers;
static _Atomic uint64_t lookups_ok, bad_seen;

static void *destroyer(void *arg)
{
	unsigned int seed = (unsigned int)(uintptr_t)arg;

	/* ROUNDS each, and on until the lookers have really raced us: on a
	 * loaded 2-core machine they may not have run at all yet (bounded). */
	for (int r = 0; r < ROUNDS || (atomic_load(&lookups_ok) < MIN_LOOKUPS && r < 100 * ROUNDS);
	     r++) {
		uint32_t index = (uint32_t)rand_r(&seed) % SLOTS; /* shared: destroyers race */

		if (r >= ROUNDS)
			sched_yield();
		uint64_t h;
		struct obj *o = sib_objtab_get_index(&stress_tab, index, &h);

		if (o) {
			sib_objtab_put(&stress_tab, h);
			if (sib_objtab_destroy(&stress_tab, h, 5000000000ull) == 0) {
				atomic_store(&o->magic, DEAD);
				free(o);
			}
			continue;
		}
		if (sib_objtab_reserve_at(&stress_tab, index, &h) != 0)
			continue;
		o = malloc(sizeof(*o));
		assert_non_null(o);
		o->index = index;
		atomic_store(&o->magic, ALIVE);
		if (rand_r(&seed) % 8 == 0) {
			sib_objtab_abort(&stress_tab, h);
			free(o);
		} else {
			sib_objtab_publish(&stress_tab, h, o);
		}
	}
	return NULL;
}

static void *looker(void *arg)
{
	unsigned int seed = (unsigned int)(uintptr_t)arg;

	while (!atomic_load(&stop_lookers)) {
		uint32_t index = (uint32_t)rand_r(&seed) % SLOTS;
		uint64_t h;
		struct obj *o = sib_objtab_get_index(&stress_tab, index, &h);

		if (!o)
			continue;
		/* While we hold the reference the object must stay alive. */
		for (int k = 0; k < 16; k++)
			if (atomic_load(&o->magic) != ALIVE || o->index != index)
				atomic_fetch_add(&bad_seen, 1);
		atomic_fetch_add(&lookups_ok, 1);
		sib_objtab_put(&stress_tab, h);
	}
	return NULL;
}

static void test_stress_destroy_vs_lookup(void **state)
{
	pthread_t d[DESTROYERS], l[LOOKERS];
	uint32_t i = 0;
	struct obj *o;

	assert_int_equal(sib_objtab_init(&stress_tab, "stress", 0, SLOTS), 0);
	for (uintptr_t k = 0; k < LOOKERS; k++)
		assert_int_equal(pthread_create(&l[k], NULL, looker, (void *)(k + 100)), 0);
	for (uintptr_t k = 0; k < DESTROYERS; k++)
		assert_int_equal(pthread_create(&d[k], NULL, destroyer, (void *)k), 0);
	for (int k = 0; k < DESTROYERS; k++)
		pthread_join(d[k], NULL);
	atomic_store(&stop_lookers, 1);
	for (int k = 0; k < LOOKERS; k++)
		pthread_join(l[k], NULL);
	assert_int_equal(atomic_load(&bad_seen), 0);
	assert_true(atomic_load(&lookups_ok) > 0);
	/* Whatever is left is published, with exactly the table's reference. */
	while ((o = sib_objtab_next(&stress_tab, &i))) {
		uint64_t h;

		assert_ptr_equal(sib_objtab_get_index(&stress_tab, i, &h), o);
		sib_objtab_put(&stress_tab, h);
		sib_objtab_put(&stress_tab, i);
		assert_int_equal(sib_objtab_destroy(&stress_tab, h, 1000000ull), 0);
		free(o);
		i++;
	}
	sib_objtab_fini(&stress_tab);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_publish_protocol),
		cmocka_unit_test(test_full_and_next),
		cmocka_unit_test(test_destroy_waits),
		cmocka_unit_test(test_hold),
		cmocka_unit_test(test_unpublish_wait_republish),
		cmocka_unit_test(test_stress_destroy_vs_lookup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
