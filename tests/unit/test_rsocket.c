/* SPDX-License-Identifier: MIT */
/*
 * rsockets in softib's librdmacm.so.1 (docs/rdmacm.md "rsockets") against a
 * private softibd, both ends in this process: connect/accept, random sizes
 * both ways checked byte for byte, EOF after close, nonblocking EAGAIN and
 * rpoll readiness, flow control (a writer never gets more into flight than
 * the reader's ring), the options rdma-core accepts, riomap/riowrite,
 * errors (ENOTCONN, EBADF, ECONNREFUSED, EISCONN), a hostile peer (raw
 * rdma_cm + verbs speaking the wire protocol wrongly), and a randomized
 * stream test with a replayable seed (RS_SEED): random write/read sizes
 * in both directions, interleaved, nonblocking, against a model of each
 * byte stream.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>
#include <endian.h>

#include <arpa/inet.h>
#include <cmocka.h>
#include <rdma/rdma_cma.h>
#include <rdma/rsocket.h>

#include "daemon_fixture.h"
#include "rdmacm/rs_priv.h"

#define WAIT_MS 20000

/* A listener on 127.0.0.1, an ephemeral port; its port in *port. */
static int listener(uint16_t *port, const int *rcvbuf, int iomap)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sin);
	int l = rsocket(AF_INET, SOCK_STREAM, 0);

	assert_true(l >= 0);
	if (rcvbuf) {
		assert_int_equal(rsetsockopt(l, SOL_SOCKET, SO_RCVBUF, rcvbuf, sizeof(*rcvbuf)), 0);
		assert_int_equal(rsetsockopt(l, SOL_SOCKET, SO_SNDBUF, rcvbuf, sizeof(*rcvbuf)), 0);
	}
	if (iomap)
		assert_int_equal(rsetsockopt(l, SOL_RDMA, RDMA_IOMAPSIZE, &iomap, sizeof(iomap)), 0);
	assert_int_equal(rbind(l, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(rlisten(l, 4), 0);
	assert_int_equal(rgetsockname(l, (struct sockaddr *)&sin, &len), 0);
	assert_int_equal(len, sizeof(sin));
	assert_int_not_equal(sin.sin_port, 0);
	*port = ntohs(sin.sin_port);
	return l;
}

struct acc { int l, fd, err; };

static void *accept_thread(void *arg)
{
	struct acc *a = arg;

	a->fd = raccept(a->l, NULL, NULL);
	a->err = errno;
	return NULL;
}

/* A connected pair *c (client) and *s (server), both blocking; rcvbuf
 * (SO_RCVBUF/SO_SNDBUF of both) and iomap (RDMA_IOMAPSIZE) if given. */
static void make_pair(int *c, int *s, const int *rcvbuf, int iomap)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct acc a = { .fd = -1 };
	pthread_t t;
	uint16_t port;

	a.l = listener(&port, rcvbuf, iomap);
	assert_int_equal(pthread_create(&t, NULL, accept_thread, &a), 0);
	*c = rsocket(AF_INET, SOCK_STREAM, 0);
	assert_true(*c >= 0);
	if (rcvbuf) {
		assert_int_equal(rsetsockopt(*c, SOL_SOCKET, SO_RCVBUF, rcvbuf, sizeof(*rcvbuf)), 0);
		assert_int_equal(rsetsockopt(*c, SOL_SOCKET, SO_SNDBUF, rcvbuf, sizeof(*rcvbuf)), 0);
	}
	if (iomap)
		assert_int_equal(rsetsockopt(*c, SOL_RDMA, RDMA_IOMAPSIZE, &iomap, sizeof(iomap)), 0);
	sin.sin_port = htons(port);
	assert_int_equal(rconnect(*c, (struct sockaddr *)&sin, sizeof(sin)), 0);
	pthread_join(t, NULL);
	assert_true(a.fd >= 0);
	*s = a.fd;
	assert_int_equal(rclose(a.l), 0);
}

/* The byte at offset off of stream dir (a model both ends compute). */
static uint8_t model_byte(uint32_t seed, int dir, uint64_t off)
{
	uint64_t x = off * 0x9E3779B97F4A7C15ull + seed + (uint64_t)dir * 0x1234567ull;

	x ^= x >> 29;
	x *= 0xBF58476D1CE4E5B9ull;
	return (uint8_t)(x >> 32);
}

static void fill(uint8_t *p, size_t n, uint32_t seed, int dir, uint64_t off)
{
	for (size_t i = 0; i < n; i++)
		p[i] = model_byte(seed, dir, off + i);
}

