// SPDX-License-Identifier: MIT
/*
 * RLIMIT_MEMLOCK accounting of registered memory (memlock.h), the rule of
 * the kernel's ib_umem_get: add the MR's pages to the process's pinned
 * count; if the sum passes RLIMIT_MEMLOCK (in pages) and the process lacks
 * CAP_IPC_LOCK, take them back and fail with ENOMEM.  The limit is read at
 * every registration (setrlimit takes effect at once, as in the kernel);
 * the capability is asked only past the limit, as the kernel asks
 * capable() only then.  A child of fork starts at 0, as a new mm's
 * pinned_vm does; what it gives back of its parent's MRs stops at 0.
 * Thread-safe: one atomic counter.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "hca/hca.h"
#include "hca/memlock.h"

#define CAP_IPC_LOCK_BIT 14 /* linux/capability.h */

static _Atomic uint64_t pinned;  /* pages, this process */
static atomic_int enabled = -1;  /* -1: SOFTIB_MEMLOCK not read yet */
static atomic_bool warned;

static void fork_child(void)
{
	atomic_store(&pinned, 0);
}

static bool memlock_on(void)
{
	int on = atomic_load_explicit(&enabled, memory_order_acquire), was = -1;
	const char *env;

	if (on < 0) {
		env = getenv("SOFTIB_MEMLOCK");
		on = !(env && !strcmp(env, "0"));
		if (atomic_compare_exchange_strong(&enabled, &was, on) && on)
			pthread_atfork(NULL, NULL, fork_child);
		on = atomic_load(&enabled);
	}
	return on;
}

/* Pages spanned by [addr, addr + length), as ib_umem_num_pages. */
static uint64_t span_pages(const void *addr, size_t length)
{
	uint64_t ps = (uint64_t)sysconf(_SC_PAGESIZE), a = (uintptr_t)addr;
	uint64_t first = a / ps, last = (a + length + ps - 1) / ps;

	return last - first;
}

/* CAP_IPC_LOCK as softibd reads it (the host's capable hook), else, on a
 * host without one (tests), our own effective set from /proc. */
static bool ipc_lock_capable(void)
{
	unsigned long long eff = 0;
	char line[128];
	FILE *f;

	if (sib_host && sib_host->capable)
		return sib_host->capable(CAP_IPC_LOCK_BIT) == 0;
	f = fopen("/proc/self/status", "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &eff) == 1)
			break;
	fclose(f);
	return (eff >> CAP_IPC_LOCK_BIT) & 1;
}

static void warn_once(uint64_t want, uint64_t limit)
{
	if (atomic_exchange(&warned, true))
		return;
	fprintf(stderr, "libibverbs: Warning: softib: ibv_reg_mr: registered memory would reach %llu "
		"KiB, over RLIMIT_MEMLOCK (%llu KiB, the kernel's limit on pinned pages); raise it "
		"with `ulimit -l` (docker run --ulimit memlock=-1), or set SOFTIB_MEMLOCK=0 to "
		"turn softib's accounting off\n",
		(unsigned long long)(want * (uint64_t)sysconf(_SC_PAGESIZE) / 1024),
		(unsigned long long)(limit * (uint64_t)sysconf(_SC_PAGESIZE) / 1024));
}

int sib_memlock_pin(const void *addr, size_t length)
{
	uint64_t n, now, limit;
	struct rlimit rl;

	if (!memlock_on())
		return 0;
	n = span_pages(addr, length);
	now = atomic_fetch_add(&pinned, n) + n;
	if (getrlimit(RLIMIT_MEMLOCK, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return 0;
	limit = rl.rlim_cur / (uint64_t)sysconf(_SC_PAGESIZE);
	if (now <= limit || ipc_lock_capable())
		return 0;
	atomic_fetch_sub(&pinned, n);
	warn_once(now, limit);
	return ENOMEM;
}

void sib_memlock_unpin(const void *addr, size_t length)
{
	uint64_t n, was;

	if (!memlock_on())
		return;
	n = span_pages(addr, length);
	was = atomic_load(&pinned);
	while (!atomic_compare_exchange_weak(&pinned, &was, was > n ? was - n : 0))
		;
}

uint64_t sib_memlock_pinned(void)
{
	return atomic_load(&pinned);
}
