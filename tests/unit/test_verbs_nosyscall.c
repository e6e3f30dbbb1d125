/* SPDX-License-Identifier: MIT */
/*
 * ibv_post_send and ibv_poll_cq toward a peer never seen before make no
 * round trip to softibd and map nothing (issue 15, docs/link.md
 * "Destinations"): a fresh process sends a UD datagram to a QP of another
 * context with its application thread under a seccomp filter that traps
 * every system call but futex (waking the engine thread or the receiver),
 * sched_yield (ibv_poll_cq yields), clock_gettime, write to stderr (the
 * report) and the exits.  The first packet's miss is answered by the engine
 * thread, which the filter does not cover (it was started before).
 * Skipped where seccomp filters are not available, and under ASan (its
 * runtime makes system calls of its own inside the measured calls).
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "verbs_harness.h"

#define QKEY 0x11111111u
#define LEN  64u
#define SKIP 77

static volatile sig_atomic_t trapped;

/* SIGSYS from the filter: say which call (async-signal-safe: write). */
static void on_sigsys(int sig, siginfo_t *si, void *uc)
{
	char msg[64] = "trapped system call ";
	size_t n = strlen(msg);
	int nr = si->si_syscall;
	char d[12];
	int k = 0;

	(void)sig;
	(void)uc;
	trapped++;
	do
		d[k++] = (char)('0' + nr % 10);
	while ((nr /= 10) && k < 11);
	while (k)
		msg[n++] = d[--k];
	msg[n++] = '\n';
	(void)!write(2, msg, n);
}

#define ALLOW(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)

/* This thread (and threads it starts) from now on; 0 or -1 (unsupported). */
static int trap_syscalls(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW), /* another ABI: not judged */
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		ALLOW(SYS_futex),
		ALLOW(SYS_sched_yield),
		ALLOW(SYS_clock_gettime),
		ALLOW(SYS_rt_sigreturn),
		ALLOW(SYS_exit),
		ALLOW(SYS_exit_group),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_write, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 2, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };
	struct sigaction sa = { .sa_sigaction = on_sigsys, .sa_flags = SA_SIGINFO };

#if !defined(__x86_64__) || defined(__SANITIZE_ADDRESS__)
	return -1;
#endif
	if (sigaction(SIGSYS, &sa, NULL) || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		return -1;
	return 0;
}

static struct ibv_qp *ud_qp(struct end *e)
{
	struct ibv_qp_init_attr ia = {
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_UD,
		.send_cq = e->cq,
		.recv_cq = e->cq,
	};
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = QKEY };
	struct ibv_qp *qp = ibv_create_qp(e->pd, &ia);

	if (!qp || ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
		return NULL;
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		return NULL;
	a.qp_state = IBV_QPS_RTS;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN) ? NULL : qp;
}

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The fresh process: 0 sent and received with no trapped call, 1 a call
 * was trapped, 2 no completion in time, 3 setup failed, SKIP. */
static int child(void)
{
	struct ibv_ah_attr at = { .port_num = 1 };
	struct ibv_send_wr wr = { .wr_id = 1, .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_recv_wr rwr = { .wr_id = 2, .num_sge = 1 }, *rbad;
	struct ibv_sge sge, rsge;
	struct ibv_qp *qa, *qb;
	struct ibv_ah *ah;
	struct ibv_wc wc;
	struct end a, b;
	bool sent = false, got = false;
	uint64_t end;

	end_open(&a, "softib0", 1, 0);
	end_open(&b, "softib1", 1, 0);
	qa = ud_qp(&a);
	qb = ud_qp(&b);
	at.dlid = b.lid;
	ah = qa && qb ? ibv_create_ah(a.pd, &at) : NULL; /* a slow-path verb: may ask */
	if (!ah)
		return 3;
	sge = (struct ibv_sge){ .addr = (uintptr_t)a.buf, .length = LEN, .lkey = a.mr->lkey };
	rsge = (struct ibv_sge){ .addr = (uintptr_t)b.buf, .length = 40 + LEN, .lkey = b.mr->lkey };
	rwr.sg_list = &rsge;
	if (ibv_post_recv(qb, &rwr, &rbad))
		return 3;
	wr.sg_list = &sge;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = qb->qp_num;
	wr.wr.ud.remote_qkey = QKEY;
	if (trap_syscalls())
		return SKIP;
	/* From here on, the application thread as the issue sees it. */
	if (ibv_post_send(qa, &wr, &bad))
		return 3;
	for (end = mono_ms() + 10000; (!sent || !got) && mono_ms() < end;) {
		if (ibv_poll_cq(a.cq, 1, &wc) == 1)
			sent = wc.status == IBV_WC_SUCCESS && wc.wr_id == 1;
		if (ibv_poll_cq(b.cq, 1, &wc) == 1)
			got = wc.status == IBV_WC_SUCCESS && wc.wr_id == 2 && wc.byte_len == 40 + LEN;
	}
	if (trapped)
		return 1;
	return sent && got ? 0 : 2;
}

static void test_first_packet_no_syscall(void **state)
{
	uint64_t end = now_ms() + 30000;
	pid_t pid;
	int st = 0;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (!pid)
		_exit(child());
	while (waitpid(pid, &st, WNOHANG) == 0) {
		if (now_ms() > end) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			fail_msg("the child did not finish within 30 s");
		}
		usleep(10000);
	}
	assert_true(WIFEXITED(st));
	if (WEXITSTATUS(st) == SKIP)
		skip();
	assert_int_equal(WEXITSTATUS(st), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_first_packet_no_syscall),
	};

	return cmocka_run_group_tests(tests, start_daemon, stop_daemon);
}
