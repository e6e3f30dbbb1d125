// SPDX-License-Identifier: MIT
/*
 * MAI channels against a real softibd (daemon_fixture, default fabric: one
 * switch, softib0..3 on its ports 1..4): open errors, filter create/delete,
 * directed-route SMPs through the switch and back by TID, consuming
 * precedence (most specific, then newest) against the internal SMA,
 * non-consuming copies, OOB wrap-back, mai_send_req timeouts and retries,
 * hop-count and garbage handling counted by the daemon, TrapRepress for the
 * SMA's traps.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <poll.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/ctl.h"
#include "dev_cmd.h"
#include "daemon_fixture.h"
#include "mad_build.h"
#include "softib/mai.h"

/* The value of `key=` in the daemon's status line starting with `line `. */
static unsigned long long status_val(const char *line, const char *key)
{
	char *text = NULL, *p, *end, pat[64];
	unsigned long long v = ~0ull;
	int fd = sib_ctl_connect(daemon_socket());

	assert_true(fd >= 0);
	assert_int_equal(sib_ctl_status(fd, &text), 0);
	close(fd);
	snprintf(pat, sizeof(pat), "\n%s ", line);
	p = strstr(text, pat);
	if (p) {
		end = strchr(p + 1, '\n');
		snprintf(pat, sizeof(pat), " %s=", key);
		p = strstr(p, pat);
		if (p && (!end || p < end))
			v = strtoull(p + strlen(pat), NULL, 10);
	}
	free(text);
	return v;
}

static int open_ok(const char *dev, uint8_t qp)
{
	int ch = mai_open(dev, 1, qp);

	assert_true(ch >= 0);
	return ch;
}

static uint32_t add_filter(int ch, uint32_t flags, uint32_t match, uint8_t cls, uint8_t method,
			   uint16_t attr)
{
	mai_filter_t f;

	memset(&f, 0, sizeof(f));
	f.flags = flags;
	f.match = match;
	f.mgmt_class = cls;
	f.method = method;
	f.attr_id = attr;
	assert_int_equal(mai_filter_create(ch, &f), 0);
	assert_true(f.handle != 0);
	return f.handle;
}

/* Nothing arrives on ch within ms. */
static void assert_quiet(int ch, int ms)
{
	mai_mad_t m;

	assert_int_equal(mai_recv(ch, &m, ms), -ETIMEDOUT);
}

static void test_open_errors(void **state)
{
	mai_mad_t m;
	mai_filter_t f;

	assert_int_equal(mai_open("nosuch", 1, 1), -ENODEV);
	assert_int_equal(mai_open("softib0", 2, 1), -ENODEV);
	assert_int_equal(mai_open("softib0", 0, 1), -EINVAL);
	assert_int_equal(mai_open("softib0", 1, 2), -EINVAL);
	assert_int_equal(mai_open(NULL, 1, 1), -EINVAL);
	assert_int_equal(mai_close(12345), -EBADF);
	mad_gmp(&m, 0x03, MAD_GET, 0x0011, 1);
	assert_int_equal(mai_send(0, &m), -EBADF);
	assert_int_equal(mai_recv(0, &m, 0), -EBADF);
	memset(&f, 0, sizeof(f));
	assert_int_equal(mai_filter_create(0, &f), -EBADF);

	int ch = open_ok("softib0", 1);

	/* a QP1 channel sends QP1 MADs only; TIMEOUT is softibd's */
	m.qp = 0;
	assert_int_equal(mai_send(ch, &m), -EINVAL);
	m.qp = 1;
	m.type = MAI_TYPE_TIMEOUT;
	m.data_len = 0;
	assert_int_equal(mai_send(ch, &m), -EINVAL);
	mad_gmp(&m, 0x03, MAD_GET_RESP, 0x0011, 1);
	assert_int_equal(mai_send_req(ch, &m, 100, 1), -EINVAL); /* a response */
	assert_quiet(ch, 0);
	assert_int_equal(mai_close(ch), 0);
	assert_int_equal(mai_close(ch), -EBADF);
}

static void test_filters(void **state)
{
	int ch = open_ok("softib1", 1);
	mai_filter_t f;
	uint32_t h;

	memset(&f, 0, sizeof(f));
	f.match = 1u << 20; /* unknown bit */
	assert_int_equal(mai_filter_create(ch, &f), -EINVAL);
	h = add_filter(ch, 0, MAI_M_CLASS, 0x03, 0, 0);
	assert_int_equal(status_val("mai", "filters"), 1);
	assert_int_equal(mai_filter_delete(ch, h), 0);
	assert_int_equal(mai_filter_delete(ch, h), -ENOENT);
	for (int i = 0; i < 64; i++)
		add_filter(ch, 0, MAI_M_CLASS, (uint8_t)i, 0, 0);
	memset(&f, 0, sizeof(f));
	assert_int_equal(mai_filter_create(ch, &f), -ENOMEM);
	assert_int_equal(status_val("mai", "filters"), 64);
	assert_int_equal(mai_close(ch), 0);
	/* the channel and its filters are gone once softibd saw the close */
	for (int i = 0; i < 100 && status_val("mai", "filters") != 0; i++)
		usleep(10000);
	assert_int_equal(status_val("mai", "filters"), 0);
}