static bool check(const uint8_t *p, size_t n, uint32_t seed, int dir, uint64_t off)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != model_byte(seed, dir, off + i)) {
			fprintf(stderr, "dir %d byte %llu differs\n", dir, (unsigned long long)(off + i));
			return false;
		}
	return true;
}

/* Read exactly n bytes (blocking socket) and check them. */
static void read_all(int fd, size_t n, uint32_t seed, int dir, uint64_t off)
{
	uint8_t *b = malloc(n ? n : 1);

	assert_non_null(b);
	assert_int_equal(rrecv(fd, b, n, MSG_WAITALL), (ssize_t)n);
	assert_true(check(b, n, seed, dir, off));
	free(b);
}

struct writer { int fd; size_t n; uint32_t seed; int dir; uint64_t off; ssize_t r; };

static void *write_thread(void *arg)
{
	struct writer *w = arg;
	uint8_t *b = malloc(w->n);

	fill(b, w->n, w->seed, w->dir, w->off);
	w->r = rsend(w->fd, b, w->n, 0);
	free(b);
	return NULL;
}

static void test_connect_send_recv(void **state)
{
	struct sockaddr_in a, b;
	socklen_t la = sizeof(a), lb = sizeof(b);
	uint64_t off[2] = { 0, 0 };
	int c, s, i;

	(void)state;
	make_pair(&c, &s, NULL, 0);
	assert_int_equal(rgetpeername(c, (struct sockaddr *)&a, &la), 0);
	assert_int_equal(rgetsockname(s, (struct sockaddr *)&b, &lb), 0);
	assert_int_equal(a.sin_port, b.sin_port);
	srandom(7);
	for (i = 0; i < 40; i++) {
		int dir = i & 1;
		size_t n = 1 + (size_t)random() % (i < 30 ? 70000 : 600000);
		struct writer w = { .fd = dir ? s : c, .n = n, .seed = 7, .dir = dir, .off = off[dir] };
		pthread_t t;

		/* a writer thread: a write larger than the peer's ring blocks
		 * until the reader below makes room */
		assert_int_equal(pthread_create(&t, NULL, write_thread, &w), 0);
		read_all(dir ? c : s, n, 7, dir, off[dir]);
		pthread_join(t, NULL);
		assert_int_equal(w.r, (ssize_t)n);
		off[dir] += n;
	}
	/* rwritev / rreadv / rsendmsg / rrecvmsg */
	{
		char x[] = "hello", y[] = ", world", in[13] = { 0 };
		struct iovec wv[2] = { { x, 5 }, { y, 7 } }, rv[2] = { { in, 3 }, { in + 3, 9 } };
		struct msghdr m = { .msg_iov = rv, .msg_iovlen = 2 };

		assert_int_equal(rwritev(c, wv, 2), 12);
		assert_int_equal(rrecv(s, in, 12, MSG_WAITALL | MSG_PEEK), 12);
		assert_int_equal(rreadv(s, rv, 2), 12);
		assert_string_equal(in, "hello, world");
		memset(in, 0, sizeof(in));
		m.msg_iov = wv;
		assert_int_equal(rsendmsg(s, &m, 0), 12);
		m.msg_iov = rv;
		assert_int_equal(rrecvmsg(c, &m, MSG_WAITALL), 12);
		assert_string_equal(in, "hello, world");
	}
	assert_int_equal(rclose(c), 0);
	assert_int_equal(rclose(s), 0);
}

/* Data, then the writer closes: the reader gets all of it, then 0. */
static void test_eof_after_close(void **state)
{
	int c, s, rcv = 8192;
	uint8_t b[4000];

	(void)state;
	make_pair(&c, &s, &rcv, 0);
	fill(b, sizeof(b), 3, 0, 0);
	assert_int_equal(rsend(c, b, sizeof(b), 0), (ssize_t)sizeof(b));
	assert_int_equal(rclose(c), 0);
	read_all(s, sizeof(b), 3, 0, 0);
	assert_int_equal(rrecv(s, b, sizeof(b), 0), 0);
	assert_int_equal(rrecv(s, b, sizeof(b), 0), 0);
	/* the writer is gone: writing fails, never hangs */
	errno = 0;
	assert_int_equal(rsend(s, b, 10, 0) == 10 || errno == EPIPE || errno == ECONNRESET, 1);
	assert_int_equal(rclose(s), 0);

	/* rshutdown(SHUT_WR): EOF for the peer, the other way still works */
	make_pair(&c, &s, NULL, 0);
	assert_int_equal(rsend(c, "abc", 3, 0), 3);
	assert_int_equal(rshutdown(c, SHUT_WR), 0);
	errno = 0;
	assert_int_equal(rsend(c, "x", 1, 0), -1);
	assert_int_equal(errno, EPIPE);
	assert_int_equal(rrecv(s, b, 3, MSG_WAITALL), 3);
	assert_int_equal(rrecv(s, b, 3, 0), 0);
	assert_int_equal(rsend(s, "back", 4, 0), 4);
	assert_int_equal(rrecv(c, b, 4, MSG_WAITALL), 4);
	assert_memory_equal(b, "back", 4);
	assert_int_equal(rclose(s), 0);
	assert_int_equal(rclose(c), 0);
}

