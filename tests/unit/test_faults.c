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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stream_fill.h"
#include "verbs_harness.h"

#define MSG_BYTES  3000u        /* 3 packets at MTU 1024 */
#define RQ_DEPTH   64u          /* the harness's max_recv_wr */
#define WINDOW     32u          /* sends in flight */
#define WRITE_BYTES (1u << 20)
_Static_assert(RQ_DEPTH * MSG_BYTES + 2 * WRITE_BYTES <= BUF_SIZE, "fits the harness's buffer");

static unsigned int messages = 2000;

/* PSNs that wrap the 24-bit space early on; a 16 ms ACK timeout, so that
 * losses recover quickly, while 8 in a row (retry_cnt 7) still outlast a
 * peer starved for 100 ms on a loaded two-core machine (ASan). */
static const struct conn_opts fault_opts = {
	.mtu = IBV_MTU_1024, .timeout = 12, .retry_cnt = 7, .rnr_retry = 7, .min_rnr_timer = 1,
	.access = IBV_ACCESS_REMOTE_WRITE, .psn = 0xfffff0,
};

static void recv_slot(struct end *e, uint32_t slot)
{
	post_recv(e, slot, slot * MSG_BYTES, MSG_BYTES);
}

static void send_one(struct end *e, enum ibv_wr_opcode op, uint64_t wr_id, uint32_t off, uint32_t len,
		     uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sge = { (uintptr_t)e->buf + off, len, e->mr->lkey };

	assert_int_equal(post_send(e, op, wr_id, &sge, 1, IBV_SEND_SIGNALED, raddr, rkey, 0), 0);
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

/* Streams `messages` SENDs a -> b, each checked on arrival exactly once and in order. */
static void rc_send_stream(struct end *a, struct end *b, uint64_t end)
{
	struct ibv_wc wc[16];
	uint32_t sent = 0, completed = 0, received = 0;

	/* A stream of SENDs a -> b, each checked on arrival, in order. */
	while (received < messages) {
		int n;

		while (sent < messages && sent - completed < WINDOW) {
			uint32_t off = RQ_DEPTH * MSG_BYTES + (sent % WINDOW) * MSG_BYTES;

			stream_fill(a->buf + off, MSG_BYTES, sent);
			send_one(a, IBV_WR_SEND, sent, off, MSG_BYTES, 0, 0);
			sent++;
		}
		n = ibv_poll_cq(a->cq, 16, wc);
		assert_true(n >= 0);
		for (int i = 0; i < n; i++) {
			assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
			assert_int_equal(wc[i].wr_id, completed); /* in order */
			completed++;
		}
		n = ibv_poll_cq(b->cq, 16, wc);
		assert_true(n >= 0);
		for (int i = 0; i < n; i++) {
			uint8_t expect[MSG_BYTES];
			uint32_t slot = (uint32_t)wc[i].wr_id;

			assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
			assert_int_equal(wc[i].opcode, IBV_WC_RECV);
			assert_int_equal(wc[i].byte_len, MSG_BYTES);
			assert_int_equal(slot, received % RQ_DEPTH);
			stream_fill(expect, MSG_BYTES, received); /* exactly once, in order */
			assert_memory_equal(b->buf + slot * MSG_BYTES, expect, MSG_BYTES);
			memset(b->buf + slot * MSG_BYTES, 0, MSG_BYTES);
			received++;
			recv_slot(b, slot);
		}
		if (now_ms() > end)
			fail_msg("stuck: sent %u completed %u received %u", sent, completed, received);
	}
	while (completed < messages) {
		int n = ibv_poll_cq(a->cq, 16, wc);

		for (int i = 0; i < n; i++, completed++)
			assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
		if (now_ms() > end)
			fail_msg("sends not completed: %u of %u", completed, messages);
	}
}

/* One large RDMA WRITE b -> a (RETH; 1024 packets), checked byte for byte. */
static void rc_large_write(struct end *a, struct end *b, uint64_t end)
{
	uint32_t src = RQ_DEPTH * MSG_BYTES, dst = src + WRITE_BYTES;
	struct ibv_wc wc[16];
	uint32_t writes_done = 0;

	for (uint32_t i = 0; i < WRITE_BYTES; i += MSG_BYTES)
		stream_fill(b->buf + src + i, i + MSG_BYTES <= WRITE_BYTES ? MSG_BYTES : WRITE_BYTES - i, 1000000 + i);
	send_one(b, IBV_WR_RDMA_WRITE, 7, src, WRITE_BYTES, (uintptr_t)a->buf + dst, a->mr->rkey);
	while (!writes_done) {
		int n = ibv_poll_cq(b->cq, 16, wc);

		for (int i = 0; i < n; i++) {
			assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
			writes_done += wc[i].wr_id == 7;
		}
		ibv_poll_cq(a->cq, 16, wc); /* a's engine runs too */
		if (now_ms() > end)
			fail_msg("RDMA WRITE did not complete");
	}
	assert_memory_equal(a->buf + dst, b->buf + src, WRITE_BYTES);
}

/* The link counters of both devices show faults, ICRC drops and retransmissions. */
static void check_fault_counters(void)
{
	char *text = NULL;
	int fd;

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
}

static void test_rc_under_faults(void **state)
{
	struct end a, b;
	uint64_t end = now_ms() + 100000;

	end_open(&a, "softib0", 0, 0);
	end_open(&b, "softib1", 0, 0);
	qp_connect(&a, &b, &fault_opts);
	qp_connect(&b, &a, &fault_opts);
	for (uint32_t i = 0; i < RQ_DEPTH; i++)
		recv_slot(&b, i);
	rc_send_stream(&a, &b, end);
	rc_large_write(&a, &b, end);
	check_fault_counters();
	end_close(&a);
	end_close(&b);
}

/* The harness's softibd, with SOFTIB_FAULTS in the environment of this
 * process's links (one seed; each device mixes in its own GUID). */
static int start_faulty(void **state)
{
	setenv("SOFTIB_FAULTS", "seed=42,loss=0.01,dup=0.01,reorder=0.01,corrupt=0.01", 0);
	return start_daemon(state);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rc_under_faults),
	};

	if (argc > 1)
		messages = (unsigned int)strtoul(argv[1], NULL, 0);
	return cmocka_run_group_tests(tests, start_faulty, stop_daemon);
}
