/* SPDX-License-Identifier: MIT */
/*
 * Pushed events, hot-plug and port state (docs/events.md) through the
 * drop-in libibverbs against a private softibd: port down/up gives every
 * context of the device PORT_ERR/PORT_ACTIVE and RC traffic over the downed
 * port ends in RETRY_EXC_ERR; device remove gives DEVICE_FATAL, flushes the
 * QPs, loses peers' packets and releases every QPN and inbox; device add
 * lists a new CA that carries traffic.  Seed 004: events arrive while the
 * application makes no verb call, and one CQ's completion handling never
 * runs on two threads at once.  A subscriber that never reads cannot slow
 * softibd down.  Every wait is bounded; the daemon is stopped by PID.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <infiniband/verbs.h>

#include "common/ctl.h"
#include "common/sib_ctl.h"
#include "hca/hca.h"

#include "daemon_fixture.h"
#include "status_text.h"

#define WAIT_MS  5000
#define BUF_SIZE 65536

struct end {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
	uint16_t lid;
};

/* ---- the daemon's commands ---- */

static int admin(uint16_t op, const char *name, uint32_t port, uint32_t action, uint32_t value)
{
	struct timeval tv = { .tv_sec = WAIT_MS / 1000 };
	struct sib_ctl_msg m = { .hdr.op = op };
	int fd = sib_ctl_connect(daemon_socket());

	assert_true(fd >= 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	snprintf(m.u.dev.name, sizeof(m.u.dev.name), "%s", name);
	m.u.dev.port_num = port;
	m.u.dev.action = action;
	m.u.dev.value = value;
	assert_int_equal(sib_ctl_call(fd, &m, NULL), 0);
	close(fd);
	return m.hdr.status;
}

static void port_set(const char *dev, int up)
{
	assert_int_equal(admin(SIB_CTL_PORT_SET, dev, 1, up ? SIB_PORT_UP : SIB_PORT_DOWN, 0), 0);
}

/*
 * One value from the status report: the number after " key=" on lines that
 * start with "line ", the largest if there are several, or with `newest` the
 * one on the last such line (clients are listed in connection order).
 */
static unsigned long status_scan(const char *line, const char *key, bool newest)
{
	struct timeval tv = { .tv_sec = WAIT_MS / 1000 };
	char *text, *l, *k, *eol, pat[64];
	unsigned long v = 0, x;
	bool found = false;
	int fd = sib_ctl_connect(daemon_socket());

	assert_true(fd >= 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	assert_int_equal(sib_ctl_status(fd, &text), 0);
	close(fd);
	snprintf(pat, sizeof(pat), " %s=", key);
	for (l = text; *l; l = eol + 1) {
		eol = strchrnul(l, '\n');
		if (!strncmp(l, line, strlen(line)) && l[strlen(line)] == ' ' &&
		    (k = strstr(l, pat)) && k < eol) {
			x = strtoul(k + strlen(pat), NULL, 10);
			v = !found || newest || x > v ? x : v;
			found = true;
		}
		if (!*eol)
			break;
	}
	free(text);
	if (!found)
		fail_msg("no %s=... on a '%s' line of the status", key, line);
	return v;
}

static unsigned long status_value(const char *line, const char *key)
{
	return status_scan(line, key, false);
}

/*
 * A value of the test's own lazy subscriber: the newest one.  Not the
 * largest: the library's event connection of this process subscribed
 * first, lives across tests and drops events too when its reader thread is
 * starved (the storm on a loaded machine).
 */
static unsigned long lazy_value(const char *key)
{
	return status_scan("subscriber", key, true);
}

/* ---- verbs helpers ---- */

static struct ibv_device *find_device(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL), *d = NULL;

	assert_non_null(list);
	for (int i = 0; list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			d = list[i];
	ibv_free_device_list(list);
	return d;
}

static struct ibv_context *open_dev(const char *name)
{
	struct ibv_device *d = find_device(name);
	struct ibv_context *ctx;

	if (!d)
		fail_msg("device %s not listed", name);
	ctx = ibv_open_device(d);
	assert_non_null(ctx);
	return ctx;
}

static void end_open(struct end *e, const char *dev)
{
	struct ibv_port_attr pa;
	struct ibv_qp_init_attr ia = {
		.cap = { .max_send_wr = 256, .max_recv_wr = 256, .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = 1,
	};

	e->ctx = open_dev(dev);
	e->pd = ibv_alloc_pd(e->ctx);
	assert_non_null(e->pd);
	e->cq = ibv_create_cq(e->ctx, 4096, NULL, NULL, 0);
	assert_non_null(e->cq);
	e->buf = calloc(1, BUF_SIZE);
	assert_non_null(e->buf);
	e->mr = ibv_reg_mr(e->pd, e->buf, BUF_SIZE, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(e->mr);
	ia.send_cq = ia.recv_cq = e->cq;
	e->qp = ibv_create_qp(e->pd, &ia);
	assert_non_null(e->qp);
	assert_int_equal(ibv_query_port(e->ctx, 1, &pa), 0);
	e->lid = pa.lid;
}

/*
 * RC connect with an ACK timeout of 67 ms and 3 retries: retry exceeded in
 * about 270 ms, long enough for a loaded machine running ASan.
 */
static void qp_connect(struct end *self, const struct end *peer)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1 };

	assert_int_equal(ibv_modify_qp(self->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				       IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = peer->qp->qp_num;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	a.ah_attr.dlid = peer->lid;
	a.ah_attr.port_num = 1;
	assert_int_equal(ibv_modify_qp(self->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				       IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 3;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	assert_int_equal(ibv_modify_qp(self->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
				       IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
				       IBV_QP_MAX_QP_RD_ATOMIC), 0);
}

static void pair_open(struct end *a, const char *da, struct end *b, const char *db)
{
	end_open(a, da);
	end_open(b, db);
	qp_connect(a, b);
	qp_connect(b, a);
}

static void end_close(struct end *e)
{
	assert_int_equal(ibv_destroy_qp(e->qp), 0);
	assert_int_equal(ibv_dereg_mr(e->mr), 0);
	assert_int_equal(ibv_destroy_cq(e->cq), 0);
	assert_int_equal(ibv_dealloc_pd(e->pd), 0);
	assert_int_equal(ibv_close_device(e->ctx), 0);
	free(e->buf);
}

static void post_recv(struct end *e, uint64_t wr_id)
{
	struct ibv_sge sge = { .addr = (uintptr_t)e->buf, .length = 64, .lkey = e->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad;

	assert_int_equal(ibv_post_recv(e->qp, &wr, &bad), 0);
}

static void post_send(struct end *e, uint64_t wr_id)
{
	struct ibv_sge sge = { .addr = (uintptr_t)e->buf + 1024, .length = 64, .lkey = e->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND }, *bad;

	assert_int_equal(ibv_post_send(e->qp, &wr, &bad), 0);
}

static void poll_one(struct ibv_cq *cq, struct ibv_wc *wc)
{
	uint64_t end = now_ms() + WAIT_MS;
	int n;

	while ((n = ibv_poll_cq(cq, 1, wc)) == 0)
		if (now_ms() > end)
			fail_msg("no completion within %d ms", WAIT_MS);
	assert_int_equal(n, 1);
}

static void expect_wc(struct end *e, uint64_t wr_id, enum ibv_wc_status status)
{
	struct ibv_wc wc;

	poll_one(e->cq, &wc);
	if (wc.status != status)
		fail_msg("wr %llu: %s, expected %s", (unsigned long long)wc.wr_id,
			 ibv_wc_status_str(wc.status), ibv_wc_status_str(status));
	assert_int_equal(wc.wr_id, wr_id);
}

/* A SEND each way on a connected pair works. */
static void ping(struct end *a, struct end *b)
{
	post_recv(b, 11);
	post_recv(a, 12);
	post_send(a, 21);
	expect_wc(a, 21, IBV_WC_SUCCESS);
	expect_wc(b, 11, IBV_WC_SUCCESS);
	post_send(b, 22);
	expect_wc(b, 22, IBV_WC_SUCCESS);
	expect_wc(a, 12, IBV_WC_SUCCESS);
}

/*
 * The next async event of ctx, waited for in poll() only: while the test
 * thread waits it makes no verb call, so an event that arrives was raised
 * by another thread, never inside a verb of ours (seed 004).
 */
static enum ibv_event_type next_event(struct ibv_context *ctx, int *port)
{
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
	struct ibv_async_event ev;

	if (poll(&pfd, 1, WAIT_MS) != 1)
		fail_msg("no async event within %d ms", WAIT_MS);
	assert_int_equal(ibv_get_async_event(ctx, &ev), 0);
	if (port)
		*port = ev.element.port_num;
	ibv_ack_async_event(&ev);
	return ev.event_type;
}

static void expect_event(struct ibv_context *ctx, enum ibv_event_type type)
{
	int port;
	enum ibv_event_type got = next_event(ctx, &port);

	if (got != type)
		fail_msg("event %s, expected %s", ibv_event_type_str(got), ibv_event_type_str(type));
	if (type != IBV_EVENT_DEVICE_FATAL)
		assert_int_equal(port, 1);
}

static void expect_no_event(struct ibv_context *ctx, int ms)
{
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };

	assert_int_equal(poll(&pfd, 1, ms), 0);
}

/* ---- port down and up ---- */

static void test_port_down_up(void **state)
{
	struct end a, b, c, d;
	struct ibv_context *other;
	struct ibv_port_attr pa;

	(void)state;
	pair_open(&a, "softib0", &b, "softib1");
	other = open_dev("softib0"); /* a second context of the same device */
	ping(&a, &b);

	port_set("softib0", 0);
	/* Every context of softib0 hears it, softib1's do not. */
	expect_event(a.ctx, IBV_EVENT_PORT_ERR);
	expect_event(other, IBV_EVENT_PORT_ERR);
	expect_no_event(b.ctx, 100);
	assert_int_equal(ibv_query_port(a.ctx, 1, &pa), 0);
	assert_int_equal(pa.state, IBV_PORT_DOWN);
	assert_int_equal(pa.phys_state, 3); /* Disabled */
	assert_int_equal(pa.lid, a.lid);

	/* Traffic from the downed port, and to it, is lost: retry exceeded. */
	post_recv(&b, 1);
	post_send(&a, 2);
	expect_wc(&a, 2, IBV_WC_RETRY_EXC_ERR);
	post_send(&b, 3);
	expect_wc(&b, 3, IBV_WC_RETRY_EXC_ERR);
	assert_true(to_sctx(a.ctx)->port_down_drops + to_sctx(b.ctx)->port_down_drops > 0);

	/* The same state again is no change: no event. */
	port_set("softib0", 0);
	expect_no_event(a.ctx, 100);

	port_set("softib0", 1);
	expect_event(a.ctx, IBV_EVENT_PORT_ACTIVE);
	expect_event(other, IBV_EVENT_PORT_ACTIVE);
	assert_int_equal(ibv_query_port(other, 1, &pa), 0);
	assert_int_equal(pa.state, IBV_PORT_ACTIVE);
	assert_int_equal(pa.phys_state, 5); /* LinkUp */
	expect_no_event(b.ctx, 50);

	/* After up, a new connection works. */
	pair_open(&c, "softib0", &d, "softib1");
	ping(&c, &d);
	end_close(&c);
	end_close(&d);
	end_close(&a);
	end_close(&b);
	assert_int_equal(ibv_close_device(other), 0);
	assert_int_equal(admin(SIB_CTL_PORT_SET, "softib0", 2, 0, 0), EINVAL);
	assert_int_equal(admin(SIB_CTL_PORT_SET, "nosuch", 1, 0, 0), ENODEV);
}

/* LID and SM LID changes, as an SM would make them. */
static void test_lid_sm_change(void **state)
{
	struct ibv_port_attr pa;
	struct end a, b;

	(void)state;
	pair_open(&a, "softib3", &b, "softib0");
	assert_int_equal(admin(SIB_CTL_PORT_SET, "softib3", 1, SIB_PORT_LID, 100), 0);
	expect_event(a.ctx, IBV_EVENT_LID_CHANGE);
	expect_no_event(b.ctx, 50);
	assert_int_equal(ibv_query_port(a.ctx, 1, &pa), 0);
	assert_int_equal(pa.lid, 100);
	assert_int_equal(pa.state, IBV_PORT_ACTIVE);
	assert_int_equal(admin(SIB_CTL_PORT_SET, "softib3", 1, SIB_PORT_LID, b.lid), EADDRINUSE);
	assert_int_equal(admin(SIB_CTL_PORT_SET, "softib3", 1, SIB_PORT_LID, 0xc000), EINVAL);
	assert_int_equal(admin(SIB_CTL_PORT_SET, "softib3", 1, SIB_PORT_SM_LID, 7), 0);
	expect_event(a.ctx, IBV_EVENT_SM_CHANGE);
	assert_int_equal(ibv_query_port(a.ctx, 1, &pa), 0);
	assert_int_equal(pa.sm_lid, 7);
	assert_int_equal(admin(SIB_CTL_PORT_SET, "softib3", 1, 9, 0), EINVAL);

	/* The old LID leads nowhere now: b's sends to it are lost. */
	post_send(&b, 1);
	expect_wc(&b, 1, IBV_WC_RETRY_EXC_ERR);
	end_close(&b);
	end_close(&a);
	/* The new one carries traffic. */
	pair_open(&a, "softib3", &b, "softib0");
	assert_int_equal(a.lid, 100);
	ping(&a, &b);
	assert_int_equal(admin(SIB_CTL_PORT_SET, "softib3", 1, SIB_PORT_LID, 5), 0);
	assert_int_equal(admin(SIB_CTL_PORT_SET, "softib3", 1, SIB_PORT_SM_LID, 1), 0);
	expect_event(a.ctx, IBV_EVENT_LID_CHANGE);
	expect_event(a.ctx, IBV_EVENT_SM_CHANGE);
	end_close(&b);
	end_close(&a);
}

/* ---- hot-plug ---- */

static void test_device_add_remove(void **state)
{
	unsigned long inboxes = status_value("resources", "inboxes");
	unsigned long qpns = status_value("resources", "qpns");
	struct ibv_device **list;
	struct ibv_context *second;
	struct ibv_port_attr pa;
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_RESET };
	struct end a, h;
	int n;

	(void)state;
	assert_null(find_device("hp0"));
	assert_int_equal(admin(SIB_CTL_DEVICE_ADD, "hp0", 0, 0, 0), 0);
	assert_int_equal(admin(SIB_CTL_DEVICE_ADD, "hp0", 0, 0, 0), EEXIST);
	assert_int_equal(admin(SIB_CTL_DEVICE_ADD, "bad name", 0, 0, 0), EINVAL);
	/* names that cannot be a directory of their own, or hidden: the system
	 * view makes sys/class/infiniband/<name> (hostile review of issue 17) */
	assert_int_equal(admin(SIB_CTL_DEVICE_ADD, ".", 0, 0, 0), EINVAL);
	assert_int_equal(admin(SIB_CTL_DEVICE_ADD, "..", 0, 0, 0), EINVAL);
	assert_int_equal(admin(SIB_CTL_DEVICE_ADD, ".hidden", 0, 0, 0), EINVAL);

	/* Listed now, with a LID of its own and its port ACTIVE; traffic works. */
	pair_open(&a, "softib0", &h, "hp0");
	second = open_dev("hp0");
	assert_int_equal(ibv_query_port(h.ctx, 1, &pa), 0);
	assert_int_equal(pa.state, IBV_PORT_ACTIVE);
	assert_true(pa.lid > 5);
	ping(&a, &h);
	assert_int_equal(status_value("resources", "qpns"), qpns + 2);
	assert_int_equal(status_value("resources", "inboxes"), inboxes + 3);

	/* Work outstanding on the CA when it goes. */
	post_recv(&h, 31);
	post_recv(&h, 32);
	assert_int_equal(admin(SIB_CTL_DEVICE_REMOVE, "hp0", 0, 0, 0), 0);
	assert_int_equal(admin(SIB_CTL_DEVICE_REMOVE, "hp0", 0, 0, 0), ENODEV);

	/* Every context on it gets DEVICE_FATAL; softib0's does not. */
	expect_event(h.ctx, IBV_EVENT_DEVICE_FATAL);
	expect_event(second, IBV_EVENT_DEVICE_FATAL);
	expect_no_event(a.ctx, 50);
	/* Its QP is in error: posted WRs flush, and so do later ones. */
	expect_wc(&h, 31, IBV_WC_WR_FLUSH_ERR);
	expect_wc(&h, 32, IBV_WC_WR_FLUSH_ERR);
	post_send(&h, 33);
	expect_wc(&h, 33, IBV_WC_WR_FLUSH_ERR);
	/* The peer's packets to it are lost: retry exceeded. */
	post_send(&a, 34);
	expect_wc(&a, 34, IBV_WC_RETRY_EXC_ERR);

	/* Verbs on the removed device fail as rdma-core's do after a fatal event. */
	errno = 0;
	assert_null(ibv_alloc_pd(h.ctx));
	assert_int_equal(errno, EIO);
	assert_null(ibv_create_cq(second, 16, NULL, NULL, 0));
	assert_int_equal(errno, EIO);
	assert_int_equal(ibv_modify_qp(h.qp, &qa, IBV_QP_STATE), EIO);
	assert_int_equal(ibv_query_port(h.ctx, 1, &pa), EIO);

	/* The daemon released its QPN and both inboxes already. */
	assert_int_equal(status_value("resources", "qpns"), qpns + 1);
	assert_int_equal(status_value("resources", "inboxes"), inboxes + 1);
	/* New lists do not have it. */
	assert_null(find_device("hp0"));
	list = ibv_get_device_list(&n);
	assert_non_null(list);
	assert_int_equal(n, 4);
	ibv_free_device_list(list);

	/* Destroying and closing still succeed (rdma-core treats EIO as done). */
	end_close(&h);
	assert_int_equal(ibv_close_device(second), 0);
	end_close(&a);
	assert_int_equal(status_value("resources", "qpns"), qpns);
	assert_int_equal(status_value("resources", "inboxes"), inboxes);
	assert_int_equal(status_value("totals", "devices"), 0);

	/* Added again: a new registration, a new device object; it works. */
	assert_int_equal(admin(SIB_CTL_DEVICE_ADD, "hp0", 0, 0, 0), 0);
	pair_open(&a, "softib1", &h, "hp0");
	ping(&a, &h);
	end_close(&h);
	end_close(&a);
	assert_int_equal(admin(SIB_CTL_DEVICE_REMOVE, "hp0", 0, 0, 0), 0);
	assert_int_equal(status_value("events", "devices_removed"), 2);
}

/* ---- seed 004: one CQ's completion handling on one thread at a time ---- */

#define CQ_MSGS 20000

struct cq_thread {
	struct end *e;
	struct ibv_comp_channel *ch;
	_Atomic int *done;
	unsigned int events;
	int err;
};

/* Poll, arm, and wait on the channel now and then, until every receive completed. */
static void *cq_worker(void *arg)
{
	struct cq_thread *t = arg;
	struct pollfd pfd = { .fd = t->ch->fd, .events = POLLIN };
	uint64_t end = now_ms() + 30000;
	struct ibv_wc wc[16];
	struct ibv_cq *ecq;
	void *ectx;
	int n;

	while (atomic_load(t->done) < CQ_MSGS && now_ms() < end) {
		n = ibv_poll_cq(t->e->cq, 16, wc);
		for (int i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS)
				t->err++;
			post_recv(t->e, wc[i].wr_id); /* keep the receive queue full */
		}
		if (n > 0) {
			atomic_fetch_add(t->done, n);
			continue;
		}
		/* Blocking side: arm, then wait briefly on the (non-blocking) channel. */
		ibv_req_notify_cq(t->e->cq, 0);
		if (poll(&pfd, 1, 1) == 1 && ibv_get_cq_event(t->ch, &ecq, &ectx) == 0)
			t->events++;
	}
	return NULL;
}

static void test_cq_handler_one_thread(void **state)
{
	struct end a, b;
	struct ibv_comp_channel *ch;
	struct cq_thread t[2];
	pthread_t tid[2];
	_Atomic int done = 0;
	struct ibv_qp_init_attr ia = {
		.cap = { .max_send_wr = 256, .max_recv_wr = 1024, .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_port_attr pa;
	unsigned int sent = 0, acked = 0;
	struct ibv_wc wc[32];

	(void)state;
	end_open(&a, "softib2");
	/* b's QP uses a CQ with a completion channel, receive-only traffic. */
	b.ctx = open_dev("softib3");
	b.pd = ibv_alloc_pd(b.ctx);
	b.buf = calloc(1, BUF_SIZE);
	b.mr = ibv_reg_mr(b.pd, b.buf, BUF_SIZE, IBV_ACCESS_LOCAL_WRITE);
	ch = ibv_create_comp_channel(b.ctx);
	assert_non_null(ch);
	assert_int_equal(fcntl(ch->fd, F_SETFL, O_NONBLOCK), 0);
	b.cq = ibv_create_cq(b.ctx, 4096, NULL, ch, 0);
	assert_non_null(b.cq);
	ia.send_cq = ia.recv_cq = b.cq;
	b.qp = ibv_create_qp(b.pd, &ia);
	assert_non_null(b.qp);
	assert_int_equal(ibv_query_port(b.ctx, 1, &pa), 0);
	b.lid = pa.lid;
	qp_connect(&a, &b);
	qp_connect(&b, &a);
	for (int i = 0; i < 512; i++)
		post_recv(&b, (uint64_t)i);

	for (int i = 0; i < 2; i++) {
		t[i] = (struct cq_thread){ .e = &b, .ch = ch, .done = &done };
		assert_int_equal(pthread_create(&tid[i], NULL, cq_worker, &t[i]), 0);
	}
	/* The sender keeps 128 in flight; the engine threads of both contexts
	 * and b's two pollers all run b's completion handling. */
	uint64_t end = now_ms() + 30000;
	while (acked < CQ_MSGS && now_ms() < end) {
		while (sent < CQ_MSGS && sent - acked < 128) {
			post_send(&a, sent);
			sent++;
		}
		int n = ibv_poll_cq(a.cq, 32, wc);

		for (int i = 0; i < n; i++)
			assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
		acked += (unsigned int)(n > 0 ? n : 0);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(tid[i], NULL);
	assert_int_equal(acked, CQ_MSGS);
	assert_true(atomic_load(&done) >= CQ_MSGS);
	assert_int_equal(t[0].err + t[1].err, 0);
	/* The rule: no push ever found another push of the same CQ running. */
	assert_int_equal(atomic_load(&to_scq(b.cq)->handler_overlaps), 0);
	ibv_ack_cq_events(b.cq, t[0].events + t[1].events);
	assert_int_equal(ibv_destroy_qp(b.qp), 0);
	assert_int_equal(ibv_destroy_cq(b.cq), 0);
	assert_int_equal(ibv_destroy_comp_channel(ch), 0);
	assert_int_equal(ibv_dereg_mr(b.mr), 0);
	assert_int_equal(ibv_dealloc_pd(b.pd), 0);
	assert_int_equal(ibv_close_device(b.ctx), 0);
	free(b.buf);
	end_close(&a);
}

/* ---- a subscriber that never reads ---- */

static int subscribe(void)
{
	struct sib_ctl_msg m = { .hdr.op = SIB_CTL_SUBSCRIBE };
	int fd = sib_ctl_connect(daemon_socket());

	assert_true(fd >= 0);
	m.u.subscribe.abi_version = SIB_ABI_VERSION;
	assert_int_equal(sib_ctl_call(fd, &m, NULL), 0);
	assert_int_equal(m.hdr.status, 0);
	return fd;
}

#define STORM_FLIPS 1500

static void test_event_storm(void **state)
{
	struct ibv_context *ctx = open_dev("softib2");
	int lazy = subscribe(), flips, port, nerr = 0, nact = 0, fd;
	enum ibv_event_type ev, last = IBV_EVENT_PORT_ACTIVE;
	struct sib_ctl_msg m = { .hdr.op = SIB_CTL_PORT_SET };
	struct timeval tv = { .tv_sec = WAIT_MS / 1000 };
	uint64_t t0 = now_ms(), worst = 0, t;
	uint32_t seq = 0, lost = 0;
	bool marker = false;

	(void)state;
	fd = sib_ctl_connect(daemon_socket());
	assert_true(fd >= 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	snprintf(m.u.dev.name, sizeof(m.u.dev.name), "softib2");
	m.u.dev.port_num = 1;
	for (flips = 0; flips < 2 * STORM_FLIPS; flips++) {
		t = now_ms();
		m.hdr.op = SIB_CTL_PORT_SET;
		m.u.dev.action = (uint32_t)(flips & 1);
		assert_int_equal(sib_ctl_call(fd, &m, NULL), 0);
		assert_int_equal(m.hdr.status, 0);
		worst = now_ms() - t > worst ? now_ms() - t : worst;
	}
	close(fd);
	/* The daemon stayed responsive: no round trip waited on the lazy client. */
	if (worst > 1000)
		fail_msg("a command took %llu ms during the storm", (unsigned long long)worst);
	assert_true(lazy_value("dropped") > 0);
	assert_true(lazy_value("queued") < SIB_EV_QUEUE_MAX);
	assert_true(status_value("events", "dropped") > 0);
	printf("storm: %d flips in %llu ms, worst round trip %llu ms\n", flips,
	       (unsigned long long)(now_ms() - t0), (unsigned long long)worst);

	/* The library kept up: PORT_ERR and PORT_ACTIVE alternate, ACTIVE last
	 * (its reader may still be busy: wait for the last one, bounded). */
	for (uint64_t end = now_ms() + WAIT_MS;;) {
		struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };

		if (poll(&pfd, 1, 200) != 1) {
			if ((nerr && last == IBV_EVENT_PORT_ACTIVE) || now_ms() > end)
				break;
			continue;
		}
		ev = next_event(ctx, &port);
		assert_int_equal(port, 1);
		assert_int_not_equal(ev, last);
		last = ev;
		if (ev == IBV_EVENT_PORT_ERR)
			nerr++;
		else if (ev == IBV_EVENT_PORT_ACTIVE)
			nact++;
		else
			fail_msg("unexpected %s", ibv_event_type_str(ev));
	}
	assert_true(nerr > 0);
	assert_int_equal(nerr, nact);
	assert_int_equal(last, IBV_EVENT_PORT_ACTIVE);

	/* The lazy one reads now: events in order, then one more change comes
	 * after an OVERFLOW marker that counts what it lost. */
	assert_int_equal(fcntl(lazy, F_SETFL, O_NONBLOCK), 0);
	for (uint64_t end = now_ms() + WAIT_MS, idle = 0; now_ms() < end && !marker;) {
		int n = sib_ctl_recv(lazy, &m, NULL);

		if (n == -EAGAIN) {
			/* Drained (nothing came for 100 ms: the daemon sent what it
			 * queued): now a change. */
			if (++idle == 100)
				port_set("softib2", 0);
			usleep(1000);
			continue;
		}
		assert_true(n > 0);
		idle = 0;
		assert_int_equal(m.hdr.op, SIB_CTL_EVENT);
		assert_int_equal(m.hdr.seq, seq + 1);
		seq = m.hdr.seq;
		if (m.u.event.type == SIB_EV_OVERFLOW) {
			lost = m.u.event.lost;
		} else if (lost) {
			assert_int_equal(m.u.event.type, SIB_EV_PORT_CHANGE);
			assert_int_equal(m.u.event.state, IBV_PORT_DOWN);
			assert_string_equal(m.u.event.name, "softib2");
			marker = true;
		}
	}
	assert_true(marker);
	assert_int_equal(lost, lazy_value("dropped"));
	close(lazy);
	port_set("softib2", 1);
	expect_event(ctx, IBV_EVENT_PORT_ERR);
	expect_event(ctx, IBV_EVENT_PORT_ACTIVE);
	assert_int_equal(ibv_close_device(ctx), 0);
}

/* The last events are lost to a subscriber that does not read: once it
 * reads its queue empty, an OVERFLOW marker still tells it so (the marker
 * does not wait for a next event that may never come). */
static void test_overflow_at_the_end(void **state)
{
	int older = subscribe(), lazy, flips;
	struct sib_ctl_msg m;
	uint32_t seq = 0, lost = 0, last_type = 0;
	unsigned long dropped;

	(void)state;
	/* An older subscriber that never reads and has dropped events already
	 * (as the library's own connection may have, starved in the storm): it
	 * must not be taken for the lazy one. */
	for (flips = 0; flips < 20000 && lazy_value("dropped") == 0; flips += 2) {
		port_set("softib2", 0);
		port_set("softib2", 1);
	}
	lazy = subscribe();
	/* Even flips: the port ends up, and the last ones are dropped. */
	for (flips = 0; flips < 20000; flips += 2) {
		port_set("softib2", 0);
		port_set("softib2", 1);
		if (flips % 200 == 0 && lazy_value("dropped") > 0)
			break;
	}
	for (int i = 0; i < 10; i++) {
		port_set("softib2", 0);
		port_set("softib2", 1);
	}
	dropped = lazy_value("dropped");
	assert_true(dropped > 0);
	assert_int_equal(fcntl(lazy, F_SETFL, O_NONBLOCK), 0);
	/* Read until the marker that accounts for every drop has come and the
	 * queue stays quiet a while (a starved daemon may drain late). */
	for (uint64_t end = now_ms() + WAIT_MS, idle = 0; now_ms() < end;) {
		int n = sib_ctl_recv(lazy, &m, NULL);

		if (n == -EAGAIN) {
			if (last_type == SIB_EV_OVERFLOW && lost >= dropped && ++idle >= 300)
				break;
			usleep(1000);
			continue;
		}
		assert_true(n > 0);
		idle = 0;
		assert_int_equal(m.hdr.op, SIB_CTL_EVENT);
		assert_int_equal(m.hdr.seq, seq + 1);
		seq = m.hdr.seq;
		last_type = m.u.event.type;
		if (last_type == SIB_EV_OVERFLOW)
			lost += m.u.event.lost;
	}
	if (last_type != SIB_EV_OVERFLOW || lost != dropped)
		fail_msg("after %u events the last is type %u; OVERFLOW markers counted %u lost, "
			 "softibd says %lu dropped", seq, last_type, lost, dropped);
	close(lazy);
	close(older);
}


/* LINK_FAULTS / LINK_CAPTURE on dev_index (port 0: every port). */
static int link_cmd(uint16_t op, uint32_t dev_index, const char *spec)
{
	struct sib_ctl_msg m = { .hdr.op = op };
	int fd = hello_conn();

	m.u.link.dev_index = dev_index;
	snprintf(m.u.link.spec, sizeof(m.u.link.spec), "%s", spec);
	assert_int_equal(sib_ctl_call(fd, &m, NULL), 0);
	close(fd);
	return m.hdr.status;
}

/* Does the status report have a line starting with `prefix`? */
static bool status_has(const char *prefix)
{
	struct timeval tv = { .tv_sec = WAIT_MS / 1000 };
	int fd = sib_ctl_connect(daemon_socket());
	char *text;
	bool found;

	assert_true(fd >= 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	assert_int_equal(sib_ctl_status(fd, &text), 0);
	close(fd);
	found = !strncmp(text, prefix, strlen(prefix)) || strstr(text, prefix);
	free(text);
	return found;
}

/* A device added in a removed device's slot inherits neither its faults
 * nor its capture arming, and a removed slot takes no link settings. */
static void test_removed_device_link_area(void **state)
{
	struct sib_ctl_msg m = { .hdr.op = SIB_CTL_DEVICE_ADD };
	int fd = hello_conn(), cfd = hello_conn(), ring = -1;
	uint32_t idx;

	(void)state;
	snprintf(m.u.dev.name, sizeof(m.u.dev.name), "lk0");
	assert_int_equal(sib_ctl_call(fd, &m, NULL), 0);
	assert_int_equal(m.hdr.status, 0);
	idx = m.u.dev.dev_index;
	assert_int_equal(link_cmd(SIB_CTL_LINK_FAULTS, idx, "loss=0.5"), 0);
	m = (struct sib_ctl_msg){ .hdr.op = SIB_CTL_LINK_CAPTURE };
	m.u.link.dev_index = idx;
	assert_int_equal(sib_ctl_call(cfd, &m, &ring), 0); /* held open: stays armed */
	assert_int_equal(m.hdr.status, 0);
	assert_true(status_has("link_port dev=lk0 port=1 capture=1 faults=seed=1,loss=0.5"));
	assert_int_equal(admin(SIB_CTL_DEVICE_REMOVE, "lk0", 0, 0, 0), 0);
	assert_false(status_has("link_port dev=lk0"));
	assert_int_equal(link_cmd(SIB_CTL_LINK_FAULTS, idx, "loss=0.5"), EINVAL);

	m = (struct sib_ctl_msg){ .hdr.op = SIB_CTL_DEVICE_ADD };
	snprintf(m.u.dev.name, sizeof(m.u.dev.name), "lk1");
	assert_int_equal(sib_ctl_call(fd, &m, NULL), 0);
	assert_int_equal(m.hdr.status, 0);
	assert_int_equal(m.u.dev.dev_index, idx); /* the slot is reused */
	assert_false(status_has("link_port dev=lk1"));
	assert_int_equal(admin(SIB_CTL_DEVICE_REMOVE, "lk1", 0, 0, 0), 0);
	if (ring >= 0)
		close(ring);
	close(cfd);
	close(fd);
}

/* After fork, the child's own contexts get events: its first open starts
 * a reader on a connection of its own (the parent's reader and connection
 * stay the parent's). */
static void test_fork_child_gets_events(void **state)
{
	struct ibv_context *parent = open_dev("softib1"); /* the reader runs */
	int ready[2], st = 0;
	pid_t pid;
	char c = 0;

	(void)state;
	assert_int_equal(pipe(ready), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct ibv_device **list = ibv_get_device_list(NULL);
		struct ibv_context *ctx = NULL;
		struct ibv_async_event ev;
		int code = 1;

		alarm(WAIT_MS / 1000 + 5);
		for (int i = 0; list && list[i]; i++)
			if (!strcmp(ibv_get_device_name(list[i]), "softib1"))
				ctx = ibv_open_device(list[i]);
		if (list)
			ibv_free_device_list(list);
		if (ctx && write(ready[1], "r", 1) == 1) {
			struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };

			code = 2;
			if (poll(&pfd, 1, WAIT_MS) == 1 && ibv_get_async_event(ctx, &ev) == 0) {
				code = ev.event_type == IBV_EVENT_PORT_ERR && ev.element.port_num == 1 ? 0 : 3;
				ibv_ack_async_event(&ev);
			}
			ibv_close_device(ctx);
		}
		_exit(code);
	}
	close(ready[1]);
	assert_int_equal(read(ready[0], &c, 1), 1);
	port_set("softib1", 0);
	assert_int_equal(waitpid(pid, &st, 0), pid); /* bounded: the child's alarm */
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	/* The parent's context still gets its own events. */
	expect_event(parent, IBV_EVENT_PORT_ERR);
	port_set("softib1", 1);
	expect_event(parent, IBV_EVENT_PORT_ACTIVE);
	close(ready[0]);
	assert_int_equal(ibv_close_device(parent), 0);
}

/* A child of fork() talks to softibd on its own connection: parent and
 * child call at the same time without crossing replies, and what the
 * child leaves behind goes with it while the parent's stays. */
static void test_fork_child_owns_its_objects(void **state)
{
	struct ibv_context *parent = open_dev("softib1");
	struct ibv_pd *ppd = ibv_alloc_pd(parent);
	unsigned long base;
	int st = 0;
	pid_t pid;

	(void)state;
	assert_non_null(ppd);
	base = status_value("totals", "pd");
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct ibv_device **list = ibv_get_device_list(NULL);
		struct ibv_context *ctx = NULL;

		alarm(WAIT_MS / 1000 + 5);
		for (int i = 0; list && list[i]; i++)
			if (!strcmp(ibv_get_device_name(list[i]), "softib0"))
				ctx = ibv_open_device(list[i]);
		if (!ctx)
			_exit(2);
		for (int i = 0; i < 300; i++) {
			struct ibv_pd *pd = ibv_alloc_pd(ctx);

			if (!pd || ibv_dealloc_pd(pd))
				_exit(3);
		}
		/* Left behind: softibd frees them when the child's connection closes. */
		_exit(ibv_alloc_pd(ctx) && ibv_create_cq(ctx, 16, NULL, NULL, 0) ? 0 : 4);
	}
	for (int i = 0; i < 300; i++) {
		struct ibv_pd *pd = ibv_alloc_pd(parent);

		assert_non_null(pd);
		assert_int_equal(ibv_dealloc_pd(pd), 0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid); /* bounded: the child's alarm */
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	for (uint64_t end = now_ms() + WAIT_MS; status_value("totals", "pd") != base;) {
		assert_true(now_ms() < end);
		usleep(10000);
	}
	assert_int_equal(ibv_dealloc_pd(ppd), 0);
	assert_int_equal(ibv_close_device(parent), 0);
}

/* Bad subscriptions and requests that are only ever pushed. */
static void test_subscribe_misuse(void **state)
{
	struct sib_ctl_msg m = { .hdr.op = SIB_CTL_SUBSCRIBE };
	int fd = sib_ctl_connect(daemon_socket());

	(void)state;
	assert_true(fd >= 0);
	m.u.subscribe.abi_version = SIB_ABI_VERSION + 1;
	assert_int_equal(sib_ctl_call(fd, &m, NULL), 0);
	assert_int_equal(m.hdr.status, EPROTO);
	assert_int_equal(m.u.subscribe.abi_version, SIB_ABI_VERSION);
	m = (struct sib_ctl_msg){ .hdr.op = SIB_CTL_SUBSCRIBE };
	m.u.subscribe.abi_version = SIB_ABI_VERSION;
	m.u.subscribe.mask = 1u << SIB_EV_TYPE_MAX;
	assert_int_equal(sib_ctl_call(fd, &m, NULL), 0);
	assert_int_equal(m.hdr.status, EINVAL);
	m = (struct sib_ctl_msg){ .hdr.op = SIB_CTL_EVENT };
	assert_int_equal(sib_ctl_call(fd, &m, NULL), 0);
	assert_int_equal(m.hdr.status, EINVAL);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_port_down_up),
		cmocka_unit_test(test_lid_sm_change),
		cmocka_unit_test(test_device_add_remove),
		cmocka_unit_test(test_cq_handler_one_thread),
		cmocka_unit_test(test_event_storm),
		cmocka_unit_test(test_overflow_at_the_end),
		cmocka_unit_test(test_removed_device_link_area),
		cmocka_unit_test(test_fork_child_gets_events),
		cmocka_unit_test(test_fork_child_owns_its_objects),
		cmocka_unit_test(test_subscribe_misuse),
	};

	return cmocka_run_group_tests(tests, start_daemon, stop_daemon);
}