static int poll1(int fd, short ev, int ms)
{
	struct pollfd p = { .fd = fd, .events = ev };
	int r = rpoll(&p, 1, ms);

	return r > 0 ? p.revents : r;
}

/* Nonblocking: EAGAIN, rpoll readiness, a writer that fills the reader's
 * ring gets EAGAIN, and POLLOUT comes back when the reader reads. */
static void test_nonblocking_poll(void **state)
{
	int c, s, rcv = 8192, ring = 0;
	socklen_t len = sizeof(ring);
	uint8_t b[65536];
	uint64_t sent = 0, got = 0;
	ssize_t r;
	fd_set rd;
	struct timeval tv = { .tv_sec = 5 };

	(void)state;
	make_pair(&c, &s, &rcv, 0);
	assert_int_equal(rgetsockopt(s, SOL_SOCKET, SO_RCVBUF, &ring, &len), 0);
	assert_int_equal(ring, 16384);
	assert_int_equal(rfcntl(c, F_SETFL, O_NONBLOCK), 0);
	assert_int_equal(rfcntl(c, F_GETFL) & O_NONBLOCK, O_NONBLOCK);
	assert_int_equal(rfcntl(s, F_SETFL, O_NONBLOCK), 0);
	errno = 0;
	assert_int_equal(rrecv(s, b, 10, 0), -1);
	assert_int_equal(errno, EAGAIN);
	assert_int_equal(poll1(s, POLLIN, 0), 0);
	assert_int_equal(poll1(c, POLLOUT, 0), POLLOUT);
	/* fill: never more in flight than the reader's ring */
	fill(b, sizeof(b), 5, 0, 0);
	for (;;) {
		r = rsend(c, b, 1000, 0);
		if (r < 0) {
			assert_int_equal(errno, EAGAIN);
			break;
		}
		sent += (uint64_t)r;
		assert_true(sent <= (uint64_t)ring);
		fill(b, 1000, 5, 0, sent);
	}
	assert_true(sent >= (uint64_t)ring / 2);
	assert_int_equal(poll1(c, POLLOUT, 0), 0);
	assert_int_equal(poll1(s, POLLIN, WAIT_MS) & POLLIN, POLLIN);
	/* rselect sees it too */
	FD_ZERO(&rd);
	FD_SET(s, &rd);
	assert_int_equal(rselect(s + 1, &rd, NULL, NULL, &tv), 1);
	assert_true(FD_ISSET(s, &rd));
	/* the reader drains: the writer may write again */
	while (got < sent) {
		assert_int_equal(poll1(s, POLLIN, WAIT_MS) & POLLIN, POLLIN);
		r = rrecv(s, b, sizeof(b), 0);
		assert_true(r > 0);
		assert_true(check(b, (size_t)r, 5, 0, got));
		got += (uint64_t)r;
	}
	assert_int_equal(poll1(c, POLLOUT, WAIT_MS) & POLLOUT, POLLOUT);
	assert_int_equal(rclose(c), 0);
	assert_int_equal(poll1(s, POLLIN, WAIT_MS) & POLLIN, POLLIN);
	assert_int_equal(rrecv(s, b, 10, 0), 0);
	assert_int_equal(rclose(s), 0);
}

/* A nonblocking rconnect: EINPROGRESS; stream calls meanwhile EAGAIN
 * (not ENOTCONN); then POLLOUT, SO_ERROR 0, and data flows. */
