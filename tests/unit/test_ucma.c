// SPDX-License-Identifier: MIT
/*
 * softibd's ucma (src/daemon/ucma.c) spoken to in raw SIB_CTL_CM messages
 * by two control connections of this process, against a private softibd
 * (daemon_fixture.c, stopped by PID): event channels (pollable, EAGAIN
 * when empty and non-blocking), listen / connect / accept / RTU /
 * established / disconnect, a closed connection's peer sees DISCONNECTED,
 * the budget refuses the 1,025th id, and garbage commands (bad handles,
 * lengths, states, another connection's handles, a QP not ours) get errors
 * and change nothing.  Every wait is bounded.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/ctl.h"
#include "common/sib_ctl_cm.h"
#include "daemon/ucma.h"
#include "subnet/cma.h"
#include "daemon_fixture.h"
#include "status_text.h"

#define WAIT_MS 5000
#define PS_TCP 0x0106u
#define EV_ADDR_RESOLVED 0
#define EV_ROUTE_RESOLVED 2
#define EV_CONNECT_REQUEST 4
#define EV_CONNECT_RESPONSE 5
#define EV_REJECTED 8
#define EV_ESTABLISHED 9
#define EV_DISCONNECTED 10
#define EV_DEVICE_REMOVAL 11
#define EV_TIMEWAIT_EXIT 15

/* ---- the protocol, raw ---- */

static int cm(int fd, struct sib_ctl_msg *m, uint32_t cmd, int *rfd)
{
	int rc;

	m->hdr.op = SIB_CTL_CM;
	m->u.cm.cmd = cmd;
	rc = sib_ctl_call(fd, m, rfd);
	assert_int_equal(rc, 0);
	return m->hdr.status;
}

static int chan_open(int fd, uint32_t *handle)
{
	struct sib_ctl_msg m;
	int rfd = -1;

	memset(&m, 0, sizeof(m));
	assert_int_equal(cm(fd, &m, SIB_CM_CMD_CHANNEL_OPEN, &rfd), 0);
	assert_true(rfd >= 0);
	*handle = m.u.cm.channel;
	return rfd;
}

static int create_id(int fd, uint32_t chan, uint64_t uid, uint32_t *id)
{
	struct sib_ctl_msg m;
	int st;

	memset(&m, 0, sizeof(m));
	m.u.cm.channel = chan;
	m.u.cm.uid = uid;
	m.u.cm.ps = PS_TCP;
	m.u.cm.qp_type = IBV_QPT_RC;
	st = cm(fd, &m, SIB_CM_CMD_CREATE_ID, NULL);
	*id = m.u.cm.id;
	return st;
}

static void put_sin(uint8_t *out, uint16_t *len, const char *ip, uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };

	assert_int_equal(inet_pton(AF_INET, ip, &a.sin_addr), 1);
	memcpy(out, &a, sizeof(a));
	*len = sizeof(a);
}

/* One event from channel fd within WAIT_MS (poll says when). */
static struct sib_ctl_cm_event next_event(int chfd)
{
	struct pollfd p = { .fd = chfd, .events = POLLIN };
	struct sib_ctl_msg m;

	assert_int_equal(poll(&p, 1, WAIT_MS), 1);
	assert_true(sib_ctl_recv(chfd, &m, NULL) > 0);
	assert_int_equal(m.hdr.op, SIB_CTL_CM_EVENT);
	return m.u.cm_event;
}

/* The next event but TIMEWAIT_EXIT (it comes when TimeWait ends, later). */
static struct sib_ctl_cm_event expect(int chfd, uint32_t type)
{
	struct sib_ctl_cm_event e;

	do
		e = next_event(chfd);
	while (e.event == EV_TIMEWAIT_EXIT && type != EV_TIMEWAIT_EXIT);

	assert_int_equal(e.event, type);
	return e;
}

static int hello_dev_qp(int fd, uint32_t dev, uint32_t *qpn)
{
	struct sib_ctl_msg m;
	int rfd = -1;

	memset(&m, 0, sizeof(m));
	m.hdr.op = SIB_CTL_OPEN_DEVICE;
	m.u.open.dev_index = dev;
	m.u.open.dev_gen = 1; /* registered at start */
	assert_int_equal(sib_ctl_call(fd, &m, &rfd), 0);
	assert_int_equal(m.hdr.status, 0);
	if (rfd >= 0)
		close(rfd);
	uint32_t dh = m.u.open.handle;

	memset(&m, 0, sizeof(m));
	m.hdr.op = SIB_CTL_CREATE_OBJ;
	m.u.obj.type = SIB_OBJ_QP;
	m.u.obj.dev_handle = dh;
	m.u.obj.qp_type = IBV_QPT_RC;
	assert_int_equal(sib_ctl_call(fd, &m, NULL), 0);
	assert_int_equal(m.hdr.status, 0);
	*qpn = m.u.obj.qpn;
	return 0;
}

struct side {
	int fd, ch;
	uint32_t chan, qpn;
};

static void side_open(struct side *s, uint32_t dev)
{
	s->fd = hello_conn();
	s->ch = chan_open(s->fd, &s->chan);
	hello_dev_qp(s->fd, dev, &s->qpn);
}

static void side_close(struct side *s)
{
	close(s->ch);
	close(s->fd);
}

/* A connection from a (softib1) to a listener of b (softib0) on port;
 * returns a's id and b's new id. */
