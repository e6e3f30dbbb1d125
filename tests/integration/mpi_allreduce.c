/* SPDX-License-Identifier: MIT */
/*
 * An MPI collective that checks its data, for Open MPI over softib
 * (tests/integration/mpi_collective.sh): MPI_Allreduce of int64 vectors
 * from 1 element to 1 Mi elements (8 MiB), with MPI_SUM, MPI_MAX and
 * MPI_BXOR, into a separate buffer and MPI_IN_PLACE, a different pattern
 * each iteration; every element of the result is compared with what the
 * operation must give (computed locally from every rank's pattern), and a
 * guard tail after the result must stay untouched.  Then MPI_Bcast and
 * MPI_Alltoall of checked bytes.  Rank 0 prints one total line:
 *   mpi_allreduce: N ranks, M elements checked, 0 wrong
 * and the exit status is 1 if anything was wrong.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TAIL  8
#define GUARD 0x5a5a5a5a5a5a5a5aLL

/* Rank r's element i in iteration it. */
static int64_t val(int r, size_t i, int it)
{
	uint64_t x = (uint64_t)r * 0x9e3779b97f4a7c15ull ^ (uint64_t)i * 0xbf58476d1ce4e5b9ull ^
		     (uint64_t)it * 0x94d049bb133111ebull;

	x ^= x >> 31;
	x *= 0xd6e8feb86659fd93ull;
	x ^= x >> 29;
	return (int64_t)(x >> 20); /* small enough that a sum of ranks never overflows */
}

static int64_t want(MPI_Op op, int nranks, size_t i, int it)
{
	int64_t w = val(0, i, it);

	for (int r = 1; r < nranks; r++) {
		int64_t v = val(r, i, it);

		if (op == MPI_SUM)
			w += v;
		else if (op == MPI_MAX)
			w = v > w ? v : w;
		else
			w ^= v;
	}
	return w;
}

static long long checked, wrong;

static void check(const char *what, const int64_t *p, size_t n, MPI_Op op, int nranks, int it,
		  int rank)
{
	long long bad = 0;
	size_t first = n;

	for (size_t i = 0; i < n; i++)
		if (p[i] != want(op, nranks, i, it)) {
			if (!bad)
				first = i;
			bad++;
		}
	for (size_t i = n; i < n + TAIL; i++)
		if (p[i] != GUARD) {
			if (!bad)
				first = i;
			bad++;
		}
	if (bad && wrong < 10)
		printf("WRONG rank %d %s n %zu iter %d: %lld elements wrong, first at %zu\n", rank, what,
		       n, it, bad, first);
	wrong += bad;
	checked += (long long)n;
}

static void phase_allreduce(int rank, int nranks, int64_t *in, int64_t *out)
{
	static const size_t counts[] = { 1, 2, 7, 64, 511, 512, 513, 1000, 4096, 8191, 65536,
					 131073, 1048576 };
	MPI_Op ops[] = { MPI_SUM, MPI_MAX, MPI_BXOR };
	const char *names[] = { "sum", "max", "bxor" };
	int it = 0;

	for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
		size_t n = counts[c];

		for (int o = 0; o < 3; o++) {
			for (int inplace = 0; inplace < 2; inplace++, it++) {
				int64_t *res = inplace ? in : out;

				for (size_t i = 0; i < n; i++)
					in[i] = val(rank, i, it);
				for (size_t i = n; i < n + TAIL; i++)
					in[i] = out[i] = GUARD;
				MPI_Allreduce(inplace ? MPI_IN_PLACE : in, res, (int)n, MPI_INT64_T,
					      ops[o], MPI_COMM_WORLD);
				check(names[o], res, n, ops[o], nranks, it, rank);
			}
		}
	}
}

/* MPI_Bcast from each root and MPI_Alltoall, byte patterns checked. */
static void phase_bcast_alltoall(int rank, int nranks)
{
	size_t n = 300000, per = 70001;
	uint8_t *b = malloc(n), *s = malloc(per * (size_t)nranks), *r = malloc(per * (size_t)nranks);

	if (!b || !s || !r)
		MPI_Abort(MPI_COMM_WORLD, 2);
	for (int root = 0; root < nranks; root++) {
		for (size_t i = 0; i < n; i++)
			b[i] = rank == root ? (uint8_t)(i * 13 + (size_t)root * 7 + 1) : 0;
		MPI_Bcast(b, (int)n, MPI_BYTE, root, MPI_COMM_WORLD);
		for (size_t i = 0; i < n; i++)
			if (b[i] != (uint8_t)(i * 13 + (size_t)root * 7 + 1)) {
				if (wrong < 10)
					printf("WRONG rank %d bcast root %d at %zu\n", rank, root, i);
				wrong++;
			}
		checked += (long long)n;
	}
	for (int d = 0; d < nranks; d++)
		for (size_t i = 0; i < per; i++)
			s[(size_t)d * per + i] = (uint8_t)(rank * 31 + d * 17 + (int)(i % 251));
	memset(r, 0, per * (size_t)nranks);
	MPI_Alltoall(s, (int)per, MPI_BYTE, r, (int)per, MPI_BYTE, MPI_COMM_WORLD);
	for (int from = 0; from < nranks; from++)
		for (size_t i = 0; i < per; i++)
			if (r[(size_t)from * per + i] != (uint8_t)(from * 31 + rank * 17 + (int)(i % 251))) {
				if (wrong < 10)
					printf("WRONG rank %d alltoall from %d at %zu\n", rank, from, i);
				wrong++;
			}
	checked += (long long)(per * (size_t)nranks);
	free(b);
	free(s);
	free(r);
}

int main(int argc, char **argv)
{
	int rank, nranks;
	long long tot_checked = 0, tot_wrong = 0;
	size_t max = 1048576;
	int64_t *in, *out;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	in = malloc((max + TAIL) * sizeof(*in));
	out = malloc((max + TAIL) * sizeof(*out));
	if (!in || !out)
		MPI_Abort(MPI_COMM_WORLD, 2);
	phase_allreduce(rank, nranks, in, out);
	phase_bcast_alltoall(rank, nranks);
	MPI_Reduce(&checked, &tot_checked, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
	MPI_Reduce(&wrong, &tot_wrong, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
	if (rank == 0)
		printf("mpi_allreduce: %d ranks, %lld elements checked, %lld wrong\n", nranks,
		       tot_checked, tot_wrong);
	free(in);
	free(out);
	MPI_Finalize();
	return wrong ? 1 : 0;
}