static void test_nonblocking_connect(void **state)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct acc a = { .fd = -1 };
	pthread_t t;
	uint16_t port;
	socklen_t len = sizeof(int);
	int c, v = -1;
	char b[8];
	ssize_t r;

	(void)state;
	a.l = listener(&port, NULL, 0);
	assert_int_equal(pthread_create(&t, NULL, accept_thread, &a), 0);
	c = rsocket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	assert_true(c >= 0);
	sin.sin_port = htons(port);
	errno = 0;
	assert_int_equal(rconnect(c, (struct sockaddr *)&sin, sizeof(sin)), -1);
	assert_int_equal(errno, EINPROGRESS);
	errno = 0;
	assert_int_equal(rconnect(c, (struct sockaddr *)&sin, sizeof(sin)), -1);
	assert_int_equal(errno, EALREADY);
	r = rrecv(c, b, sizeof(b), 0);
	assert_int_equal(r, -1);
	assert_int_equal(errno, EAGAIN);
	assert_int_equal(poll1(c, POLLOUT, WAIT_MS), POLLOUT);
	assert_int_equal(rgetsockopt(c, SOL_SOCKET, SO_ERROR, &v, &len), 0);
	assert_int_equal(v, 0);
	pthread_join(t, NULL);
	assert_true(a.fd >= 0);
	assert_int_equal(rsend(c, "12345", 5, 0), 5);
	assert_int_equal(rrecv(a.fd, b, 5, MSG_WAITALL), 5);
	assert_memory_equal(b, "12345", 5);
	assert_int_equal(rclose(c), 0);
	assert_int_equal(rclose(a.fd), 0);
	assert_int_equal(rclose(a.l), 0);
}

static void test_options(void **state)
{
	int fd = rsocket(AF_INET, SOCK_STREAM, 0), v;
	socklen_t len = sizeof(v);
	struct linger lg = { .l_onoff = 1, .l_linger = 3 };

	(void)state;
	assert_true(fd >= 0);
	v = 65536;
	assert_int_equal(rsetsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v)), 0);
	assert_int_equal(rgetsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, &len), 0);
	assert_int_equal(v, 131072);
	assert_int_equal(len, sizeof(int));
	v = 1 << 19;
	assert_int_equal(rsetsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v)), 0);
	assert_int_equal(rgetsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, &len), 0);
	assert_int_equal(v, 1 << 20);
	v = 1;
	assert_int_equal(rsetsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &v, sizeof(v)), 0);
	assert_int_equal(rsetsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &v, sizeof(v)), 0);
	assert_int_equal(rgetsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &v, &len), 0);
	assert_int_equal(v, 1);
	assert_int_equal(rsetsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &v, sizeof(v)), 0);
	assert_int_equal(rgetsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &v, &len), 0);
	assert_int_equal(v, 1);
	v = 30;
	assert_int_equal(rsetsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &v, sizeof(v)), 0);
	assert_int_equal(rgetsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &v, &len), 0);
	assert_int_equal(v, 30);
	assert_int_equal(rsetsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)), 0);
	memset(&lg, 0, sizeof(lg));
	len = sizeof(lg);
	assert_int_equal(rgetsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, &len), 0);
	assert_int_equal(lg.l_linger, 3);
	len = sizeof(v);
	v = 100;
	assert_int_equal(rsetsockopt(fd, SOL_RDMA, RDMA_SQSIZE, &v, sizeof(v)), 0);
	assert_int_equal(rgetsockopt(fd, SOL_RDMA, RDMA_SQSIZE, &v, &len), 0);
	assert_int_equal(v, 100);
	v = 200;
	assert_int_equal(rsetsockopt(fd, SOL_RDMA, RDMA_RQSIZE, &v, sizeof(v)), 0);
	assert_int_equal(rgetsockopt(fd, SOL_RDMA, RDMA_RQSIZE, &v, &len), 0);
	assert_int_equal(v, 200);
	v = 0;
	assert_int_equal(rsetsockopt(fd, SOL_RDMA, RDMA_INLINE, &v, sizeof(v)), 0);
	assert_int_equal(rgetsockopt(fd, SOL_RDMA, RDMA_INLINE, &v, &len), 0);
	assert_int_equal(v, 0);
	v = 2;
	assert_int_equal(rsetsockopt(fd, SOL_RDMA, RDMA_IOMAPSIZE, &v, sizeof(v)), 0);
	assert_int_equal(rgetsockopt(fd, SOL_RDMA, RDMA_IOMAPSIZE, &v, &len), 0);
	assert_int_equal(v, 2);
	assert_int_equal(rgetsockopt(fd, SOL_SOCKET, SO_ERROR, &v, &len), 0);
	assert_int_equal(v, 0);
	/* what rdma-core does not know: ENOTSUP; a short optlen: EINVAL */
	errno = 0;
	assert_int_equal(rsetsockopt(fd, SOL_SOCKET, SO_BROADCAST, &v, sizeof(v)), -1);
	assert_int_equal(errno, ENOTSUP);
	errno = 0;
	assert_int_equal(rsetsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, 2), -1);
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_int_equal(rfcntl(fd, F_GETFD), -1);
	assert_int_equal(errno, ENOTSUP);
	assert_int_equal(rclose(fd), 0);
}