static void connect_pair3(struct side *a, struct side *b, uint16_t port, uint32_t *aid,
			  uint32_t *bid, uint32_t *lout)
{
	struct sib_ctl_msg m;
	struct sib_ctl_cm_event e;
	uint32_t l;

	assert_int_equal(create_id(b->fd, b->chan, 0xB0, &l), 0);
	memset(&m, 0, sizeof(m));
	m.u.cm.id = l;
	put_sin(m.u.cm.src_addr, &m.u.cm.src_len, "127.1.0.1", port);
	assert_int_equal(cm(b->fd, &m, SIB_CM_CMD_BIND, NULL), 0);
	assert_int_equal(m.u.cm.dev_index, 0);
	m.u.cm.backlog = 4;
	assert_int_equal(cm(b->fd, &m, SIB_CM_CMD_LISTEN, NULL), 0);

	assert_int_equal(create_id(a->fd, a->chan, 0xA0, aid), 0);
	memset(&m, 0, sizeof(m));
	m.u.cm.id = *aid;
	put_sin(m.u.cm.src_addr, &m.u.cm.src_len, "127.1.1.1", 0);
	put_sin(m.u.cm.dst_addr, &m.u.cm.dst_len, "127.1.0.1", port);
	m.u.cm.timeout_ms = 2000;
	assert_int_equal(cm(a->fd, &m, SIB_CM_CMD_RESOLVE_ADDR, NULL), 0);
	e = expect(a->ch, EV_ADDR_RESOLVED);
	assert_int_equal(e.uid, 0xA0);
	assert_int_equal(e.id, *aid);
	assert_int_equal(e.dev_index, 1);
	assert_int_equal(cm(a->fd, &m, SIB_CM_CMD_RESOLVE_ROUTE, NULL), 0);
	expect(a->ch, EV_ROUTE_RESOLVED);
	memset(&m, 0, sizeof(m));
	m.u.cm.id = *aid;
	m.u.cm.conn = (struct sib_cm_conn){ .qp_num = a->qpn, .responder_resources = 1,
					    .initiator_depth = 1, .retry_count = 7,
					    .rnr_retry_count = 7, .qp_type = IBV_QPT_RC };
	memcpy(m.u.cm.pdata, "ping", 4);
	m.u.cm.pdata_len = 4;
	assert_int_equal(cm(a->fd, &m, SIB_CM_CMD_CONNECT, NULL), 0);
	e = expect(b->ch, EV_CONNECT_REQUEST);
	assert_int_equal(e.listen_id, l);
	assert_int_equal(e.listen_uid, 0xB0);
	assert_int_equal(e.conn.qp_num, a->qpn);
	assert_memory_equal(e.pdata, "ping", 4);
	*bid = e.id;
	memset(&m, 0, sizeof(m));
	m.u.cm.id = *bid;
	m.u.cm.uid = 0xB1;
	m.u.cm.conn = (struct sib_cm_conn){ .qp_num = b->qpn, .responder_resources = 1,
					    .initiator_depth = 1, .rnr_retry_count = 7 };
	assert_int_equal(cm(b->fd, &m, SIB_CM_CMD_ACCEPT, NULL), 0);
	e = expect(a->ch, EV_CONNECT_RESPONSE);
	assert_int_equal(e.conn.qp_num, b->qpn);
	memset(&m, 0, sizeof(m));
	m.u.cm.id = *aid;
	assert_int_equal(cm(a->fd, &m, SIB_CM_CMD_ACCEPT, NULL), 0); /* the RTU */
	e = expect(b->ch, EV_ESTABLISHED);
	assert_int_equal(e.uid, 0xB1);
	assert_int_equal(e.id, *bid);
	if (lout)
		*lout = l;
}

static void connect_pair(struct side *a, struct side *b, uint16_t port, uint32_t *aid,
			 uint32_t *bid)
{
	connect_pair3(a, b, port, aid, bid, NULL);
}

/* ---- tests ---- */

/* Wait (bounded) until softibd released every id of connections closed
 * before (it sees a close on its next loop turn). */
static void wait_no_ids(void)
{
	for (int i = 0; i < 250; i++) {
		char *st = status_text();
		long ids = field(st, "ucma ", "ids");

		free(st);
		if (ids == 0)
			return;
		usleep(20000);
	}
	fail_msg("ids left behind");
}

static void test_connect_disconnect(void **state)
{
	struct side a, b;
	struct sib_ctl_msg m;
	uint32_t aid, bid;
	char c;

	(void)state;
	wait_no_ids();
	side_open(&a, 1);
	side_open(&b, 0);
	connect_pair(&a, &b, 7471, &aid, &bid);
	/* an empty channel, non-blocking: EAGAIN */
	fcntl(a.ch, F_SETFL, fcntl(a.ch, F_GETFL) | O_NONBLOCK);
	assert_int_equal(recv(a.ch, &c, 1, 0), -1);
	assert_int_equal(errno, EAGAIN);
	/* INIT_QP_ATTR RTR names the peer's QP */
	memset(&m, 0, sizeof(m));
	m.u.cm.id = aid;
	m.u.cm.qp_state = IBV_QPS_RTR;
	assert_int_equal(cm(a.fd, &m, SIB_CM_CMD_INIT_QP_ATTR, NULL), 0);
	assert_int_equal(m.u.cm.qp_attr.dest_qp_num, b.qpn);
	/* DISCONNECT both ways */
	memset(&m, 0, sizeof(m));
	m.u.cm.id = aid;
	assert_int_equal(cm(a.fd, &m, SIB_CM_CMD_DISCONNECT, NULL), 0);
	expect(b.ch, EV_DISCONNECTED);
	m.u.cm.id = bid;
	assert_int_equal(cm(b.fd, &m, SIB_CM_CMD_DISCONNECT, NULL), 0);
	fcntl(a.ch, F_SETFL, fcntl(a.ch, F_GETFL) & ~O_NONBLOCK);
	expect(a.ch, EV_DISCONNECTED);
	/* DESTROY_ID reports the events written for the id */
	m.u.cm.id = aid;
	assert_int_equal(cm(a.fd, &m, SIB_CM_CMD_DESTROY_ID, NULL), 0);
	assert_true(m.u.cm.events_reported >= 4);
	assert_int_equal(cm(a.fd, &m, SIB_CM_CMD_DESTROY_ID, NULL), EBADF);
	side_close(&a);
	side_close(&b);
}

static void test_closed_connection(void **state)
{
	struct side a, b;
	uint32_t aid, bid;
	char *st;

	(void)state;
	wait_no_ids();
	side_open(&a, 1);
	side_open(&b, 0);
	connect_pair(&a, &b, 7472, &aid, &bid);
	side_close(&b); /* its process "died": a DREQ for its ids */
	expect(a.ch, EV_DISCONNECTED);
	st = status_text();
	assert_true(field(st, "ucma ", "ids") >= 1);
	assert_true(field(st, "rdma_cm ", "established") >= 2);
	free(st);
	side_close(&a);
	/* and then nothing is left of either */
	wait_no_ids();
	st = status_text();
	assert_int_equal(field(st, "ucma ", "channels"), 0);
	free(st);
}

