/* SPDX-License-Identifier: MIT */
/*
 * Privileged Q_Keys through the built library against a private softibd
 * (issue 14 item 5, docs/threat-model.md "Privilege"): softibd answers
 * SIB_CTL_CAPABLE from the connecting process's own capabilities (a child
 * that dropped CAP_NET_RAW is refused, a connection whose maker is gone
 * has none, whoever holds it now); a UD QP gets a controlled Q_Key (high
 * bit set, IBA 10.2.5) with CAP_NET_RAW, as uverbs gives it, and EPERM
 * without; datagrams between two QPs holding the GSI-style Q_Key
 * 0x80010000 flow when the WR asks for the QP's own, and one carrying
 * another Q_Key is dropped and counted.  The privileged half runs only
 * where the test has CAP_NET_RAW (root in CI).
 */
#include <errno.h>
#include <linux/capability.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "verbs_harness.h"

#define CQKEY 0x80010000u  /* a controlled Q_Key: ibacm's, the GSI's */
#define LEN   64
#define WAIT  3000

/* This thread's effective capability set (capget(2)), bits 0..63. */
static uint64_t cap_eff(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		return 0;
	return (uint64_t)d[1].effective << 32 | d[0].effective;
}

static bool have_net_raw(void)
{
	return (cap_eff() >> CAP_NET_RAW) & 1;
}

/* Clear CAP_NET_RAW from the effective set (it stays permitted). */
static int drop_net_raw(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		return -1;
	d[0].effective &= ~(1u << CAP_NET_RAW);
	return (int)syscall(SYS_capset, &h, d);
}

/* CAPABLE on connection fd: the reply's status (0, EPERM, EINVAL), or
 * -errno of the call. */
static int ask_capable(int fd, uint32_t cap)
{
	struct sib_ctl_msg m = { .hdr.op = SIB_CTL_CAPABLE };
	int rc;

	m.hdr.magic = SIB_CTL_MAGIC;
	m.u.capable.cap = cap;
	rc = sib_ctl_call(fd, &m, NULL);
	return rc ? rc : m.hdr.status;
}

/* Exit code of a forked child, -1 on a wait problem. */
static int child_status(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

/* softibd reads the capability itself: ours as we are, none for a child
 * that dropped it, none for a connection whose maker has exited, EINVAL
 * past bit 63. */
static void test_capable_command(void **state)
{
	int fd = sib_ctl_connect(daemon_socket()), sv[2];
	pid_t pid;

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(ask_capable(fd, CAP_NET_RAW), have_net_raw() ? 0 : EPERM);
	assert_int_equal(ask_capable(fd, 64), EINVAL);
	assert_int_equal(ask_capable(fd, 63), (cap_eff() >> 63) & 1 ? 0 : EPERM);

	/* a child without CAP_NET_RAW in its effective set, on its own connection */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int c = sib_ctl_connect(daemon_socket());

		if (c < 0 || drop_net_raw())
			_exit(2);
		_exit(ask_capable(c, CAP_NET_RAW) == EPERM ? 0 : 1);
	}
	assert_int_equal(child_status(pid), 0);

	/* a connection made by a process that has exited: whoever holds it
	 * now, softibd cannot know the maker's capabilities were its own */
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int c = sib_ctl_connect(daemon_socket());

		close(sv[0]);
		_exit(c < 0 || sib_ctl_send(sv[1], &(struct sib_ctl_msg){ .hdr.magic = SIB_CTL_MAGIC },
					    c) ? 1 : 0);
	}
	close(sv[1]);
	{
		struct sib_ctl_msg dummy;
		int passed = -1;

		assert_true(sib_ctl_recv(sv[0], &dummy, &passed) > 0);
		assert_true(passed >= 0);
		assert_int_equal(child_status(pid), 0);
		assert_int_equal(ask_capable(passed, CAP_NET_RAW), EPERM);
		close(passed);
	}
	close(sv[0]);
	close(fd);
}

/* A UD QP on e's PD and CQ, RESET. */
static struct ibv_qp *ud_create(struct ibv_pd *pd, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1 },
	};

	return ibv_create_qp(pd, &ia);
}

/* RESET -> INIT with Q_Key qkey: ibv_modify_qp's result. */
static int ud_init(struct ibv_qp *qp, uint32_t qkey)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = qkey };

	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY);
}

static void ud_rts(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTR };

	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
	a.qp_state = IBV_QPS_RTS;
	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN), 0);
}

/* The child's half: no CAP_NET_RAW, its own connection and context.
 * 0 when every refusal is EPERM and the rest works, else a step number. */