/* riomap a window on the server; the client riowrites into it. */
static void test_riomap(void **state)
{
	int c, s;
	uint8_t *win = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t b[65536], x;
	off_t off;

	(void)state;
	assert_true(win != MAP_FAILED);
	make_pair(&c, &s, NULL, 1);
	memset(win, 0, 65536);
	errno = 0;
	assert_int_equal(riomap(s, win, 65536, PROT_READ, 0, 0), -1);
	assert_int_equal(errno, EINVAL);
	off = riomap(s, win, 65536, PROT_WRITE, 0, 4096);
	assert_int_equal(off, 4096);
	/* one window only (RDMA_IOMAPSIZE 1) */
	errno = 0;
	assert_int_equal(riomap(s, b, 100, PROT_WRITE, 0, -1), -1);
	assert_int_equal(errno, ENOMEM);
	assert_int_equal(rsend(s, "m", 1, 0), 1);         /* after the window's announcement */
	assert_int_equal(rrecv(c, &x, 1, 0), 1);
	fill(b, sizeof(b), 9, 0, 0);
	assert_int_equal(riowrite(c, b, 65536, 4096, 0), 65536);
	assert_int_equal(riowrite(c, b, 100, 4096 + 65536 - 50, 0), 50);  /* up to the window's end */
	errno = 0;
	assert_int_equal(riowrite(c, b, 10, 0, 0), (size_t)-1);          /* outside every window */
	assert_int_equal(errno, EINVAL);
	assert_int_equal(rsend(c, "d", 1, 0), 1);         /* RC order: after the writes */
	assert_int_equal(rrecv(s, &x, 1, 0), 1);
	assert_true(check(win, 65536 - 50, 9, 0, 0));
	assert_true(check(win + 65536 - 50, 50, 9, 0, 0));
	assert_int_equal(riounmap(s, win, 65536), 0);
	errno = 0;
	assert_int_equal(riounmap(s, win, 65536), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(rsend(s, "u", 1, 0), 1);
	assert_int_equal(rrecv(c, &x, 1, 0), 1);
	errno = 0;
	assert_int_equal(riowrite(c, b, 10, 4096, 0), (size_t)-1);       /* unmapped */
	assert_int_equal(errno, EINVAL);
	assert_int_equal(rclose(c), 0);
	assert_int_equal(rclose(s), 0);
	munmap(win, 65536);
}

static void test_errors(void **state)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	uint16_t port;
	int fd, l, c, s, v;
	socklen_t len = sizeof(v);
	char b[4];

	(void)state;
	fd = rsocket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	errno = 0;
	assert_int_equal(rsend(fd, "x", 1, 0), -1);
	assert_int_equal(errno, ENOTCONN);
	errno = 0;
	assert_int_equal(rrecv(fd, b, 1, 0), -1);
	assert_int_equal(errno, ENOTCONN);
	errno = 0;
	assert_int_equal(rshutdown(fd, SHUT_RDWR), -1);
	assert_int_equal(errno, ENOTCONN);
	errno = 0;
	assert_int_equal(rgetpeername(fd, (struct sockaddr *)&sin, &len), -1);
	assert_int_equal(errno, ENOTCONN);
	errno = 0;
	assert_int_equal(raccept(fd, NULL, NULL), -1);
	assert_int_equal(errno, EINVAL);
	/* nobody listens on this port: ECONNREFUSED (blocking) */
	l = listener(&port, NULL, 0);
	assert_int_equal(rclose(l), 0);
	sin.sin_port = htons(port);
	errno = 0;
	assert_int_equal(rconnect(fd, (struct sockaddr *)&sin, sizeof(sin)), -1);
	assert_int_equal(errno, ECONNREFUSED);
	assert_int_equal(rclose(fd), 0);
	/* ... and nonblocking: EINPROGRESS, then POLLOUT and SO_ERROR */
	fd = rsocket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(rfcntl(fd, F_SETFL, O_NONBLOCK), 0);
	errno = 0;
	assert_int_equal(rconnect(fd, (struct sockaddr *)&sin, sizeof(sin)), -1);
	assert_int_equal(errno, EINPROGRESS);
	assert_true(poll1(fd, POLLOUT, WAIT_MS) & (POLLOUT | POLLERR));
	assert_int_equal(rgetsockopt(fd, SOL_SOCKET, SO_ERROR, &v, &len), 0);
	assert_int_equal(v, ECONNREFUSED);
	assert_int_equal(rclose(fd), 0);
	/* EBADF: not an rsocket, or closed */
	errno = 0;
	assert_int_equal(rsend(12345, "x", 1, 0), -1);
	assert_int_equal(errno, EBADF);
	errno = 0;
	assert_int_equal(rclose(fd), -1);
	assert_int_equal(errno, EBADF);
	errno = 0;
	assert_int_equal(rsetsockopt(-5, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v)), -1);
	assert_int_equal(errno, EBADF);
	{
		struct pollfd p = { .fd = 99999, .events = POLLIN };

		assert_int_equal(rpoll(&p, 1, 0), 1);
		assert_int_equal(p.revents, POLLNVAL);
	}
	/* a connected socket: EISCONN; bad family: EAFNOSUPPORT */
	make_pair(&c, &s, NULL, 0);
	errno = 0;
	assert_int_equal(rconnect(c, (struct sockaddr *)&sin, sizeof(sin)), -1);
	assert_int_equal(errno, EISCONN);
	errno = 0;
	assert_int_equal(rsendto(c, "x", 1, 0, (struct sockaddr *)&sin, sizeof(sin)), -1);
	assert_int_equal(errno, EISCONN);
	assert_int_equal(rclose(c), 0);
	assert_int_equal(rclose(s), 0);
	errno = 0;
	assert_int_equal(rsocket(AF_UNIX, SOCK_STREAM, 0), -1);
	assert_int_equal(errno, EAFNOSUPPORT);
}

