#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""mpi4py (Debian python3-mpi4py) ping-pong that checks every byte: the
Python side of mpi_pingpong.c, run the same way by ucx_mpi.sh.

For each size from 1 B to MAX (default 4 MiB), ITERS round trips: rank 0
sends bytes seeded by (size, iteration, direction) into a larger buffer
whose tail must stay untouched, rank 1 checks them and answers with other
bytes; then both ranks exchange a burst of mixed sizes with Isend/Irecv
(received last tag first) and pickled objects through send/recv.  Prints
the same total line as mpi_pingpong.c; exit 0 only when nothing was wrong.
Usage: mpi_pingpong.py [MAX_BYTES [ITERS]]
"""
import random
import sys

from mpi4py import MPI

GUARD = 0xA5
TAIL = 64
SIZES = [1, 2, 7, 8, 9, 63, 64, 65, 255, 256, 504, 505, 511, 512, 513, 609,
         1023, 1024, 1025, 4088, 4089, 4095, 4096, 4097, 8191, 8192, 8193,
         8255, 8256, 8257, 16384, 65535, 65536, 65537, 131072, 262144,
         1048575, 1048576, 1048577, 4194303, 4194304]
BURST = [8, 609, 8, 4096, 1, 70000, 8, 600, 16384, 8, 1048576, 33]


def content(size, it, direction):
    return random.Random(size * 1000003 + it * 7919 + direction).randbytes(size)


class Checker:
    def __init__(self):
        self.wrong_msgs = 0
        self.wrong_bytes = 0
        self.checked = 0

    def check(self, what, buf, size, want, status):
        got = bytes(buf[:size])
        tail = bytes(buf[size:size + TAIL])
        count = status.Get_count(MPI.BYTE)
        self.checked += size
        if got == want and tail == bytes([GUARD]) * TAIL and count == size:
            return
        bad = sum(1 for a, b in zip(got, want) if a != b)
        bad += sum(1 for b in tail if b != GUARD)
        self.wrong_msgs += 1
        self.wrong_bytes += bad
        if self.wrong_msgs <= 10:
            first = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), None)
            print(f"WRONG {what} size {size}: {bad} bytes wrong, first at {first}, "
                  f"count {count}", flush=True)


def main():
    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    if comm.Get_size() != 2:
        if rank == 0:
            print("mpi_pingpong.py: run with 2 ranks", file=sys.stderr)
        comm.Abort(2)
    maxsize = int(sys.argv[1], 0) if len(sys.argv) > 1 else 4194304
    iters = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    c = Checker()
    rbuf = bytearray(maxsize + TAIL)
    st = MPI.Status()

    for size in [s for s in SIZES if s <= maxsize]:
        n = iters if size <= 1048577 else max(1, iters // 2)
        before = c.wrong_msgs
        for it in range(n):
            rbuf[:size + TAIL] = bytes([GUARD]) * (size + TAIL)
            if rank == 0:
                comm.Send([content(size, it, 0), MPI.BYTE], dest=1, tag=1)
                comm.Recv([rbuf, size + TAIL, MPI.BYTE], source=1, tag=2, status=st)
                c.check("pong", rbuf, size, content(size, it, 1), st)
            else:
                comm.Recv([rbuf, size + TAIL, MPI.BYTE], source=0, tag=1, status=st)
                c.check("ping", rbuf, size, content(size, it, 0), st)
                comm.Send([content(size, it, 1), MPI.BYTE], dest=0, tag=2)
        bad = comm.allreduce(c.wrong_msgs - before)
        if rank == 0:
            print(f"size {size}: {n} round trips, {'WRONG' if bad else 'ok'}", flush=True)

    # Bursts of mixed sizes, both ways, received last tag first.
    sizes = [min(s, maxsize) for s in BURST]
    for direction in (0, 1):
        for rnd in range(4):
            if rank == direction:
                msgs = [content(s, 1000 + rnd * 100 + k, 2 + direction)
                        for k, s in enumerate(sizes)]
                reqs = [comm.Isend([m, MPI.BYTE], dest=1 - rank, tag=100 + k)
                        for k, m in enumerate(msgs)]
                MPI.Request.Waitall(reqs)
            else:
                bufs = [bytearray([GUARD]) * (s + TAIL) for s in sizes]
                reqs = [None] * len(sizes)
                for k in reversed(range(len(sizes))):
                    reqs[k] = comm.Irecv([bufs[k], MPI.BYTE], source=direction, tag=100 + k)
                stats = [MPI.Status() for _ in sizes]
                MPI.Request.Waitall(reqs, stats)
                for k, s in enumerate(sizes):
                    c.check("burst", bufs[k], s, content(s, 1000 + rnd * 100 + k, 2 + direction),
                            stats[k])
            comm.Barrier()

    # Pickled objects (mpi4py's lowercase API) carry a nested structure.
    obj = {"rank": 0, "data": list(range(5000)), "blob": content(100000, 7, 9)}
    if rank == 0:
        comm.send(obj, dest=1, tag=7)
        back = comm.recv(source=1, tag=8)
        if back != {"echo": obj}:
            c.wrong_msgs += 1
            print("WRONG pickled echo", flush=True)
    else:
        got = comm.recv(source=0, tag=7)
        if got != obj:
            c.wrong_msgs += 1
            print("WRONG pickled object", flush=True)
        comm.send({"echo": got}, dest=0, tag=8)

    wrong_msgs = comm.reduce(c.wrong_msgs, root=0)
    wrong_bytes = comm.reduce(c.wrong_bytes, root=0)
    checked = comm.reduce(c.checked, root=0)
    if rank == 0:
        print(f"mpi_pingpong: {checked} bytes checked, {wrong_msgs} wrong messages, "
              f"{wrong_bytes} wrong bytes", flush=True)
    wrong_msgs = comm.bcast(wrong_msgs, root=0)
    return 1 if wrong_msgs else 0


if __name__ == "__main__":
    sys.exit(main())
