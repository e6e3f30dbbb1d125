/* SPDX-License-Identifier: MIT */
/*
 * SRQ and XRC through the built libibverbs against a private softibd
 * (src/hca/srq.c, src/daemon/xrcd.c): the device attributes, EBUSY for
 * an SRQ, PD or XRC domain in use, the SRQ limit event through
 * ibv_get_async_event / ibv_ack_async_event (destroy waits for the ack),
 * and XRC domains shared by file: one per device and file across
 * contexts and processes, refcounted, freed with the last opener, even
 * one that died (ibv_open_xrcd(3), the kernel's EAGAIN / EINVAL rules).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "verbs_harness.h"

static struct ibv_context *open_dev(const char *name)
{
	struct ibv_context *c = ibv_open_device(find_device(name));

	assert_non_null(c);
	return c;
}

static struct ibv_xrcd *xrcd_open(struct ibv_context *c, int fd, int oflags)
{
	struct ibv_xrcd_init_attr a = { .comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
					.fd = fd, .oflags = oflags };

	return ibv_open_xrcd(c, &a);
}

/* A fresh file for a domain; closed and removed by the caller. */
static int domain_file(char *path, size_t len)
{
	int fd;

	snprintf(path, len, "/tmp/softib-xrcd-test.XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	return fd;
}

static void test_device_attrs(void **state)
{
	struct ibv_context *c = open_dev("softib0");
	struct ibv_device_attr a;

	(void)state;
	assert_int_equal(ibv_query_device(c, &a), 0);
	assert_true(a.max_srq > 0);
	assert_true(a.max_srq_wr >= 1024);
	assert_true(a.max_srq_sge >= 1);
	assert_true(a.device_cap_flags & IBV_DEVICE_XRC);
	assert_false(a.device_cap_flags & IBV_DEVICE_SRQ_RESIZE); /* modify_srq's MAX_WR: EINVAL */
	assert_int_equal(ibv_close_device(c), 0);
}

/* One domain per device and file: O_EXCL finds it (EINVAL), an open
 * without O_CREAT joins it from another context, it lives while any
 * opener holds it and goes with the last (EAGAIN after); another device
 * has its own; a bad fd is EBADF; the other oflags are EINVAL. */
static void test_xrcd_shared_by_file(void **state)
{
	struct ibv_context *c1 = open_dev("softib0"), *c2 = open_dev("softib0"), *c3 = open_dev("softib1");
	struct ibv_xrcd *x1, *x2;
	char path[64];
	int fd = domain_file(path, sizeof(path));

	(void)state;
	assert_null(xrcd_open(c1, fd, 0));
	assert_int_equal(errno, EAGAIN);
	x1 = xrcd_open(c1, fd, O_CREAT);
	assert_non_null(x1);
	assert_null(xrcd_open(c2, fd, O_CREAT | O_EXCL));
	assert_int_equal(errno, EINVAL);
	x2 = xrcd_open(c2, fd, 0); /* the same domain, from another context */
	assert_non_null(x2);
	assert_null(xrcd_open(c3, fd, 0)); /* softib1 has none for this file */
	assert_int_equal(errno, EAGAIN);
	assert_int_equal(ibv_close_xrcd(x1), 0);
	x1 = xrcd_open(c1, fd, 0); /* still alive: x2 holds it */
	assert_non_null(x1);
	assert_int_equal(ibv_close_xrcd(x1), 0);
	assert_int_equal(ibv_close_xrcd(x2), 0);
	assert_null(xrcd_open(c1, fd, 0)); /* the last one closed: gone */
	assert_int_equal(errno, EAGAIN);
	assert_null(xrcd_open(c1, 1000, O_CREAT));
	assert_int_equal(errno, EBADF);
	assert_null(xrcd_open(c1, fd, O_CREAT | O_APPEND));
	assert_int_equal(errno, EINVAL);
	{
		int pfd = open(path, O_PATH); /* names the file, opens nothing: EBADF (kernel) */

		assert_true(pfd >= 0);
		assert_null(xrcd_open(c1, pfd, O_CREAT));
		assert_int_equal(errno, EBADF);
		close(pfd);
	}
	x1 = xrcd_open(c1, -1, 0); /* no file: a private domain */
	assert_non_null(x1);
	assert_int_equal(ibv_close_xrcd(x1), 0);
	close(fd);
	unlink(path);
	assert_int_equal(ibv_close_device(c1), 0);
	assert_int_equal(ibv_close_device(c2), 0);
	assert_int_equal(ibv_close_device(c3), 0);
}

/* The child of test_xrcd_freed_when_opener_dies, a process of its own
 * (exec'd, so with its own connection to softibd): open the domain of the
 * file at path and exit without closing anything. */
static int xrcd_child(const char *path)
{
	struct ibv_device **l = ibv_get_device_list(NULL);
	struct ibv_context *c = NULL;
	int fd = open(path, O_RDONLY);

	for (int i = 0; l && l[i] && !c; i++)
		if (!strcmp(ibv_get_device_name(l[i]), "softib0"))
			c = ibv_open_device(l[i]);
	_exit(fd >= 0 && c && xrcd_open(c, fd, O_CREAT) ? 0 : 1);
}

/* A process that dies holding a domain lets go of it with its connection. */
static void test_xrcd_freed_when_opener_dies(void **state)
{
	struct ibv_context *c;
	struct ibv_xrcd *xd;
	char path[64];
	int fd = domain_file(path, sizeof(path)), status;
	uint64_t end;
	pid_t pid;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		execl("/proc/self/exe", "test_verbs_srq", "--xrcd-child", path, (char *)NULL);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	c = open_dev("softib0");
	/* The child's domain existed (it exited after opening it); softibd
	 * frees it once it notices the closed connection: EAGAIN then. */
	end = now_ms() + 10000;
	while ((xd = xrcd_open(c, fd, 0)) && now_ms() < end) {
		assert_int_equal(ibv_close_xrcd(xd), 0);
		usleep(10000);
	}
	assert_null(xd);
	assert_int_equal(errno, EAGAIN);
	close(fd);
	unlink(path);
	assert_int_equal(ibv_close_device(c), 0);
}

/* EBUSY while in use: an SRQ with a QP on it, a domain with an SRQ or a
 * QP in it, a PD with an SRQ; all go in the right order. */
static void test_ebusy(void **state)
{
	struct ibv_context *c = open_dev("softib0");
	struct ibv_pd *pd = ibv_alloc_pd(c);
	struct ibv_cq *cq = ibv_create_cq(c, 16, NULL, NULL, 0);
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 8, .max_sge = 1 } };
	struct ibv_srq_init_attr_ex xa = { 0 };
	struct ibv_qp_init_attr_ex qa = { 0 };
	struct ibv_srq *srq, *xsrq;
	struct ibv_xrcd *xd;
	struct ibv_qp *qp, *tgt;
	uint32_t srqn = 0;

	(void)state;
	assert_true(pd && cq);
	srq = ibv_create_srq(pd, &sa);
	assert_non_null(srq);
	assert_ptr_equal(srq->context, c);
	assert_ptr_equal(srq->pd, pd);
	qa.qp_type = IBV_QPT_RC;
	qa.comp_mask = IBV_QP_INIT_ATTR_PD;
	qa.pd = pd;
	qa.send_cq = qa.recv_cq = cq;
	qa.srq = srq;
	qa.cap.max_send_wr = 4;
	qa.cap.max_send_sge = 1;
	qp = ibv_create_qp_ex(c, &qa);
	assert_non_null(qp);
	assert_int_equal(qa.cap.max_recv_wr, 0);
	assert_int_equal(ibv_destroy_srq(srq), EBUSY);

	xd = xrcd_open(c, -1, O_CREAT);
	assert_non_null(xd);
	xa.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_XRCD |
		       IBV_SRQ_INIT_ATTR_CQ;
	xa.srq_type = IBV_SRQT_XRC;
	xa.pd = pd;
	xa.xrcd = xd;
	xa.cq = cq;
	xa.attr.max_wr = 8;
	xa.attr.max_sge = 1;
	xsrq = ibv_create_srq_ex(c, &xa);
	assert_non_null(xsrq);
	assert_int_equal(ibv_get_srq_num(xsrq, &srqn), 0);
	assert_int_not_equal(srqn, 0);
	memset(&qa, 0, sizeof(qa));
	qa.qp_type = IBV_QPT_XRC_RECV;
	qa.comp_mask = IBV_QP_INIT_ATTR_XRCD;
	qa.xrcd = xd;
	tgt = ibv_create_qp_ex(c, &qa);
	assert_non_null(tgt);
	assert_int_equal(ibv_close_xrcd(xd), EBUSY);
	assert_int_equal(ibv_destroy_cq(cq), EBUSY);
	assert_int_equal(ibv_destroy_qp(tgt), 0);
	assert_int_equal(ibv_close_xrcd(xd), EBUSY); /* the XRC SRQ still */
	assert_int_equal(ibv_destroy_srq(xsrq), 0);
	assert_int_equal(ibv_close_xrcd(xd), 0);

	assert_int_equal(ibv_destroy_qp(qp), 0);
	assert_int_equal(ibv_dealloc_pd(pd), EBUSY); /* the SRQ */
	assert_int_equal(ibv_destroy_srq(srq), 0);
	assert_int_equal(ibv_destroy_cq(cq), 0);
	assert_int_equal(ibv_dealloc_pd(pd), 0);
	assert_int_equal(ibv_close_device(c), 0);
}

