#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# A TCP transfer checked end to end (lib.sh tcp_check): `recv ADDR MB` listens
# on ADDR:5001, says "listening", and prints "BYTES SHA256 RATE"; `send ADDR
# MB` sends MB MiB of seeded random data and prints "BYTES SHA256".
import hashlib, socket, sys, time
mode, addr, mb = sys.argv[1], sys.argv[2], int(sys.argv[3])
if mode == "recv":
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, 5001)); s.listen(1); s.settimeout(60)
    print("listening", flush=True)
    c, _ = s.accept(); c.settimeout(60)
    h, n, t0 = hashlib.sha256(), 0, time.time()
    while True:
        b = c.recv(1 << 16)
        if not b: break
        h.update(b); n += len(b)
    dt = time.time() - t0
    print(n, h.hexdigest(), "%.1f MB/s" % (n / dt / 1e6), flush=True)
else:
    import random
    rnd = random.Random(16); chunk = bytes(rnd.getrandbits(8) for _ in range(1 << 16))
    h, n = hashlib.sha256(), 0
    c = socket.create_connection((addr, 5001), timeout=60)
    for i in range(mb * 16):
        b = chunk[i % 7:] + chunk[:i % 7]
        c.sendall(b); h.update(b); n += len(b)
    c.shutdown(socket.SHUT_WR); c.recv(1); c.close()
    print(n, h.hexdigest(), flush=True)
