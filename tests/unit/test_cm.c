/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the IB CM: the MAD layouts (src/iba/cm.c) from hand-built
 * bytes, and the CM agent (src/subnet/cm.c) between CA ports of the
 * default fabric through the MAD router, without softibd: the host's table
 * is a stub, time is the test's (sib_cm_tick), MADs are lost through the
 * CM's test hook.  Every handler asserts it does not run inside a sib_cm_*
 * call the test made.  The randomized test prints its seed; replay with
 * `test_cm --seed N` or CM_SEED=N (and CM_RUNS=N for more sequences).
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "iba/cm.h"
#include "subnet/cm.h"
#include "subnet/mad_router.h"
#include "subnet/subnet_api.h"

/* ---- the host: nothing but the router ------------------------------------ */

static void on_port(void *ctx, struct sib_fab_node *n, uint8_t pn, unsigned int what,
		    uint16_t old_lid, uint8_t old_lmc)
{
	(void)ctx, (void)n, (void)pn, (void)what, (void)old_lid, (void)old_lmc;
}

static void on_route(void *ctx)
{
	(void)ctx;
}

static void no_counters(void *ctx, const struct sib_fab_node *n, uint8_t pn,
			struct sib_pma_counters *sum)
{
	(void)ctx, (void)n, (void)pn, (void)sum;
}

static void no_log(void *ctx, const char *line)
{
	(void)ctx, (void)line;
}

static size_t agents_only(void *ctx, const struct sib_fab_node *n, uint8_t port, uint8_t qp,
			  const struct mai_filter_ent *tail, size_t ntail,
			  const struct mai_filter_ent **ents)
{
	(void)ctx, (void)n, (void)port, (void)qp;
	*ents = tail;
	return ntail;
}

static int no_chan(void *ctx, uint32_t chan, const mai_mad_t *m)
{
	(void)ctx, (void)chan, (void)m;
	return -ENOENT;
}

static int no_resp(void *ctx, uint32_t chan, const struct sib_fab_node *n, uint8_t port,
		   uint8_t qp, const mai_mad_t *m)
{
	(void)ctx, (void)chan, (void)n, (void)port, (void)qp, (void)m;
	return -ENOENT;
}

static const struct sib_subnet_host host = {
	.port_changed = on_port, .route_changed = on_route, .data_counters = no_counters,
	.log = no_log, .mad_filters = agents_only, .mad_push = no_chan,
	.mad_response = no_resp,
};

/* ---- events as the handlers saw them --------------------------------------- */

struct evrec {
	enum sib_cm_event_type type;
	struct sib_cm_id *id, *listen_id;
	void *ctx;
	struct sib_cm_event ev;		/* pointers cleared: see the copies */
	uint8_t pdata[CM_MAD_SIZE];
	uint8_t pdata_len;
	uint8_t ari[72];
};

#define MAX_EV 4096
static struct evrec evs[MAX_EV];
static unsigned int nevs;
static bool in_call;		/* the test is inside a sib_cm_* call */
static int handler_ret;		/* what the handler returns */
static void (*on_event)(struct evrec *r);	/* the randomized test's model */

/* Run a call into the CM with the flag up: no handler may run inside. */
#define CALL(x) ({ in_call = true; __typeof__(x) r_ = (x); in_call = false; r_; })
#define CALLV(x) do { in_call = true; x; in_call = false; } while (0)

static int handler(struct sib_cm_id *id, const struct sib_cm_event *ev, void *ctx)
{
	struct evrec *r;

	assert_false(in_call);
	assert_ptr_equal(id, ev->id);
	assert_true(nevs < MAX_EV);
	r = &evs[nevs++];
	memset(r, 0, sizeof(*r));
	r->type = ev->type;
	r->id = id;
	r->listen_id = ev->listen_id;
	r->ctx = ctx;
	r->ev = *ev;
	r->pdata_len = ev->pdata_len;
	if (ev->pdata_len)
		memcpy(r->pdata, ev->pdata, ev->pdata_len);
	if (ev->type == SIB_CM_REJ_RECEIVED)
		memcpy(r->ari, ev->u.rej.ari, 72);
	if (on_event)
		on_event(r);
	return handler_ret;
}

/* The n-th event of type t from `from` on (NULL: none). */
static struct evrec *ev_find(enum sib_cm_event_type t, unsigned int from)
{
	for (unsigned int i = from; i < nevs; i++)
		if (evs[i].type == t)
			return &evs[i];
	return NULL;
}