/* SRQ_LIMIT_REACHED reaches ibv_get_async_event naming the SRQ; destroy
 * returns once it is acknowledged. */
static void test_limit_async_event(void **state)
{
	struct pair p;
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 8, .max_sge = 1 } };
	struct ibv_qp_init_attr qa = { .cap = { .max_send_wr = 8, .max_send_sge = 1 }, .qp_type = IBV_QPT_RC };
	struct ibv_srq_attr lim = { .srq_limit = 3 }; /* 3 posted, one taken: 2 < 3 */
	struct ibv_sge sge;
	struct ibv_async_event ev;
	struct pollfd pfd;
	struct ibv_wc wc;
	struct end srv;
	struct ibv_srq *srq;

	(void)state;
	pair_open(&p, 1, NULL, NULL);
	srq = ibv_create_srq(p.e[1].pd, &sa);
	assert_non_null(srq);
	qa.send_cq = qa.recv_cq = p.e[1].cq;
	qa.srq = srq;
	srv = p.e[1];
	srv.qp = ibv_create_qp(p.e[1].pd, &qa);
	assert_non_null(srv.qp);
	/* e[0]'s QP is re-pointed at the SRQ QP. */
	{
		struct ibv_qp_attr r = { .qp_state = IBV_QPS_RESET };

		assert_int_equal(ibv_modify_qp(p.e[0].qp, &r, IBV_QP_STATE), 0);
	}
	qp_connect(&p.e[0], &srv, &default_opts);
	qp_connect(&srv, &p.e[0], &default_opts);
	for (unsigned int k = 0; k < 3; k++) {
		struct ibv_sge s = { .addr = (uintptr_t)p.e[1].buf + k * 64, .length = 64,
				     .lkey = p.e[1].mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = k, .sg_list = &s, .num_sge = 1 }, *bad;

		assert_int_equal(ibv_post_srq_recv(srq, &wr, &bad), 0);
	}
	assert_int_equal(ibv_modify_srq(srq, &lim, IBV_SRQ_LIMIT), 0);
	sge = (struct ibv_sge){ .addr = (uintptr_t)p.e[0].buf, .length = 16, .lkey = p.e[0].mr->lkey };
	assert_int_equal(post_send(&p.e[0], IBV_WR_SEND, 1, &sge, 1, IBV_SEND_SIGNALED, 0, 0, 0), 0);
	poll_one(p.e[0].cq, &wc, 5000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	poll_one(p.e[1].cq, &wc, 5000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.qp_num, srv.qp->qp_num);
	pfd = (struct pollfd){ .fd = p.e[1].ctx->async_fd, .events = POLLIN };
	assert_int_equal(poll(&pfd, 1, 5000), 1);
	assert_int_equal(ibv_get_async_event(p.e[1].ctx, &ev), 0);
	assert_int_equal(ev.event_type, IBV_EVENT_SRQ_LIMIT_REACHED);
	assert_ptr_equal(ev.element.srq, srq);
	ibv_ack_async_event(&ev);
	assert_int_equal(ibv_destroy_qp(srv.qp), 0);
	assert_int_equal(ibv_destroy_srq(srq), 0);
	pair_close(&p);
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--xrcd-child"))
		return xrcd_child(argv[2]);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_device_attrs),
		cmocka_unit_test(test_xrcd_shared_by_file),
		cmocka_unit_test(test_xrcd_freed_when_opener_dies),
		cmocka_unit_test(test_ebusy),
		cmocka_unit_test(test_limit_async_event),
	};

	return cmocka_run_group_tests(tests, start_daemon, stop_daemon);
}