/* SM on softib0 QP0, an agent on softib1 QP0 taking SMInfo Get: a DR SMP
 * out through the switch (path 0,1,2), the answer back by its TID. */
static void test_dr_roundtrip(void **state)
{
	static const uint8_t path[] = { 0, 1, 2 };
	int sm = open_ok("softib0", 0), ag = open_ok("softib1", 0);
	mai_mad_t m, r;

	add_filter(ag, MAI_F_CONSUME, MAI_M_CLASS | MAI_M_METHOD | MAI_M_ATTR, 0x81, MAD_GET,
		   MAD_SMINFO);
	mad_dr(&m, MAD_GET, MAD_SMINFO, path, 2);
	m.tid = 0xABCDEF0123456789ull;
	assert_int_equal(mai_send_req(sm, &m, 2000, 0), 0);

	assert_int_equal(mai_recv(ag, &r, 2000), 0);
	assert_int_equal(r.type, MAI_TYPE_MAD);
	assert_int_equal(r.port, 1);
	assert_int_equal(r.qp, 0);
	assert_int_equal(r.remote_qpn, 0);
	assert_int_equal(r.attr_id, MAD_SMINFO);
	/* bits 39..0 are the sender's, 63..40 softibd's channel number */
	assert_int_equal(r.tid & 0xFFFFFFFFFFull, m.tid & 0xFFFFFFFFFFull);
	assert_true((r.tid >> 40) >= 16);
	/* at the end of the path: hop pointer hop_cnt + 1, return path 1, 1 */
	assert_int_equal(r.class_specific, (3 << 8) | 2);
	assert_int_equal(r.data[MAD_RPATH + 1], 1);
	assert_int_equal(r.data[MAD_RPATH + 2], 1);

	/* the agent answers: GetResp with the D bit, back along the return path */
	r.method = MAD_GET_RESP;
	r.status = 0x8000;
	r.data[40] = 0x5A; /* SMInfo payload byte */
	assert_int_equal(mai_send(ag, &r), 0);
	assert_int_equal(mai_recv(sm, &m, 2000), 0);
	assert_int_equal(m.method, MAD_GET_RESP);
	assert_int_equal(m.tid, r.tid);
	assert_int_equal(m.class_specific, 2); /* hop pointer back to 0 */
	assert_int_equal(m.data[40], 0x5A);
	assert_int_equal(status_val("mai", "pending"), 0);
	assert_quiet(ag, 50);
	mai_close(sm);
	mai_close(ag);
}

/* Consuming filters: the most specific wins, then the newest; the SMA's
 * per-attribute filters beat a class + method one; non-consuming copies
 * go out only when no consumer passes. */