/* ---- a hostile peer: raw rdma_cm and verbs, the wire protocol abused ---- */

struct raw {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t buf[256];
	struct rs_conn_data peer;
};

static struct rdma_cm_event *raw_event(struct raw *r, enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev;

	assert_int_equal(rdma_get_cm_event(r->ch, &ev), 0);
	if (ev->event != want)
		fprintf(stderr, "event %s, wanted %s\n", rdma_event_str(ev->event), rdma_event_str(want));
	assert_int_equal(ev->event, want);
	return ev;
}

struct raw_server { int l, fd; };

/* Connect a raw RC QP to an rsocket listener, announcing a ring of ours. */
static void raw_connect(struct raw *r, uint16_t port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				   .sin_port = htons(port) };
	struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC, .sq_sig_all = 1,
				       .cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1,
						.max_recv_sge = 1, .max_inline_data = 64 } };
	struct rs_conn_data cd = { .version = RS_PROTO_VERSION, .credits = htobe16(16),
				   .rbuf_size = htobe32(RS_MIN_BUF) };
	struct rdma_conn_param p = { .private_data = &cd, .private_data_len = sizeof(cd),
				     .responder_resources = 1, .initiator_depth = 1,
				     .retry_count = 7, .rnr_retry_count = 7 };
	struct rdma_cm_event *ev;

	r->ch = rdma_create_event_channel();
	assert_non_null(r->ch);
	assert_int_equal(rdma_create_id(r->ch, &r->id, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_resolve_addr(r->id, NULL, (struct sockaddr *)&sin, 2000), 0);
	assert_int_equal(rdma_ack_cm_event(raw_event(r, RDMA_CM_EVENT_ADDR_RESOLVED)), 0);
	assert_int_equal(rdma_resolve_route(r->id, 2000), 0);
	assert_int_equal(rdma_ack_cm_event(raw_event(r, RDMA_CM_EVENT_ROUTE_RESOLVED)), 0);
	r->pd = ibv_alloc_pd(r->id->verbs);
	r->cq = ibv_create_cq(r->id->verbs, 64, NULL, NULL, 0);
	r->mr = ibv_reg_mr(r->pd, r->buf, sizeof(r->buf), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	assert_non_null(r->mr);
	qa.send_cq = qa.recv_cq = r->cq;
	assert_int_equal(rdma_create_qp(r->id, r->pd, &qa), 0);
	for (int i = 0; i < 16; i++) {
		struct ibv_sge sge = { (uintptr_t)r->buf, 64, r->mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 }, *bad;

		assert_int_equal(ibv_post_recv(r->id->qp, &wr, &bad), 0);
	}
	cd.rbuf_rkey = htobe32(r->mr->rkey);
	cd.rbuf_addr = htobe64((uintptr_t)r->buf);
	assert_int_equal(rdma_connect(r->id, &p), 0);
	ev = raw_event(r, RDMA_CM_EVENT_ESTABLISHED);
	assert_true(ev->param.conn.private_data_len >= sizeof(r->peer));
	memcpy(&r->peer, ev->param.conn.private_data, sizeof(r->peer));
	assert_int_equal(rdma_ack_cm_event(ev), 0);
}

static void raw_post(struct raw *r, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;
	struct ibv_wc wc;
	uint64_t end = now_ms() + WAIT_MS;
	int n;

	wr->send_flags |= IBV_SEND_SIGNALED;
	assert_int_equal(ibv_post_send(r->id->qp, wr, &bad), 0);
	while ((n = ibv_poll_cq(r->cq, 1, &wc)) == 0 && now_ms() < end)
		usleep(100);
	assert_int_equal(n, 1);
}

static void raw_close(struct raw *r)
{
	(void)rdma_disconnect(r->id);
	rdma_destroy_qp(r->id);
	ibv_dereg_mr(r->mr);
	ibv_destroy_cq(r->cq);
	ibv_dealloc_pd(r->pd);
	rdma_destroy_id(r->id);
	rdma_destroy_event_channel(r->ch);
}

/* kind 0: an immediate longer than the ring; 1: a credit for bytes never
 * sent; 2: a riomap window in a slot beyond the table; 3: an unknown
 * control op; 4: a control message of the wrong size; 5: more receive
 * WQEs granted than its RQ holds; 6: data after FIN. */
static void hostile_case(int kind)
{
	struct raw r = { 0 };
	struct acc a = { .fd = -1 };
	pthread_t t;
	uint16_t port;
	uint8_t x[64];
	struct rs_ctrl c = { .op = RS_CTRL_CREDIT };
	struct ibv_sge sge = { (uintptr_t)r.buf, 1, 0 };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1 };

	a.l = listener(&port, NULL, 0);
	assert_int_equal(pthread_create(&t, NULL, accept_thread, &a), 0);
	raw_connect(&r, port);
	pthread_join(t, NULL);
	assert_true(a.fd >= 0);
	sge.lkey = r.mr->lkey;
	if (kind == 0) {
		wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
		wr.imm_data = htobe32(be32toh(r.peer.rbuf_size) + 1);
		wr.wr.rdma.remote_addr = be64toh(r.peer.rbuf_addr);
		wr.wr.rdma.rkey = be32toh(r.peer.rbuf_rkey);
	} else {
		c.granted = htobe32(16);
		if (kind == 1)
			c.consumed = htobe64(1000);
		if (kind == 2) {
			c.op = RS_CTRL_IOMAP;
			c.slot = htobe16(5);
			c.io_len = htobe32(100);
		}
		if (kind == 3)
			c.op = 77;
		if (kind == 5)
			c.granted = htobe32(17);
		if (kind == 6)
			c.op = RS_CTRL_FIN;
		memcpy(r.buf, &c, sizeof(c));
		sge.length = kind == 4 ? 7 : sizeof(c);
		wr.opcode = IBV_WR_SEND;
	}
	raw_post(&r, &wr);
	if (kind == 6) {
		/* the FIN alone is fine: EOF; then one byte of data after it */
		assert_int_equal(rrecv(a.fd, x, sizeof(x), 0), 0);
		memset(&wr, 0, sizeof(wr));
		wr.sg_list = &sge;
		wr.num_sge = 1;
		sge.length = 1;
		wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
		wr.imm_data = htobe32(1);
		wr.wr.rdma.remote_addr = be64toh(r.peer.rbuf_addr);
		wr.wr.rdma.rkey = be32toh(r.peer.rbuf_rkey);
		raw_post(&r, &wr);
		assert_true(poll1(a.fd, POLLERR, WAIT_MS) & POLLERR);
		errno = 0;
		assert_int_equal(rsend(a.fd, "x", 1, 0), -1);
		assert_int_equal(errno, ECONNRESET);
		assert_int_equal(rclose(a.fd), 0);
		assert_int_equal(rclose(a.l), 0);
		raw_close(&r);
		return;
	}
	errno = 0;
	assert_int_equal(rrecv(a.fd, x, sizeof(x), 0), -1);
	assert_int_equal(errno, ECONNRESET);
	assert_true(poll1(a.fd, POLLIN, 0) & POLLERR);
	assert_int_equal(rclose(a.fd), 0);
	assert_int_equal(rclose(a.l), 0);
	raw_close(&r);
}