static int unprivileged_child(void)
{
	struct ibv_qp_attr a = { .qkey = CQKEY };
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;

	if (drop_net_raw() || have_net_raw())
		return 2;
	ctx = ibv_open_device(find_device("softib0"));
	if (!ctx)
		return 3;
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	qp = pd && cq ? ud_create(pd, cq) : NULL;
	if (!qp)
		return 4;
	if (ud_init(qp, CQKEY) != EPERM)
		return 5;
	if (ud_init(qp, 0x7fffffffu) != 0) /* the highest uncontrolled one */
		return 6;
	if (ibv_modify_qp(qp, &a, IBV_QP_QKEY) != EPERM) /* INIT -> INIT */
		return 7;
	a.qkey = 0x22222222u;
	if (ibv_modify_qp(qp, &a, IBV_QP_QKEY) != 0)
		return 8;
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return 0;
}

static void post_recv_ud(struct end *e, struct ibv_qp *qp, uint64_t id)
{
	struct ibv_sge sge = { .addr = (uintptr_t)e->buf, .length = 40 + LEN, .lkey = e->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 }, *bad;

	assert_int_equal(ibv_post_recv(qp, &wr, &bad), 0);
}

static void send_ud(struct end *e, struct ibv_qp *qp, struct ibv_ah *ah, uint32_t qpn, uint32_t qkey)
{
	struct ibv_sge sge = { .addr = (uintptr_t)e->buf + 4096, .length = LEN, .lkey = e->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 9, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;

	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = qpn;
	wr.wr.ud.remote_qkey = qkey;
	assert_int_equal(ibv_post_send(qp, &wr, &bad), 0);
	poll_one(e->cq, &wc, WAIT);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
}

/* With CAP_NET_RAW: the controlled Q_Key is taken and carried; without
 * (a child that dropped it): EPERM at RESET->INIT and INIT->INIT, while an
 * uncontrolled one works. */
static void test_controlled_qkey(void **state)
{
	struct ibv_ah_attr aa = { .port_num = 1 };
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qia;
	struct ibv_port_attr pa0, pa1;
	struct ibv_qp *a, *b;
	struct ibv_ah *ah;
	struct ibv_wc wc;
	struct end e[2];
	pid_t pid;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(unprivileged_child());
	assert_int_equal(child_status(pid), 0);

	if (!have_net_raw())
		skip(); /* the privileged half needs CAP_NET_RAW (root in CI) */
	end_open(&e[0], "softib0", 1, 0);
	end_open(&e[1], "softib1", 1, 0);
	a = ud_create(e[0].pd, e[0].cq);
	b = ud_create(e[1].pd, e[1].cq);
	assert_non_null(a);
	assert_non_null(b);
	assert_int_equal(ud_init(a, CQKEY), 0);
	assert_int_equal(ud_init(b, CQKEY), 0);
	assert_int_equal(ibv_query_qp(a, &qa, IBV_QP_QKEY, &qia), 0);
	assert_int_equal(qa.qkey, CQKEY);
	ud_rts(a);
	ud_rts(b);
	aa.dlid = e[1].lid;
	ah = ibv_create_ah(e[0].pd, &aa);
	assert_non_null(ah);

	/* the WR asks for the QP's own: CQKEY goes out, and b takes it */
	post_recv_ud(&e[1], b, 1);
	send_ud(&e[0], a, ah, b->qp_num, 0x80000000u);
	poll_one(e[1].cq, &wc, WAIT);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.src_qp, a->qp_num);
	assert_int_equal(wc.byte_len, 40 + LEN);
	/* a datagram with another Q_Key is dropped and counted at b's port */
	assert_int_equal(ibv_query_port(e[1].ctx, 1, &pa0), 0);
	post_recv_ud(&e[1], b, 2);
	send_ud(&e[0], a, ah, b->qp_num, 0x12345678u);
	for (uint64_t end = now_ms() + WAIT;;) {
		assert_int_equal(ibv_poll_cq(e[1].cq, 1, &wc), 0);
		assert_int_equal(ibv_query_port(e[1].ctx, 1, &pa1), 0);
		if (pa1.qkey_viol_cntr == pa0.qkey_viol_cntr + 1)
			break;
		assert_true(now_ms() < end);
	}
	/* RTS -> RTS may change it, still with the privilege */
	qa.qkey = CQKEY + 1;
	assert_int_equal(ibv_modify_qp(a, &qa, IBV_QP_QKEY), 0);

	assert_int_equal(ibv_destroy_ah(ah), 0);
	assert_int_equal(ibv_destroy_qp(a), 0);
	assert_int_equal(ibv_destroy_qp(b), 0);
	end_close(&e[0]);
	end_close(&e[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_capable_command),
		cmocka_unit_test(test_controlled_qkey),
	};

	return cmocka_run_group_tests(tests, start_daemon, stop_daemon);
}