static void test_channel_close_cleans(void **state)
{
	struct side a, b;
	uint32_t aid, bid;

	(void)state;
	wait_no_ids();
	side_open(&a, 1);
	side_open(&b, 0);
	connect_pair(&a, &b, 7473, &aid, &bid);
	close(b.ch); /* the channel's fd closes: its ids go */
	expect(a.ch, EV_DISCONNECTED);
	close(b.fd);
	side_close(&a);
}

/* A peer that dies in the middle of the handshake: the survivor sees
 * REJECTED, never a hang. */
static void test_dies_in_handshake(void **state)
{
	struct side a, b;
	struct sib_ctl_msg m;
	uint32_t aid, l;

	(void)state;
	wait_no_ids();
	side_open(&a, 1);
	side_open(&b, 0);
	assert_int_equal(create_id(b.fd, b.chan, 0xB0, &l), 0);
	memset(&m, 0, sizeof(m));
	m.u.cm.id = l;
	put_sin(m.u.cm.src_addr, &m.u.cm.src_len, "0.0.0.0", 7600);
	assert_int_equal(cm(b.fd, &m, SIB_CM_CMD_BIND, NULL), 0);
	assert_int_equal(cm(b.fd, &m, SIB_CM_CMD_LISTEN, NULL), 0);
	assert_int_equal(create_id(a.fd, a.chan, 0xA0, &aid), 0);
	memset(&m, 0, sizeof(m));
	m.u.cm.id = aid;
	put_sin(m.u.cm.src_addr, &m.u.cm.src_len, "127.1.1.1", 0);
	put_sin(m.u.cm.dst_addr, &m.u.cm.dst_len, "127.1.0.1", 7600);
	assert_int_equal(cm(a.fd, &m, SIB_CM_CMD_RESOLVE_ADDR, NULL), 0);
	expect(a.ch, EV_ADDR_RESOLVED);
	assert_int_equal(cm(a.fd, &m, SIB_CM_CMD_RESOLVE_ROUTE, NULL), 0);
	expect(a.ch, EV_ROUTE_RESOLVED);
	m.u.cm.conn.qp_num = a.qpn;
	assert_int_equal(cm(a.fd, &m, SIB_CM_CMD_CONNECT, NULL), 0);
	expect(b.ch, EV_CONNECT_REQUEST);
	side_close(&b); /* dies before answering */
	assert_int_equal(expect(a.ch, EV_REJECTED).status, 28);
	side_close(&a);
}

static void test_budget(void **state)
{
	uint32_t chan, id, n = 0;
	int fd, ch, st;

	(void)state;
	wait_no_ids();
	fd = hello_conn();
	ch = chan_open(fd, &chan);
	while ((st = create_id(fd, chan, n, &id)) == 0 && n < 5000)
		n++;
	assert_int_equal(n, 1024);
	assert_int_equal(st, EMFILE);
	/* another connection of the same process shares the budget */
	int fd2 = hello_conn();
	uint32_t chan2;
	int ch2 = chan_open(fd2, &chan2);

	assert_int_equal(create_id(fd2, chan2, 1, &id), EMFILE);
	close(ch2);
	close(fd2);
	close(ch);
	close(fd);
}

static void test_garbage(void **state)
{
	struct side a, b;
	struct sib_ctl_msg m;
	uint32_t id, l;
	char *st;
	long ids, bad;

	(void)state;
	wait_no_ids();
	side_open(&a, 1);
	side_open(&b, 0);
	assert_int_equal(create_id(a.fd, a.chan, 1, &id), 0);
	st = status_text();
	ids = field(st, "ucma ", "ids");
	bad = field(st, "ucma ", "bad_commands");
	free(st);
	memset(&m, 0, sizeof(m));
	m.u.cm.id = 12345;
	assert_int_equal(cm(a.fd, &m, SIB_CM_CMD_QUERY, NULL), EBADF);         /* no such id */
	m.u.cm.id = id;
	assert_int_equal(cm(b.fd, &m, SIB_CM_CMD_QUERY, NULL), EBADF);         /* not b's */
	assert_int_equal(cm(a.fd, &m, 0, NULL), EINVAL);                       /* no command */
	assert_int_equal(cm(a.fd, &m, 999, NULL), EINVAL);
	assert_int_equal(create_id(b.fd, a.chan, 1, &l), EBADF);               /* a's channel */
	m.u.cm.pdata_len = 100000;
	assert_int_equal(cm(a.fd, &m, SIB_CM_CMD_CONNECT, NULL), EINVAL);       /* length */
	m.u.cm.pdata_len = 0;
	m.u.cm.src_len = 200;
	assert_int_equal(cm(a.fd, &m, SIB_CM_CMD_BIND, NULL), EINVAL);
	m.u.cm.src_len = 0;
	m.u.cm.conn.qp_num = a.qpn;
	assert_int_equal(cm(a.fd, &m, SIB_CM_CMD_CONNECT, NULL), EINVAL);       /* no route */
	assert_int_equal(cm(a.fd, &m, SIB_CM_CMD_ACCEPT, NULL), EINVAL);        /* not passive */
	assert_int_equal(cm(a.fd, &m, SIB_CM_CMD_DISCONNECT, NULL), EINVAL);
	assert_int_equal(cm(a.fd, &m, SIB_CM_CMD_JOIN_MCAST, NULL), EINVAL);    /* no group */
	assert_int_equal(cm(a.fd, &m, SIB_CM_CMD_LEAVE_MCAST, NULL), EADDRNOTAVAIL); /* not joined */
	m.u.cm.optlen = 1000;
	assert_int_equal(cm(a.fd, &m, SIB_CM_CMD_SET_OPTION, NULL), EINVAL);
	m.u.cm.optlen = 0;
	m.u.cm.qp_state = 9;
	assert_int_equal(cm(a.fd, &m, SIB_CM_CMD_INIT_QP_ATTR, NULL), EINVAL);
	m.u.cm.channel = 777;
	assert_int_equal(cm(a.fd, &m, SIB_CM_CMD_CHANNEL_CLOSE, NULL), EBADF);
	assert_int_equal(cm(a.fd, &m, SIB_CM_CMD_MIGRATE_ID, NULL), EBADF);
	/* a QP that is not this process's: EINVAL even with a route */
	memset(&m, 0, sizeof(m));
	m.u.cm.id = id;
	put_sin(m.u.cm.src_addr, &m.u.cm.src_len, "127.1.1.1", 0); /* a's QP is on softib1 */
	put_sin(m.u.cm.dst_addr, &m.u.cm.dst_len, "127.1.0.1", 9);
	assert_int_equal(cm(a.fd, &m, SIB_CM_CMD_RESOLVE_ADDR, NULL), 0);
	expect(a.ch, EV_ADDR_RESOLVED);
	assert_int_equal(cm(a.fd, &m, SIB_CM_CMD_RESOLVE_ROUTE, NULL), 0);
	expect(a.ch, EV_ROUTE_RESOLVED);
	m.u.cm.conn.qp_num = 0xFFFFF0;
	assert_int_equal(cm(a.fd, &m, SIB_CM_CMD_CONNECT, NULL), EINVAL);
	m.u.cm.conn.qp_num = b.qpn; /* a QP of this process, on another device */
	assert_int_equal(cm(a.fd, &m, SIB_CM_CMD_CONNECT, NULL), EINVAL);
	m.u.cm.conn.qp_num = 0xFFFFF0;
	m.u.cm.conn.qp_type = IBV_QPT_UD; /* saying UD does not make an RC id's REQ unchecked */
	assert_int_equal(cm(a.fd, &m, SIB_CM_CMD_CONNECT, NULL), EINVAL);
	m.u.cm.conn.qp_type = IBV_QPT_RC;
	/* the id is still there and can connect: REJECTED 8 (nobody listens on 9) */
	m.u.cm.conn.qp_num = a.qpn;
	assert_int_equal(cm(a.fd, &m, SIB_CM_CMD_CONNECT, NULL), 0);
	assert_int_equal(expect(a.ch, EV_REJECTED).status, 8);
	st = status_text();
	assert_int_equal(field(st, "ucma ", "ids"), ids);
	assert_true(field(st, "ucma ", "bad_commands") > bad);
	free(st);
	side_close(&a);
	side_close(&b);
}

