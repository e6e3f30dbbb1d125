// SPDX-License-Identifier: MIT
/*
 * An MPI ping-pong timer for bench/ucx_mpi.sh (a benchmark, never a test):
 * two ranks; ITERS round trips of SIZE bytes after 10% warm-up, rank 0
 * prints "size=SIZE lat_us=L bw_MBps=B" with L the one-way time of a
 * round trip's half in microseconds and B = SIZE / L (MB = 10^6 bytes).
 * Usage: mpi_lat_bw SIZE ITERS.  The data is not checked here
 * (tests/integration/mpi_pingpong.c checks it).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	long size = 0, iters = 0, warm;
	int rank, nranks;
	double t0 = 0;
	char *buf;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	if (argc == 3) {
		size = atol(argv[1]);
		iters = atol(argv[2]);
	}
	if (nranks != 2 || size < 0 || iters < 1) {
		if (!rank)
			fprintf(stderr, "usage: mpirun -np 2 mpi_lat_bw SIZE ITERS\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	if (!(buf = calloc(1, size ? (size_t)size : 1)))
		MPI_Abort(MPI_COMM_WORLD, 1);
	warm = iters / 10;
	for (long i = 0; i < warm + iters; i++) {
		if (i == warm) {
			MPI_Barrier(MPI_COMM_WORLD);
			t0 = MPI_Wtime();
		}
		if (rank == 0) {
			MPI_Send(buf, (int)size, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
			MPI_Recv(buf, (int)size, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(buf, (int)size, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			MPI_Send(buf, (int)size, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
		}
	}
	if (rank == 0) {
		double us = (MPI_Wtime() - t0) * 1e6 / (double)iters / 2;

		printf("size=%ld lat_us=%.2f bw_MBps=%.1f\n", size, us, us > 0 ? (double)size / us : 0);
	}
	free(buf);
	MPI_Finalize();
	return 0;
}
