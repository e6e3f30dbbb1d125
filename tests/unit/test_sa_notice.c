/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the built-in SM's SA records beyond the fabric's own
 * (src/subnet/sa_service.c, sa_inform.c, sa_mcast.c) through the MAD
 * router, without softibd, on the default fabric: ServiceRecord set, get,
 * delete and leases on the test's clock (sib_sa_tick); InformInfo
 * subscribe/unsubscribe with OpenSM's statuses, InformInfoRecord, Reports
 * of traps 64/65 at sweeps (a port's link down and up), retried when no
 * ReportResp comes and stopped by one; multicast members of a port gone
 * leaving their groups (traps 66/67); a CA removed at run time while a
 * member (no use of its freed node); the SMAs' traps forwarded to
 * subscribers (a switch's 128, a CA's 144) and OpenSM's suppression of
 * repeated traps; and a randomized sequence of SR and InformInfo
 * operations, port downs/ups and CapabilityMask changes from random CAs
 * checked against a model (records Get returns, Reports that arrive,
 * traps suppressed), replayable with SIB_SEED=N.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "iba/sa.h"
#include "subnet/sa_int.h"
#include "subnet/subnet_api.h"
#include "fake_subnet_host.h"

#define CHAN 20u
#define SR_ATTR 0x0031
#define II_ATTR 0x0003
#define IIR_ATTR 0x00F3
#define SR_SIZE 176
#define MS 1000000ull
#define SR_ID 0x1ull
#define SR_GID 0x2ull
#define SR_PKEY 0x4ull
#define SR_LEASE 0x10ull
#define SR_NAME 0x40ull

static uint8_t segs[64][MAD_SIZE];
static unsigned int nsegs;
static const struct sib_fab_node *requester;

/* Reports that reached a CA port (mad_trace), in order. */
struct rep {
	const struct sib_fab_node *to;
	uint64_t tid;
	uint16_t trap;
	uint8_t gid[16];		/* DataDetails' GID (64-67) */
	uint8_t notice[80];
};
static struct rep reps[512];
static unsigned int nreps;

static int catch_resp(void *ctx, uint32_t chan, const struct sib_fab_node *n, uint8_t port,
		      uint8_t qp, const mai_mad_t *m)
{
	(void)ctx;
	if (chan != CHAN || qp != 1 || n != requester || port != 1 || nsegs >= 64)
		return -ENOENT;
	assert_int_equal(mai_towire(m, segs[nsegs], MAD_SIZE), MAD_SIZE);
	nsegs++;
	return 0;
}

static void catch_report(void *ctx, const struct sib_fab_node *n, uint8_t port, const mai_mad_t *m,
			 bool out)
{
	uint8_t w[MAD_SIZE];

	(void)ctx;
	if (out || port != 1 || m->mgmt_class != MAD_MGMT_CLASS_SUBN_ADM ||
	    m->method != MAD_METHOD_REPORT)
		return;
	assert_true(nreps < 512);
	assert_int_equal(mai_towire(m, w, MAD_SIZE), MAD_SIZE);
	assert_int_equal(m->attr_id, MAD_ATTR_NOTICE);
	reps[nreps].to = n;
	reps[nreps].tid = m->tid;
	reps[nreps].trap = (uint16_t)(w[MAD_SA_HDR_SIZE + 4] << 8 | w[MAD_SA_HDR_SIZE + 5]);
	if (reps[nreps].trap >= 64 && reps[nreps].trap <= 67) {
		assert_int_equal(w[MAD_SA_HDR_SIZE], 0x83);	/* generic, subnet management */
		assert_int_equal(w[MAD_SA_HDR_SIZE + 3], 4);	/* producer: class manager */
	}
	memcpy(reps[nreps].gid, w + MAD_SA_HDR_SIZE + 16, 16);
	memcpy(reps[nreps].notice, w + MAD_SA_HDR_SIZE, 80);
	nreps++;
}

static const struct sib_subnet_host host = {
	.port_changed = fake_host_port_changed, .route_changed = fake_host_route_changed,
	.data_counters = fake_host_no_counters, .log = fake_host_no_log,
	.mad_filters = fake_host_agents_only, .mad_push = fake_host_no_chan,
	.mad_response = catch_resp, .mad_trace = catch_report,
};

struct fx {
	struct sib_subnet *sn;
	struct sib_fab_node *cas[8];	/* CAs with port 1 cabled, the SM's excepted */
	unsigned int n;
	uint8_t msg[MAD_SA_HDR_SIZE + 64 * MAD_SA_DATA_SIZE];
	size_t len;
	uint64_t now;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct sib_fab_node *n;
	char err[128];

	assert_non_null(f);
	f->sn = sib_subnet_new(&host, NULL);
	assert_non_null(f->sn);
	assert_int_equal(sib_subnet_load(f->sn, NULL, err, sizeof(err)), 0);
	assert_int_equal(sib_mad_init(f->sn), 0);
	for (unsigned int i = 0; (n = sib_subnet_node(f->sn, i)) && f->n < 8; i++)
		if (n->type == SIB_NODE_CA && n->ports[1].peer && n->mgmt->port[1].pi.lid != SIB_SM_LID)
			f->cas[f->n++] = n;
	assert_true(f->n >= 3);
	nreps = 0;
	f->now = 1000 * MS;
	sib_sa_tick(f->sn, f->now);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	sib_mad_fini(f->sn);
	sib_subnet_unload(f->sn);
	sib_subnet_delete(f->sn);
	free(f);
	return 0;
}

static void tick(struct fx *f, uint64_t ns)
{
	f->now += ns;
	sib_sa_tick(f->sn, f->now);
}

static uint16_t lid_of(const struct sib_fab_node *n)
{
	return n->mgmt->port[1].pi.lid;
}

static void gid_of(const struct sib_fab_node *n, uint8_t gid[16])
{
	uint64_t pre = n->mgmt->port[1].pi.gid_prefix, guid = n->ports[1].guid;

	for (int i = 0; i < 8; i++) {
		gid[i] = (uint8_t)(pre >> (56 - 8 * i));
		gid[8 + i] = (uint8_t)(guid >> (56 - 8 * i));
	}
}

/* An SA request from CA `from` (SM_Key 0); the answer in f->msg. */
static uint16_t ask(struct fx *f, const struct sib_fab_node *from, uint8_t method, uint16_t attr,
		    uint64_t mask, const void *rec, size_t rlen)
{
	struct sa_rmpp_recv r;
	struct mad_sa s;
	uint8_t wire[MAD_SIZE], ack[MAD_SIZE];
	mai_mad_t m;
	bool rep;

	memset(&s, 0, sizeof(s));
	s.hdr.base_version = MAD_BASE_VERSION;
	s.hdr.mgmt_class = MAD_MGMT_CLASS_SUBN_ADM;
	s.hdr.class_version = MAD_SA_CLASS_VERSION;
	s.hdr.method = method;
	s.hdr.tid = (uint64_t)CHAN << MAI_TID_CHAN_SHIFT | 0x77;
	s.hdr.attr_id = attr;
	s.comp_mask = mask;
	if (rec)
		memcpy(s.data, rec, rlen);
	mad_sa_encode(&s, wire);
	memset(&m, 0, sizeof(m));
	assert_int_equal(mai_fromwire(wire, MAD_SIZE, &m), MAD_SIZE);
	m.type = MAI_TYPE_MAD;
	m.qp = 1;
	m.port = 1;
	m.remote_qpn = 1;
	m.remote_qkey = 0x80010000u;
	m.lrh.dlid = SIB_SM_LID;
	m.lrh.slid = lid_of(from);
	requester = from;
	nsegs = 0;
	f->len = 0;
	sib_mad_send(f->sn, (struct sib_fab_node *)from, 1, &m);
	assert_true(nsegs >= 1);
	if (!(segs[0][26] & MAD_RMPP_FLAG_ACTIVE)) {
		memcpy(f->msg, segs[0], MAD_SIZE);
		f->len = MAD_SIZE;
	} else {
		sa_rmpp_recv_init(&r, f->msg, sizeof(f->msg), SA_RMPP_MAX_SEGS);
		for (unsigned int i = 0; i < nsegs; i++)
			assert_int_equal(sa_rmpp_recv_seg(&r, segs[i], ack, &rep),
					 i + 1 == nsegs ? SA_RMPP_COMPLETE : SA_RMPP_ACCEPTED);
		f->len = r.len;
	}
	assert_int_equal(f->msg[3], method == MAD_METHOD_SET ? MAD_METHOD_GET_RESP : (method | 0x80));
	return (uint16_t)(f->msg[4] << 8 | f->msg[5]);
}

/* Records in a GetTableResp (AttributeOffset words each). */
static size_t nrec(const struct fx *f)
{
	unsigned int off = (unsigned int)(f->msg[44] << 8 | f->msg[45]);

	return off ? (f->len - MAD_SA_HDR_SIZE) / (off * 8u) : 0;
}

static const uint8_t *rec_at(const struct fx *f, size_t i, size_t size)
{
	return f->msg + MAD_SA_HDR_SIZE + i * size;
}

static uint64_t be(const uint8_t *p, unsigned int n)
{
	uint64_t v = 0;

	for (unsigned int i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

static void put(uint8_t *p, uint64_t v, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
}

/* A ServiceRecord: ServiceID id, ServiceGID of n, lease, name. */
static void sr_make(uint8_t *r, uint64_t id, const struct sib_fab_node *n, uint32_t lease,
		    const char *name)
{
	memset(r, 0, SR_SIZE);
	put(r, id, 8);
	gid_of(n, r + 8);
	put(r + 28, lease, 4);
	memset(r + 32, 0xAB, 16);	/* ServiceKey: never read back */
	strncpy((char *)r + 48, name, 63);
	r[112] = 0x5A;			/* ServiceData8[0] */
}

static void test_service_record(void **state)
{
	struct fx *f = *state;
	struct sib_fab_node *a = f->cas[0], *b = f->cas[1];
	uint8_t r[SR_SIZE], r2[SR_SIZE];
	const uint8_t *got;
	static const uint8_t zero16[16];

	/* Set wants ServiceID and ServiceGID: 0x0200 */
	sr_make(r, 0x1000, a, 0xFFFFFFFF, "svc-a");
	assert_int_equal(ask(f, a, MAD_METHOD_SET, SR_ATTR, SR_ID | SR_NAME, r, SR_SIZE), 0x0200);
	/* registered; the answer: P_Key 0xFFFF (not in the mask), ServiceKey 0 */
	assert_int_equal(ask(f, a, MAD_METHOD_SET, SR_ATTR, SR_ID | SR_GID | SR_NAME, r, SR_SIZE), 0);
	got = rec_at(f, 0, SR_SIZE);
	assert_int_equal(be(f->msg + 44, 2), SR_SIZE / 8);
	assert_int_equal(be(got, 8), 0x1000);
	assert_int_equal(be(got + 24, 2), 0xFFFF);
	assert_int_equal(be(got + 28, 4), 0xFFFFFFFF);
	assert_memory_equal(got + 32, zero16, 16);
	assert_string_equal((const char *)got + 48, "svc-a");
	/* a second, by b for a's GID (OpenSM has no own-GID rule), lease 10 s */
	sr_make(r2, 0x2000, a, 10, "svc-b");
	put(r2 + 24, 0xFFFF, 2);
	assert_int_equal(ask(f, b, MAD_METHOD_SET, SR_ATTR, SR_ID | SR_GID | SR_PKEY | SR_LEASE | SR_NAME,
			     r2, SR_SIZE), 0);
	/* a P_Key the requester does not hold: 0x0200 */
	put(r2 + 24, 0x1234, 2);
	assert_int_equal(ask(f, b, MAD_METHOD_SET, SR_ATTR, SR_ID | SR_GID | SR_PKEY, r2, SR_SIZE), 0x0200);
	put(r2 + 24, 0xFFFF, 2);
	/* GetTable: both, newest first, keys 0 */
	assert_int_equal(ask(f, b, MAD_METHOD_GETTABLE, SR_ATTR, 0, NULL, 0), 0);
	assert_int_equal(nrec(f), 2);
	assert_int_equal(be(rec_at(f, 0, SR_SIZE), 8), 0x2000);
	assert_int_equal(be(rec_at(f, 1, SR_SIZE), 8), 0x1000);
	assert_memory_equal(rec_at(f, 1, SR_SIZE) + 32, zero16, 16);
	/* Get: by ServiceID one, by nothing too many, by another none;
	 * ServiceData8[0] and ServiceName match, the lease never does */
	assert_int_equal(ask(f, b, MAD_METHOD_GET, SR_ATTR, SR_ID, r, SR_SIZE), 0);
	assert_int_equal(be(rec_at(f, 0, SR_SIZE), 8), 0x1000);
	assert_int_equal(ask(f, b, MAD_METHOD_GET, SR_ATTR, 0, r, SR_SIZE), 0x0400);
	put(r2, 0x3000, 8);
	assert_int_equal(ask(f, b, MAD_METHOD_GET, SR_ATTR, SR_ID, r2, SR_SIZE), 0x0300);
	put(r2, 0x2000, 8);
	assert_int_equal(ask(f, b, MAD_METHOD_GETTABLE, SR_ATTR, SR_NAME | SR_LEASE | (1ull << 7), r2,
			     SR_SIZE), 0);
	assert_int_equal(nrec(f), 1);
	/* the same RID again replaces the record */
	sr_make(r, 0x1000, a, 0xFFFFFFFF, "svc-a2");
	assert_int_equal(ask(f, a, MAD_METHOD_SET, SR_ATTR, SR_ID | SR_GID, r, SR_SIZE), 0);
	assert_int_equal(be(rec_at(f, 0, SR_SIZE) + 28, 4), 0xFFFFFFFF); /* no Lease bit: infinite */
	assert_int_equal(ask(f, b, MAD_METHOD_GETTABLE, SR_ATTR, 0, NULL, 0), 0);
	assert_int_equal(nrec(f), 2);
	assert_string_equal((const char *)rec_at(f, 1, SR_SIZE) + 48, "svc-a2");
	/* the lease: from the next tick, 10 s */
	tick(f, 500 * MS);
	tick(f, 9999 * MS);
	assert_int_equal(ask(f, b, MAD_METHOD_GETTABLE, SR_ATTR, 0, NULL, 0), 0);
	assert_int_equal(nrec(f), 2);
	tick(f, 1 * MS);
	assert_int_equal(ask(f, b, MAD_METHOD_GETTABLE, SR_ATTR, 0, NULL, 0), 0);
	assert_int_equal(nrec(f), 1);
	assert_int_equal(be(rec_at(f, 0, SR_SIZE), 8), 0x1000);
	/* Delete answers the record; again: 0x0300 */
	assert_int_equal(ask(f, a, MAD_METHOD_DELETE, SR_ATTR, SR_ID | SR_GID, r, SR_SIZE), 0);
	assert_string_equal((const char *)rec_at(f, 0, SR_SIZE) + 48, "svc-a2");
	assert_int_equal(ask(f, a, MAD_METHOD_DELETE, SR_ATTR, SR_ID | SR_GID, r, SR_SIZE), 0x0300);
	assert_int_equal(ask(f, b, MAD_METHOD_GETTABLE, SR_ATTR, 0, NULL, 0), 0);
	assert_int_equal(nrec(f), 0);
	assert_int_equal(f->len, MAD_SA_HDR_SIZE);
	/* a method ServiceRecord has not: 0x000C */
	assert_int_equal(ask(f, a, MAD_METHOD_GETMULTI, SR_ATTR, 0, NULL, 0), 0x000C);
}

/* An InformInfo for generic trap `trap` (0xFFFF: all) from every port. */
static void ii_make(uint8_t *ii, uint16_t trap, uint8_t subscribe, uint32_t qpn)
{
	memset(ii, 0, 36);
	put(ii + 16, 0xFFFF, 2);	/* LIDRangeBegin: all */
	ii[22] = 1;			/* IsGeneric */
	ii[23] = subscribe;
	put(ii + 24, 0xFFFF, 2);	/* Type: all */
	put(ii + 26, trap, 2);
	put(ii + 28, qpn << 8 | 18, 4);	/* QPN, RespTimeValue 18 */
	put(ii + 33, 0xFFFFFF, 3);	/* ProducerType: all */
}

/* Answer the Report r with a ReportResp from its port. */
static void report_resp(struct fx *f, const struct rep *r)
{
	struct mad_sa s;
	uint8_t wire[MAD_SIZE];
	mai_mad_t m;

	memset(&s, 0, sizeof(s));
	s.hdr.base_version = MAD_BASE_VERSION;
	s.hdr.mgmt_class = MAD_MGMT_CLASS_SUBN_ADM;
	s.hdr.class_version = MAD_SA_CLASS_VERSION;
	s.hdr.method = MAD_METHOD_REPORT;
	s.hdr.r = 1;	/* ReportResp */
	s.hdr.tid = r->tid;
	s.hdr.attr_id = MAD_ATTR_NOTICE;
	mad_sa_encode(&s, wire);
	memset(&m, 0, sizeof(m));
	assert_int_equal(mai_fromwire(wire, MAD_SIZE, &m), MAD_SIZE);
	m.type = MAI_TYPE_MAD;
	m.qp = 1;
	m.port = 1;
	m.remote_qpn = 1;
	m.remote_qkey = 0x80010000u;
	m.lrh.dlid = SIB_SM_LID;
	m.lrh.slid = lid_of(r->to);
	sib_mad_send(f->sn, (struct sib_fab_node *)r->to, 1, &m);
}

static void port_down(struct fx *f, struct sib_fab_node *n)
{
	sib_sma_link_down(f->sn, n, 1, SIB_LINK_LOST);
	sib_sm_sweep(f->sn);
}

static void test_inform_info(void **state)
{
	struct fx *f = *state;
	struct sib_fab_node *a = f->cas[0], *b = f->cas[1];
	uint8_t ii[36], gb[16];
	unsigned int first;

	/* subscribe a to trap 65; the answer is the InformInfo as sent */
	ii_make(ii, 65, 1, 0);
	assert_int_equal(ask(f, a, MAD_METHOD_SET, II_ATTR, 0, ii, 36), 0);
	assert_memory_equal(f->msg + MAD_SA_HDR_SIZE, ii, 36);
	assert_int_equal(ask(f, a, MAD_METHOD_SET, II_ATTR, 0, ii, 36), 0); /* the same: replaced */
	ii_make(ii, 64, 1, 0);
	assert_int_equal(ask(f, a, MAD_METHOD_SET, II_ATTR, 0, ii, 36), 0);
	/* InformInfoRecords: two, SubscriberGID a's, QPN 0 */
	assert_int_equal(ask(f, b, MAD_METHOD_GETTABLE, IIR_ATTR, 0, NULL, 0), 0);
	assert_int_equal(nrec(f), 2);
	gid_of(a, gb);
	assert_memory_equal(rec_at(f, 0, 64), gb, 16);
	assert_int_equal(be(rec_at(f, 0, 64) + 24 + 26, 2), 64);
	assert_int_equal(be(rec_at(f, 0, 64) + 24 + 28, 3), 0);
	assert_int_equal(ask(f, b, MAD_METHOD_GET, IIR_ATTR, 1, gb, 16), 0x0400);
	/* statuses: Subscribe 2, a security trap without SM_Key: 0x0200;
	 * Get of InformInfo: 0x000C */
	ii_make(ii, 64, 2, 0);
	assert_int_equal(ask(f, a, MAD_METHOD_SET, II_ATTR, 0, ii, 36), 0x0200);
	assert_int_equal(f->msg[MAD_SA_HDR_SIZE + 23], 2); /* the request echoed */
	ii_make(ii, 256, 1, 0);
	assert_int_equal(ask(f, a, MAD_METHOD_SET, II_ATTR, 0, ii, 36), 0x0200);
	assert_int_equal(ask(f, a, MAD_METHOD_GET, II_ATTR, 0, ii, 36), 0x000C);

	/* b's link goes down: at the sweep trap 65 to a, with b's GID */
	gid_of(b, gb);
	nreps = 0;
	port_down(f, b);
	assert_int_equal(nreps, 1);
	assert_ptr_equal(reps[0].to, a);
	assert_int_equal(reps[0].trap, 65);
	assert_memory_equal(reps[0].gid, gb, 16);
	assert_int_equal(reps[0].tid & 0xFFFFFFFFu, 0x02DAB001u);
	/* unanswered: sent again every 200 ms, 3 times, then given up */
	tick(f, 1 * MS);	/* starts its timer */
	for (int i = 0; i < 6; i++)
		tick(f, 200 * MS);
	assert_int_equal(nreps, 4);
	for (unsigned int i = 1; i < 4; i++)
		assert_int_equal(reps[i].tid, reps[0].tid);
	/* b back: trap 64, answered at once: never sent again */
	first = nreps;
	sib_sma_link_up(f->sn, b, 1);
	assert_int_equal(nreps, first + 1);
	assert_int_equal(reps[first].trap, 64);
	assert_memory_equal(reps[first].gid, gb, 16);
	report_resp(f, &reps[first]);
	for (int i = 0; i < 6; i++)
		tick(f, 200 * MS);
	assert_int_equal(nreps, first + 1);

	/* unsubscribe: the QPN must be the subscriber's (1), as OpenSM keeps it */
	ii_make(ii, 64, 0, 0);
	assert_int_equal(ask(f, a, MAD_METHOD_SET, II_ATTR, 0, ii, 36), 0x0200);
	assert_int_equal(f->msg[MAD_SA_HDR_SIZE + 23], 0);
	ii_make(ii, 64, 0, 1);
	assert_int_equal(ask(f, a, MAD_METHOD_SET, II_ATTR, 0, ii, 36), 0);
	assert_int_equal(ask(f, b, MAD_METHOD_GETTABLE, IIR_ATTR, 0, NULL, 0), 0);
	assert_int_equal(nrec(f), 1);
	/* a's own port goes: its subscriptions with it */
	port_down(f, a);
	assert_int_equal(ask(f, b, MAD_METHOD_GETTABLE, IIR_ATTR, 0, NULL, 0), 0);
	assert_int_equal(nrec(f), 0);
}

/* A link down: the switch's trap 128 reaches the SM, which sweeps at the
 * next tick (as OpenSM on a trap): trap 65 without waiting for a link up. */
/* One requesting port holds at most 64 subscriptions and 256
 * ServiceRecords (0x0100 past them); another port still gets its own (a
 * hostile review filled both tables from one process: every notice then
 * made 4,096 Reports and no other port could register). */
static void test_sa_caps(void **state)
{
	struct fx *f = *state;
	struct sib_fab_node *a = f->cas[0], *b = f->cas[1];
	uint8_t ii[36], r[SR_SIZE];

	for (unsigned int i = 0; i < 64; i++) {
		ii_make(ii, (uint16_t)(1000 + i), 1, 0);
		assert_int_equal(ask(f, a, MAD_METHOD_SET, II_ATTR, 0, ii, 36), 0);
	}
	ii_make(ii, 2000, 1, 0);
	assert_int_equal(ask(f, a, MAD_METHOD_SET, II_ATTR, 0, ii, 36), 0x0100);
	assert_int_equal(ask(f, b, MAD_METHOD_SET, II_ATTR, 0, ii, 36), 0);
	ii_make(ii, 1000, 1, 0); /* the same one again: replaced, no new room needed */
	assert_int_equal(ask(f, a, MAD_METHOD_SET, II_ATTR, 0, ii, 36), 0);
	for (unsigned int i = 0; i < 256; i++) {
		sr_make(r, 0x10000 + i, a, 0xFFFFFFFF, "cap");
		assert_int_equal(ask(f, a, MAD_METHOD_SET, SR_ATTR, SR_ID | SR_GID | SR_NAME, r, SR_SIZE), 0);
	}
	sr_make(r, 0x20000, a, 0xFFFFFFFF, "cap");
	assert_int_equal(ask(f, a, MAD_METHOD_SET, SR_ATTR, SR_ID | SR_GID | SR_NAME, r, SR_SIZE), 0x0100);
	assert_int_equal(ask(f, b, MAD_METHOD_SET, SR_ATTR, SR_ID | SR_GID | SR_NAME, r, SR_SIZE), 0);
}

static void test_trap_sweeps(void **state)
{
	struct fx *f = *state;
	struct sib_fab_node *a = f->cas[0], *b = f->cas[1];
	uint8_t ii[36], gb[16];

	ii_make(ii, 64, 1, 0);	/* 64 and 65 (trap 128 has its own test) */
	assert_int_equal(ask(f, a, MAD_METHOD_SET, II_ATTR, 0, ii, 36), 0);
	ii_make(ii, 65, 1, 0);
	assert_int_equal(ask(f, a, MAD_METHOD_SET, II_ATTR, 0, ii, 36), 0);
	gid_of(b, gb);
	nreps = 0;
	sib_sma_link_down(f->sn, b, 1, SIB_LINK_LOST);
	assert_int_equal(nreps, 0);
	tick(f, 1 * MS);
	assert_int_equal(nreps, 1);
	assert_int_equal(reps[0].trap, 65);
	assert_memory_equal(reps[0].gid, gb, 16);
	report_resp(f, &reps[0]);
	tick(f, 1 * MS);	/* nothing new: no sweep, no Report */
	assert_int_equal(nreps, 1);
	/* down and up between two sweeps: both traps at the up's sweep */
	sib_sma_link_up(f->sn, b, 1);
	assert_int_equal(nreps, 2);
	assert_int_equal(reps[1].trap, 64);
	report_resp(f, &reps[1]);
	nreps = 0;
	sib_sma_link_down(f->sn, b, 1, SIB_LINK_LOST);
	sib_sma_link_up(f->sn, b, 1);
	assert_int_equal(nreps, 2);
	assert_int_equal(reps[0].trap, 65);
	assert_int_equal(reps[1].trap, 64);
}

/* The switch port 1 of CA n is cabled to, and its LID and GID. */
static struct sib_fab_node *switch_of(const struct sib_fab_node *n)
{
	return n->ports[1].peer->node;
}

static uint16_t sw_lid(const struct sib_fab_node *sw)
{
	return sw->mgmt->port[0].pi.lid;
}

static void sw_gid(const struct sib_fab_node *sw, uint8_t gid[16])
{
	uint64_t pre = sw->mgmt->port[0].pi.gid_prefix;
	uint64_t guid = sw->ports[0].guid ? sw->ports[0].guid : sw->node_guid;

	put(gid, pre, 8);
	put(gid + 8, guid, 8);
}

/* Reports of trap `trap` in reps[from..nreps) to n. */
static unsigned int reps_of(unsigned int from, uint16_t trap, const struct sib_fab_node *n)
{
	unsigned int k = 0;

	for (unsigned int i = from; i < nreps; i++)
		k += reps[i].trap == trap && reps[i].to == n;
	return k;
}

/* A switch port's link goes down (softib port SWITCH ... down): the
 * switch's trap 128 reaches the SM, which forwards it to the subscribers
 * of 128 as OpenSM does: the notice as the switch sent it (urgent,
 * producer switch, IssuerLID and LIDADDR the switch's), IssuerGID the
 * switch's; sent again without a ReportResp; a LID range without the
 * switch's LID and another trap number get nothing, a GID subscription
 * for the switch's GID gets it. */
static void test_trap128_forwarded(void **state)
{
	struct fx *f = *state;
	struct sib_fab_node *a = f->cas[0], *b = f->cas[1], *c = f->cas[2];
	struct sib_fab_node *sw = switch_of(b);
	uint8_t ii[36], g[16];
	const uint8_t *nt;

	ii_make(ii, 128, 1, 0);
	assert_int_equal(ask(f, a, MAD_METHOD_SET, II_ATTR, 0, ii, 36), 0);
	sw_gid(sw, g);
	memcpy(ii, g, 16);		/* c: by the switch's GID */
	assert_int_equal(ask(f, c, MAD_METHOD_SET, II_ATTR, 0, ii, 36), 0);
	memset(ii, 0, 16);		/* b: a LID range without the switch */
	put(ii + 16, sw_lid(sw) + 1u, 2);
	put(ii + 18, sw_lid(sw) + 1u, 2);
	assert_int_equal(ask(f, b, MAD_METHOD_SET, II_ATTR, 0, ii, 36), 0);
	ii_make(ii, 144, 1, 0);		/* b: another trap */
	assert_int_equal(ask(f, b, MAD_METHOD_SET, II_ATTR, 0, ii, 36), 0);
	nreps = 0;
	sib_sma_link_down(f->sn, sw, b->ports[1].peer->num, SIB_LINK_LOST);
	assert_int_equal(nreps, 2);
	assert_int_equal(reps_of(0, 128, a), 1);
	assert_int_equal(reps_of(0, 128, c), 1);
	nt = reps[0].notice;
	assert_int_equal(nt[0], 0x80 | MAD_NOTICE_TYPE_URGENT);
	assert_int_equal(be(nt + 1, 3), MAD_NOTICE_PROD_SWITCH);
	assert_int_equal(be(nt + 6, 2), sw_lid(sw));	/* IssuerLID */
	assert_int_equal(be(nt + 10, 2), sw_lid(sw));	/* DataDetails LIDADDR */
	assert_memory_equal(nt + 64, g, 16);		/* IssuerGID */
	assert_int_equal(reps[0].tid & 0xFFFFFFFFu, 0x02DAB001u);
	/* a's unanswered: again every 200 ms, 3 times; c's answered */
	report_resp(f, reps[0].to == c ? &reps[0] : &reps[1]);
	tick(f, 1 * MS);
	nreps = 0;
	for (int i = 0; i < 6; i++)
		tick(f, 200 * MS);
	assert_int_equal(reps_of(0, 128, a), 3);
	assert_int_equal(reps_of(0, 128, c), 0);
	/* and back up: another trap 128, to both */
	nreps = 0;
	sib_sma_link_up(f->sn, sw, b->ports[1].peer->num);
	assert_int_equal(reps_of(0, 128, a), 1);
	assert_int_equal(reps_of(0, 128, c), 1);
	assert_int_equal(reps_of(0, 128, b), 0);
	assert_int_equal(sa_db(f->sn)->ctr.traps_forwarded, 2);
}

/* A CA port's CapabilityMask changes: its trap 144 reaches the SM and the
 * subscribers of 144 get it (informational, producer CA, IssuerLID the
 * port's, the new mask in DataDetails, IssuerGID the port's GID). */
static void test_trap144_forwarded(void **state)
{
	struct fx *f = *state;
	struct sib_fab_node *a = f->cas[0], *b = f->cas[1];
	uint8_t ii[36], g[16];
	const uint8_t *nt;

	ii_make(ii, 144, 1, 0);
	assert_int_equal(ask(f, a, MAD_METHOD_SET, II_ATTR, 0, ii, 36), 0);
	assert_int_equal(ask(f, b, MAD_METHOD_SET, II_ATTR, 0, ii, 36), 0);
	nreps = 0;
	sib_sma_set_capability(f->sn, b, 1, 1u << 19, true);	/* IsCommunicationManagementSupported */
	assert_int_equal(nreps, 2);	/* b hears of its own change too */
	assert_int_equal(reps_of(0, 144, a), 1);
	assert_int_equal(reps_of(0, 144, b), 1);
	nt = reps[0].notice;
	gid_of(b, g);
	assert_int_equal(nt[0], 0x80 | MAD_NOTICE_TYPE_INFO);
	assert_int_equal(be(nt + 1, 3), MAD_NOTICE_PROD_CA);
	assert_int_equal(be(nt + 6, 2), lid_of(b));
	assert_int_equal(be(nt + 12, 2), lid_of(b));
	assert_int_equal(be(nt + 16, 4), b->mgmt->port[1].pi.capability_mask);
	assert_memory_equal(nt + 64, g, 16);
	/* no change, no trap */
	nreps = 0;
	sib_sma_set_capability(f->sn, b, 1, 1u << 19, true);
	assert_int_equal(nreps, 0);
}

/* OpenSM's trap aging: the same trap from the same LID is forwarded 11
 * times while each comes within 5 s of the last, then suppressed (and
 * not swept on) until it has been quiet 5 s (on the SA's clock); another
 * content is another trap. */
static void test_trap_storm(void **state)
{
	struct fx *f = *state;
	struct sib_fab_node *a = f->cas[0], *b = f->cas[1];
	struct sa_db *db = sa_db(f->sn);
	uint8_t ii[36];

	ii_make(ii, 144, 1, 0);
	assert_int_equal(ask(f, a, MAD_METHOD_SET, II_ATTR, 0, ii, 36), 0);
	nreps = 0;
	/* a mask toggled 13 times: two contents, 7 and 6 of each */
	for (int i = 0; i < 26; i++) {
		sib_sma_set_capability(f->sn, b, 1, 1u << 19, i % 2 == 0);
		if (i % 4 == 3)
			tick(f, 4000 * MS);	/* within 5 s of the last each time */
	}
	{
		unsigned int fresh = 0;	/* Reports, resends at the ticks not counted */

		for (unsigned int i = 0; i < nreps; i++) {
			unsigned int k;

			for (k = 0; k < i && reps[k].tid != reps[i].tid; k++)
				;
			fresh += k == i;
		}
		assert_int_equal(fresh, 22);	/* 11 of each */
	}
	assert_int_equal(db->ctr.traps_suppressed, 4);
	/* quiet 5 s: forwarded again */
	tick(f, 5000 * MS);
	nreps = 0;
	sib_sma_set_capability(f->sn, b, 1, 1u << 19, true);
	assert_int_equal(reps_of(0, 144, a), 1);
	assert_int_equal(db->ctr.traps_suppressed, 4);
}

/* Hostile traps: 3,000 Trap(Notice) SMPs at the SM's port with random
 * contents and IssuerLIDs (the real ones often), time passing now and
 * then: each is forwarded, suppressed, kept back (129-131) or dropped (no
 * port), never a crash; the aging table stays bounded. */
static void test_trap_hostile(void **state)
{
	struct fx *f = *state;
	struct sa_db *db = sa_db(f->sn);
	const char *env = getenv("SIB_SEED");
	unsigned int seed = env ? (unsigned int)strtoul(env, NULL, 0) : (unsigned int)time(NULL);
	uint64_t held = 0, before;
	uint8_t ii[36];

	print_message("test_trap_hostile: SIB_SEED=%u\n", seed);
	srand(seed);
	ii_make(ii, 0xFFFF, 1, 0);
	assert_int_equal(ask(f, f->cas[0], MAD_METHOD_SET, II_ATTR, 0, ii, 36), 0);
	before = db->ctr.traps_forwarded + db->ctr.traps_suppressed + db->ctr.traps_dropped;
	for (int i = 0; i < 3000; i++) {
		uint8_t req[MAD_SIZE], resp[MAD_SIZE], *nt = req + MAD_SMP_DATA_OFFS;
		uint16_t trap = rand() % 2 ? (uint16_t)(128 + rand() % 20) : (uint16_t)rand();

		memset(req, 0, sizeof(req));
		req[0] = MAD_BASE_VERSION;
		req[1] = MAD_MGMT_CLASS_SUBN_LID_ROUTED;
		req[2] = MAD_SMP_CLASS_VERSION;
		req[3] = MAD_METHOD_TRAP;
		put(req + 16, MAD_ATTR_NOTICE, 2);
		for (unsigned int k = 0; k < MAD_SMP_DATA_SIZE; k++)
			nt[k] = (uint8_t)(rand() % 4 ? 0 : rand());
		nt[0] = (uint8_t)(rand() % 3 ? 0x80 | (rand() % 5) : rand());
		put(nt + 4, trap, 2);
		put(nt + 6, rand() % 2 ? lid_of(f->cas[(unsigned int)rand() % f->n]) :
					 (uint16_t)(rand() % 3 ? rand() % 64 : rand()), 2);
		held += (nt[0] & 0x80) && trap >= 129 && trap <= 131;
		nreps = 0;
		assert_int_equal(sib_sma_process(f->sn, f->sn->sm.node, f->sn->sm.port, req, resp), 1);
		assert_int_equal(resp[3], MAD_METHOD_TRAP_REPRESS);
		if (rand() % 100 == 0)
			tick(f, (uint64_t)(rand() % 7000) * MS);
		assert_true(db->ntrap_age <= 1024);
	}
	/* every trap accounted for (129-131 not suppressed are kept back) */
	assert_true(db->ctr.traps_forwarded + db->ctr.traps_suppressed + db->ctr.traps_dropped - before +
		    held >= 3000);
	assert_true(db->ctr.traps_forwarded + db->ctr.traps_suppressed + db->ctr.traps_dropped - before <=
		    3000);
	assert_int_equal(ask(f, f->cas[0], MAD_METHOD_GETTABLE, IIR_ATTR, 0, NULL, 0), 0);
}

/* An MCMemberRecord join of n (FullMember) to mgid, creating it. */
static uint16_t mc_join(struct fx *f, struct sib_fab_node *n, const uint8_t *mgid, uint8_t *out)
{
	struct sa_mcmember_record r = { .qkey = mgid[2] == 0x40 ? 0x0B1B : 0x11, .pkey = 0xFFFF,
					.join_state = 1 };
	uint8_t rec[56];
	uint16_t st;

	memcpy(r.mgid, mgid, 16);
	gid_of(n, r.port_gid);
	sa_mcmember_record_encode(&r, rec);
	/* MGID PortGID Q_Key TClass P_Key SL FlowLabel JoinState */
	st = ask(f, n, MAD_METHOD_SET, SA_ATTR_MCMEMBER_RECORD, 0x1 | 0x2 | 0x4 | 0x40 | 0x80 | 0x1000 |
		 0x2000 | 0x10000, rec, sizeof(rec));
	if (out)
		memcpy(out, f->msg + MAD_SA_HDR_SIZE, 56);
	return st;
}

/* Groups that port n is a member of (MCMemberRecord GetTable by PortGID). */
static size_t groups_of(struct fx *f, struct sib_fab_node *asker, struct sib_fab_node *n)
{
	struct sa_mcmember_record r = { .join_state = 0 };
	uint8_t rec[56];

	gid_of(n, r.port_gid);
	sa_mcmember_record_encode(&r, rec);
	assert_int_equal(ask(f, asker, MAD_METHOD_GETTABLE, SA_ATTR_MCMEMBER_RECORD, 0x2, rec, 56), 0);
	return nrec(f);
}

static const uint8_t bcast[16] = { 0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0,
				   0xff, 0xff, 0xff, 0xff };
static const uint8_t mgid_x[16] = { 0xff, 0x12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x42 };

/* Is the MFT bit of the switch port b hangs off set for mlid? */
static bool mft_has(const struct sib_fab_node *b, uint16_t mlid)
{
	const struct sib_fab_port *sp = b->ports[1].peer;
	const struct sib_fab_node *sw = sp->node;
	unsigned int npos = sib_subnet_mft_positions(sw);
	const uint16_t *mft = sw->mgmt->sw->mft;

	return mft && (mft[(size_t)(mlid - 0xC000u) * npos + sp->num / 16] >> (sp->num % 16) & 1);
}

static void test_mcast_port_down(void **state)
{
	struct fx *f = *state;
	struct sib_fab_node *a = f->cas[0], *b = f->cas[1];
	uint8_t ii[36], rec[56];
	unsigned int k66 = 0, k67 = 0, k65 = 0;
	uint16_t mlid_b;

	ii_make(ii, 0xFFFF, 1, 0);
	assert_int_equal(ask(f, a, MAD_METHOD_SET, II_ATTR, 0, ii, 36), 0);
	nreps = 0;
	assert_int_equal(mc_join(f, b, bcast, rec), 0);
	mlid_b = (uint16_t)be(rec + 36, 2);
	assert_true(mft_has(b, mlid_b));	/* the MFT leads to b */
	assert_int_equal(mc_join(f, b, mgid_x, NULL), 0);
	assert_int_equal(nreps, 2);	/* trap 66 for each: its first full member */
	assert_int_equal(reps[0].trap, 66);
	assert_memory_equal(reps[0].gid, bcast, 16);
	assert_int_equal(reps[1].trap, 66);
	assert_memory_equal(reps[1].gid, mgid_x, 16);
	assert_int_equal(groups_of(f, a, b), 2);
	assert_int_equal(ask(f, a, MAD_METHOD_GETTABLE, SA_ATTR_MCMEMBER_RECORD, 0, NULL, 0), 0);
	assert_int_equal(nrec(f), 2);

	/* b goes down: at the sweep it leaves both; the group it made goes,
	 * the IPoIB broadcast group stays (OpenSM's well-known group) */
	nreps = 0;
	port_down(f, b);
	for (unsigned int i = 0; i < nreps; i++) {
		k65 += reps[i].trap == 65;
		k66 += reps[i].trap == 66;
		k67 += reps[i].trap == 67;
	}
	assert_int_equal(k65, 1);
	assert_int_equal(k66, 0);
	assert_int_equal(k67, 2);
	assert_false(mft_has(b, mlid_b));	/* reprogrammed in that sweep */
	assert_int_equal(groups_of(f, a, b), 0);
	assert_int_equal(ask(f, a, MAD_METHOD_GETTABLE, SA_ATTR_MCMEMBER_RECORD, 0, NULL, 0), 0);
	assert_int_equal(nrec(f), 1);
	assert_memory_equal(rec_at(f, 0, 56), bcast, 16);
	/* back up: b is in no group until it joins again */
	sib_sma_link_up(f->sn, b, 1);
	assert_int_equal(groups_of(f, a, b), 0);
	assert_int_equal(mc_join(f, a, mgid_x, NULL), 0);
	assert_int_equal(mc_join(f, b, mgid_x, rec), 0);
	assert_int_equal(groups_of(f, a, b), 1);
	mlid_b = (uint16_t)be(rec + 36, 2);
	assert_true(mft_has(b, mlid_b));
	/* down and up between two sweeps: b left (the up's sweep prunes it
	 * after programming the MFTs, and programs them again) */
	sib_sma_link_down(f->sn, b, 1, SIB_LINK_LOST);
	sib_sma_link_up(f->sn, b, 1);
	assert_int_equal(groups_of(f, a, b), 0);
	assert_int_equal(groups_of(f, a, a), 1);
	assert_false(mft_has(b, mlid_b));
	assert_true(mft_has(a, mlid_b));
}

/* A CA added at run time joins, is removed, and another CA joins the same
 * group before any sweep: the MFTs are computed without the removed node
 * (it was read after free before: caught by ASan). */
static void test_mcast_ca_removed(void **state)
{
	struct fx *f = *state;
	struct sib_fab_port *sw = sib_subnet_free_switch_port(f->sn);
	struct sib_fab_node *n, *a = f->cas[0];

	assert_non_null(sw);
	n = sib_subnet_ca_add(f->sn, "t0", sw, sib_subnet_fresh_guid(f->sn, 1, 0));
	assert_non_null(n);
	sib_sma_link_up(f->sn, n, 1);
	assert_int_not_equal(lid_of(n), 0);
	assert_int_equal(mc_join(f, n, mgid_x, NULL), 0);
	sib_subnet_ca_remove(f->sn, n);
	assert_int_equal(mc_join(f, a, mgid_x, NULL), 0);
	assert_int_equal(ask(f, a, MAD_METHOD_GETTABLE, SA_ATTR_MCMEMBER_RECORD, 0, NULL, 0), 0);
	assert_int_equal(nrec(f), 2);	/* the broadcast group and X (a in it) */
	assert_int_equal(groups_of(f, a, a), 1);
}

/* Hostile requests: 3,000 SA MADs of these attributes with random methods,
 * masks and records from random CAs are answered (one MAD or a table) or
 * dropped, never a crash; the SA answers a plain query after them. */
static void test_sa_hostile(void **state)
{
	static const uint16_t attrs[] = { SR_ATTR, II_ATTR, IIR_ATTR, SA_ATTR_MCMEMBER_RECORD };
	static const uint8_t methods[] = { 0x01, 0x02, 0x12, 0x15, 0x14, 0x06, 0x86, 0x03 };
	struct fx *f = *state;
	const char *env = getenv("SIB_SEED");
	unsigned int seed = env ? (unsigned int)strtoul(env, NULL, 0) : (unsigned int)time(NULL);

	print_message("test_sa_hostile: SIB_SEED=%u\n", seed);
	srand(seed);
	for (int i = 0; i < 3000; i++) {
		struct sib_fab_node *from = f->cas[(unsigned int)rand() % f->n];
		struct mad_sa sa;
		uint8_t wire[MAD_SIZE];
		mai_mad_t m;

		memset(&sa, 0, sizeof(sa));
		sa.hdr.base_version = MAD_BASE_VERSION;
		sa.hdr.mgmt_class = MAD_MGMT_CLASS_SUBN_ADM;
		sa.hdr.class_version = MAD_SA_CLASS_VERSION;
		sa.hdr.method = methods[(unsigned int)rand() % sizeof(methods)];
		sa.hdr.tid = (uint64_t)CHAN << MAI_TID_CHAN_SHIFT | (uint64_t)i;
		sa.hdr.attr_id = attrs[(unsigned int)rand() % 4];
		sa.comp_mask = (uint64_t)rand() << 32 | (uint64_t)rand();
		sa.sm_key = rand() % 4 ? 0 : (uint64_t)rand();
		for (size_t k = 0; k < sizeof(sa.data); k++)
			sa.data[k] = (uint8_t)(rand() % 3 ? rand() : (k % 7 ? 0 : 0xFF));
		if (rand() % 2)	/* a real GID often: the port's own */
			gid_of(from, sa.data + 8 * (rand() % 3));
		mad_sa_encode(&sa, wire);
		memset(&m, 0, sizeof(m));
		assert_int_equal(mai_fromwire(wire, MAD_SIZE, &m), MAD_SIZE);
		m.type = MAI_TYPE_MAD;
		m.qp = 1;
		m.port = 1;
		m.remote_qpn = 1;
		m.remote_qkey = 0x80010000u;
		m.lrh.dlid = SIB_SM_LID;
		m.lrh.slid = lid_of(from);
		requester = from;
		nsegs = 0;
		sib_mad_send(f->sn, from, 1, &m);
		if (rand() % 50 == 0)
			tick(f, (uint64_t)(rand() % 3000) * MS);
	}
	assert_int_equal(ask(f, f->cas[0], MAD_METHOD_GETTABLE, SR_ATTR, 0, NULL, 0), 0);
	assert_int_equal(ask(f, f->cas[0], MAD_METHOD_GETTABLE, IIR_ATTR, 0, NULL, 0), 0);
}

/* ---- randomized: SRs, subscriptions, ports down and up, against a model ---- */

/* A Report left unanswered: its resends as the SA must make them. */
struct pend {
	uint64_t tid;
	unsigned int to;		/* CA index */
	unsigned int sends;
	uint64_t deadline;		/* 0: starts at the next tick */
};

struct model {
	struct pend pend[512];
	unsigned int npend;
	uint32_t last_tid;		/* low 32 bits of the SA's last Report TID */
	bool up[8];
	bool sub[8];			/* subscribed to every trap */
	bool sr[8][4];			/* CA c's ServiceRecord of ServiceID k */
	bool armed[8][4];
	uint64_t expires[8][4];		/* 0: infinite */
	uint32_t lease[8][4];
	bool cap[8];			/* CA c's CapabilityMask bit 19 set by the test */
	struct {			/* OpenSM's trap aging: (source LID, content) */
		uint16_t lid;
		uint32_t what;		/* 128, or 144 + 1000 * the bit */
		uint32_t count;
		uint64_t expires;
	} age[32];
	unsigned int nage;
	uint64_t suppressed;
};

/* A trap from lid with content `what` at the SA's time now: forwarded
 * (the 11 first of a run each within 5 s of the last)? */
static bool model_trap(struct model *m, uint16_t lid, uint32_t what, uint64_t now)
{
	unsigned int k = 0, i;

	for (i = 0; i < m->nage; i++)
		if (m->age[i].expires > now)
			m->age[k++] = m->age[i];
	m->nage = k;
	for (i = 0; i < k && (m->age[i].lid != lid || m->age[i].what != what); i++)
		;
	if (i == k) {
		assert_true(k < 32);
		m->age[k].lid = lid;
		m->age[k].what = what;
		m->age[k].count = 0;
		m->nage++;
	}
	m->age[i].count++;
	m->age[i].expires = now + 5000 * MS;
	m->suppressed += m->age[i].count > 11;
	return m->age[i].count <= 11;
}

static size_t model_srs(const struct model *m, unsigned int n)
{
	size_t k = 0;

	for (unsigned int c = 0; c < n; c++)
		for (unsigned int i = 0; i < 4; i++)
			k += m->sr[c][i];
	return k;
}

static void model_tick(struct model *m, unsigned int n, uint64_t now)
{
	for (unsigned int c = 0; c < n; c++)
		for (unsigned int i = 0; i < 4; i++) {
			if (!m->sr[c][i])
				continue;
			if (!m->armed[c][i]) {
				m->armed[c][i] = true;
				m->expires[c][i] = m->lease[c][i] == 0xFFFFFFFF ? 0 :
						   now + m->lease[c][i] * 1000 * MS;
			}
			if (m->expires[c][i] && m->expires[c][i] <= now)
				m->sr[c][i] = false;
		}
}

/* The Reports one event sent (in reps): every one answered at once or left
 * to be resent; `lost` more TIDs of the run went to CA x on its dead link
 * (TIDs run in sequence, so they are the ones the run lacks). */
static void take_reports(struct fx *f, struct model *m, unsigned int x, unsigned int lost)
{
	uint32_t k = 0;

	for (unsigned int i = 0; i < nreps; i++) {
		if (rand() % 2 || m->npend == 512) {
			report_resp(f, &reps[i]);
			continue;
		}
		for (unsigned int c = 0; c < f->n; c++)	/* left unanswered */
			if (reps[i].to == f->cas[c])
				m->pend[m->npend++] = (struct pend){ .tid = reps[i].tid, .to = c, .sends = 1 };
	}
	for (uint32_t t = m->last_tid + 1; k < lost && t <= m->last_tid + nreps + lost; t++) {
		unsigned int i;

		for (i = 0; i < nreps && (uint32_t)reps[i].tid != t; i++)
			;
		if (i < nreps)
			continue;
		k++;
		if (m->npend < 512)
			m->pend[m->npend++] = (struct pend){ .tid = 3ull << 40 | t, .to = x, .sends = 1 };
	}
	m->last_tid += nreps + lost;
}

/*
 * A port change of CA x: its switch's trap 128 (unless suppressed: fwd)
 * forwarded to every subscribed CA, then at the sweep the SM's trap
 * (`trap`, x's GID) to every subscribed CA in service but x; those to x
 * itself (own: it was subscribed as its link went down) are lost.  Any
 * other Report is a failure.
 */
static void check_reports(struct fx *f, struct model *m, unsigned int x, uint16_t trap, bool fwd,
			  bool own, unsigned int seed, int step)
{
	uint16_t swl = sw_lid(switch_of(f->cas[x]));
	uint8_t g[16];
	unsigned int want = 0;

	gid_of(f->cas[x], g);
	for (unsigned int c = 0; c < f->n; c++)
		want += c != x && m->sub[c] && m->up[c];
	want *= 1u + fwd;
	for (unsigned int i = 0; i < nreps; i++) {
		bool ok = reps[i].trap == 128 ? fwd && be(reps[i].notice + 6, 2) == swl :
			  reps[i].trap == trap && !memcmp(reps[i].gid, g, 16);

		if (!ok)
			fail_msg("seed %u step %d: Report of trap %u (CA %u, trap %u, fwd %d)", seed,
				 step, reps[i].trap, x, trap, fwd);
		for (unsigned int c = 0; c < f->n; c++)
			if (reps[i].to == f->cas[c] && (!m->sub[c] || !m->up[c] || c == x))
				fail_msg("seed %u step %d: a Report to CA %u", seed, step, c);
	}
	if (nreps != want)
		fail_msg("seed %u step %d: %u Reports of traps 128/%u for CA %u, want %u", seed, step,
			 nreps, trap, x, want);
	take_reports(f, m, x, own ? 1u + fwd : 0);
}

/* CA x's CapabilityMask changed: its trap 144 (unless suppressed) to every
 * subscribed CA, x too. */
static void check_144(struct fx *f, struct model *m, unsigned int x, bool fwd, unsigned int seed,
		      int step)
{
	unsigned int want = 0;

	for (unsigned int c = 0; c < f->n; c++)
		want += fwd && m->sub[c] && m->up[c];
	for (unsigned int i = 0; i < nreps; i++)
		if (reps[i].trap != 144 || be(reps[i].notice + 6, 2) != lid_of(f->cas[x]) ||
		    be(reps[i].notice + 16, 4) != f->cas[x]->mgmt->port[1].pi.capability_mask)
			fail_msg("seed %u step %d: Report of trap %u for CA %u's 144", seed, step,
				 reps[i].trap, x);
	if (nreps != want)
		fail_msg("seed %u step %d: %u Reports of trap 144 for CA %u, want %u", seed, step,
			 nreps, x, want);
	take_reports(f, m, x, 0);
}

/* The Reports a tick sent again: exactly the unanswered ones due (every
 * 200 ms from the tick after the first send, 3 times), to ports up. */
static void check_resends(struct fx *f, struct model *m, unsigned int seed, int step)
{
	unsigned int want = 0;

	for (unsigned int i = 0; i < m->npend;) {
		struct pend *p = &m->pend[i];
		bool sent = false;

		if (!p->deadline) {
			p->deadline = f->now + 200 * MS;
		} else if (p->deadline <= f->now) {
			if (p->sends > 3) {
				*p = m->pend[--m->npend];
				continue;
			}
			p->sends++;
			p->deadline = f->now + 200 * MS;
			sent = m->up[p->to];
		}
		if (sent) {
			unsigned int k;

			for (k = 0; k < nreps && reps[k].tid != p->tid; k++)
				;
			if (k == nreps || reps[k].to != f->cas[p->to])
				fail_msg("seed %u step %d: Report 0x%llx not sent again (send %u)", seed,
					 step, (unsigned long long)p->tid, p->sends);
			want++;
		}
		i++;
	}
	if (nreps != want)
		fail_msg("seed %u step %d: %u Reports at a tick, want %u", seed, step, nreps, want);
}

static void random_step(struct fx *f, struct model *m, unsigned int seed, int step)
{
	unsigned int c = (unsigned int)rand() % f->n, k = (unsigned int)rand() % 4;
	int op = rand() % 8;
	bool own = false;
	uint8_t r[SR_SIZE], ii[36];
	uint16_t st;

	if (op >= 6) {					/* a port down or up */
		bool fwd = model_trap(m, sw_lid(switch_of(f->cas[c])), 128, f->now);

		m->up[c] = !m->up[c];
		nreps = 0;
		if (!m->up[c]) {
			port_down(f, f->cas[c]);
			own = m->sub[c];
		} else {
			sib_sma_link_up(f->sn, f->cas[c], 1);
		}
		check_reports(f, m, c, m->up[c] ? 64 : 65, fwd, own, seed, step);
		if (!m->up[c])
			m->sub[c] = false;	/* its subscriptions went */
		return;
	}
	if (!m->up[c])
		return;				/* it cannot reach the SA */
	if (op == 5 && rand() % 2) {			/* its CapabilityMask changes */
		bool fwd;

		m->cap[c] = !m->cap[c];
		fwd = model_trap(m, lid_of(f->cas[c]), 144 + 1000u * m->cap[c], f->now);
		nreps = 0;
		sib_sma_set_capability(f->sn, f->cas[c], 1, 1u << 19, m->cap[c]);
		check_144(f, m, c, fwd, seed, step);
		return;
	}
	if (op <= 1) {					/* set or delete a ServiceRecord */
		uint32_t lease = rand() % 3 ? (uint32_t)(rand() % 3) : 0xFFFFFFFFu;

		sr_make(r, 0x100 + k, f->cas[c], lease, "rnd");
		st = ask(f, f->cas[c], op ? MAD_METHOD_DELETE : MAD_METHOD_SET, SR_ATTR,
			 SR_ID | SR_GID | SR_LEASE, r, SR_SIZE);
		if (st != (op && !m->sr[c][k] ? 0x0300 : 0))
			fail_msg("seed %u step %d: SR %s: 0x%x", seed, step, op ? "delete" : "set", st);
		m->sr[c][k] = !op;
		m->armed[c][k] = false;
		m->lease[c][k] = lease;
	} else if (op == 2) {				/* subscribe or unsubscribe */
		bool on = rand() % 2;

		ii_make(ii, 0xFFFF, on, on ? 0 : 1);
		st = ask(f, f->cas[c], MAD_METHOD_SET, II_ATTR, 0, ii, 36);
		if (st != (!on && !m->sub[c] ? 0x0200 : 0))
			fail_msg("seed %u step %d: InformInfo %d: 0x%x", seed, step, on, st);
		m->sub[c] = on;
	} else if (op == 3) {				/* time passes */
		nreps = 0;
		/* now and then quiet long enough for the trap aging to forget */
		tick(f, (uint64_t)(rand() % 4 ? rand() % 1500 : 5000 + rand() % 2000) * MS);
		model_tick(m, f->n, f->now);
		check_resends(f, m, seed, step);
	} else {					/* what the SA holds */
		size_t subs = 0;

		assert_int_equal(ask(f, f->cas[c], MAD_METHOD_GETTABLE, SR_ATTR, 0, NULL, 0), 0);
		if (nrec(f) != model_srs(m, f->n))
			fail_msg("seed %u step %d: %zu ServiceRecords, want %zu", seed, step, nrec(f),
				 model_srs(m, f->n));
		sr_make(r, 0x100 + k, f->cas[c], 0, "");
		st = ask(f, f->cas[c], MAD_METHOD_GET, SR_ATTR, SR_ID | SR_GID, r, SR_SIZE);
		assert_int_equal(st, m->sr[c][k] ? 0 : 0x0300);
		for (unsigned int i = 0; i < f->n; i++)
			subs += m->sub[i];
		assert_int_equal(ask(f, f->cas[c], MAD_METHOD_GETTABLE, IIR_ATTR, 0, NULL, 0), 0);
		if (nrec(f) != subs)
			fail_msg("seed %u step %d: %zu subscriptions, want %zu", seed, step, nrec(f), subs);
	}
}

static void test_sa_random(void **state)
{
	struct fx *f = *state;
	struct model m;
	const char *env = getenv("SIB_SEED");
	unsigned int seed = env ? (unsigned int)strtoul(env, NULL, 0) : (unsigned int)time(NULL);

	print_message("test_sa_random: SIB_SEED=%u\n", seed);
	srand(seed);
	memset(&m, 0, sizeof(m));
	m.last_tid = 0x02DAB000u;
	tick(f, 6000 * MS);	/* traps of the fabric's start forgotten */
	for (unsigned int c = 0; c < f->n; c++) {
		m.up[c] = true;
		m.cap[c] = f->cas[c]->mgmt->port[1].pi.capability_mask & (1u << 19);
	}
	for (int step = 0; step < 600; step++)
		random_step(f, &m, seed, step);
	assert_int_equal(sa_db(f->sn)->ctr.traps_suppressed, m.suppressed);
	print_message("test_sa_random: %llu traps suppressed\n", (unsigned long long)m.suppressed);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_service_record, setup, teardown),
		cmocka_unit_test_setup_teardown(test_inform_info, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sa_caps, setup, teardown),
		cmocka_unit_test_setup_teardown(test_trap_sweeps, setup, teardown),
		cmocka_unit_test_setup_teardown(test_trap128_forwarded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_trap144_forwarded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_trap_storm, setup, teardown),
		cmocka_unit_test_setup_teardown(test_trap_hostile, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mcast_port_down, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mcast_ca_removed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sa_hostile, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sa_random, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