/* More events than the channel's socket holds: they wait in softibd and
 * all come, in order, as the library reads (never dropped). */
static void test_channel_queue(void **state)
{
	enum { N = 900 };
	struct sib_ctl_msg m;
	uint32_t chan, id;
	int fd, ch;
	char *st;

	(void)state;
	wait_no_ids();
	fd = hello_conn();
	ch = chan_open(fd, &chan);
	for (uint32_t i = 0; i < N; i++) {
		assert_int_equal(create_id(fd, chan, 1000 + i, &id), 0);
		memset(&m, 0, sizeof(m));
		m.u.cm.id = id;
		put_sin(m.u.cm.dst_addr, &m.u.cm.dst_len, "127.0.0.1", 1);
		assert_int_equal(cm(fd, &m, SIB_CM_CMD_RESOLVE_ADDR, NULL), 0);
	}
	st = status_text();
	assert_true(field(st, "ucma ", "events_waited") > 0);
	assert_true(field(st, "ucma ", "events_queued") > 0);
	free(st);
	for (uint32_t i = 0; i < N; i++) {
		struct sib_ctl_cm_event e = expect(ch, EV_ADDR_RESOLVED);

		assert_int_equal(e.uid, 1000 + i);
	}
	fcntl(ch, F_SETFL, fcntl(ch, F_GETFL) | O_NONBLOCK);
	char c;
	assert_int_equal(recv(ch, &c, 1, 0), -1);
	assert_int_equal(errno, EAGAIN);
	close(ch);
	close(fd);
}

/* Connect/disconnect cycles leave nothing behind in softibd. */
static void test_cycles(void **state)
{
	struct side a, b;
	struct sib_ctl_msg m;
	uint32_t aid, bid, l;
	char *st;

	(void)state;
	wait_no_ids();
	side_open(&a, 1);
	side_open(&b, 0);
	for (int i = 0; i < 500; i++) { /* issue 16: 500 cycles leak nothing */
		connect_pair3(&a, &b, (uint16_t)(9000 + i % 4), &aid, &bid, &l);
		memset(&m, 0, sizeof(m));
		m.u.cm.id = i % 2 ? aid : bid;
		assert_int_equal(cm(i % 2 ? a.fd : b.fd, &m, SIB_CM_CMD_DISCONNECT, NULL), 0);
		expect(i % 2 ? b.ch : a.ch, EV_DISCONNECTED);
		m.u.cm.id = i % 2 ? bid : aid;
		assert_int_equal(cm(i % 2 ? b.fd : a.fd, &m, SIB_CM_CMD_DISCONNECT, NULL), 0);
		expect(i % 2 ? a.ch : b.ch, EV_DISCONNECTED);
		m.u.cm.id = aid;
		assert_int_equal(cm(a.fd, &m, SIB_CM_CMD_DESTROY_ID, NULL), 0);
		m.u.cm.id = bid;
		assert_int_equal(cm(b.fd, &m, SIB_CM_CMD_DESTROY_ID, NULL), 0);
		m.u.cm.id = l;
		assert_int_equal(cm(b.fd, &m, SIB_CM_CMD_DESTROY_ID, NULL), 0);
		st = status_text();
		assert_int_equal(field(st, "ucma ", "ids"), 0);
		free(st);
	}
	side_close(&a);
	side_close(&b);
	wait_no_ids();
	st = status_text();
	assert_int_equal(field(st, "rdma_cm ", "ids"), 0);
	assert_int_equal(field(st, "ucma ", "channels"), 0);
	free(st);
}

/* Random SIB_CTL_CM bodies (commands in and out of range, real and random
 * handles, random addresses, lengths, options, states) from two
 * connections: softibd answers each, stays up, and nothing leaks once they
 * close.  The seed is printed (UCMA_SEED=N replays it). */