static void test_precedence(void **state)
{
	static const uint8_t path[] = { 0, 1, 2 };
	int sm = open_ok("softib0", 0);
	int c1 = open_ok("softib1", 0), c2 = open_ok("softib1", 0), c3 = open_ok("softib1", 0);
	unsigned long long sma0 = status_val("mad", "sma");
	mai_mad_t m, r;

	add_filter(c2, MAI_F_CONSUME, MAI_M_CLASS | MAI_M_METHOD | MAI_M_ATTR, 0x81, MAD_GET,
		   MAD_SMINFO);
	add_filter(c1, MAI_F_CONSUME, MAI_M_CLASS | MAI_M_METHOD, 0x81, MAD_GET, 0);
	add_filter(c3, 0, MAI_M_CLASS, 0x81, 0, 0);

	/* SMInfo: c2 names the attribute, so it beats c1, newer but less specific */
	mad_dr(&m, MAD_GET, MAD_SMINFO, path, 2);
	assert_int_equal(mai_send(sm, &m), 0);
	assert_int_equal(mai_recv(c2, &r, 2000), 0);
	assert_quiet(c1, 50);
	assert_quiet(c3, 0);
	/* NodeInfo: the SMA's filter (5 fields) beats c1's class + method */
	mad_dr(&m, MAD_GET, MAD_NODEINFO, path, 2);
	assert_int_equal(mai_send(sm, &m), 0);
	for (int i = 0; i < 100 && status_val("mad", "sma") == sma0; i++)
		usleep(10000);
	assert_int_equal(status_val("mad", "sma"), sma0 + 1);
	assert_quiet(c1, 50);
	/* a client's filter as specific as the SMA's and newer: the SMA
	 * still answers (internal agents first, as a driver's SMA) */
	mai_filter_t ni = {
		.flags = MAI_F_CONSUME,
		.match = MAI_M_BASE_VER | MAI_M_CLASS | MAI_M_CLASS_VER | MAI_M_METHOD | MAI_M_ATTR,
		.base_version = 1, .mgmt_class = 0x81, .class_version = 1, .method = MAD_GET,
		.attr_id = MAD_NODEINFO,
	};
	assert_int_equal(mai_filter_create(c1, &ni), 0);
	assert_int_equal(mai_send(sm, &m), 0);
	for (int i = 0; i < 100 && status_val("mad", "sma") == sma0 + 1; i++)
		usleep(10000);
	assert_int_equal(status_val("mad", "sma"), sma0 + 2);
	assert_quiet(c1, 50);
	assert_int_equal(mai_filter_delete(c1, ni.handle), 0);
	/* MAI_F_EXCLUSIVE: refused while a consumer has the template on this
	 * device, port and QP; fine elsewhere and once it is gone */
	mai_filter_t ex = {
		.flags = MAI_F_CONSUME | MAI_F_EXCLUSIVE, .match = MAI_M_CLASS | MAI_M_METHOD,
		.mgmt_class = 0x81, .method = MAD_GET,
	};
	assert_int_equal(mai_filter_create(c2, &ex), -EBUSY);
	assert_int_equal(mai_filter_create(c1, &ex), -EBUSY);
	assert_int_equal(mai_filter_create(sm, &ex), 0); /* softib0 */
	assert_int_equal(mai_filter_delete(sm, ex.handle), 0);
	ex.flags = MAI_F_CONSUME; /* without the flag: allowed (takeover) */
	assert_int_equal(mai_filter_create(c2, &ex), 0);
	assert_int_equal(mai_filter_delete(c2, ex.handle), 0);
	/* an attribute nobody but c1 names (the SMA does not claim 0x0040): c1, exclusively */
	mad_dr(&m, MAD_GET, 0x0040, path, 2);
	assert_int_equal(mai_send(sm, &m), 0);
	assert_int_equal(mai_recv(c1, &r, 2000), 0);
	assert_int_equal(r.attr_id, 0x0040);
	assert_quiet(c3, 50);
	/* an equally specific newer consumer takes over from c1 */
	int c4 = open_ok("softib1", 0);

	add_filter(c4, MAI_F_CONSUME, MAI_M_CLASS | MAI_M_METHOD, 0x81, MAD_GET, 0);
	assert_int_equal(mai_send(sm, &m), 0);
	assert_int_equal(mai_recv(c4, &r, 2000), 0);
	assert_quiet(c1, 50);
	/* a Set nobody consumes: the non-consuming c3 gets its copy */
	mad_dr(&m, MAD_SET, 0x0040, path, 2);
	assert_int_equal(mai_send(sm, &m), 0);
	assert_int_equal(mai_recv(c3, &r, 2000), 0);
	assert_int_equal(r.method, MAD_SET);
	assert_quiet(c1, 50);
	assert_quiet(c4, 0);
	mai_close(c4);
	mai_close(c3);
	mai_close(c2);
	mai_close(c1);
	mai_close(sm);
}

/* OOB: wrapped back to every channel of the device and QP whose filters
 * pass it, consumers included, the sender too if its filter passes. */
static void test_oob(void **state)
{
	int a = open_ok("softib2", 1), b = open_ok("softib2", 1), c = open_ok("softib2", 1);
	int other = open_ok("softib3", 1);
	mai_mad_t m, r;

	add_filter(b, MAI_F_CONSUME, MAI_M_CLASS, 0x03, 0, 0);
	add_filter(c, 0, MAI_M_CLASS | MAI_M_ATTR, 0x03, 0, 0x0038);
	add_filter(other, 0, MAI_M_CLASS, 0x03, 0, 0);
	memset(&m, 0, sizeof(m));
	m.type = MAI_TYPE_OOB;
	m.qp = 1;
	m.base_version = 1;
	m.mgmt_class = 0x03;
	m.attr_id = 0x0038;
	m.data_len = 5;
	memcpy(m.data, "state", 5);
	assert_int_equal(mai_send(a, &m), 0);
	assert_int_equal(mai_recv(b, &r, 2000), 0);
	assert_int_equal(r.type, MAI_TYPE_OOB);
	assert_int_equal(r.data_len, 5);
	assert_memory_equal(r.data, "state", 5);
	assert_int_equal(mai_recv(c, &r, 2000), 0);
	assert_int_equal(r.type, MAI_TYPE_OOB);
	assert_quiet(a, 50);
	assert_quiet(other, 0); /* another device */
	/* an OOB no filter passes goes nowhere */
	m.mgmt_class = 0x04;
	assert_int_equal(mai_send(a, &m), 0);
	assert_quiet(b, 50);
	mai_close(a);
	mai_close(b);
	mai_close(c);
	mai_close(other);
}

/* mai_send_req without an answer: resent `retries` times, then the header
 * comes back as MAI_TYPE_TIMEOUT; with an answer, no timeout. */
