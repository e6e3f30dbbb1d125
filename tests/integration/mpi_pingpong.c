// SPDX-License-Identifier: MIT
/*
 * An MPI ping-pong that checks every byte, for Open MPI over pml ucx on
 * softib (tests/integration/ucx_mpi.sh).  Two ranks.
 *
 * Phase 1, ping-pong: for each size from 1 B to MAX (default 4 MiB; sizes
 * on both sides of the MTU, of powers of two and of the limits `ucx_info -d`
 * shows for softib: rc_verbs am_short 511, am_bcopy 8255, ud_verbs
 * am_short 504, am_bcopy 4088; and of the rendezvous threshold), ITERS
 * round trips: rank 0 sends a message whose every byte depends on (size,
 * iteration, direction, position), rank 1 checks it and answers with other
 * content, rank 0 checks that.  The buffers are at a different
 * misalignment each iteration, the receive buffer is larger than the
 * message and its tail, filled with a guard byte, must come back
 * untouched, and MPI_Get_count must say the size.
 *
 * Phase 2, bursts: rank 0 posts BURST non-blocking sends of mixed sizes
 * (tiny ones that go inline between larger ones, as issue 14's corruption
 * needed) with distinct tags, rank 1 receives them out of posting order
 * and checks each; then the other way.
 *
 * Prints one line per size and a total; exits 0 only when no byte was
 * wrong.  Usage: mpi_pingpong [MAX_BYTES [ITERS]].
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GUARD 0xa5
#define TAIL 64
#define MISALIGN 16
#define BURST 24

static long long wrong_bytes;
static long long wrong_msgs;
static long long checked_bytes;

/* The byte at position i of message (size, iter, dir). */
static inline uint8_t pattern(size_t size, int iter, int dir, size_t i)
{
	uint64_t x = (uint64_t)size * 0x9e3779b97f4a7c15ull ^ (uint64_t)iter * 0xbf58476d1ce4e5b9ull ^
		     (uint64_t)dir * 0x94d049bb133111ebull ^ (uint64_t)(i >> 3) * 0x2545f4914f6cdd1dull;

	x ^= x >> 29;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 32;
	return (uint8_t)(x >> ((i & 7) * 8));
}

static void fill(uint8_t *p, size_t size, int iter, int dir)
{
	for (size_t i = 0; i < size; i++)
		p[i] = pattern(size, iter, dir, i);
}

/* Check a received message and its guard tail; say where it first differs. */
static void check(const char *what, const uint8_t *p, size_t size, int iter, int dir,
		  const MPI_Status *st)
{
	long long bad = 0;
	size_t first = size;
	int count;

	for (size_t i = 0; i < size; i++) {
		if (p[i] != pattern(size, iter, dir, i)) {
			if (!bad)
				first = i;
			bad++;
		}
	}
	for (size_t i = size; i < size + TAIL; i++) {
		if (p[i] != GUARD) {
			if (!bad)
				first = i;
			bad++;
		}
	}
	MPI_Get_count(st, MPI_BYTE, &count);
	if (bad || (size_t)count != size) {
		wrong_msgs++;
		wrong_bytes += bad;
		if (wrong_msgs <= 10)
			printf("WRONG %s size %zu iter %d dir %d: %lld bytes wrong, first at %zu "
			       "(got 0x%02x want 0x%02x), count %d\n",
			       what, size, iter, dir, bad, first, first < size + TAIL ? p[first] : 0,
			       first < size ? pattern(size, iter, dir, first) : GUARD, count);
	}
	checked_bytes += (long long)size;
}

static size_t sizes[] = {
	1, 2, 3, 7, 8, 9, 31, 32, 33, 63, 64, 65, 127, 128, 129, 188, 255, 256, 257,
	500, 504, 505, 511, 512, 513, 609, 1000, 1023, 1024, 1025, 2047, 2048, 2049,
	4088, 4089, 4095, 4096, 4097, 8000, 8191, 8192, 8193, 8255, 8256, 8257, 12288,
	16383, 16384, 16385, 32767, 32768,
	32769, 65535, 65536, 65537, 131071, 131072, 131073, 262144, 524287, 1048575,
	1048576, 1048577, 2097152, 3000000, 4194303, 4194304,
};

static size_t burst_size(int k, size_t max)
{
	static const size_t mix[] = { 8, 609, 8, 4096, 1, 70000, 8, 600, 16384, 8, 1048576, 33 };
	size_t s = mix[k % (int)(sizeof(mix) / sizeof(mix[0]))];

	return s < max ? s : max;
}