static void test_fuzz(void **state)
{
	const char *env = getenv("UCMA_SEED");
	unsigned int seed = env ? (unsigned int)strtoul(env, NULL, 0) : (unsigned int)now_ms();
	struct side a, b;
	uint32_t ids[16], nid = 0;
	struct sib_ctl_msg m;

	(void)state;
	wait_no_ids();
	printf("test_fuzz: UCMA_SEED=%u\n", seed);
	srand(seed);
	side_open(&a, 1);
	side_open(&b, 0);
	for (int i = 0; i < 4000; i++) {
		struct side *s = rand() % 2 ? &a : &b;
		uint8_t *body = (uint8_t *)&m.u.cm;

		memset(&m, 0, sizeof(m));
		for (size_t k = 0; k < sizeof(m.u.cm); k++)
			body[k] = (uint8_t)(rand() % 4 ? 0 : rand());
		m.u.cm.cmd = (uint32_t)(rand() % (SIB_CM_CMD_MAX + 2));
		m.u.cm.channel = rand() % 4 ? s->chan : (uint32_t)rand();
		m.u.cm.id = nid && rand() % 4 ? ids[rand() % nid] : (uint32_t)rand();
		m.u.cm.ps = rand() % 2 ? PS_TCP : 0x0111;
		m.u.cm.qp_type = rand() % 2 ? IBV_QPT_RC : IBV_QPT_UD;
		if (rand() % 2) {
			static const char *const ips[] = { "127.0.0.1", "127.1.0.1", "127.1.1.1",
							   "0.0.0.0", "10.0.0.1" };
			put_sin(m.u.cm.src_addr, &m.u.cm.src_len, ips[rand() % 5],
				(uint16_t)(7700 + rand() % 4));
			put_sin(m.u.cm.dst_addr, &m.u.cm.dst_len, ips[rand() % 5],
				(uint16_t)(7700 + rand() % 4));
		}
		if (rand() % 2) {
			m.u.cm.pdata_len %= 300;
			m.u.cm.optlen %= 80;
			m.u.cm.conn.qp_num = rand() % 2 ? s->qpn : m.u.cm.conn.qp_num;
		}
		if (m.u.cm.cmd == SIB_CM_CMD_CHANNEL_OPEN || m.u.cm.cmd == SIB_CM_CMD_CHANNEL_CLOSE)
			m.u.cm.cmd = SIB_CM_CMD_QUERY; /* keep the two channels */
		int rfd = -1;

		m.hdr.op = SIB_CTL_CM;
		assert_int_equal(sib_ctl_call(s->fd, &m, &rfd), 0);
		if (rfd >= 0)
			close(rfd);
		if (m.u.cm.cmd == SIB_CM_CMD_CREATE_ID && !m.hdr.status && nid < 16)
			ids[nid++] = m.u.cm.id;
		/* drain the channels now and then */
		if (i % 64 == 0)
			for (int k = 0; k < 2; k++) {
				struct side *t = k ? &b : &a;
				struct pollfd p = { .fd = t->ch, .events = POLLIN };

				while (poll(&p, 1, 0) == 1 && sib_ctl_recv(t->ch, &m, NULL) > 0)
					;
			}
	}
	side_close(&a);
	side_close(&b);
	wait_no_ids();
	char *st = status_text();
	assert_int_equal(field(st, "rdma_cm ", "ids"), 0);
	assert_int_equal(field(st, "ucma ", "channels"), 0);
	free(st);
}

/* A CA added at run time has its default address; removed, its ids get
 * DEVICE_REMOVAL (cma_remove_one) and its address is gone. */
static void test_device_removal(void **state)
{
	struct sib_ctl_msg m;
	uint32_t chan, id, idx;
	int fd, ch;
	char ip[32];

	(void)state;
	fd = hello_conn();
	memset(&m, 0, sizeof(m));
	m.hdr.op = SIB_CTL_DEVICE_ADD;
	strcpy(m.u.dev.name, "cmtest");
	assert_int_equal(sib_ctl_call(fd, &m, NULL), 0);
	assert_int_equal(m.hdr.status, 0);
	idx = m.u.dev.dev_index;
	snprintf(ip, sizeof(ip), "127.1.%u.1", idx);
	ch = chan_open(fd, &chan);
	assert_int_equal(create_id(fd, chan, 0x77, &id), 0);
	memset(&m, 0, sizeof(m));
	m.u.cm.id = id;
	put_sin(m.u.cm.src_addr, &m.u.cm.src_len, ip, 7800);
	assert_int_equal(cm(fd, &m, SIB_CM_CMD_BIND, NULL), 0);
	assert_int_equal(m.u.cm.dev_index, idx);
	memset(&m, 0, sizeof(m));
	m.hdr.op = SIB_CTL_DEVICE_REMOVE;
	strcpy(m.u.dev.name, "cmtest");
	assert_int_equal(sib_ctl_call(fd, &m, NULL), 0);
	assert_int_equal(m.hdr.status, 0);
	struct sib_ctl_cm_event e = expect(ch, EV_DEVICE_REMOVAL);
	assert_int_equal(e.uid, 0x77);
	memset(&m, 0, sizeof(m));
	m.u.cm.id = id;
	assert_int_equal(cm(fd, &m, SIB_CM_CMD_QUERY, NULL), 0);
	assert_int_equal(m.u.cm.dev_index, SIB_CM_NO_DEVICE);
	assert_int_equal(create_id(fd, chan, 0x78, &id), 0);
	m.u.cm.id = id;
	put_sin(m.u.cm.src_addr, &m.u.cm.src_len, ip, 7801);
	assert_int_equal(cm(fd, &m, SIB_CM_CMD_BIND, NULL), 0); /* now plain loopback */
	assert_int_equal(m.u.cm.dev_index, SIB_CM_NO_DEVICE);
	close(ch);
	close(fd);
}

/* MIGRATE_ID: the id's later events come on the new channel; it reports
 * the events written for the id so far. */
