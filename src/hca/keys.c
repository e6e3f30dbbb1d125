/* SPDX-License-Identifier: MIT */
/*
 * Key bytes of L_Keys and R_Keys (key = MR index << 8 | key byte, as
 * rxe, STYLE 6.8; the index finds the MR, the byte must match).  They
 * must be unpredictable (DESIGN principle 6): a per-context counter and
 * secret, both from getrandom(2), through the splitmix64 finalizer, so
 * registering an MR costs no system call.  Lock-free: reg_mr runs on any
 * thread (the counter is one atomic add).
 */
#include <errno.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "hca/hca.h"

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

int sib_key_seed(struct sib_context *ctx)
{
	uint64_t seed[2];
	ssize_t n;
	int rc = 0;

	do
		n = getrandom(seed, sizeof(seed), 0);
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof(seed)) {
		/* No getrandom (very old kernel, seccomp): keys stay distinct
		 * per process and per time, but are guessable; say so. */
		struct timespec ts;
		uint64_t x;

		rc = n < 0 ? errno : EIO;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		x = (uint64_t)ts.tv_nsec ^ (uint64_t)ts.tv_sec << 32 ^ (uint64_t)getpid() << 16 ^
		    (uint64_t)(uintptr_t)ctx;
		seed[0] = splitmix64(&x);
		seed[1] = splitmix64(&x);
	}
	atomic_store_explicit(&ctx->key_ctr, seed[0], memory_order_relaxed);
	ctx->key_secret = seed[1];
	return rc;
}

uint8_t sib_key_byte(struct sib_context *ctx)
{
	uint64_t x = atomic_fetch_add_explicit(&ctx->key_ctr, 1, memory_order_relaxed) ^ ctx->key_secret;

	return (uint8_t)(splitmix64(&x) >> 56);
}
