/* SPDX-License-Identifier: MIT */
/*
 * Single-thread memcpy bandwidth at a given size: the ceiling a software
 * HCA that copies each byte has to live under.  Prints Mbit/s, the unit
 * ibv_rc_pingpong reports.  Usage: memcpy_bw [BYTES] [SECONDS]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	size_t size = argc > 1 ? strtoull(argv[1], NULL, 0) : 65536;
	double secs = argc > 2 ? atof(argv[2]) : 1.0;
	uint8_t *src = aligned_alloc(4096, size), *dst = aligned_alloc(4096, size);
	uint64_t iters = 0;
	double start, elapsed;

	if (!src || !dst || size == 0)
		return 1;
	memset(src, 0x5a, size);
	memset(dst, 0, size);
	start = now();
	do {
		for (int i = 0; i < 256; i++) {
			memcpy(dst, src, size);
			/* keep the copy from being optimized away */
			__asm__ volatile("" : : "r"(dst) : "memory");
		}
		iters += 256;
		elapsed = now() - start;
	} while (elapsed < secs);
	printf("%zu bytes x %llu copies in %.2f seconds = %.2f Mbit/sec\n", size,
	       (unsigned long long)iters, elapsed, (double)size * (double)iters * 8 / elapsed / 1e6);
	free(src);
	free(dst);
	return 0;
}