static void test_migrate(void **state)
{
	struct sib_ctl_msg m;
	uint32_t c1, c2, id;
	int fd, ch1, ch2;

	(void)state;
	fd = hello_conn();
	ch1 = chan_open(fd, &c1);
	ch2 = chan_open(fd, &c2);
	assert_int_equal(create_id(fd, c1, 0x55, &id), 0);
	memset(&m, 0, sizeof(m));
	m.u.cm.id = id;
	put_sin(m.u.cm.dst_addr, &m.u.cm.dst_len, "127.0.0.1", 5);
	assert_int_equal(cm(fd, &m, SIB_CM_CMD_RESOLVE_ADDR, NULL), 0);
	expect(ch1, EV_ADDR_RESOLVED);
	m.u.cm.channel = c2;
	assert_int_equal(cm(fd, &m, SIB_CM_CMD_MIGRATE_ID, NULL), 0);
	assert_int_equal(m.u.cm.events_reported, 1);
	assert_int_equal(cm(fd, &m, SIB_CM_CMD_RESOLVE_ROUTE, NULL), 0);
	assert_int_equal(expect(ch2, EV_ROUTE_RESOLVED).uid, 0x55);
	struct pollfd p = { .fd = ch1, .events = POLLIN };
	assert_int_equal(poll(&p, 1, 0), 0);
	/* closing the old channel leaves the id alone */
	m.u.cm.channel = c1;
	assert_int_equal(cm(fd, &m, SIB_CM_CMD_CHANNEL_CLOSE, NULL), 0);
	assert_int_equal(cm(fd, &m, SIB_CM_CMD_QUERY, NULL), 0);
	/* closing the new one destroys it */
	close(ch2);
	for (int i = 0; i < 250 && cm(fd, &m, SIB_CM_CMD_QUERY, NULL) == 0; i++)
		usleep(20000);
	assert_int_equal(cm(fd, &m, SIB_CM_CMD_QUERY, NULL), EBADF);
	close(ch1);
	close(fd);
}

/* --ip: addresses added on softibd's command line attach their device. */
static void test_ip_option(void **state)
{
	struct sib_ctl_msg m;
	uint32_t chan, id;
	int fd, ch;

	(void)state;
	fd = hello_conn();
	ch = chan_open(fd, &chan);
	assert_int_equal(create_id(fd, chan, 1, &id), 0);
	memset(&m, 0, sizeof(m));
	m.u.cm.id = id;
	put_sin(m.u.cm.src_addr, &m.u.cm.src_len, "10.7.0.9", 7000);
	assert_int_equal(cm(fd, &m, SIB_CM_CMD_BIND, NULL), EADDRNOTAVAIL);
	put_sin(m.u.cm.src_addr, &m.u.cm.src_len, "10.7.0.2", 7000);
	assert_int_equal(cm(fd, &m, SIB_CM_CMD_BIND, NULL), 0);
	assert_int_equal(m.u.cm.dev_index, 2);
	assert_int_equal(m.u.cm.port_num, 1);

	struct sockaddr_in6 s6 = { .sin6_family = AF_INET6, .sin6_port = htons(7000) };
	assert_int_equal(inet_pton(AF_INET6, "fd00::3", &s6.sin6_addr), 1);
	assert_int_equal(create_id(fd, chan, 2, &id), 0);
	memset(&m, 0, sizeof(m));
	m.u.cm.id = id;
	memcpy(m.u.cm.src_addr, &s6, sizeof(s6));
	m.u.cm.src_len = sizeof(s6);
	assert_int_equal(cm(fd, &m, SIB_CM_CMD_BIND, NULL), 0);
	assert_int_equal(m.u.cm.dev_index, 3);
	close(ch);
	close(fd);
}

/* One IPADDR round trip on fd: the reply's status; *io in and out. */
static int ipaddr(int fd, struct sib_ctl_ipaddr *io)
{
	struct sib_ctl_msg m;

	memset(&m, 0, sizeof(m));
	m.hdr.op = SIB_CTL_IPADDR;
	m.u.ipaddr = *io;
	assert_int_equal(sib_ctl_call(fd, &m, NULL), 0);
	if (!m.hdr.status)
		*io = m.u.ipaddr;
	return m.hdr.status;
}

static struct sib_ctl_ipaddr ia4(const char *dev, uint32_t port, uint32_t op, const char *ip,
				 uint8_t prefix)
{
	struct sib_ctl_ipaddr a = { .port = port, .op = op, .family = AF_INET, .prefix = prefix };

	snprintf(a.dev, sizeof(a.dev), "%s", dev);
	assert_int_equal(inet_pton(AF_INET, ip, a.addr), 1);
	return a;
}

/* IPADDR (sib_ctl.h): add, list, delete on a connection without HELLO; a
 * bind after the delete fails; hostile fields get errors and change
 * nothing; a removed device's addresses go. */