static void test_timeout(void **state)
{
	static const uint8_t dead_end[] = { 0, 1, 7 }; /* switch port 7 has no cable */
	int sm = open_ok("softib0", 0);
	unsigned long long resent0 = status_val("mad", "resent");
	unsigned long long down0 = status_val("mad_drop", "link_down");
	mai_mad_t m, r;
	uint64_t t0;

	mad_dr(&m, MAD_GET, MAD_NODEINFO, dead_end, 2);
	m.tid = 0x1234;
	t0 = now_ms();
	assert_int_equal(mai_send_req(sm, &m, 60, 2), 0);
	assert_int_equal(mai_recv(sm, &r, 3000), 0);
	assert_true(now_ms() - t0 >= 170); /* 3 x 60 ms, less scheduling slack */
	assert_int_equal(r.type, MAI_TYPE_TIMEOUT);
	assert_int_equal(r.data_len, 0);
	assert_int_equal(r.tid & 0xFFFFFFFFFFull, 0x1234);
	assert_int_equal(r.attr_id, MAD_NODEINFO);
	assert_int_equal(status_val("mad", "resent"), resent0 + 2);
	assert_int_equal(status_val("mad_drop", "link_down"), down0 + 3);
	assert_int_equal(status_val("mai", "pending"), 0);

	/* timeout_ms 1 is raised to the 10 ms floor: 6 sends take >= 60 ms,
	 * not a resend storm (mai_chan.c, docs/mai.md) */
	m.tid = 0x1235;
	t0 = now_ms();
	assert_int_equal(mai_send_req(sm, &m, 1, 5), 0);
	assert_int_equal(mai_recv(sm, &r, 3000), 0);
	assert_int_equal(r.type, MAI_TYPE_TIMEOUT);
	assert_true(now_ms() - t0 >= 55);

	/* a second request with an outstanding TID times out at once */
	assert_int_equal(mai_send_req(sm, &m, 1000, 0), 0);
	assert_int_equal(mai_send_req(sm, &m, 1000, 0), 0);
	assert_int_equal(mai_recv(sm, &r, 500), 0);
	assert_int_equal(r.type, MAI_TYPE_TIMEOUT);
	assert_int_equal(mai_recv(sm, &r, 2000), 0); /* the first one's */
	assert_int_equal(r.type, MAI_TYPE_TIMEOUT);

	/* 20 outstanding at once (the channel's table grows), each timing out */
	for (uint64_t i = 0; i < 20; i++) {
		m.tid = 0x2000 + i;
		assert_int_equal(mai_send_req(sm, &m, 200, 0), 0);
	}
	assert_int_equal(status_val("mai", "pending"), 20);
	for (int i = 0; i < 20; i++) {
		assert_int_equal(mai_recv(sm, &r, 3000), 0);
		assert_int_equal(r.type, MAI_TYPE_TIMEOUT);
		assert_true((r.tid & 0xFFFFFFFFFFull) - 0x2000 < 20);
	}
	assert_int_equal(status_val("mai", "pending"), 0);
	mai_close(sm);
}

/* Hop counts over 63 and bad hop pointers are dropped and counted; a
 * bad base version too; garbage on a channel is counted, not fatal. */
static void test_bad_input(void **state)
{
	uint8_t path[64] = { 0, 1, 2 };
	int sm = open_ok("softib0", 0);
	unsigned long long hc0 = status_val("mad_drop", "dr_hop_cnt");
	unsigned long long hp0 = status_val("mad_drop", "dr_hop_ptr");
	unsigned long long bv0 = status_val("mad_drop", "bad_base_version");
	unsigned long long bad0 = status_val("mad", "bad_messages");
	mai_mad_t m;

	mad_dr(&m, MAD_GET, MAD_NODEINFO, path, 63);
	m.class_specific = 64; /* HopCount 64 (C14-6) */
	assert_int_equal(mai_send(sm, &m), 0);
	mad_dr(&m, MAD_GET, MAD_NODEINFO, path, 2);
	m.class_specific = (5 << 8) | 2; /* HopPointer 5 > HopCount + 1 at the sender */
	assert_int_equal(mai_send(sm, &m), 0);
	mad_dr(&m, MAD_GET, MAD_NODEINFO, path, 2);
	m.base_version = 2;
	assert_int_equal(mai_send(sm, &m), 0);
	/* garbage: short, long, and a filter stream instead of a message */
	uint8_t junk[400];
	memset(junk, 0xA5, sizeof(junk));
	assert_int_equal(send(sm, junk, 10, 0), 10);
	assert_int_equal(send(sm, junk, sizeof(junk), 0), (ssize_t)sizeof(junk));
	assert_int_equal(send(sm, junk, MAI_MSTREAM_SIZE, 0), MAI_MSTREAM_SIZE);
	for (int i = 0; i < 100 && status_val("mad", "bad_messages") < bad0 + 3; i++)
		usleep(10000);
	assert_int_equal(status_val("mad", "bad_messages"), bad0 + 3);
	assert_int_equal(status_val("mad_drop", "dr_hop_cnt"), hc0 + 1);
	assert_int_equal(status_val("mad_drop", "dr_hop_ptr"), hp0 + 1);
	assert_int_equal(status_val("mad_drop", "bad_base_version"), bv0 + 1);
	assert_quiet(sm, 20);
	/* the channel still works */
	mad_dr(&m, MAD_GET, MAD_NODEINFO, path, 0);
	assert_int_equal(mai_send(sm, &m), 0);
	mai_close(sm);
}