static unsigned int ev_count(enum sib_cm_event_type t, struct sib_cm_id *id)
{
	unsigned int c = 0;

	for (unsigned int i = 0; i < nevs; i++)
		c += evs[i].type == t && (!id || evs[i].id == id);
	return c;
}

/* ---- fixture ------------------------------------------------------------------ */

struct fx {
	struct sib_subnet *sn;
	struct sib_fab_node *ca[4];
	uint16_t lid[4];
	uint64_t now;
};

static unsigned int drop_next;	/* MADs of attribute drop_attr to lose */
static uint16_t drop_attr;
static unsigned int dropped_seen;

static bool tx_drop(void *ctx, const uint8_t *mad)
{
	uint16_t attr = (uint16_t)(mad[16] << 8 | mad[17]);

	(void)ctx;
	if (drop_next && (attr == drop_attr || drop_attr == 0)) {
		drop_next--;
		dropped_seen++;
		return true;
	}
	return false;
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct sib_fab_node *n;
	unsigned int k = 0;
	char err[128];

	assert_non_null(f);
	f->sn = sib_subnet_new(&host, NULL);
	assert_non_null(f->sn);
	assert_int_equal(sib_subnet_load(f->sn, NULL, err, sizeof(err)), 0);
	assert_int_equal(sib_mad_init(f->sn), 0);
	for (unsigned int i = 0; (n = sib_subnet_node(f->sn, i)) && k < 4; i++)
		if (n->type == SIB_NODE_CA) {
			f->ca[k] = n;
			f->lid[k] = sib_mad_port_lid(n, 1);
			assert_int_not_equal(f->lid[k], 0);
			k++;
		}
	assert_int_equal(k, 4);
	f->now = 1000;
	nevs = 0;
	handler_ret = 0;
	on_event = NULL;
	drop_next = 0;
	drop_attr = 0;
	dropped_seen = 0;
	sib_cm_set_tx_drop(f->sn, tx_drop, NULL);
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

/* What the host does after a command or a routed MAD: dispatch, then tick. */
static uint64_t pump(struct fx *f)
{
	sib_cm_dispatch(f->sn);
	return sib_cm_tick(f->sn, f->now);
}

static __attribute__((unused)) uint64_t advance(struct fx *f, uint64_t ns)
{
	f->now += ns;
	return sib_cm_tick(f->sn, f->now);
}

/* Run the timers until none is left (at most `max` ticks). */
static void run_out(struct fx *f, unsigned int max)
{
	uint64_t next = pump(f);

	for (unsigned int i = 0; next && i < max; i++) {
		f->now = next;
		next = sib_cm_tick(f->sn, f->now);
	}
}

static const uint8_t req_pdata[56] = "the active side's private data, 56 bytes of it .......";

/* A REQ from CA a to CA b as the rdma_cm makes one. */
static struct sib_cm_req_param req_param(const struct fx *f, unsigned int a, unsigned int b)
{
	struct sib_cm_req_param p = {
		.service_id = 0x0000000001060000ull | 7174,
		.qpn = 0x123456, .qp_type = 2, .responder_resources = 4, .initiator_depth = 3,
		.retry_count = 7, .rnr_retry_count = 6, .flow_control = 1, .srq = 0,
		.path_mtu = 3, .local_cm_response_timeout = 20, .remote_cm_response_timeout = 20,
		.max_cm_retries = 15, .pkey = 0xFFFF, .starting_psn = 0xABCDEF,
		.pdata_len = sizeof(req_pdata), .pdata = req_pdata,
	};

	p.primary.slid = f->lid[a];
	p.primary.dlid = f->lid[b];
	p.primary.sgid[0] = 0xfe, p.primary.sgid[1] = 0x80, p.primary.sgid[15] = (uint8_t)a;
	p.primary.dgid[0] = 0xfe, p.primary.dgid[1] = 0x80, p.primary.dgid[15] = (uint8_t)b;
	p.primary.flow_label = 0xABCDE;
	p.primary.traffic_class = 0x22;
	p.primary.hop_limit = 0x40;
	p.primary.sl = 5;
	p.primary.rate = 7;
	p.primary.packet_life_time = 1;
	return p;
}

static const uint8_t rep_pdata[196] = "the passive side's answer";

static struct sib_cm_rep_param rep_param(void)
{
	struct sib_cm_rep_param p = {
		.qpn = 0x654321, .starting_psn = 0x0FEDCB, .responder_resources = 3,
		.initiator_depth = 4, .target_ack_delay = 9, .failover_accepted = 0,
		.flow_control = 1, .rnr_retry_count = 5, .srq = 1,
		.pdata_len = sizeof(rep_pdata), .pdata = rep_pdata,
	};

	return p;
}

/* A listener on CA b and a connected pair: *act on CA a, *pas on CA b. */
static struct sib_cm_id *listen_on(struct fx *f, unsigned int b, uint64_t sid)
{
	struct sib_cm_id *l = sib_cm_id_new(f->sn, f->ca[b], 1, handler, (void *)"listener");

	assert_non_null(l);
	assert_int_equal(CALL(sib_cm_listen(l, sid, ~0ull)), 0);
	return l;
}

static __attribute__((unused)) void connect_pair(struct fx *f, struct sib_cm_id **act, struct sib_cm_id **pas)
{
	struct sib_cm_req_param rq = req_param(f, 0, 1);
	struct sib_cm_rep_param rp = rep_param();
	unsigned int base = nevs;
	struct evrec *r;

	*act = sib_cm_id_new(f->sn, f->ca[0], 1, handler, (void *)"active");
	assert_non_null(*act);
	assert_int_equal(CALL(sib_cm_send_req(*act, &rq)), 0);
	pump(f);
	r = ev_find(SIB_CM_REQ_RECEIVED, base);
	assert_non_null(r);
	*pas = r->id;
	assert_int_equal(CALL(sib_cm_send_rep(*pas, &rp)), 0);
	pump(f);
	assert_non_null(ev_find(SIB_CM_REP_RECEIVED, base));
	assert_int_equal(CALL(sib_cm_send_rtu(*act, NULL, 0)), 0);
	pump(f);
	assert_non_null(ev_find(SIB_CM_RTU_RECEIVED, base));
	assert_string_equal(sib_cm_state_str(sib_cm_id_state(*act)), "ESTABLISHED");
	assert_string_equal(sib_cm_state_str(sib_cm_id_state(*pas)), "ESTABLISHED");
}

/* ---- the layouts --------------------------------------------------------------- */

static void test_layout_offsets(void **state)
{
	static const struct { enum cm_field_id id; uint8_t off, bytes; } want[] = {
		/* research/rdmacm.md §3 */
		{ CM_REQ_LOCAL_COMM_ID, 0, 4 }, { CM_REQ_SERVICE_ID, 8, 8 },
		{ CM_REQ_LOCAL_CA_GUID, 16, 8 }, { CM_REQ_LOCAL_QPN, 32, 4 },
		{ CM_REQ_RESPONDER_RESOURCES, 35, 1 }, { CM_REQ_INITIATOR_DEPTH, 39, 1 },
		{ CM_REQ_STARTING_PSN, 44, 4 }, { CM_REQ_RETRY_COUNT, 47, 1 },
		{ CM_REQ_PKEY, 48, 2 }, { CM_REQ_PATH_MTU, 50, 1 }, { CM_REQ_RNR_RETRY_COUNT, 50, 1 },
		{ CM_REQ_PRIMARY_LOCAL_LID, 52, 2 }, { CM_REQ_PRIMARY_REMOTE_LID, 54, 2 },
		{ CM_REQ_PRIMARY_LOCAL_GID, 56, 16 }, { CM_REQ_PRIMARY_REMOTE_GID, 72, 16 },
		{ CM_REQ_PRIMARY_SL, 94, 1 }, { CM_REQ_PRIMARY_LOCAL_ACK_TIMEOUT, 95, 1 },
		{ CM_REQ_PRIVATE_DATA, 140, 92 },
		{ CM_REP_LOCAL_COMM_ID, 0, 4 }, { CM_REP_REMOTE_COMM_ID, 4, 4 },
		{ CM_REP_LOCAL_QPN, 12, 4 }, { CM_REP_STARTING_PSN, 20, 4 },
		{ CM_REP_RESPONDER_RESOURCES, 24, 1 }, { CM_REP_INITIATOR_DEPTH, 25, 1 },
		{ CM_REP_LOCAL_CA_GUID, 28, 8 }, { CM_REP_PRIVATE_DATA, 36, 196 },
		{ CM_RTU_PRIVATE_DATA, 8, 224 }, { CM_DREQ_REMOTE_QPN, 8, 4 },
		{ CM_DREQ_PRIVATE_DATA, 12, 220 }, { CM_DREP_PRIVATE_DATA, 8, 224 },
		{ CM_REJ_REASON, 10, 2 }, { CM_REJ_ARI, 12, 72 }, { CM_REJ_PRIVATE_DATA, 84, 148 },
		{ CM_MRA_SERVICE_TIMEOUT, 9, 1 },
		{ CM_SIDR_REQ_REQUEST_ID, 0, 4 }, { CM_SIDR_REQ_PKEY, 4, 2 },
		{ CM_SIDR_REQ_SERVICE_ID, 8, 8 }, { CM_SIDR_REQ_PRIVATE_DATA, 16, 216 },
		{ CM_SIDR_REP_STATUS, 4, 1 }, { CM_SIDR_REP_QPN, 8, 4 }, { CM_SIDR_REP_QKEY, 20, 4 },
		{ CM_SIDR_REP_PRIVATE_DATA, 96, 136 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const struct cm_field *fl = cm_field(want[i].id);

		assert_non_null(fl);
		assert_int_equal(fl->off, want[i].off);
		assert_int_equal(fl->bytes, want[i].bytes);
	}
	/* every field inside the MAD; no scalar field overlaps another of its
	 * message (bit by bit) */
	for (int i = 0; i < CM_FIELD_COUNT; i++) {
		const struct cm_field *a = cm_field((enum cm_field_id)i);

		assert_true(a->off + a->bytes <= CM_MAD_SIZE - CM_HDR_SIZE);
		assert_non_null(a->name);
	}
	assert_null(cm_field(CM_FIELD_COUNT));
	assert_string_equal(cm_attr_str(CM_ATTR_SIDR_REP), "SIDR_REP");
	assert_string_equal(cm_attr_str(0x1B), "?");
	assert_string_equal(cm_rej_reason_str(CM_REJ_INVALID_SERVICE_ID), "invalid service ID");
	assert_string_equal(cm_rej_reason_str(34), "?");
	assert_int_equal(cm_pdata_field(CM_ATTR_LAP), CM_FIELD_COUNT);
	assert_int_equal(cm_pdata_field(CM_ATTR_RTU), CM_RTU_PRIVATE_DATA);
}

/* No two fields of one message share a bit; together they cover what the
 * IBA names (the rest is reserved). */
static void test_layout_no_overlap(void **state)
{
	(void)state;
	for (uint16_t attr = CM_ATTR_REQ; attr <= CM_ATTR_SIDR_REP; attr++) {
		uint8_t used[CM_MAD_SIZE] = { 0 };

		for (int i = 0; i < CM_FIELD_COUNT; i++) {
			const struct cm_field *fl = cm_field((enum cm_field_id)i);
			uint8_t a[CM_MAD_SIZE] = { 0 };

			if (fl->attr != attr)
				continue;
			if (fl->bytes > 8)
				memset(a + CM_HDR_SIZE + fl->off, 0xFF, fl->bytes);
			else
				cm_set(a, (enum cm_field_id)i, UINT64_MAX);
			for (int b = 0; b < CM_MAD_SIZE; b++) {
				assert_int_equal(used[b] & a[b], 0);
				used[b] |= a[b];
			}
		}
	}
}

/* A REQ built by hand from the offsets (big-endian bytes): every field
 * reads back, and cm_set writes the same bytes. */
static void test_layout_req_bytes(void **state)
{
	uint8_t m[CM_MAD_SIZE] = { 0 }, m2[CM_MAD_SIZE] = { 0 };
	uint8_t *d = m + CM_HDR_SIZE;
	size_t len;

	(void)state;
	cm_put_hdr(m, CM_ATTR_REQ, 0x0000040000000007ull);
	assert_int_equal(m[0], 1);
	assert_int_equal(m[1], 0x07);
	assert_int_equal(m[2], 2);
	assert_int_equal(m[3], 0x03);
	assert_int_equal(m[16] << 8 | m[17], 0x10);
	assert_int_equal(m[15], 7);
	memcpy(d + 0, "\x11\x22\x33\x44", 4);			/* LocalCommID */
	memcpy(d + 4, "\x00\x5e\xed\x00", 4);			/* VendorID */
	memcpy(d + 8, "\x00\x00\x00\x00\x01\x06\x1c\x06", 8);	/* ServiceID */
	memcpy(d + 16, "\x5e\xed\x00\x00\x00\x00\x00\x10", 8);	/* LocalCAGUID */
	memcpy(d + 28, "\x01\x23\x45\x67", 4);			/* LocalQ_Key */
	memcpy(d + 32, "\x12\x34\x56\x04", 4);			/* QPN, RespRes 4 */
	memcpy(d + 36, "\x00\x00\x00\x03", 4);			/* EECN, InitDepth 3 */
	d[43] = 20 << 3 | CM_TST_UC << 1 | 1;			/* RemoteCMRespTO, TST, FC */
	memcpy(d + 44, "\xab\xcd\xef", 3);			/* StartingPSN */
	d[47] = 18 << 3 | 7;					/* LocalCMRespTO, RetryCount */
	memcpy(d + 48, "\xff\xff", 2);				/* P_Key */
	d[50] = 4 << 4 | 6;					/* MTU, RNRRetry */
	d[51] = 15 << 4 | 1 << 3;				/* MaxCMRetries, SRQ */
	memcpy(d + 52, "\x00\x02\x00\x03", 4);			/* LIDs */
	d[56] = 0xfe, d[71] = 2, d[72] = 0xfe, d[87] = 3;	/* GIDs */
	memcpy(d + 88, "\xab\xcd\xe0\x07", 4);			/* FlowLabel, rate 7 */
	d[92] = 0x22, d[93] = 0x40;
	d[94] = 5 << 4 | 1 << 3;				/* SL 5, SubnetLocal */
	d[95] = 19 << 3;					/* LocalACKTimeout */
	memcpy(d + 140, "pdata", 5);

	assert_int_equal(cm_get(m, CM_REQ_LOCAL_COMM_ID), 0x11223344);
	assert_int_equal(cm_get(m, CM_REQ_VENDOR_ID), 0x5eed00);
	assert_true(cm_get(m, CM_REQ_SERVICE_ID) == 0x1061c06ull);
	assert_true(cm_get(m, CM_REQ_LOCAL_CA_GUID) == 0x5eed000000000010ull);
	assert_int_equal(cm_get(m, CM_REQ_LOCAL_QKEY), 0x01234567);
	assert_int_equal(cm_get(m, CM_REQ_LOCAL_QPN), 0x123456);
	assert_int_equal(cm_get(m, CM_REQ_RESPONDER_RESOURCES), 4);
	assert_int_equal(cm_get(m, CM_REQ_INITIATOR_DEPTH), 3);
	assert_int_equal(cm_get(m, CM_REQ_REMOTE_CM_RESPONSE_TIMEOUT), 20);
	assert_int_equal(cm_get(m, CM_REQ_TRANSPORT_SERVICE_TYPE), CM_TST_UC);
	assert_int_equal(cm_get(m, CM_REQ_FLOW_CONTROL), 1);
	assert_int_equal(cm_get(m, CM_REQ_STARTING_PSN), 0xABCDEF);
	assert_int_equal(cm_get(m, CM_REQ_LOCAL_CM_RESPONSE_TIMEOUT), 18);
	assert_int_equal(cm_get(m, CM_REQ_RETRY_COUNT), 7);
	assert_int_equal(cm_get(m, CM_REQ_PKEY), 0xFFFF);
	assert_int_equal(cm_get(m, CM_REQ_PATH_MTU), 4);
	assert_int_equal(cm_get(m, CM_REQ_RNR_RETRY_COUNT), 6);
	assert_int_equal(cm_get(m, CM_REQ_MAX_CM_RETRIES), 15);
	assert_int_equal(cm_get(m, CM_REQ_SRQ), 1);
	assert_int_equal(cm_get(m, CM_REQ_PRIMARY_LOCAL_LID), 2);
	assert_int_equal(cm_get(m, CM_REQ_PRIMARY_REMOTE_LID), 3);
	assert_int_equal(cm_bytes(m, CM_REQ_PRIMARY_LOCAL_GID, &len)[15], 2);
	assert_int_equal(len, 16);
	assert_int_equal(cm_bytes(m, CM_REQ_PRIMARY_REMOTE_GID, &len)[0], 0xfe);
	assert_int_equal(cm_get(m, CM_REQ_PRIMARY_FLOW_LABEL), 0xABCDE);
	assert_int_equal(cm_get(m, CM_REQ_PRIMARY_PACKET_RATE), 7);
	assert_int_equal(cm_get(m, CM_REQ_PRIMARY_TRAFFIC_CLASS), 0x22);
	assert_int_equal(cm_get(m, CM_REQ_PRIMARY_HOP_LIMIT), 0x40);
	assert_int_equal(cm_get(m, CM_REQ_PRIMARY_SL), 5);
	assert_int_equal(cm_get(m, CM_REQ_PRIMARY_SUBNET_LOCAL), 1);
	assert_int_equal(cm_get(m, CM_REQ_PRIMARY_LOCAL_ACK_TIMEOUT), 19);
	assert_memory_equal(cm_bytes(m, CM_REQ_PRIVATE_DATA, &len), "pdata", 5);
	assert_int_equal(len, 92);

	/* the same message through cm_set: the same bytes */
	cm_put_hdr(m2, CM_ATTR_REQ, 0x0000040000000007ull);
	for (int i = 0; i < CM_FIELD_COUNT; i++) {
		const struct cm_field *fl = cm_field((enum cm_field_id)i);

		if (fl->attr != CM_ATTR_REQ)
			continue;
		if (fl->bytes > 8) {
			const uint8_t *src = cm_bytes(m, (enum cm_field_id)i, &len);

			assert_int_equal(cm_set_bytes(m2, (enum cm_field_id)i, src, len), (int)len);
		} else {
			cm_set(m2, (enum cm_field_id)i, cm_get(m, (enum cm_field_id)i));
		}
	}
	assert_memory_equal(m, m2, CM_MAD_SIZE);
	/* too long for the field: refused, nothing written */
	assert_int_equal(cm_set_bytes(m2, CM_REQ_PRIVATE_DATA, m, 93), -1);
	assert_int_equal(cm_set_bytes(m2, CM_REQ_SERVICE_ID, m, 8), -1);
	assert_memory_equal(m, m2, CM_MAD_SIZE);
	/* a value wider than its field is cut, its neighbours kept */
	cm_set(m2, CM_REQ_RETRY_COUNT, 0xFF);
	assert_int_equal(cm_get(m2, CM_REQ_LOCAL_CM_RESPONSE_TIMEOUT), 18);
	assert_int_equal(cm_get(m2, CM_REQ_RETRY_COUNT), 7);
}

/* ---- connections ------------------------------------------------------------------ */

/* listen + REQ: REQ_RECEIVED on a new passive id with every parameter and
 * the private data; REP, RTU; then DREQ/DREP and TimeWait on both sides. */
static void test_connect_disconnect(void **state)
{
	struct fx *f = *state;
	struct sib_cm_req_param rq = req_param(f, 0, 1);
	struct sib_cm_rep_param rp = rep_param();
	struct sib_cm_id *l = listen_on(f, 1, rq.service_id), *a, *p;
	const struct sib_cm_req_param *g;
	const struct sib_cm_rep_param *h;
	struct evrec *r;

	a = sib_cm_id_new(f->sn, f->ca[0], 1, handler, (void *)"active");
	assert_non_null(a);
	assert_int_not_equal(sib_cm_id_local_comm_id(a), 0);
	assert_int_not_equal(sib_cm_id_local_comm_id(a), sib_cm_id_local_comm_id(l));
	assert_int_equal(CALL(sib_cm_send_req(a, &rq)), 0);
	assert_int_equal(nevs, 0);
	assert_int_equal(CALL(sib_cm_send_req(a, &rq)), -EINVAL); /* not in REQ_SENT */
	pump(f);
	assert_int_equal(nevs, 1);
	r = &evs[0];
	assert_int_equal(r->type, SIB_CM_REQ_RECEIVED);
	assert_ptr_equal(r->listen_id, l);
	assert_ptr_not_equal(r->id, l);
	assert_string_equal((const char *)r->ctx, "listener");
	assert_ptr_equal(r->ev.node, f->ca[1]);
	assert_int_equal(r->ev.port_num, 1);
	p = r->id;
	g = &r->ev.u.req;
	assert_true(g->service_id == rq.service_id);
	assert_int_equal(g->qpn, rq.qpn);
	assert_int_equal(g->qp_type, 2);
	assert_int_equal(g->responder_resources, 4);
	assert_int_equal(g->initiator_depth, 3);
	assert_int_equal(g->retry_count, 7);
	assert_int_equal(g->rnr_retry_count, 6);
	assert_int_equal(g->flow_control, 1);
	assert_int_equal(g->path_mtu, 3);
	assert_int_equal(g->local_cm_response_timeout, 20);
	assert_int_equal(g->remote_cm_response_timeout, 20);
	assert_int_equal(g->max_cm_retries, 15);
	assert_int_equal(g->pkey, 0xFFFF);
	assert_int_equal(g->starting_psn, 0xABCDEF);
	assert_int_equal(g->primary.slid, f->lid[0]);
	assert_int_equal(g->primary.dlid, f->lid[1]);
	assert_memory_equal(g->primary.sgid, rq.primary.sgid, 16);
	assert_memory_equal(g->primary.dgid, rq.primary.dgid, 16);
	assert_int_equal(g->primary.flow_label, 0xABCDE);
	assert_int_equal(g->primary.traffic_class, 0x22);
	assert_int_equal(g->primary.hop_limit, 0x40);
	assert_int_equal(g->primary.sl, 5);
	assert_int_equal(g->primary.rate, 7);
	assert_int_equal(g->primary.packet_life_time, 1);
	assert_false(g->primary.global);
	assert_int_equal(r->pdata_len, 92);
	assert_memory_equal(r->pdata, req_pdata, sizeof(req_pdata));
	assert_string_equal(sib_cm_state_str(sib_cm_id_state(p)), "REQ_RCVD");

	sib_cm_id_set_handler(p, handler, (void *)"passive");
	assert_int_equal(CALL(sib_cm_send_rtu(p, NULL, 0)), -EINVAL);
	assert_int_equal(CALL(sib_cm_send_rep(p, &rp)), 0);
	pump(f);
	assert_int_equal(nevs, 2);
	r = &evs[1];
	assert_int_equal(r->type, SIB_CM_REP_RECEIVED);
	assert_ptr_equal(r->id, a);
	assert_string_equal((const char *)r->ctx, "active");
	h = &r->ev.u.rep;
	assert_int_equal(h->qpn, 0x654321);
	assert_int_equal(h->starting_psn, 0x0FEDCB);
	assert_int_equal(h->responder_resources, 3);
	assert_int_equal(h->initiator_depth, 4);
	assert_int_equal(h->target_ack_delay, 9);
	assert_int_equal(h->flow_control, 1);
	assert_int_equal(h->rnr_retry_count, 5);
	assert_int_equal(h->srq, 1);
	assert_int_equal(r->pdata_len, 196);
	assert_memory_equal(r->pdata, rep_pdata, sizeof(rep_pdata));

	assert_int_equal(CALL(sib_cm_send_rtu(a, (const uint8_t *)"rtu!", 4)), 0);
	pump(f);
	assert_int_equal(nevs, 3);
	assert_int_equal(evs[2].type, SIB_CM_RTU_RECEIVED);
	assert_ptr_equal(evs[2].id, p);
	assert_memory_equal(evs[2].pdata, "rtu!", 4);
	assert_int_equal(evs[2].pdata_len, 224);

	/* DREQ from the passive side this time */
	assert_int_equal(CALL(sib_cm_send_dreq(p, (const uint8_t *)"bye", 3)), 0);
	pump(f);
	assert_int_equal(nevs, 4);
	assert_int_equal(evs[3].type, SIB_CM_DREQ_RECEIVED);
	assert_ptr_equal(evs[3].id, a);
	assert_memory_equal(evs[3].pdata, "bye", 3);
	assert_int_equal(CALL(sib_cm_send_drep(a, NULL, 0)), 0);
	pump(f);
	assert_int_equal(nevs, 5);
	assert_int_equal(evs[4].type, SIB_CM_DREP_RECEIVED);
	assert_ptr_equal(evs[4].id, p);
	assert_string_equal(sib_cm_state_str(sib_cm_id_state(a)), "TIMEWAIT");
	assert_string_equal(sib_cm_state_str(sib_cm_id_state(p)), "TIMEWAIT");
	run_out(f, 10);
	assert_int_equal(ev_count(SIB_CM_TIMEWAIT_EXIT, a), 1);
	assert_int_equal(ev_count(SIB_CM_TIMEWAIT_EXIT, p), 1);
	assert_string_equal(sib_cm_state_str(sib_cm_id_state(a)), "IDLE");

	assert_int_equal(sib_cm_counters(f->sn)->sent[CM_ATTR_REQ - CM_ATTR_FIRST], 1);
	assert_int_equal(sib_cm_counters(f->sn)->received[CM_ATTR_DREP - CM_ATTR_FIRST], 1);
	assert_int_equal(sib_cm_counters(f->sn)->ids, 3);
	CALLV(sib_cm_id_destroy(a));
	CALLV(sib_cm_id_destroy(p));
	CALLV(sib_cm_id_destroy(l));
	pump(f);
	assert_int_equal(sib_cm_counters(f->sn)->ids, 0);
	assert_int_equal(sib_cm_counters(f->sn)->dropped, 0);
}

/* REJ by the passive side (consumer reject with ARI and private data), and
 * by the active side after the REP. */
static void test_reject_both_ways(void **state)
{
	struct fx *f = *state;
	struct sib_cm_req_param rq = req_param(f, 0, 1);
	struct sib_cm_rep_param rp = rep_param();
	struct sib_cm_id *l = listen_on(f, 1, rq.service_id), *a, *p;
	struct evrec *r;

	a = sib_cm_id_new(f->sn, f->ca[0], 1, handler, NULL);
	assert_int_equal(CALL(sib_cm_send_req(a, &rq)), 0);
	pump(f);
	p = evs[0].id;
	assert_int_equal(CALL(sib_cm_send_rej(p, CM_REJ_CONSUMER_DEFINED, (const uint8_t *)"ari", 3,
					      (const uint8_t *)"no thanks", 9)), 0);
	pump(f);
	r = ev_find(SIB_CM_REJ_RECEIVED, 0);
	assert_non_null(r);
	assert_ptr_equal(r->id, a);
	assert_int_equal(r->ev.u.rej.reason, 28);
	assert_int_equal(r->ev.u.rej.ari_len, 3);
	assert_memory_equal(r->ari, "ari", 3);
	assert_int_equal(r->pdata_len, 148);
	assert_memory_equal(r->pdata, "no thanks", 9);
	assert_string_equal(sib_cm_state_str(sib_cm_id_state(a)), "IDLE");
	CALLV(sib_cm_id_destroy(p));

	/* the same id connects again; the active side rejects the REP */
	nevs = 0;
	assert_int_equal(CALL(sib_cm_send_req(a, &rq)), 0);
	pump(f);
	p = evs[0].id;
	assert_int_equal(CALL(sib_cm_send_rep(p, &rp)), 0);
	pump(f);
	assert_int_equal(evs[1].type, SIB_CM_REP_RECEIVED);
	assert_int_equal(CALL(sib_cm_send_rej(a, CM_REJ_INVALID_MTU, NULL, 0, NULL, 0)), 0);
	pump(f);
	r = ev_find(SIB_CM_REJ_RECEIVED, 0);
	assert_non_null(r);
	assert_ptr_equal(r->id, p);
	assert_int_equal(r->ev.u.rej.reason, CM_REJ_INVALID_MTU);
	assert_int_equal(r->ev.u.rej.ari_len, 0);
	assert_string_equal(sib_cm_state_str(sib_cm_id_state(p)), "TIMEWAIT");
	run_out(f, 10);
	assert_int_equal(ev_count(SIB_CM_TIMEWAIT_EXIT, p), 1);
	CALLV(sib_cm_id_destroy(a));
	CALLV(sib_cm_id_destroy(p));
	CALLV(sib_cm_id_destroy(l));
	assert_int_equal(sib_cm_counters(f->sn)->ids, 0);
	assert_int_equal(sib_cm_counters(f->sn)->dropped, 0);
}

/* A REQ for a service nobody listens to: REJ reason 8 (rping's "REJECTED,
 * error 8"); a listener on another service ID does not take it. */
static void test_no_listener(void **state)
{
	struct fx *f = *state;
	struct sib_cm_req_param rq = req_param(f, 0, 2);
	struct sib_cm_id *l = listen_on(f, 2, rq.service_id + 1), *a;
	struct evrec *r;

	a = sib_cm_id_new(f->sn, f->ca[0], 1, handler, NULL);
	assert_int_equal(CALL(sib_cm_send_req(a, &rq)), 0);
	pump(f);
	assert_int_equal(nevs, 1);
	r = &evs[0];
	assert_int_equal(r->type, SIB_CM_REJ_RECEIVED);
	assert_int_equal(r->ev.u.rej.reason, CM_REJ_INVALID_SERVICE_ID);
	assert_int_equal(sib_cm_counters(f->sn)->sent[CM_ATTR_REJ - CM_ATTR_FIRST], 1);
	assert_int_equal(sib_cm_counters(f->sn)->ids, 2);
	/* a listener with the same ID again: -EBUSY */
	{
		struct sib_cm_id *l2 = sib_cm_id_new(f->sn, f->ca[3], 1, handler, NULL);

		assert_int_equal(CALL(sib_cm_listen(l2, rq.service_id + 1, ~0ull)), -EBUSY);
		CALLV(sib_cm_id_destroy(l2));
	}
	CALLV(sib_cm_id_destroy(a));
	CALLV(sib_cm_id_destroy(l));
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layout_offsets),
		cmocka_unit_test(test_layout_no_overlap),
		cmocka_unit_test(test_layout_req_bytes),
		cmocka_unit_test_setup_teardown(test_connect_disconnect, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reject_both_ways, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_listener, setup, teardown),
	};

	(void)argc, (void)argv;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