/* Phase 1: ITERS checked round trips per size up to max; prints one line per size. */
static void phase_pingpong(int rank, size_t max, int iters, uint8_t *sbuf, uint8_t *rbuf)
{
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]) && sizes[k] <= max; k++) {
		size_t size = sizes[k];
		long long before = wrong_msgs;
		int n = size > 1048577 ? (iters + 1) / 2 : iters * (size <= 65537 ? 2 : 1);
		double t0 = MPI_Wtime();

		for (int it = 0; it < n; it++) {
			uint8_t *s = sbuf + (it * 5) % MISALIGN;
			uint8_t *r = rbuf + (it * 3) % MISALIGN;
			MPI_Status st;

			memset(r, GUARD, size + TAIL);
			if (rank == 0) {
				fill(s, size, it, 0);
				MPI_Send(s, (int)size, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
				MPI_Recv(r, (int)(size + TAIL), MPI_BYTE, 1, 2, MPI_COMM_WORLD, &st);
				check("pong", r, size, it, 1, &st);
			} else {
				MPI_Recv(r, (int)(size + TAIL), MPI_BYTE, 0, 1, MPI_COMM_WORLD, &st);
				check("ping", r, size, it, 0, &st);
				fill(s, size, it, 1);
				MPI_Send(s, (int)size, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
			}
		}
		/* Both ranks' counts for this size. */
		long long mine = wrong_msgs - before, all;

		MPI_Allreduce(&mine, &all, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
		if (rank == 0)
			printf("size %zu: %d round trips, %s, %.1f us per round trip\n", size, n,
			       all ? "WRONG" : "ok", (MPI_Wtime() - t0) * 1e6 / n);
	}
}

/* Phase 2: BURST mixed-size messages each way, 8 rounds, received out of posting order. */
static void phase_bursts(int rank, size_t max)
{
	for (int dir = 0; dir < 2; dir++) {
		int sender = dir, receiver = 1 - dir;
		MPI_Request req[BURST];
		MPI_Status st[BURST];
		size_t off[BURST + 1];
		uint8_t *sb, *rb;

		off[0] = 0;
		for (int k = 0; k < BURST; k++)
			off[k + 1] = off[k] + burst_size(k, max) + TAIL;
		sb = malloc(off[BURST]);
		rb = malloc(off[BURST]);
		if (!sb || !rb)
			MPI_Abort(MPI_COMM_WORLD, 2);
		for (int round = 0; round < 8; round++) {
			int it = 1000 + round;

			if (rank == sender) {
				for (int k = 0; k < BURST; k++) {
					fill(sb + off[k], burst_size(k, max), it + k, 2 + dir);
					MPI_Isend(sb + off[k], (int)burst_size(k, max), MPI_BYTE, receiver,
						  100 + k, MPI_COMM_WORLD, &req[k]);
				}
				MPI_Waitall(BURST, req, MPI_STATUSES_IGNORE);
			} else if (rank == receiver) {
				memset(rb, GUARD, off[BURST]);
				/* Posted last tag first: UCX matches by tag, not by order. */
				for (int k = BURST - 1; k >= 0; k--)
					MPI_Irecv(rb + off[k], (int)(burst_size(k, max) + TAIL), MPI_BYTE,
						  sender, 100 + k, MPI_COMM_WORLD, &req[k]);
				MPI_Waitall(BURST, req, st);
				for (int k = 0; k < BURST; k++)
					check("burst", rb + off[k], burst_size(k, max), it + k, 2 + dir, &st[k]);
			}
			MPI_Barrier(MPI_COMM_WORLD);
		}
		free(sb);
		free(rb);
	}
}

int main(int argc, char **argv)
{
	size_t max = 4194304;
	int iters = 4, rank, nranks;
	uint8_t *sbuf, *rbuf;
	long long tot_wrong_bytes, tot_wrong_msgs, tot_checked;

	setvbuf(stdout, NULL, _IOLBF, 0); /* every line out before a hang's kill */
	MPI_Init(&argc, &argv);
	if (argc > 1)
		max = strtoull(argv[1], NULL, 0);
	if (argc > 2)
		iters = atoi(argv[2]);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	if (nranks != 2) {
		if (rank == 0)
			fprintf(stderr, "mpi_pingpong: run with 2 ranks, not %d\n", nranks);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	sbuf = malloc(max + TAIL + MISALIGN);
	rbuf = malloc(max + TAIL + MISALIGN);
	if (!sbuf || !rbuf)
		MPI_Abort(MPI_COMM_WORLD, 2);

	phase_pingpong(rank, max, iters, sbuf, rbuf);
	phase_bursts(rank, max);

	MPI_Reduce(&wrong_bytes, &tot_wrong_bytes, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
	MPI_Reduce(&wrong_msgs, &tot_wrong_msgs, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
	MPI_Reduce(&checked_bytes, &tot_checked, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
	if (rank == 0)
		printf("mpi_pingpong: %lld bytes checked, %lld wrong messages, %lld wrong bytes\n",
		       tot_checked, tot_wrong_msgs, tot_wrong_bytes);
	free(sbuf);
	free(rbuf);
	MPI_Bcast(&tot_wrong_msgs, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
	MPI_Finalize();
	return tot_wrong_msgs ? 1 : 0;
}