static uint64_t be64_at(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

/* softibd's own SMA and PMA answer through the router (the built-in SM
 * gave LIDs in file order: switch 1, softib0 2, softib1 3, ...). */
static void test_sma_answers(void **state)
{
	static const struct {
		uint8_t hops, path[3];
		uint64_t guid;
		uint8_t type, local_port;
	} walk[] = {
		{ 0, { 0 }, 0x5eed000000000010ull, 1, 1 },		/* softib0 itself */
		{ 1, { 0, 1 }, 0x5eed000000000100ull, 2, 1 },		/* the switch */
		{ 2, { 0, 1, 3 }, 0x5eed000000000030ull, 1, 1 },	/* softib2 */
	};
	int sm = open_ok("softib0", 0), gsi = open_ok("softib0", 1);
	mai_mad_t m, r;

	for (size_t i = 0; i < sizeof(walk) / sizeof(walk[0]); i++) {
		mad_dr(&m, MAD_GET, MAD_NODEINFO, walk[i].path, walk[i].hops);
		assert_int_equal(mai_send_req(sm, &m, 1000, 0), 0);
		assert_int_equal(mai_recv(sm, &r, 2000), 0);
		assert_int_equal(r.type, MAI_TYPE_MAD);
		assert_int_equal(r.method, MAD_GET_RESP);
		assert_int_equal(r.status, 0x8000);
		assert_int_equal(r.class_specific, walk[i].hops);
		/* NodeInfo at MAD byte 64: NodeType 2, NodeGUID 12, LocalPortNum 36 */
		assert_int_equal(r.data[40 + 2], walk[i].type);
		assert_int_equal(be64_at(r.data + 40 + 12), walk[i].guid);
		assert_int_equal(r.data[40 + 36], walk[i].local_port);
	}
	/* an attribute the SMA does not have: 0x000C, never silence */
	mad_dr(&m, MAD_GET, 0x0040, walk[0].path, 0);
	assert_int_equal(mai_send(sm, &m), 0);
	assert_int_equal(mai_recv(sm, &r, 2000), 0);
	assert_int_equal(r.status, 0x8000 | 0x000C);
	/* a class version the SMA does not speak: 0x0004; a method it does not know: 0x0008 */
	mad_dr(&m, MAD_GET, MAD_NODEINFO, walk[0].path, 0);
	m.class_version = 2;
	assert_int_equal(mai_send(sm, &m), 0);
	assert_int_equal(mai_recv(sm, &r, 2000), 0);
	assert_int_equal(r.status, 0x8000 | 0x0004);
	mad_dr(&m, 0x10, MAD_NODEINFO, walk[0].path, 0);
	assert_int_equal(mai_send(sm, &m), 0);
	assert_int_equal(mai_recv(sm, &r, 2000), 0);
	assert_int_equal(r.status, 0x8000 | 0x0008);
	assert_int_equal(r.method, 0x90);
	/* LID routed to the switch's LID: its port 0 answers PortInfo with LID 1 */
	mad_gmp(&m, 0x01, MAD_GET, MAD_PORTINFO, 1);
	m.qp = 0;
	m.remote_qpn = 0;
	assert_int_equal(mai_send(sm, &m), 0);
	assert_int_equal(mai_recv(sm, &r, 2000), 0);
	assert_int_equal(r.method, MAD_GET_RESP);
	assert_int_equal(r.lrh.slid, 1);
	assert_int_equal(r.data[40 + 16] << 8 | r.data[40 + 17], 1);
	/* PerfMgt PortCounters Get to softib1 (LID 3): its PMA */
	mad_gmp(&m, 0x04, MAD_GET, 0x0012, 3);
	m.data[40 + 1] = 1; /* PortSelect */
	assert_int_equal(mai_send(gsi, &m), 0);
	assert_int_equal(mai_recv(gsi, &r, 2000), 0);
	assert_int_equal(r.method, MAD_GET_RESP);
	assert_int_equal(r.status, 0);
	assert_int_equal(r.lrh.slid, 3);
	mai_close(sm);
	mai_close(gsi);
}

/* `softib port softib2 1 down`, then `up`: the switch's SMA sends a trap
 * 128 each time; the built-in SM's node answers each with a TrapRepress,
 * which must reach the SMA (its channel in the trap's TID), not be dropped
 * as no_agent. */
static void test_trap_repress(void **state)
{
	unsigned long long rep = status_val("subnet", "trap_represses");
	unsigned long long sent = status_val("subnet", "traps_sent");
	unsigned long long no_agent = status_val("mad_drop", "no_agent");
	unsigned long long sm_traps = status_val("subnet", "sm_traps");
	static const uint32_t act[] = { SIB_PORT_DOWN, SIB_PORT_UP };

	(void)state;
	for (int i = 0; i < 2; i++) {
		struct sib_ctl_msg m = { .hdr.op = SIB_CTL_PORT_SET };
		int fd = sib_ctl_connect(daemon_socket());

		assert_true(fd >= 0);
		snprintf(m.u.dev.name, sizeof(m.u.dev.name), "softib2");
		m.u.dev.port_num = 1;
		m.u.dev.action = act[i];
		assert_int_equal(sib_ctl_call(fd, &m, NULL), 0);
		assert_int_equal(m.hdr.status, 0);
		close(fd);
	}
	for (int ms = 0; ms < 5000 && status_val("subnet", "trap_represses") < rep + 2; ms += 20)
		usleep(20000);
	assert_true(status_val("subnet", "traps_sent") >= sent + 2);
	assert_int_equal(status_val("subnet", "trap_represses"), rep + 2);
	/* repressed by the built-in SM (LID 1), not faked by an SMA */
	assert_int_equal(status_val("subnet", "sm_traps"), sm_traps + 2);
	assert_int_equal(status_val("mad_drop", "no_agent"), no_agent);
}

/* A channel that never reads: softibd holds its sender back for a while
 * (flow control), then drops and counts the rest; the sender and softibd
 * carry on. */
static void test_queue_bound(void **state)
{
	int a = open_ok("softib3", 1), b = open_ok("softib3", 1);
	unsigned long long full0 = status_val("mad_drop", "queue_full");
	mai_mad_t m;
	int sent = 0;

	add_filter(b, 0, MAI_M_CLASS, 0x33, 0, 0);
	memset(&m, 0, sizeof(m));
	m.type = MAI_TYPE_OOB;
	m.qp = 1;
	m.base_version = 1;
	m.mgmt_class = 0x33;
	m.data_len = MAI_MAD_DATA_SIZE;
	for (uint64_t t0 = now_ms(); sent < 4000 && now_ms() - t0 < 10000;) {
		int ret = mai_send(a, &m);

		if (ret == -EAGAIN) {
			usleep(1000); /* softibd is behind: our own socket is full */
			continue;
		}
		assert_int_equal(ret, 0);
		sent++;
	}
	assert_int_equal(sent, 4000);
	for (int i = 0; i < 200 && status_val("mad_drop", "queue_full") == full0; i++)
		usleep(10000);
	assert_true(status_val("mad_drop", "queue_full") > full0);
	/* what was queued arrives whole */
	int got = 0;

	while (mai_recv(b, &m, 0) == 0) {
		assert_int_equal(m.type, MAI_TYPE_OOB);
		got++;
	}
	assert_true(got > 0 && got < 4000);
	/* and the channel works again once read */
	m.data_len = 1;
	assert_int_equal(mai_send(a, &m), 0);
	assert_int_equal(mai_recv(b, &m, 2000), 0);
	mai_close(a);
	mai_close(b);
}

/* A reader that comes late but reads: softibd stops reading the sender
 * while the reader's socket is full, so nothing is dropped; meanwhile
 * other channels are not held up. */
static void test_flow_control(void **state)
{
	int a = open_ok("softib2", 1), b = open_ok("softib2", 1);
	int c = open_ok("softib2", 1), e = open_ok("softib2", 1);
	unsigned long long full0 = status_val("mad_drop", "queue_full");
	mai_mad_t m, r;
	int sent = 0, got = 0, n = 1500;

	add_filter(b, 0, MAI_M_CLASS, 0x34, 0, 0);
	add_filter(e, 0, MAI_M_CLASS, 0x35, 0, 0);
	memset(&m, 0, sizeof(m));
	m.type = MAI_TYPE_OOB;
	m.qp = 1;
	m.base_version = 1;
	m.mgmt_class = 0x34;
	m.data_len = 8;
	for (uint64_t t0 = now_ms(); sent < n && now_ms() - t0 < 500;) {
		m.data[0] = (uint8_t)(sent >> 8);
		m.data[1] = (uint8_t)sent;
		if (mai_send(a, &m) == -EAGAIN) {
			usleep(1000); /* held back: b is full */
			continue;
		}
		sent++;
	}
	assert_true(sent < n); /* a is held back: b's socket is full */
	/* c to e goes through while a waits */
	r = m;
	r.mgmt_class = 0x35;
	assert_int_equal(mai_send(c, &r), 0);
	assert_int_equal(mai_recv(e, &r, 500), 0);
	assert_int_equal(r.mgmt_class, 0x35);
	/* b reads now: everything a sent arrives, in order */
	for (uint64_t t0 = now_ms(); got < n && now_ms() - t0 < 10000;) {
		if (sent < n) {
			m.data[0] = (uint8_t)(sent >> 8);
			m.data[1] = (uint8_t)sent;
			if (mai_send(a, &m) == 0)
				sent++;
		}
		if (mai_recv(b, &r, sent < n ? 0 : 1000) == 0) {
			assert_int_equal(r.data[0] << 8 | r.data[1], got);
			got++;
		}
	}
	assert_int_equal(got, n);
	assert_int_equal(status_val("mad_drop", "queue_full"), full0);
	mai_close(a);
	mai_close(b);
	mai_close(c);
	mai_close(e);
}

#define THREADS 4
#define PER_THREAD 200

/* One thread: its own channel and filter, OOB to itself, all back. */
static void *thread_main(void *arg)
{
	uintptr_t i = (uintptr_t)arg;
	int ch = mai_open("softib1", 1, 1), got = 0;
	mai_filter_t f;
	mai_mad_t m;

	if (ch < 0)
		return (void *)1;
	memset(&f, 0, sizeof(f));
	f.match = MAI_M_CLASS;
	f.mgmt_class = (uint8_t)(0x40 + i);
	if (mai_filter_create(ch, &f))
		return (void *)2;
	memset(&m, 0, sizeof(m));
	m.type = MAI_TYPE_OOB;
	m.qp = 1;
	m.base_version = 1;
	m.mgmt_class = (uint8_t)(0x40 + i);
	m.data_len = 1;
	for (int n = 0; n < PER_THREAD; n++) {
		m.data[0] = (uint8_t)n;
		while (mai_send(ch, &m) == -EAGAIN)
			usleep(1000);
		if (mai_recv(ch, &m, 2000) || m.mgmt_class != 0x40 + i || m.data[0] != (uint8_t)n)
			return (void *)3;
		got++;
	}
	if (mai_filter_delete(ch, f.handle) || mai_close(ch))
		return (void *)4;
	return got == PER_THREAD ? NULL : (void *)5;
}

/* mai_* from several threads at once, and a forked child that uses its
 * own channel while the parent keeps another. */
static void test_threads_fork(void **state)
{
	pthread_t th[THREADS];
	void *ret;
	int keep = open_ok("softib1", 1), st;
	pid_t pid;

	for (uintptr_t i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, thread_main, (void *)i), 0);
	for (int i = 0; i < THREADS; i++) {
		assert_int_equal(pthread_join(th[i], &ret), 0);
		assert_null(ret);
	}
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(thread_main((void *)7) ? 1 : 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	add_filter(keep, 0, MAI_M_CLASS, 0x03, 0, 0); /* the parent's channel still works */
	assert_int_equal(mai_close(keep), 0);
}

/* Random MADs (valid streams, hostile contents: classes, methods, hop
 * counts and pointers, paths, LIDs, versions) and random bytes on QP0 and
 * QP1 channels: softibd routes, answers or drops each and stays up. */
static void test_fuzz(void **state)
{
	static const uint8_t classes[] = { 0x01, 0x81, 0x04, 0x03, 0x32, 0x07, 0xFF };
	int ch[2] = { open_ok("softib0", 0), open_ok("softib1", 1) };
	unsigned int seed = (unsigned int)now_ms();
	mai_mad_t m;
	uint8_t junk[MAI_MSTREAM_SIZE + 8];

	print_message("fuzz seed %u\n", seed);
	srand(seed);
	for (int i = 0; i < 3000; i++) {
		int c = i & 1;

		memset(&m, 0, sizeof(m));
		m.type = MAI_TYPE_MAD;
		m.qp = (uint8_t)c;
		m.remote_qpn = rand() % 4 ? (uint32_t)c : (uint32_t)(rand() & 0xFFFFFF);
		m.data_len = MAI_MAD_DATA_SIZE;
		m.lrh.dlid = rand() % 4 ? (uint16_t)(rand() % 8) : (uint16_t)rand();
		m.base_version = rand() % 8 ? 1 : (uint8_t)rand();
		m.mgmt_class = classes[rand() % sizeof(classes)];
		m.class_version = rand() % 4 ? 1 : (uint8_t)rand();
		m.method = rand() % 2 ? (uint8_t)(1 + rand() % 2) : (uint8_t)rand();
		m.status = rand() % 4 ? 0 : (uint16_t)rand();
		m.class_specific = (uint16_t)((rand() % 4 ? 0 : rand() % 70) << 8 | rand() % 70);
		m.tid = (uint64_t)rand() << 32 | (uint64_t)rand();
		m.attr_id = rand() % 2 ? (uint16_t)(0x10 + rand() % 0x24) : (uint16_t)rand();
		m.attr_mod = rand() % 2 ? 0 : (uint32_t)rand();
		for (int b = 0; b < MAI_MAD_DATA_SIZE; b++)
			m.data[b] = rand() % 3 ? 0 : (uint8_t)rand();
		for (int b = 0; b < 64; b++)	/* InitialPath: mostly real ports */
			m.data[MAD_IPATH + b] = (uint8_t)(rand() % 4 ? rand() % 6 : rand());
		if (rand() % 2)
			memset(m.data + MAD_DR_SLID, 0xFF, 4);
		int ret = rand() % 3 ? mai_send(ch[c], &m)
				     : mai_send_req(ch[c], &m, 1 + rand() % 20, (uint32_t)(rand() % 3));

		assert_true(ret == 0 || ret == -EAGAIN || ret == -EINVAL);
		if (rand() % 16 == 0) {
			for (size_t b = 0; b < sizeof(junk); b++)
				junk[b] = (uint8_t)rand();
			send(ch[c], junk, (size_t)(rand() % (int)sizeof(junk)) + 1, MSG_DONTWAIT);
		}
		while (mai_recv(ch[c], &m, 0) == 0)
			;
	}
	usleep(100000); /* the last send_req timeouts */
	for (int c = 0; c < 2; c++) {
		while (mai_recv(ch[c], &m, 0) == 0)
			;
		assert_int_equal(mai_close(ch[c]), 0);
	}
	/* softibd answers, having routed most of it somewhere */
	assert_true(status_val("mad", "sent") >= 2000);
	print_message("sent %llu sma %llu pma %llu unsupported %llu forwarded %llu timeouts %llu\n",
		      status_val("mad", "sent"), status_val("mad", "sma"), status_val("mad", "pma"),
		      status_val("mad", "unsupported"), status_val("mad", "forwarded"),
		      status_val("mad", "timeouts"));
	assert_int_equal(status_val("mai", "pending"), 0);
}

static int dev_cmd(uint16_t op, const char *name)
{
	return dev_cmd_at(daemon_socket(), op, name);
}

/* A device that goes away takes its channels along: their clients read
 * end-of-file; softibd frees nothing they still use. */
static void test_device_remove(void **state)
{
	mai_mad_t m;
	int ch;

	assert_int_equal(dev_cmd(SIB_CTL_DEVICE_ADD, "maidev"), 0);
	ch = open_ok("maidev", 1);
	add_filter(ch, 0, MAI_M_CLASS, 0x03, 0, 0);
	assert_int_equal(dev_cmd(SIB_CTL_DEVICE_REMOVE, "maidev"), 0);
	assert_int_equal(mai_recv(ch, &m, 2000), -ECONNRESET);
	assert_int_equal(mai_open("maidev", 1, 1), -ENODEV);
	assert_int_equal(mai_close(ch), 0);
	assert_int_equal(status_val("mai", "filters"), 0);
}

/* utime + stime of process pid, in clock ticks. */
static unsigned long long cpu_ticks(int pid)
{
	char path[64], buf[1024], *p;
	unsigned long long ut = 0, st = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	p = strrchr(buf, ')'); /* fields 14, 15 after "pid (comm) state" */
	assert_non_null(p);
	assert_int_equal(sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
				&ut, &st), 2);
	return ut + st;
}

