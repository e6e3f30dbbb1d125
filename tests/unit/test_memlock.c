/* SPDX-License-Identifier: MIT */
/*
 * Registered memory is accounted against RLIMIT_MEMLOCK as uverbs accounts
 * pinned pages (seed 003; hca/memlock.h): through the built library against
 * a private softibd, each case in a fresh child process (its own count, its
 * own limit, its own connection, so softibd reads that child's
 * capabilities) that drops CAP_IPC_LOCK unless the case keeps it.
 * Under the limit reg_mr works; past it ENOMEM; a deregistered MR gives
 * its pages back; two MRs over the same pages count them twice (the
 * kernel's pinned_vm); a child of fork starts at 0; SOFTIB_MEMLOCK=0 turns
 * the accounting off;
 * CAP_IPC_LOCK lifts the limit.
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <linux/capability.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon_fixture.h"

#define KIB 1024ul
#define LIMIT (1024 * KIB) /* RLIMIT_MEMLOCK of the children */

/* Drop CAP_IPC_LOCK from our effective set (no libcap). */
static void drop_ipc_lock(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct c[2];

	if (syscall(SYS_capget, &h, c) == 0) {
		c[CAP_IPC_LOCK / 32].effective &= ~(1u << (CAP_IPC_LOCK % 32));
		syscall(SYS_capset, &h, c);
	}
}

static bool has_ipc_lock(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct c[2];

	return syscall(SYS_capget, &h, c) == 0 &&
	       (c[CAP_IPC_LOCK / 32].effective >> (CAP_IPC_LOCK % 32)) & 1;
}

struct child {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	char *buf;                      /* 4 MiB, page-aligned */
};

/* The child's setup: limit, capability, device, PD, buffer; exits 90+ on failure. */
static void child_open(struct child *c, bool keep_cap)
{
	struct rlimit rl = { LIMIT, LIMIT };
	struct ibv_device **list;

	if (!keep_cap)
		drop_ipc_lock();
	if (setrlimit(RLIMIT_MEMLOCK, &rl))
		_exit(90);
	list = ibv_get_device_list(NULL);
	if (!list || !list[0])
		_exit(91);
	c->ctx = ibv_open_device(list[0]);
	c->pd = c->ctx ? ibv_alloc_pd(c->ctx) : NULL;
	c->buf = aligned_alloc(4096, 4096 * KIB);
	if (!c->pd || !c->buf)
		_exit(92);
}

static struct ibv_mr *reg(struct child *c, size_t off, size_t len)
{
	return ibv_reg_mr(c->pd, c->buf + off, len, IBV_ACCESS_LOCAL_WRITE);
}