static void test_ipaddr(void **state)
{
	struct sib_ctl_ipaddr a;
	struct sib_ctl_msg m;
	uint32_t chan, id;
	int fd, fd0, ch;
	long n0;
	char *st;

	(void)state;
	st = status_text();
	n0 = field(st, "rdma_cm_addrs ", "added"); /* --ip's */
	free(st);
	assert_true(n0 >= 0);
	fd0 = sib_ctl_connect(daemon_socket());
	assert_true(fd0 >= 0);
	a = ia4("softib1", 1, SIB_IPADDR_ADD, "10.7.5.1", 24);
	assert_int_equal(ipaddr(fd0, &a), 0);
	assert_int_equal(ipaddr(fd0, &a), EEXIST);
	a = ia4("softib1", 1, SIB_IPADDR_GET, "0.0.0.0", 0);
	a.index = 2;
	assert_int_equal(ipaddr(fd0, &a), 0);
	assert_int_equal(a.family, AF_INET);
	assert_int_equal(a.prefix, 24);
	assert_int_equal(a.flags, 0);
	assert_int_equal(a.addr[2], 5);
	a.index = 0;
	assert_int_equal(ipaddr(fd0, &a), 0);
	assert_int_equal(a.flags, SIB_IPADDR_F_DEFAULT);
	assert_int_equal(a.addr[0], 127);
	a.index = 3;
	assert_int_equal(ipaddr(fd0, &a), ENOENT);
	/* it binds through the rdma_cm */
	fd = hello_conn();
	ch = chan_open(fd, &chan);
	assert_int_equal(create_id(fd, chan, 1, &id), 0);
	memset(&m, 0, sizeof(m));
	m.u.cm.id = id;
	put_sin(m.u.cm.src_addr, &m.u.cm.src_len, "10.7.5.1", 7100);
	assert_int_equal(cm(fd, &m, SIB_CM_CMD_BIND, NULL), 0);
	assert_int_equal(m.u.cm.dev_index, 1);
	/* hostile and wrong fields */
	a = ia4("softib1", 1, SIB_IPADDR_ADD, "10.7.5.2", 24);
	memset(a.dev, 'A', sizeof(a.dev));
	assert_int_equal(ipaddr(fd0, &a), EINVAL);
	a = ia4("nosuch", 1, SIB_IPADDR_ADD, "10.7.5.2", 24);
	assert_int_equal(ipaddr(fd0, &a), ENODEV);
	a = ia4("softib1", 0, SIB_IPADDR_ADD, "10.7.5.2", 24);
	assert_int_equal(ipaddr(fd0, &a), EINVAL);
	a = ia4("softib1", 9, SIB_IPADDR_GET, "10.7.5.2", 24);
	assert_int_equal(ipaddr(fd0, &a), EINVAL);
	a = ia4("softib1", 1, 99, "10.7.5.2", 24);
	assert_int_equal(ipaddr(fd0, &a), EINVAL);
	a = ia4("softib1", 1, SIB_IPADDR_ADD, "10.7.5.2", 24);
	a.family = 99;
	assert_int_equal(ipaddr(fd0, &a), EINVAL);
	a = ia4("softib1", 1, SIB_IPADDR_ADD, "10.7.5.2", 200);
	assert_int_equal(ipaddr(fd0, &a), EINVAL);
	a = ia4("softib1", 1, SIB_IPADDR_ADD, "0.0.0.0", 24);
	assert_int_equal(ipaddr(fd0, &a), EINVAL);
	a = ia4("softib1", 1, SIB_IPADDR_DEL, "127.1.1.1", SIB_IPADDR_PREFIX_ANY);
	assert_int_equal(ipaddr(fd0, &a), EPERM);
	a = ia4("softib2", 1, SIB_IPADDR_DEL, "10.7.5.1", SIB_IPADDR_PREFIX_ANY);
	assert_int_equal(ipaddr(fd0, &a), EADDRNOTAVAIL);
	memset(&m, 0, sizeof(m)); /* a header only: too short */
	m.hdr.op = SIB_CTL_IPADDR;
	m.hdr.magic = SIB_CTL_MAGIC;
	assert_int_equal(send(fd0, &m, sizeof(m.hdr), 0), (ssize_t)sizeof(m.hdr));
	assert_true(sib_ctl_recv(fd0, &m, NULL) > 0);
	assert_int_equal(m.hdr.status, EINVAL);
	st = status_text();
	assert_int_equal(field(st, "rdma_cm_addrs ", "added"), n0 + 1);
	assert_non_null(strstr(st, "rdma_cm_addr softib1:1 10.7.5.1/24\n"));
	free(st);
	/* delete: the bound id keeps it, a new bind fails */
	a = ia4("softib1", 1, SIB_IPADDR_DEL, "10.7.5.1", 24);
	assert_int_equal(ipaddr(fd0, &a), 0);
	memset(&m, 0, sizeof(m));
	m.u.cm.id = id;
	assert_int_equal(cm(fd, &m, SIB_CM_CMD_QUERY, NULL), 0);
	assert_int_equal(m.u.cm.dev_index, 1);
	assert_int_equal(create_id(fd, chan, 2, &id), 0);
	memset(&m, 0, sizeof(m));
	m.u.cm.id = id;
	put_sin(m.u.cm.src_addr, &m.u.cm.src_len, "10.7.5.1", 7101);
	assert_int_equal(cm(fd, &m, SIB_CM_CMD_BIND, NULL), EADDRNOTAVAIL);
	/* a removed device's addresses go with it */
	memset(&m, 0, sizeof(m));
	m.hdr.op = SIB_CTL_DEVICE_ADD;
	strcpy(m.u.dev.name, "iptest");
	assert_int_equal(sib_ctl_call(fd0, &m, NULL), 0);
	assert_int_equal(m.hdr.status, 0);
	a = ia4("iptest", 1, SIB_IPADDR_ADD, "10.7.6.1", 24);
	assert_int_equal(ipaddr(fd0, &a), 0);
	st = status_text();
	assert_int_equal(field(st, "rdma_cm_addrs ", "added"), n0 + 1);
	free(st);
	memset(&m, 0, sizeof(m));
	m.hdr.op = SIB_CTL_DEVICE_REMOVE;
	strcpy(m.u.dev.name, "iptest");
	assert_int_equal(sib_ctl_call(fd0, &m, NULL), 0);
	assert_int_equal(m.hdr.status, 0);
	st = status_text();
	assert_int_equal(field(st, "rdma_cm_addrs ", "added"), n0);
	free(st);
	close(ch);
	close(fd);
	close(fd0);
}

static int start(void **state)
{
	static const char *const args[] = {
		"--ip", "softib2:1=10.7.0.2/24", "--ip", "softib3:1=fd00::3/64", NULL,
	};

	daemon_options(args, 0);
	return start_daemon(state);
}

/* JOIN_MCAST through softibd: the SA's answer comes as MULTICAST_JOIN with
 * the group's cookie (listen_uid) and the group's AV; the connection
 * closing leaves the group (a SubnAdmDelete, counted). */