static void test_hostile_peer(void **state)
{
	(void)state;
	for (int k = 0; k < 7; k++)
		hostile_case(k);
}

/* ---- the randomized stream test ---- */

static void test_stream_random(void **state)
{
	const char *env = getenv("RS_SEED");
	uint32_t seed = env ? (uint32_t)strtoul(env, NULL, 0) : (uint32_t)time(NULL);
	int fd[2], rcv;
	uint64_t wr[2] = { 0, 0 }, rd[2] = { 0, 0 };
	uint8_t *b = malloc(300000);
	uint64_t end;
	int i;

	(void)state;
	fprintf(stderr, "test_stream_random: RS_SEED=%u\n", seed);
	srandom(seed);
	rcv = 2048 << (random() % 6);   /* rings of 4 KiB .. 128 KiB */
	make_pair(&fd[0], &fd[1], &rcv, 0);
	for (i = 0; i < 2; i++)
		assert_int_equal(rfcntl(fd[i], F_SETFL, O_NONBLOCK), 0);
	if (random() % 2) {
		int v = (int)(random() % 200);

		assert_int_equal(rsetsockopt(fd[0], SOL_RDMA, RDMA_INLINE, &v, sizeof(v)), 0);
	}
	for (i = 0; i < 20000; i++) {
		int side = (int)(random() % 2), op = (int)(random() % 3);
		size_t n = 1 + (size_t)random() % (random() % 4 ? 3000 : 300000);
		ssize_t r;

		if (op < 2) {
			/* side writes stream 'side' */
			fill(b, n, seed, side, wr[side]);
			r = rsend(fd[side], b, n, random() % 2 ? MSG_DONTWAIT : 0);
			if (r < 0) {
				assert_int_equal(errno, EAGAIN);
				continue;
			}
			assert_true(r > 0 && (size_t)r <= n);
			wr[side] += (uint64_t)r;
		} else {
			/* side reads the other's stream */
			int o = !side;
			bool peek = random() % 8 == 0;

			r = rrecv(fd[side], b, n, peek ? MSG_PEEK : 0);
			if (r < 0) {
				assert_int_equal(errno, EAGAIN);
				continue;
			}
			assert_true(r > 0 && (size_t)r <= n);
			assert_true(rd[o] + (uint64_t)r <= wr[o]);
			assert_true(check(b, (size_t)r, seed, o, rd[o]));
			if (!peek)
				rd[o] += (uint64_t)r;
		}
	}
	/* drain both ways, then EOF both ways */
	end = now_ms() + WAIT_MS;
	for (i = 0; i < 2; i++)
		assert_int_equal(rshutdown(fd[i], SHUT_WR), 0);
	while ((rd[0] < wr[0] || rd[1] < wr[1]) && now_ms() < end) {
		for (i = 0; i < 2; i++) {
			int o = !i;
			ssize_t r;

			if (rd[o] == wr[o])
				continue;
			(void)poll1(fd[i], POLLIN, 100);
			r = rrecv(fd[i], b, 300000, 0);
			if (r < 0) {
				assert_int_equal(errno, EAGAIN);
				continue;
			}
			assert_true(r > 0);
			assert_true(check(b, (size_t)r, seed, o, rd[o]));
			rd[o] += (uint64_t)r;
		}
	}
	assert_true(rd[0] == wr[0] && rd[1] == wr[1]);
	for (i = 0; i < 2; i++) {
		assert_true(poll1(fd[i], POLLIN, WAIT_MS) & POLLIN);
		assert_int_equal(rrecv(fd[i], b, 10, 0), 0);
	}
	for (i = 0; i < 2; i++)
		assert_int_equal(rclose(fd[i]), 0);
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_options),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_nonblocking_connect),
		cmocka_unit_test(test_connect_send_recv),
		cmocka_unit_test(test_eof_after_close),
		cmocka_unit_test(test_nonblocking_poll),
		cmocka_unit_test(test_riomap),
		cmocka_unit_test(test_hostile_peer),
		cmocka_unit_test(test_stream_random),
	};

	/* the blocking calls above have no timeout of their own: a hang ends
	 * the run here (SIGALRM) before ctest's TIMEOUT */
	alarm(100);
	return cmocka_run_group_tests_name("rsocket", tests, start_daemon, stop_daemon);
}
