/* SPDX-License-Identifier: MIT */
/*
 * RC under link faults (docs/link.md): with SOFTIB_FAULTS giving 1% loss,
 * 1% duplication, 1% reordering and 1% corruption together (fixed seeds),
 * a stream of SENDs and a large RDMA WRITE deliver every byte exactly once
 * and in order, and `softib status` shows the faults, the ICRC drops and
 * the retransmissions.  Both ends live in this process (softib0, softib1),
 * against a private softibd; packets still cross the inboxes.
 * Usage: test_faults [MESSAGES]  (bench/faults_soak.sh runs it longer).
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <infiniband/verbs.h>

#include "common/ctl.h"

#define MSG_BYTES  3000u        /* 3 packets at MTU 1024 */
#define RQ_DEPTH   64u
#define WINDOW     32u          /* sends in flight */
#define WRITE_BYTES (1u << 20)
#define BUF_BYTES  ((RQ_DEPTH * MSG_BYTES + 2 * WRITE_BYTES + 4095) & ~4095u) /* aligned_alloc: whole pages */

static char tmpdir[64] = "/tmp/softib-faults.XXXXXX";
static pid_t daemon_pid;
static unsigned int messages = 2000;

struct end {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
	uint16_t lid;
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The bytes of message `seq`: a stream anyone can recompute. */
static void fill(uint8_t *p, uint32_t len, uint32_t seq)
{
	uint32_t x = seq * 2654435761u + 1;

	memcpy(p, &seq, sizeof(seq));
	for (uint32_t i = sizeof(seq); i < len; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		p[i] = (uint8_t)x;
	}
}

static struct ibv_device *find_device(const char *name)
{
	static struct ibv_device **list;
	int n;