static void test_multicast(void **state)
{
	struct side a;
	struct sib_ctl_msg m;
	struct sib_ctl_cm_event e;
	uint32_t id;
	uint64_t leaves;
	char *st;

	(void)state;
	wait_no_ids();
	side_open(&a, 0);
	memset(&m, 0, sizeof(m));
	m.u.cm.channel = a.chan;
	m.u.cm.uid = 0x77;
	m.u.cm.ps = 0x0111; /* RDMA_PS_UDP */
	m.u.cm.qp_type = IBV_QPT_UD;
	assert_int_equal(cm(a.fd, &m, SIB_CM_CMD_CREATE_ID, NULL), 0);
	id = m.u.cm.id;
	memset(&m, 0, sizeof(m));
	m.u.cm.id = id;
	put_sin(m.u.cm.src_addr, &m.u.cm.src_len, "127.1.0.1", 0);
	assert_int_equal(cm(a.fd, &m, SIB_CM_CMD_BIND, NULL), 0);
	memset(&m, 0, sizeof(m));
	m.u.cm.id = id;
	m.u.cm.uid = 0xABC; /* the group's cookie */
	put_sin(m.u.cm.dst_addr, &m.u.cm.dst_len, "224.1.1.1", 0);
	m.u.cm.join_flags = 7; /* no such flag */
	assert_int_equal(cm(a.fd, &m, SIB_CM_CMD_JOIN_MCAST, NULL), EINVAL);
	m.u.cm.join_flags = 0;
	assert_int_equal(cm(a.fd, &m, SIB_CM_CMD_JOIN_MCAST, NULL), 0);
	e = expect(a.ch, 12 /* MULTICAST_JOIN */);
	assert_int_equal(e.status, 0);
	assert_int_equal(e.uid, 0x77);
	assert_int_equal(e.listen_uid, 0xABC);
	assert_int_equal(e.id, id);
	assert_int_equal(e.ud_qp_num, 0xFFFFFF);
	assert_int_equal(e.ud_qkey, 0x01234567);
	assert_true(e.ah.dlid >= 0xC000);
	assert_int_equal(e.ah.is_global, 1);
	assert_int_equal(e.ah.dgid[0], 0xff);
	st = status_text();
	assert_true(field(st, "rdma_cm_mcast ", "joined") >= 1);
	leaves = field(st, "rdma_cm_mcast ", "leaves");
	free(st);
	side_close(&a); /* the process "died": it leaves its groups */
	wait_no_ids();
	st = status_text();
	assert_int_equal(field(st, "rdma_cm_mcast ", "leaves"), leaves + 1);
	free(st);
}

/* A UD id that joins and leaves in a loop on a channel it never reads
 * (hostile review: softibd grew by ~400 bytes an event, without bound): a
 * leave drops its group's queued events, and a channel with
 * SIBD_UCMA_QUEUE_MAX events waiting takes no command that makes another
 * (ENOBUFS); reading them lets it go on. */
static void test_event_flood(void **state)
{
	enum { LOOPS = 3000, IDS = 24 };
	struct sib_ctl_msg m;
	uint32_t chan, id[IDS];
	int fd, ch, ret = 0;
	unsigned int joins = 0;
	char *st;

	(void)state;
	wait_no_ids();
	fd = hello_conn();
	ch = chan_open(fd, &chan);
	for (unsigned int i = 0; i < IDS; i++) {
		memset(&m, 0, sizeof(m));
		m.u.cm.channel = chan;
		m.u.cm.uid = 0x900 + i;
		m.u.cm.ps = 0x0111; /* RDMA_PS_UDP */
		m.u.cm.qp_type = IBV_QPT_UD;
		assert_int_equal(cm(fd, &m, SIB_CM_CMD_CREATE_ID, NULL), 0);
		id[i] = m.u.cm.id;
		memset(&m, 0, sizeof(m));
		m.u.cm.id = id[i];
		put_sin(m.u.cm.src_addr, &m.u.cm.src_len, "127.1.0.1", 0);
		assert_int_equal(cm(fd, &m, SIB_CM_CMD_BIND, NULL), 0);
	}
	for (unsigned int i = 0; i < LOOPS; i++) {
		memset(&m, 0, sizeof(m));
		m.u.cm.id = id[0];
		m.u.cm.uid = 0xABC;
		put_sin(m.u.cm.dst_addr, &m.u.cm.dst_len, "224.1.1.2", 0);
		assert_int_equal(cm(fd, &m, SIB_CM_CMD_JOIN_MCAST, NULL), 0);
		assert_int_equal(cm(fd, &m, SIB_CM_CMD_LEAVE_MCAST, NULL), 0);
	}
	st = status_text();
	assert_true(field(st, "ucma ", "events_queued") < 16);
	free(st);
	/* joins that stay: the queue fills to its bound, then ENOBUFS */
	for (unsigned int i = 0; i < IDS && !ret; i++)
		for (unsigned int g = 0; g < SIB_CMA_MC_MAX && !ret; g++) {
			char ip[32];

			snprintf(ip, sizeof(ip), "239.2.%u.%u", i, g + 1);
			memset(&m, 0, sizeof(m));
			m.u.cm.id = id[i];
			m.u.cm.uid = g;
			put_sin(m.u.cm.dst_addr, &m.u.cm.dst_len, ip, 0);
			ret = cm(fd, &m, SIB_CM_CMD_JOIN_MCAST, NULL);
			joins += !ret;
		}
	assert_int_equal(ret, ENOBUFS);
	st = status_text();
	assert_true(field(st, "ucma ", "events_queued") <= SIBD_UCMA_QUEUE_MAX);
	free(st);
	assert_true(joins >= SIBD_UCMA_QUEUE_MAX - 64); /* the socket holds some too */
	for (unsigned int i = 0; i < joins; i++)
		(void)expect(ch, 12 /* MULTICAST_JOIN */);
	assert_int_equal(cm(fd, &m, SIB_CM_CMD_JOIN_MCAST, NULL), 0); /* room again */
	close(ch);
	close(fd);
	wait_no_ids();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_connect_disconnect),
		cmocka_unit_test(test_closed_connection),
		cmocka_unit_test(test_channel_close_cleans),
		cmocka_unit_test(test_dies_in_handshake),
		cmocka_unit_test(test_budget),
		cmocka_unit_test(test_garbage),
		cmocka_unit_test(test_ip_option),
		cmocka_unit_test(test_ipaddr),
		cmocka_unit_test(test_multicast),
		cmocka_unit_test(test_event_flood),
		cmocka_unit_test(test_channel_queue),
		cmocka_unit_test(test_cycles),
		cmocka_unit_test(test_fuzz),
		cmocka_unit_test(test_device_removal),
		cmocka_unit_test(test_migrate),
	};

	return cmocka_run_group_tests(tests, start, stop_daemon);
}
