/* SPDX-License-Identifier: MIT */
/*
 * Cache-line round trip between two threads: the floor under any
 * shared-memory ping-pong, and a gauge of where the host placed this VM's
 * CPUs (on the development VM it is either about 60 ns or about 330 ns,
 * in streaks of seconds).  Prints ns per round trip.
 * Usage: cacheline_rtt [ROUNDS]
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static _Atomic int flag;
static long rounds = 2000000;

static void *echo(void *arg)
{
	for (long i = 0; i < rounds; i++) {
		while (atomic_load_explicit(&flag, memory_order_acquire) != 1)
			;
		atomic_store_explicit(&flag, 0, memory_order_release);
	}
	return arg;
}

int main(int argc, char **argv)
{
	struct timespec a, b;
	pthread_t t;

	if (argc > 1)
		rounds = atol(argv[1]);
	if (rounds <= 0 || pthread_create(&t, NULL, echo, NULL))
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < rounds; i++) {
		atomic_store_explicit(&flag, 1, memory_order_release);
		while (atomic_load_explicit(&flag, memory_order_acquire) != 0)
			;
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	pthread_join(t, NULL);
	printf("%.1f ns per round trip\n",
	       ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / (double)rounds);
	return 0;
}