	if (!list)
		list = ibv_get_device_list(&n);
	assert_non_null(list);
	for (int i = 0; list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			return list[i];
	fail_msg("device %s not found", name);
	return NULL;
}

static void end_open(struct end *e, const char *dev)
{
	struct ibv_port_attr pa;
	struct ibv_qp_init_attr ia = {
		.cap = { .max_send_wr = 64, .max_recv_wr = RQ_DEPTH, .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};

	e->ctx = ibv_open_device(find_device(dev));
	assert_non_null(e->ctx);
	e->pd = ibv_alloc_pd(e->ctx);
	e->cq = ibv_create_cq(e->ctx, 256, NULL, NULL, 0);
	e->buf = aligned_alloc(4096, BUF_BYTES);
	assert_true(e->pd && e->cq && e->buf);
	memset(e->buf, 0, BUF_BYTES);
	e->mr = ibv_reg_mr(e->pd, e->buf, BUF_BYTES, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	assert_non_null(e->mr);
	ia.send_cq = ia.recv_cq = e->cq;
	e->qp = ibv_create_qp(e->pd, &ia);
	assert_non_null(e->qp);
	assert_int_equal(ibv_query_port(e->ctx, 1, &pa), 0);
	e->lid = pa.lid;
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

static void connect_qp(struct end *self, const struct end *peer)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE };

	assert_int_equal(ibv_modify_qp(self->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				       IBV_QP_ACCESS_FLAGS), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = peer->qp->qp_num;
	a.rq_psn = 0xfffff0; /* wraps the 24-bit PSN early on */
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	a.ah_attr.dlid = peer->lid;
	a.ah_attr.port_num = 1;
	assert_int_equal(ibv_modify_qp(self->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				       IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
				       IBV_QP_MIN_RNR_TIMER), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 10; /* 4 ms: losses recover quickly */
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 0xfffff0;
	a.max_rd_atomic = 1;
	assert_int_equal(ibv_modify_qp(self->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				       IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC), 0);
}

static void post_recv(struct end *e, uint32_t slot)
{
	struct ibv_sge sge = { (uintptr_t)e->buf + slot * MSG_BYTES, MSG_BYTES, e->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = slot, .sg_list = &sge, .num_sge = 1 }, *bad;

	assert_int_equal(ibv_post_recv(e->qp, &wr, &bad), 0);
}

static void post_send(struct end *e, enum ibv_wr_opcode op, uint64_t wr_id, uint32_t off, uint32_t len,
		      uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sge = { (uintptr_t)e->buf + off, len, e->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	assert_int_equal(ibv_post_send(e->qp, &wr, &bad), 0);
}

/* One counter of the status line "link ... dev=DEV ...". */
static unsigned long long link_counter(const char *text, const char *dev, const char *key)
{
	char want[80], k[64];
	const char *l = text;

	snprintf(want, sizeof(want), " dev=%s ", dev);
	snprintf(k, sizeof(k), " %s=", key);
	while ((l = strstr(l, "\nlink "))) {
		const char *eol = strchr(l + 1, '\n'), *d = strstr(l, want), *v = strstr(l, k);

		if (d && (!eol || d < eol) && v && (!eol || v < eol))
			return strtoull(v + strlen(k), NULL, 10);
		l++;
	}
	fail_msg("no %s for %s in status:\n%s", key, dev, text);
	return 0;
}

static void test_rc_under_faults(void **state)
{
	struct end a, b;
	struct ibv_wc wc[16];
	uint32_t sent = 0, completed = 0, received = 0, writes_done = 0;
	uint64_t end = now_ms() + 100000;
	char *text = NULL;
	int fd;

	end_open(&a, "softib0");
	end_open(&b, "softib1");
	connect_qp(&a, &b);
	connect_qp(&b, &a);
	for (uint32_t i = 0; i < RQ_DEPTH; i++)
		post_recv(&b, i);

	/* A stream of SENDs a -> b, each checked on arrival, in order. */
	while (received < messages) {
		int n;

		while (sent < messages && sent - completed < WINDOW) {
			uint32_t off = RQ_DEPTH * MSG_BYTES + (sent % WINDOW) * MSG_BYTES;

			fill(a.buf + off, MSG_BYTES, sent);
			post_send(&a, IBV_WR_SEND, sent, off, MSG_BYTES, 0, 0);
			sent++;
		}
		n = ibv_poll_cq(a.cq, 16, wc);
		assert_true(n >= 0);
		for (int i = 0; i < n; i++) {
			assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
			assert_int_equal(wc[i].wr_id, completed); /* in order */
			completed++;
		}
		n = ibv_poll_cq(b.cq, 16, wc);
		assert_true(n >= 0);
		for (int i = 0; i < n; i++) {
			uint8_t expect[MSG_BYTES];
			uint32_t slot = (uint32_t)wc[i].wr_id;

			assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
			assert_int_equal(wc[i].opcode, IBV_WC_RECV);
			assert_int_equal(wc[i].byte_len, MSG_BYTES);
			assert_int_equal(slot, received % RQ_DEPTH);
			fill(expect, MSG_BYTES, received); /* exactly once, in order */
			assert_memory_equal(b.buf + slot * MSG_BYTES, expect, MSG_BYTES);
			memset(b.buf + slot * MSG_BYTES, 0, MSG_BYTES);
			received++;
			post_recv(&b, slot);
		}
		if (now_ms() > end)
			fail_msg("stuck: sent %u completed %u received %u", sent, completed, received);
	}
	while (completed < messages) {
		int n = ibv_poll_cq(a.cq, 16, wc);

		for (int i = 0; i < n; i++, completed++)
			assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
		if (now_ms() > end)
			fail_msg("sends not completed: %u of %u", completed, messages);
	}

	/* One large RDMA WRITE b -> a (RETH; 1024 packets), checked byte for byte. */
	uint32_t src = RQ_DEPTH * MSG_BYTES, dst = src + WRITE_BYTES;

	for (uint32_t i = 0; i < WRITE_BYTES; i += MSG_BYTES)
		fill(b.buf + src + i, i + MSG_BYTES <= WRITE_BYTES ? MSG_BYTES : WRITE_BYTES - i, 1000000 + i);
	post_send(&b, IBV_WR_RDMA_WRITE, 7, src, WRITE_BYTES, (uintptr_t)a.buf + dst, a.mr->rkey);
	while (!writes_done) {
		int n = ibv_poll_cq(b.cq, 16, wc);

		for (int i = 0; i < n; i++) {
			assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
			writes_done += wc[i].wr_id == 7;
		}
		ibv_poll_cq(a.cq, 16, wc); /* a's engine runs too */
		if (now_ms() > end)
			fail_msg("RDMA WRITE did not complete");
	}
	assert_memory_equal(a.buf + dst, b.buf + src, WRITE_BYTES);

	/* The faults happened, the receivers dropped the corrupted packets by
	 * their ICRC, and the requesters retransmitted.  Let the engine
	 * threads report their last counters (they do when idle). */
	usleep(300000);
	fd = sib_ctl_open(false);
	assert_true(fd >= 0);
	assert_int_equal(sib_ctl_status(fd, &text), 0);
	close(fd);
	unsigned long long loss = 0, corrupt = 0, icrc = 0, dup = 0, reorder = 0, retries = 0;
	const char *devs[] = { "softib0", "softib1" };

	for (int i = 0; i < 2; i++) {
		loss += link_counter(text, devs[i], "fault_loss");
		dup += link_counter(text, devs[i], "fault_dup");
		reorder += link_counter(text, devs[i], "fault_reorder");
		corrupt += link_counter(text, devs[i], "fault_corrupt");
		icrc += link_counter(text, devs[i], "rx_icrc_drops");
		retries += link_counter(text, devs[i], "ack_timeouts") + link_counter(text, devs[i], "seq_naks");
		assert_int_equal(link_counter(text, devs[i], "faults"), 1);
	}
	printf("messages=%u write=%u bytes: loss=%llu dup=%llu reorder=%llu corrupt=%llu icrc_drops=%llu "
	       "retransmissions=%llu\n", messages, WRITE_BYTES, loss, dup, reorder, corrupt, icrc, retries);
	assert_true(loss > 0 && dup > 0 && reorder > 0 && corrupt > 0);
	/* Every corrupted packet was caught by the receiver's ICRC check
	 * (a corrupted packet that was also duplicated is dropped twice). */
	assert_true(icrc >= corrupt && icrc <= corrupt + dup);
	assert_true(retries > 0);
	free(text);
	end_close(&a);
	end_close(&b);
}

static int start_daemon(void **state)
{
	char sock[128];

	assert_non_null(mkdtemp(tmpdir));
	snprintf(sock, sizeof(sock), "%s/softib.sock", tmpdir);
	setenv("SOFTIB_SOCKET", sock, 1);
	setenv("SOFTIB_NO_AUTOSTART", "1", 1);
	/* One seed per device: each link draws its own faults. */
	setenv("SOFTIB_FAULTS", "seed=42,loss=0.01,dup=0.01,reorder=0.01,corrupt=0.01", 0);
	daemon_pid = fork();
	if (daemon_pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(null, 1);
		dup2(null, 2);
		/* --idle-exit: a test that aborts leaves no daemon behind for long. */
		execl(SOFTIBD_PATH, "softibd", "--foreground", "--idle-exit", "30", "--socket", sock,
		      (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 200; i++) {
		struct stat st;

		if (stat(sock, &st) == 0)
			return 0;
		usleep(25000);
	}
	return -1;
}

static int stop_daemon(void **state)
{
	char sock[128];
	int st;

	if (daemon_pid > 0) {
		kill(daemon_pid, SIGTERM);
		for (int i = 0; i < 100 && waitpid(daemon_pid, &st, WNOHANG) == 0; i++)
			usleep(50000);
		kill(daemon_pid, SIGKILL);
		waitpid(daemon_pid, &st, 0);
	}
	snprintf(sock, sizeof(sock), "%s/softib.sock", tmpdir);
	unlink(sock);
	strcat(sock, ".lock");
	unlink(sock);
	rmdir(tmpdir);
	return 0;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rc_under_faults),
	};

	if (argc > 1)
		messages = (unsigned int)strtoul(argv[1], NULL, 0);
	return cmocka_run_group_tests(tests, start_daemon, stop_daemon);
}