/* Run fn in a child process; its exit status (0 = all checks passed). */
static int in_child(int (*fn)(void), const char *memlock_env)
{
	int st;
	pid_t pid = fork();

	if (pid == 0) {
		if (memlock_env)
			setenv("SOFTIB_MEMLOCK", memlock_env, 1);
		_exit(fn());
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

/* Up to the limit works, one page more is ENOMEM; a deregistered MR gives
 * its pages back.  Exit status: the number of the failed check. */
static int limit_child(void)
{
	struct child c;
	struct ibv_mr *a, *b, *x;

	child_open(&c, false);
	a = reg(&c, 0, 512 * KIB);
	if (!a)
		return 1;
	b = reg(&c, 512 * KIB, 512 * KIB); /* exactly the limit */
	if (!b)
		return 2;
	errno = 0;
	x = reg(&c, 1024 * KIB, 4096);
	if (x || errno != ENOMEM)
		return 3;
	if (ibv_dereg_mr(a))
		return 4;
	x = reg(&c, 1024 * KIB, 512 * KIB);
	if (!x)
		return 5;
	/* the pages an MR spans count: 512 KiB from one byte into a page is 129 */
	ibv_dereg_mr(x);
	errno = 0;
	x = reg(&c, 1024 * KIB + 1, 512 * KIB);
	if (x || errno != ENOMEM)
		return 6;
	ibv_dereg_mr(b);
	ibv_dealloc_pd(c.pd);
	ibv_close_device(c.ctx);
	return 0;
}

/* Two MRs over the same pages count them twice, as the kernel's pinned_vm. */
static int overlap_child(void)
{
	struct child c;

	child_open(&c, false);
	if (!reg(&c, 0, 768 * KIB))
		return 1;
	errno = 0;
	if (reg(&c, 0, 768 * KIB) || errno != ENOMEM)
		return 2;
	if (!reg(&c, 0, 256 * KIB))
		return 3;
	return 0;
}

/* rereg_mr to a new translation pins the new pages before the old go. */
static int rereg_child(void)
{
	struct child c;
	struct ibv_mr *a;

	child_open(&c, false);
	a = reg(&c, 0, 768 * KIB);
	if (!a)
		return 1;
	errno = 0;
	if (ibv_rereg_mr(a, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, c.buf + 1024 * KIB, 768 * KIB,
			 0) != IBV_REREG_MR_ERR_CMD || errno != ENOMEM)
		return 2;
	if (ibv_rereg_mr(a, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, c.buf + 1024 * KIB, 128 * KIB,
			 0))
		return 3;
	if (!reg(&c, 0, 896 * KIB)) /* 128 + 896 = the limit: the old 768 are back */
		return 4;
	return 0;
}

/* A child of fork starts at 0 pinned pages, as a new mm: its parent's
 * 768 KiB do not count against its own registrations. */
static int fork_child(void)
{
	struct child c;
	pid_t pid;
	int st;

	child_open(&c, false);
	if (!reg(&c, 0, 768 * KIB))
		return 1;
	pid = fork();
	if (pid == 0) {
		struct ibv_context *ctx;
		struct ibv_pd *pd;
		struct ibv_device **list = ibv_get_device_list(NULL);

		/* the parent's context is not the child's: a fresh one */
		ctx = list && list[0] ? ibv_open_device(list[0]) : NULL;
		pd = ctx ? ibv_alloc_pd(ctx) : NULL;
		_exit(pd && ibv_reg_mr(pd, c.buf, 768 * KIB, IBV_ACCESS_LOCAL_WRITE) ? 0 : 1);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return 2;
	return WEXITSTATUS(st) ? 3 : 0;
}

/* 4 MiB, four times the limit, registered at once. */
static int beyond_child(bool keep_cap)
{
	struct child c;

	child_open(&c, keep_cap);
	return reg(&c, 0, 4096 * KIB) ? 0 : 1;
}

static int off_child(void)
{
	return beyond_child(false);
}

static int cap_child(void)
{
	return beyond_child(true);
}

static int beyond_limit_child(void)
{
	return beyond_child(false) == 1 ? 0 : 1;
}

/* A case run in one child with the accounting on: the function, in a
 * struct so that cmocka can carry it as the test's state. */
struct child_case {
	int (*fn)(void);
};

static const struct child_case limit = { limit_child };
static const struct child_case overlap = { overlap_child };
static const struct child_case rereg = { rereg_child };
static const struct child_case forked = { fork_child };

static void test_child_case(void **state)
{
	const struct child_case *c = *state;

	assert_int_equal(in_child(c->fn, NULL), 0);
}

#define CHILD_TEST(c) { "test_memlock_" #c, test_child_case, NULL, NULL, (void *)&(c) }

/* On by default (no SOFTIB_MEMLOCK, or anything but 0); SOFTIB_MEMLOCK=0 turns it off. */
static void test_memlock_switch(void **state)
{
	(void)state;
	unsetenv("SOFTIB_MEMLOCK");
	assert_int_equal(in_child(beyond_limit_child, NULL), 0);
	assert_int_equal(in_child(beyond_limit_child, "1"), 0);
	assert_int_equal(in_child(off_child, "0"), 0);
}

/* CAP_IPC_LOCK lifts the limit (root in CI holds it; else skipped). */
static void test_memlock_capable(void **state)
{
	(void)state;
	if (!has_ipc_lock())
		skip();
	assert_int_equal(in_child(cap_child, NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		CHILD_TEST(limit),
		CHILD_TEST(overlap),
		CHILD_TEST(rereg),
		CHILD_TEST(forked),
		cmocka_unit_test(test_memlock_switch),
		cmocka_unit_test(test_memlock_capable),
	};

	return cmocka_run_group_tests(tests, start_daemon, stop_daemon);
}
