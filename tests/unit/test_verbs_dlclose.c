/* SPDX-License-Identifier: MIT */
/*
 * libibverbs.so.1 loaded with dlopen() and closed with dlclose() while a
 * device context is still open, found by Open MPI's btl openib (its
 * component, and with it libibverbs, is unloaded at MPI_Finalize; with
 * per-peer QPs only a context was still open then).  rdma-core's library
 * runs no thread of its own, so unloading it is harmless; softib's runs
 * an engine thread per context (and an event reader), whose code went
 * with the mapping: the thread's next instruction after a futex wait was
 * unmapped (SIGSEGV at exit under ASan).  Fixed: the library is linked
 * -z nodelete, so dlclose leaves it mapped (as glibc does for such
 * objects) and its threads keep running until exit.
 *
 * Through the verbs API alone, resolved with dlsym from the built library
 * (LIBIBVERBS_PATH): open a context on softib0, run traffic-free for a
 * moment so that its engine thread naps, dlclose, check with RTLD_NOLOAD
 * that the library is still mapped, then let the engine thread run (and
 * wake from its naps) for a while.  Not linked against libibverbs.
 */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <infiniband/verbs.h>

#include "daemon_fixture.h"

static void nap_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static void test_dlclose_with_open_context(void **st)
{
	(void)st;
	void *h = dlopen(LIBIBVERBS_PATH, RTLD_NOW | RTLD_LOCAL);
	struct ibv_device **(*get_list)(int *);
	struct ibv_context *(*open_dev)(struct ibv_device *);
	const char *(*dev_name)(struct ibv_device *);
	struct ibv_pd *(*alloc_pd)(struct ibv_context *);
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	int n = 0;

	assert_non_null(h);
	*(void **)&get_list = dlsym(h, "ibv_get_device_list");
	*(void **)&open_dev = dlsym(h, "ibv_open_device");
	*(void **)&dev_name = dlsym(h, "ibv_get_device_name");
	*(void **)&alloc_pd = dlsym(h, "ibv_alloc_pd");
	assert_true(get_list && open_dev && dev_name && alloc_pd);
	list = get_list(&n);
	assert_non_null(list);
	for (int i = 0; i < n && !ctx; i++)
		if (!strcmp(dev_name(list[i]), "softib0"))
			ctx = open_dev(list[i]);
	assert_non_null(ctx); /* its engine thread runs from now on */
	assert_non_null(alloc_pd(ctx));
	nap_ms(50);
	/* The application forgets the context and unloads the library (the
	 * device list is not freed either: its memory is the library's). */
	assert_int_equal(dlclose(h), 0);
	assert_non_null(dlopen(LIBIBVERBS_PATH, RTLD_NOW | RTLD_NOLOAD));
	/* the engine thread keeps running its (still mapped) code */
	nap_ms(300);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dlclose_with_open_context),
	};

	return cmocka_run_group_tests(tests, start_daemon, stop_daemon);
}
