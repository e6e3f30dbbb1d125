/* SPDX-License-Identifier: MIT */
/*
 * Key bytes of L_Keys and R_Keys (key = MR index << 8 | key byte, as
 * rxe, STYLE 6.8; the index finds the MR, the byte must match).  They
 * must be unpredictable (DESIGN principle 6): a per-context xoroshiro128+
 * generator seeded from getrandom(2), so registering an MR costs no
 * system call.  Callers hold ctx->obj_lock.
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
	if (!seed[0] && !seed[1])
		seed[1] = 1; /* the one state the generator cannot leave */
	ctx->key_rng[0] = seed[0];
	ctx->key_rng[1] = seed[1];
	return rc;
}

uint8_t sib_key_byte(struct sib_context *ctx)
{
	/* xoroshiro128+ (Blackman, Vigna): the high bits are the good ones. */
	uint64_t s0 = ctx->key_rng[0], s1 = ctx->key_rng[1], r = s0 + s1;

	s1 ^= s0;
	ctx->key_rng[0] = ((s0 << 24) | (s0 >> 40)) ^ s1 ^ (s1 << 16);
	ctx->key_rng[1] = (s1 << 37) | (s1 >> 27);
	return (uint8_t)(r >> 56);
}