/* The lowest descriptor number process pid has free. */
static int lowest_free_fd(int pid)
{
	char path[64];
	bool used[4096] = { false };
	struct dirent *e;
	DIR *dir;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	dir = opendir(path);
	assert_non_null(dir);
	while ((e = readdir(dir))) {
		long fd = strtol(e->d_name, NULL, 10);

		if (e->d_name[0] != '.' && fd >= 0 && fd < 4096)
			used[fd] = true;
	}
	closedir(dir);
	while (n < 4096 && used[n])
		n++;
	return n;
}

/* softibd out of descriptors at accept() (its listening socket is
 * level-triggered): the connection is refused, counted, and the event loop
 * does not spin; with descriptors back, connections are served again. */
static void test_accept_emfile(void **state)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int pid = daemon_process();
	unsigned long long refused = status_val("counters", "refused"), t0, t1;
	struct rlimit old, low;
	struct pollfd pfd;
	char b;
	int fd;

	(void)state;
	usleep(100000); /* earlier tests' connections closed */
	if (prlimit(pid, RLIMIT_NOFILE, NULL, &old) < 0)
		skip();
	low = old;
	low.rlim_cur = (rlim_t)lowest_free_fd(pid); /* every descriptor below it in use */
	if (prlimit(pid, RLIMIT_NOFILE, &low, NULL) < 0)
		skip();
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", daemon_socket());
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	t0 = cpu_ticks(pid);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	pfd = (struct pollfd){ .fd = fd, .events = POLLIN };
	assert_int_equal(poll(&pfd, 1, 2000), 1); /* closed unanswered */
	assert_int_equal(recv(fd, &b, 1, MSG_DONTWAIT), 0);
	usleep(300000);
	t1 = cpu_ticks(pid);
	close(fd);
	assert_int_equal(prlimit(pid, RLIMIT_NOFILE, &old, NULL), 0);
	assert_true(t1 - t0 < 10); /* a spinning loop burns ~30 ticks in 300 ms */
	assert_true(status_val("counters", "refused") >= refused + 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_open_errors),
		cmocka_unit_test(test_filters),
		cmocka_unit_test(test_dr_roundtrip),
		cmocka_unit_test(test_precedence),
		cmocka_unit_test(test_oob),
		cmocka_unit_test(test_timeout),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_sma_answers),
		cmocka_unit_test(test_trap_repress),
		cmocka_unit_test(test_queue_bound),
		cmocka_unit_test(test_flow_control),
		cmocka_unit_test(test_threads_fork),
		cmocka_unit_test(test_fuzz),
		cmocka_unit_test(test_device_remove),
		cmocka_unit_test(test_accept_emfile),
	};
	static const char *const dumpable[] = { "--dumpable", NULL }; /* lowest_free_fd reads its /proc/<pid>/fd */

	daemon_options(dumpable, 0);
	return cmocka_run_group_tests(tests, start_daemon, stop_daemon);
}
