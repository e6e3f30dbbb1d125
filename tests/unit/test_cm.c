/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the IB CM: the MAD layouts (src/iba/cm.c) from hand-built
 * bytes, and the CM agent (src/subnet/cm.c, cm_rx.c) between CA ports of
 * the default fabric through the MAD router, without softibd (fixture in
 * cm_fixture.c: a stub host, the test's clock, MADs lost through the CM's
 * test hook).  Every handler asserts it does not run inside a sib_cm_*
 * call the test made.  The randomized model check is test_cm_random.c.
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

#include "cm_fixture.h"

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

/* A REQ_RECEIVED carries every parameter of rq (sent from CA 0 to CA 1)
 * and its private data. */
static void check_req(const struct fx *f, const struct evrec *r, const struct sib_cm_req_param *rq)
{
	const struct sib_cm_req_param *g;

	g = &r->ev.u.req;
	assert_true(g->service_id == rq->service_id);
	assert_int_equal(g->qpn, rq->qpn);
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
	assert_memory_equal(g->primary.sgid, rq->primary.sgid, 16);
	assert_memory_equal(g->primary.dgid, rq->primary.dgid, 16);
	assert_int_equal(g->primary.flow_label, 0xABCDE);
	assert_int_equal(g->primary.traffic_class, 0x22);
	assert_int_equal(g->primary.hop_limit, 0x40);
	assert_int_equal(g->primary.sl, 5);
	assert_int_equal(g->primary.rate, 7);
	assert_int_equal(g->primary.packet_life_time, 1);
	assert_false(g->primary.global);
	assert_int_equal(r->pdata_len, 92);
	assert_memory_equal(r->pdata, req_pdata, sizeof(req_pdata));
}

/* listen + REQ: REQ_RECEIVED on a new passive id with every parameter and
 * the private data; REP, RTU; then DREQ/DREP and TimeWait on both sides. */
static void test_connect_disconnect(void **state)
{
	struct fx *f = *state;
	struct sib_cm_req_param rq = req_param(f, 0, 1);
	struct sib_cm_rep_param rp = rep_param();
	struct sib_cm_id *l = listen_on(f, 1, rq.service_id), *a, *p;
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
	check_req(f, r, &rq);
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


/* A lost REQ is sent again after its response timeout; with every try lost
 * the active side gets REQ_ERROR after 1 + max_cm_retries sends, in the
 * capped time. */
static void test_req_retry_and_error(void **state)
{
	struct fx *f = *state;
	struct sib_cm_req_param rq = req_param(f, 0, 1);
	struct sib_cm_id *l = listen_on(f, 1, rq.service_id), *a, *a2;
	uint64_t start;

	rq.max_cm_retries = 3;
	rq.remote_cm_response_timeout = 10;	/* 4.2 ms: + 2 * 8 us packet life */
	a = sib_cm_id_new(f->sn, f->ca[0], 1, handler, NULL);
	drop_attr = CM_ATTR_REQ;
	drop_next = 1;
	assert_int_equal(CALL(sib_cm_send_req(a, &rq)), 0);
	pump(f);
	assert_int_equal(dropped_seen, 1);
	assert_int_equal(nevs, 0);
	advance(f, 4000000);	/* not yet */
	assert_int_equal(nevs, 0);
	advance(f, 300000);
	assert_int_equal(nevs, 1);
	assert_int_equal(evs[0].type, SIB_CM_REQ_RECEIVED);
	assert_int_equal(sib_cm_counters(f->sn)->resent, 1);
	CALLV(sib_cm_id_destroy(evs[0].id));
	pump(f);
	assert_non_null(ev_find(SIB_CM_REJ_RECEIVED, 0));

	/* every try lost: REQ_ERROR */
	nevs = 0;
	rq.remote_cm_response_timeout = 31;	/* hours by the IBA: capped at 1 s */
	a2 = sib_cm_id_new(f->sn, f->ca[0], 1, handler, NULL);
	drop_next = 100;
	dropped_seen = 0;
	start = f->now;
	assert_int_equal(CALL(sib_cm_send_req(a2, &rq)), 0);
	run_out(f, 20);
	assert_int_equal(dropped_seen, 4);
	assert_int_equal(nevs, 1);
	assert_int_equal(evs[0].type, SIB_CM_REQ_ERROR);
	assert_ptr_equal(evs[0].id, a2);
	assert_true(f->now - start <= 4 * 1000000000ull);
	assert_int_equal(sib_cm_counters(f->sn)->timeouts, 1);
	assert_string_equal(sib_cm_state_str(sib_cm_id_state(a2)), "IDLE");
	CALLV(sib_cm_id_destroy(a));
	CALLV(sib_cm_id_destroy(a2));
	CALLV(sib_cm_id_destroy(l));
	pump(f);
	assert_int_equal(sib_cm_counters(f->sn)->ids, 0);
}

/* Duplicates: a REQ again while the user decides gets MRA; once the REP
 * went (and was lost) the REQ again gets the REP again; a lost RTU makes
 * the REP come again and the RTU with it.  Each event once. */
static void test_duplicates(void **state)
{
	struct fx *f = *state;
	struct sib_cm_req_param rq = req_param(f, 2, 3);
	struct sib_cm_rep_param rp = rep_param();
	struct sib_cm_id *l = listen_on(f, 3, rq.service_id), *a, *p;
	struct evrec *r;

	rq.max_cm_retries = 5;
	rq.remote_cm_response_timeout = 10;
	a = sib_cm_id_new(f->sn, f->ca[2], 1, handler, NULL);
	assert_int_equal(CALL(sib_cm_send_req(a, &rq)), 0);
	pump(f);
	assert_int_equal(nevs, 1);
	p = evs[0].id;
	/* the user of p is slow: the REQ comes again, the CM answers MRA */
	run_out(f, 1);
	r = ev_find(SIB_CM_MRA_RECEIVED, 0);
	assert_non_null(r);
	assert_ptr_equal(r->id, a);
	assert_string_equal(sib_cm_state_str(sib_cm_id_state(a)), "MRA_REQ_RCVD");
	assert_string_equal(sib_cm_state_str(sib_cm_id_state(p)), "MRA_REQ_SENT");
	assert_int_equal(ev_count(SIB_CM_REQ_RECEIVED, NULL), 1);
	assert_int_equal(sib_cm_counters(f->sn)->sent[CM_ATTR_MRA - CM_ATTR_FIRST], 1);

	/* the REP is lost; the REQ again brings it again */
	drop_attr = CM_ATTR_REP;
	drop_next = 1;
	assert_int_equal(CALL(sib_cm_send_rep(p, &rp)), 0);
	pump(f);
	assert_int_equal(ev_count(SIB_CM_REP_RECEIVED, NULL), 0);
	f->now = pump(f);
	drop_attr = CM_ATTR_RTU;	/* and the first RTU is lost */
	drop_next = 1;
	while (!ev_count(SIB_CM_REP_RECEIVED, NULL) && f->now < 10000000000ull)
		f->now = sib_cm_tick(f->sn, f->now);
	assert_int_equal(ev_count(SIB_CM_REP_RECEIVED, a), 1);
	assert_int_equal(CALL(sib_cm_send_rtu(a, NULL, 0)), 0);
	pump(f);
	assert_int_equal(drop_next, 0);
	/* the passive side's REP timer: REP again, the active side's RTU again */
	while (!ev_count(SIB_CM_RTU_RECEIVED, NULL) && f->now < 10000000000ull)
		f->now = sib_cm_tick(f->sn, f->now) ?: f->now + 1;
	assert_int_equal(ev_count(SIB_CM_RTU_RECEIVED, p), 1);
	assert_int_equal(ev_count(SIB_CM_REP_RECEIVED, a), 1);
	assert_int_equal(ev_count(SIB_CM_REQ_RECEIVED, NULL), 1);
	assert_string_equal(sib_cm_state_str(sib_cm_id_state(a)), "ESTABLISHED");
	assert_string_equal(sib_cm_state_str(sib_cm_id_state(p)), "ESTABLISHED");
	assert_true(sib_cm_counters(f->sn)->resent >= 3);
	CALLV(sib_cm_id_destroy(a));
	CALLV(sib_cm_id_destroy(p));
	CALLV(sib_cm_id_destroy(l));
	run_out(f, 10);
	assert_int_equal(sib_cm_counters(f->sn)->ids, 0);
}

/* SIDR: the Q_Key and QPN come back; no listener: status 1; no answer:
 * SIDR_REQ_ERROR after the retries. */
static void test_sidr(void **state)
{
	struct fx *f = *state;
	uint64_t sid = 0x0000000001110000ull | 7174;
	struct sib_cm_id *l = listen_on(f, 1, sid), *a, *p;
	struct sib_cm_sidr_req_param sq = {
		.service_id = sid, .pkey = 0xFFFF, .timeout = 10, .max_cm_retries = 2,
		.pdata_len = 5, .pdata = (const uint8_t *)"hello",
	};
	struct sib_cm_sidr_rep_param sr = {
		.status = 0, .qpn = 0x4567, .qkey = 0x01234567, .pdata_len = 3,
		.pdata = (const uint8_t *)"yes",
	};
	struct evrec *r;

	sq.path.slid = f->lid[0];
	sq.path.dlid = f->lid[1];
	a = sib_cm_id_new(f->sn, f->ca[0], 1, handler, NULL);
	assert_int_equal(CALL(sib_cm_send_sidr_req(a, &sq)), 0);
	pump(f);
	r = ev_find(SIB_CM_SIDR_REQ_RECEIVED, 0);
	assert_non_null(r);
	assert_ptr_equal(r->listen_id, l);
	p = r->id;
	assert_true(r->ev.u.sidr_req.service_id == sid);
	assert_int_equal(r->ev.u.sidr_req.pkey, 0xFFFF);
	assert_int_equal(r->ev.u.sidr_req.path.slid, f->lid[0]);
	assert_int_equal(r->ev.u.sidr_req.path.dlid, f->lid[1]);
	assert_int_equal(r->pdata_len, 216);
	assert_memory_equal(r->pdata, "hello", 5);
	assert_int_equal(CALL(sib_cm_send_sidr_rep(p, &sr)), 0);
	pump(f);
	r = ev_find(SIB_CM_SIDR_REP_RECEIVED, 0);
	assert_non_null(r);
	assert_ptr_equal(r->id, a);
	assert_int_equal(r->ev.u.sidr_rep.status, 0);
	assert_int_equal(r->ev.u.sidr_rep.qpn, 0x4567);
	assert_int_equal(r->ev.u.sidr_rep.qkey, 0x01234567);
	assert_int_equal(r->pdata_len, 136);
	assert_memory_equal(r->pdata, "yes", 3);
	assert_string_equal(sib_cm_state_str(sib_cm_id_state(a)), "IDLE");
	CALLV(sib_cm_id_destroy(p));

	/* nobody listens: status 1 */
	nevs = 0;
	sq.service_id = sid + 1;
	assert_int_equal(CALL(sib_cm_send_sidr_req(a, &sq)), 0);
	pump(f);
	assert_int_equal(nevs, 1);
	assert_int_equal(evs[0].type, SIB_CM_SIDR_REP_RECEIVED);
	assert_int_equal(evs[0].ev.u.sidr_rep.status, CM_SIDR_UNSUPPORTED_SID);

	/* nobody answers: SIDR_REQ_ERROR after 1 + 2 tries */
	nevs = 0;
	drop_attr = CM_ATTR_SIDR_REQ;
	drop_next = 100;
	assert_int_equal(CALL(sib_cm_send_sidr_req(a, &sq)), 0);
	run_out(f, 10);
	assert_int_equal(dropped_seen, 3);
	assert_int_equal(nevs, 1);
	assert_int_equal(evs[0].type, SIB_CM_SIDR_REQ_ERROR);
	CALLV(sib_cm_id_destroy(a));
	CALLV(sib_cm_id_destroy(l));
	assert_int_equal(sib_cm_counters(f->sn)->ids, 0);
}

/* Destroy during the handshake sends REJ (Timeout with the CA GUID from
 * the active side, consumer reject from the passive side); a handler's
 * nonzero return destroys its id the same way; destroy when established
 * sends DREQ, and the comm ID waits in TimeWait. */
static void test_destroy(void **state)
{
	struct fx *f = *state;
	struct sib_cm_req_param rq = req_param(f, 0, 1);
	struct sib_cm_id *l = listen_on(f, 1, rq.service_id), *a, *p;
	unsigned int n;
	struct evrec *r;

	a = sib_cm_id_new(f->sn, f->ca[0], 1, handler, NULL);
	assert_int_equal(CALL(sib_cm_send_req(a, &rq)), 0);
	pump(f);
	p = evs[0].id;
	CALLV(sib_cm_id_destroy(a));
	pump(f);
	r = ev_find(SIB_CM_REJ_RECEIVED, 0);
	assert_non_null(r);
	assert_ptr_equal(r->id, p);
	assert_int_equal(r->ev.u.rej.reason, CM_REJ_TIMEOUT);
	assert_int_equal(r->ev.u.rej.ari_len, 8);
	assert_int_equal(r->ari[7], (uint8_t)f->ca[0]->node_guid);
	assert_int_equal(r->ari[0], (uint8_t)(f->ca[0]->node_guid >> 56));
	CALLV(sib_cm_id_destroy(p));

	/* the passive side destroys in REQ_RCVD */
	nevs = 0;
	a = sib_cm_id_new(f->sn, f->ca[0], 1, handler, NULL);
	assert_int_equal(CALL(sib_cm_send_req(a, &rq)), 0);
	pump(f);
	CALLV(sib_cm_id_destroy(evs[0].id));
	pump(f);
	assert_int_equal(nevs, 2);
	assert_int_equal(evs[1].type, SIB_CM_REJ_RECEIVED);
	assert_int_equal(evs[1].ev.u.rej.reason, CM_REJ_CONSUMER_DEFINED);

	/* a handler that returns nonzero for REQ_RECEIVED */
	nevs = 0;
	ret_on = SIB_CM_REQ_RECEIVED;
	assert_int_equal(CALL(sib_cm_send_req(a, &rq)), 0);
	pump(f);
	assert_int_equal(nevs, 2);
	assert_int_equal(evs[1].type, SIB_CM_REJ_RECEIVED);
	assert_int_equal(evs[1].ev.u.rej.reason, CM_REJ_CONSUMER_DEFINED);
	assert_int_equal(sib_cm_counters(f->sn)->ids, 2);
	ret_on = -1;
	CALLV(sib_cm_id_destroy(a));

	/* established: DREQ; the destroyed side's comm ID waits out TimeWait */
	nevs = 0;
	connect_pair(f, &a, &p);
	n = nevs;
	CALLV(sib_cm_id_destroy(a));
	assert_int_equal(nevs, n);
	pump(f);
	assert_int_equal(nevs, n + 1);
	assert_int_equal(evs[n].type, SIB_CM_DREQ_RECEIVED);
	assert_ptr_equal(evs[n].id, p);
	assert_int_equal(sib_cm_counters(f->sn)->ids, 3);	/* l, p, a in TimeWait */
	assert_int_equal(CALL(sib_cm_send_drep(p, NULL, 0)), 0);
	run_out(f, 10);
	assert_int_equal(nevs, n + 2);
	assert_int_equal(evs[n + 1].type, SIB_CM_TIMEWAIT_EXIT);
	assert_ptr_equal(evs[n + 1].id, p);
	assert_int_equal(sib_cm_counters(f->sn)->ids, 2);
	assert_int_equal(sib_cm_counters(f->sn)->dropped, 0);

	/* a listener destroyed (from another id's handler) with a REQ its
	 * user has not seen yet: that REQ gets REJ, no REQ_RECEIVED */
	CALLV(sib_cm_id_destroy(p));
	nevs = 0;
	a = sib_cm_id_new(f->sn, f->ca[0], 1, handler, NULL);
	assert_int_equal(CALL(sib_cm_send_req(a, &rq)), 0);
	pump(f);
	p = evs[0].id;
	assert_int_equal(CALL(sib_cm_send_rep(p, &(struct sib_cm_rep_param){ .qpn = 9 })), 0);
	pump(f);	/* REP_RECEIVED at a; p in REP_SENT */
	{
		struct sib_cm_id *a2 = sib_cm_id_new(f->sn, f->ca[2], 1, handler, NULL);
		struct sib_cm_req_param rq2 = req_param(f, 2, 1);

		nevs = 0;
		assert_int_equal(CALL(sib_cm_establish(p)), 0);	/* USER_ESTABLISHED queued */
		assert_int_equal(CALL(sib_cm_send_req(a2, &rq2)), 0);
		destroy_in_handler = l;
		pump(f);
		assert_null(destroy_in_handler);
		assert_int_equal(evs[0].type, SIB_CM_USER_ESTABLISHED);
		assert_int_equal(ev_count(SIB_CM_REQ_RECEIVED, NULL), 0);
		r = ev_find(SIB_CM_REJ_RECEIVED, 0);
		assert_non_null(r);
		assert_ptr_equal(r->id, a2);
		assert_int_equal(r->ev.u.rej.reason, CM_REJ_CONSUMER_DEFINED);
		CALLV(sib_cm_id_destroy(a2));
	}
	CALLV(sib_cm_id_destroy(p));
	CALLV(sib_cm_id_destroy(a));
	run_out(f, 10);
	assert_int_equal(sib_cm_counters(f->sn)->ids, 0);
}

/* Send a raw CM MAD (wire form) from QP1 of CA `from` to `dlid`. */
static void inject(struct fx *f, unsigned int from, uint16_t dlid, const uint8_t *wire,
		   uint16_t data_len)
{
	mai_mad_t m;

	memset(&m, 0, sizeof(m));
	assert_int_equal(mai_fromwire(wire, CM_MAD_SIZE, &m), CM_MAD_SIZE);
	m.type = MAI_TYPE_MAD;
	m.qp = 1;
	m.port = 1;
	m.remote_qpn = 1;
	m.remote_qkey = CM_GSI_QKEY;
	m.lrh.dlid = dlid;
	m.lrh.slid = f->lid[from];
	m.data_len = data_len;
	CALLV(sib_mad_send(f->sn, f->ca[from], 1, &m));
	pump(f);
}

/* Malformed and unexpected CM MADs are dropped and counted: short, wrong
 * class version, a response method, LAP/APR and unknown attributes, an
 * unknown comm ID, a known one from the wrong port, a REQ with comm ID 0,
 * a message the state does not take.  Nothing is answered, no event. */
static void test_hostile(void **state)
{
	struct fx *f = *state;
	struct sib_cm_req_param rq = req_param(f, 0, 1);
	struct sib_cm_id *l = listen_on(f, 1, rq.service_id), *a, *p;
	const struct sib_cm_counters *c = sib_cm_counters(f->sn);
	uint8_t m[CM_MAD_SIZE];
	uint64_t dropped, sent_total = 0;
	unsigned int n;

	connect_pair(f, &a, &p);
	n = nevs;
	for (int i = 0; i < 16; i++)
		sent_total += c->sent[i];
	dropped = c->dropped;

	/* a good RTU for p, in wire form, to spoil one way at a time */
#define FRESH() do { \
		memset(m, 0, sizeof(m)); \
		cm_put_hdr(m, CM_ATTR_RTU, 77); \
		cm_set(m, CM_RTU_LOCAL_COMM_ID, sib_cm_id_local_comm_id(a)); \
		cm_set(m, CM_RTU_REMOTE_COMM_ID, sib_cm_id_local_comm_id(p)); \
	} while (0)
	FRESH();
	inject(f, 0, f->lid[1], m, 100);	/* short */
	assert_int_equal(c->dropped, ++dropped);
	FRESH();
	m[2] = 1;				/* class version 1 */
	inject(f, 0, f->lid[1], m, MAI_MAD_DATA_SIZE);
	assert_int_equal(c->dropped, ++dropped);
	FRESH();
	m[3] = 0x83;				/* a response method */
	inject(f, 0, f->lid[1], m, MAI_MAD_DATA_SIZE);
	assert_int_equal(c->dropped, ++dropped);
	FRESH();
	m[17] = CM_ATTR_LAP;			/* LAP: not supported */
	inject(f, 0, f->lid[1], m, MAI_MAD_DATA_SIZE);
	assert_int_equal(c->dropped, ++dropped);
	FRESH();
	m[16] = 0x00, m[17] = 0x30;		/* unknown attribute */
	inject(f, 0, f->lid[1], m, MAI_MAD_DATA_SIZE);
	assert_int_equal(c->dropped, ++dropped);
	FRESH();
	cm_set(m, CM_RTU_REMOTE_COMM_ID, sib_cm_id_local_comm_id(p) ^ 0x5A5A5A5A); /* unknown */
	inject(f, 0, f->lid[1], m, MAI_MAD_DATA_SIZE);
	assert_int_equal(c->dropped, ++dropped);
	FRESH();
	inject(f, 2, f->lid[1], m, MAI_MAD_DATA_SIZE);	/* from another port */
	assert_int_equal(c->dropped, ++dropped);
	FRESH();
	cm_set(m, CM_RTU_LOCAL_COMM_ID, 12345);	/* not the peer's comm ID */
	inject(f, 0, f->lid[1], m, MAI_MAD_DATA_SIZE);
	assert_int_equal(c->dropped, ++dropped);
	FRESH();
	m[17] = CM_ATTR_DREP;			/* DREP while ESTABLISHED: wrong state */
	inject(f, 0, f->lid[1], m, MAI_MAD_DATA_SIZE);
	assert_int_equal(c->dropped, ++dropped);
	FRESH();
	m[17] = CM_ATTR_REQ;			/* REQ with LocalCommID 0 */
	cm_set(m, CM_REQ_LOCAL_COMM_ID, 0);
	inject(f, 0, f->lid[1], m, MAI_MAD_DATA_SIZE);
	assert_int_equal(c->dropped, ++dropped);
	FRESH();
	m[17] = CM_ATTR_SIDR_REP;		/* a SIDR_REP nobody asked for */
	inject(f, 0, f->lid[1], m, MAI_MAD_DATA_SIZE);
	assert_int_equal(c->dropped, ++dropped);
#undef FRESH
	assert_int_equal(nevs, n);
	{
		uint64_t t = 0;

		for (int i = 0; i < 16; i++)
			t += c->sent[i];
		assert_true(t == sent_total);
	}
	/* the connection is unharmed */
	assert_string_equal(sib_cm_state_str(sib_cm_id_state(a)), "ESTABLISHED");
	assert_string_equal(sib_cm_state_str(sib_cm_id_state(p)), "ESTABLISHED");
	CALLV(sib_cm_id_destroy(a));
	CALLV(sib_cm_id_destroy(p));
	CALLV(sib_cm_id_destroy(l));
	run_out(f, 10);
	assert_int_equal(c->ids, 0);
}

/* Every bad parameter of a send is refused, and the id stays as it was. */
static void test_bad_params(void **state)
{
	struct fx *f = *state;
	struct sib_cm_req_param rq = req_param(f, 0, 1);
	struct sib_cm_id *l = listen_on(f, 1, rq.service_id), *a, *p;
	uint8_t m[CM_MAD_SIZE] = { 0 };

	connect_pair(f, &a, &p);
	assert_int_equal(CALL(sib_cm_send_dreq(a, m, 221)), -EINVAL);
	assert_int_equal(CALL(sib_cm_send_dreq(a, NULL, 3)), -EINVAL);
	assert_int_equal(CALL(sib_cm_send_req(a, NULL)), -EINVAL);
	{
		struct sib_cm_id *b = sib_cm_id_new(f->sn, f->ca[3], 1, handler, NULL);
		struct sib_cm_req_param bad = req_param(f, 3, 1);

		bad.pdata_len = 93;
		assert_int_equal(CALL(sib_cm_send_req(b, &bad)), -EINVAL);
		bad = req_param(f, 3, 1);
		bad.qp_type = 4;
		assert_int_equal(CALL(sib_cm_send_req(b, &bad)), -EINVAL);
		bad = req_param(f, 3, 1);
		bad.primary.dlid = 0;
		assert_int_equal(CALL(sib_cm_send_req(b, &bad)), -EINVAL);
		assert_string_equal(sib_cm_state_str(sib_cm_id_state(b)), "IDLE");
		CALLV(sib_cm_id_destroy(b));
	}
	assert_null(sib_cm_id_new(f->sn, f->ca[0], 2, handler, NULL));	/* no port 2 */
	assert_string_equal(sib_cm_state_str(sib_cm_id_state(a)), "ESTABLISHED");
	CALLV(sib_cm_id_destroy(a));
	CALLV(sib_cm_id_destroy(p));
	CALLV(sib_cm_id_destroy(l));
	run_out(f, 10);
	assert_int_equal(sib_cm_counters(f->sn)->ids, 0);
}

/* A DREQ lost every time: DREQ_ERROR, then TimeWait; the peer stays
 * established until its own DREQ (answered, now that nothing is lost). */
static void test_dreq_lost(void **state)
{
	struct fx *f = *state;
	struct sib_cm_req_param rq = req_param(f, 0, 1);
	struct sib_cm_id *l = listen_on(f, 1, rq.service_id), *a, *p;
	unsigned int n;

	connect_pair(f, &a, &p);
	n = nevs;
	drop_attr = CM_ATTR_DREQ;
	drop_next = 16;		/* 1 + max_cm_retries (15) */
	assert_int_equal(CALL(sib_cm_send_dreq(a, NULL, 0)), 0);
	run_out(f, 40);
	assert_int_equal(dropped_seen, 16);
	assert_int_equal(ev_count(SIB_CM_DREQ_ERROR, a), 1);
	assert_int_equal(ev_count(SIB_CM_TIMEWAIT_EXIT, a), 1);
	assert_true(ev_find(SIB_CM_DREQ_ERROR, n) < ev_find(SIB_CM_TIMEWAIT_EXIT, n));
	assert_int_equal(ev_count(SIB_CM_DREQ_RECEIVED, p), 0);
	/* p's DREQ now finds a in IDLE: dropped; p gets DREQ_ERROR too */
	assert_int_equal(CALL(sib_cm_send_dreq(p, NULL, 0)), 0);
	run_out(f, 40);
	assert_int_equal(ev_count(SIB_CM_DREQ_ERROR, p), 1);
	assert_int_equal(ev_count(SIB_CM_TIMEWAIT_EXIT, p), 1);
	CALLV(sib_cm_id_destroy(a));
	CALLV(sib_cm_id_destroy(p));
	CALLV(sib_cm_id_destroy(l));
	assert_int_equal(sib_cm_counters(f->sn)->ids, 0);
}

/* Both sides send DREQ at once: each gets DREQ_RECEIVED, answers DREP,
 * and ends in TimeWait. */
static void test_dreq_crossed(void **state)
{
	struct fx *f = *state;
	struct sib_cm_req_param rq = req_param(f, 0, 1);
	struct sib_cm_id *l = listen_on(f, 1, rq.service_id), *a, *p;

	connect_pair(f, &a, &p);
	assert_int_equal(CALL(sib_cm_send_dreq(a, NULL, 0)), 0);
	assert_int_equal(CALL(sib_cm_send_dreq(p, NULL, 0)), 0);
	pump(f);
	assert_int_equal(ev_count(SIB_CM_DREQ_RECEIVED, a), 1);
	assert_int_equal(ev_count(SIB_CM_DREQ_RECEIVED, p), 1);
	assert_int_equal(CALL(sib_cm_send_drep(a, NULL, 0)), 0);
	assert_int_equal(CALL(sib_cm_send_drep(p, NULL, 0)), 0);
	run_out(f, 10);
	assert_int_equal(ev_count(SIB_CM_TIMEWAIT_EXIT, a), 1);
	assert_int_equal(ev_count(SIB_CM_TIMEWAIT_EXIT, p), 1);
	CALLV(sib_cm_id_destroy(a));
	CALLV(sib_cm_id_destroy(p));
	CALLV(sib_cm_id_destroy(l));
	assert_int_equal(sib_cm_counters(f->sn)->ids, 0);
}

/* A REQ from a QP the passive side still has connected (same CA GUID and
 * QPN, new comm ID: IBA 12.9.8.3.1): REJ stale connection, and the old
 * connection is disconnected. */
static void test_stale(void **state)
{
	struct fx *f = *state;
	struct sib_cm_req_param rq = req_param(f, 0, 1);
	struct sib_cm_id *l = listen_on(f, 1, rq.service_id), *a, *p, *a2;
	struct evrec *r;
	unsigned int n;

	connect_pair(f, &a, &p);
	n = nevs;
	a2 = sib_cm_id_new(f->sn, f->ca[0], 1, handler, NULL);
	assert_int_equal(CALL(sib_cm_send_req(a2, &rq)), 0);
	pump(f);
	r = ev_find(SIB_CM_REJ_RECEIVED, n);
	assert_non_null(r);
	assert_ptr_equal(r->id, a2);
	assert_int_equal(r->ev.u.rej.reason, CM_REJ_STALE_CONN);
	assert_int_equal(ev_count(SIB_CM_DREQ_RECEIVED, a), 1);
	assert_int_equal(ev_count(SIB_CM_REQ_RECEIVED, NULL), 1);
	CALLV(sib_cm_id_destroy(a2));
	CALLV(sib_cm_id_destroy(a));
	CALLV(sib_cm_id_destroy(p));
	CALLV(sib_cm_id_destroy(l));
	run_out(f, 10);
	assert_int_equal(sib_cm_counters(f->sn)->ids, 0);
}

/* A CA leaving the fabric with ids on it: they send nothing more; the
 * user still destroys them. */
static void test_ca_removed(void **state)
{
	struct fx *f = *state;
	struct sib_cm_req_param rq = req_param(f, 0, 1);
	struct sib_cm_id *l = listen_on(f, 1, rq.service_id), *a, *p;

	struct sib_cm_req_param rq2 = req_param(f, 2, 3);
	struct sib_cm_id *l2, *a2, *p2;
	struct evrec *r;

	connect_pair(f, &a, &p);
	/* a second handshake, between CAs 2 and 3, left in REP_SENT */
	rq2.service_id++;
	l2 = listen_on(f, 3, rq2.service_id);
	a2 = sib_cm_id_new(f->sn, f->ca[2], 1, handler, NULL);
	assert_int_equal(CALL(sib_cm_send_req(a2, &rq2)), 0);
	pump(f);
	p2 = evs[nevs - 1].id;
	assert_int_equal(CALL(sib_cm_send_rep(p2, &(struct sib_cm_rep_param){ .qpn = 5 })), 0);
	pump(f);
	/* p's DREQ reaches a and its DREQ_RECEIVED waits behind p2's
	 * USER_ESTABLISHED, whose handler removes a's CA */
	assert_int_equal(CALL(sib_cm_establish(p2)), 0);
	assert_int_equal(CALL(sib_cm_send_dreq(p, NULL, 0)), 0);
	remove_sn = f->sn;
	remove_ca = f->ca[0];
	pump(f);
	assert_null(remove_ca);
	r = &evs[nevs - 1];
	assert_int_equal(r->type, SIB_CM_DREQ_RECEIVED);
	assert_ptr_equal(r->id, a);
	assert_null(r->ev.node);	/* the event comes, without its node */
	assert_int_equal(CALL(sib_cm_send_drep(a, NULL, 0)), -EINVAL);
	assert_int_equal(CALL(sib_cm_send_dreq(a, NULL, 0)), -EINVAL);
	CALLV(sib_cm_id_destroy(a));
	CALLV(sib_cm_id_destroy(p));	/* DREQ_SENT: straight to TimeWait */
	CALLV(sib_cm_id_destroy(l));
	CALLV(sib_cm_id_destroy(a2));
	CALLV(sib_cm_id_destroy(p2));
	CALLV(sib_cm_id_destroy(l2));
	run_out(f, 10);
	assert_int_equal(sib_cm_counters(f->sn)->ids, 0);
}

/* Both ends on one CA port (rping to 127.0.0.1): the MADs loop back
 * through the router to the same port, and the handshake runs as between
 * two CAs. */
static void test_loopback(void **state)
{
	struct fx *f = *state;
	struct sib_cm_req_param rq = req_param(f, 2, 2);
	struct sib_cm_rep_param rp = rep_param();
	struct sib_cm_id *l = listen_on(f, 2, rq.service_id), *a, *p;

	a = sib_cm_id_new(f->sn, f->ca[2], 1, handler, NULL);
	assert_int_equal(CALL(sib_cm_send_req(a, &rq)), 0);
	pump(f);
	assert_int_equal(nevs, 1);
	assert_int_equal(evs[0].type, SIB_CM_REQ_RECEIVED);
	p = evs[0].id;
	assert_int_equal(CALL(sib_cm_send_rep(p, &rp)), 0);
	pump(f);
	assert_int_equal(evs[1].type, SIB_CM_REP_RECEIVED);
	assert_int_equal(CALL(sib_cm_send_rtu(a, NULL, 0)), 0);
	pump(f);
	assert_int_equal(evs[2].type, SIB_CM_RTU_RECEIVED);
	assert_int_equal(CALL(sib_cm_send_dreq(a, NULL, 0)), 0);
	pump(f);
	assert_int_equal(evs[3].type, SIB_CM_DREQ_RECEIVED);
	assert_ptr_equal(evs[3].id, p);
	assert_int_equal(CALL(sib_cm_send_drep(p, NULL, 0)), 0);
	pump(f);
	assert_int_equal(evs[4].type, SIB_CM_DREP_RECEIVED);
	/* the same QPs connect again at once (QPNs reused: no stale REJ
	 * from the ids still in TimeWait) */
	CALLV(sib_cm_id_destroy(a));
	CALLV(sib_cm_id_destroy(p));
	nevs = 0;
	a = sib_cm_id_new(f->sn, f->ca[2], 1, handler, NULL);
	assert_int_equal(CALL(sib_cm_send_req(a, &rq)), 0);
	pump(f);
	assert_int_equal(nevs, 1);
	assert_int_equal(evs[0].type, SIB_CM_REQ_RECEIVED);
	CALLV(sib_cm_id_destroy(evs[0].id));
	CALLV(sib_cm_id_destroy(l));
	pump(f);
	CALLV(sib_cm_id_destroy(a));
	run_out(f, 10);
	assert_int_equal(sib_cm_counters(f->sn)->ids, 0);
	assert_int_equal(sib_cm_counters(f->sn)->dropped, 0);
}

/* A duplicate REQ is a duplicate even when another passive id, made later
 * and established since, holds the same remote QPN (the stale check must
 * not win over the duplicate check, whatever the order of the ids). */
static void test_dup_beats_stale(void **state)
{
	struct fx *f = *state;
	struct sib_cm_req_param rq = req_param(f, 0, 1);
	struct sib_cm_rep_param rp = rep_param();
	struct sib_cm_id *l = listen_on(f, 1, rq.service_id), *a1, *a2, *p1, *p2;

	rq.remote_cm_response_timeout = 10;
	a2 = sib_cm_id_new(f->sn, f->ca[0], 1, handler, NULL);
	assert_int_equal(CALL(sib_cm_send_req(a2, &rq)), 0);
	pump(f);
	p2 = evs[0].id;		/* made first, left deciding */
	a1 = sib_cm_id_new(f->sn, f->ca[0], 1, handler, NULL);
	assert_int_equal(CALL(sib_cm_send_req(a1, &rq)), 0);	/* the same QPN */
	pump(f);
	p1 = evs[1].id;
	assert_ptr_not_equal(p1, p2);
	assert_int_equal(CALL(sib_cm_send_rep(p1, &rp)), 0);
	pump(f);
	assert_int_equal(CALL(sib_cm_send_rtu(a1, NULL, 0)), 0);
	pump(f);
	assert_string_equal(sib_cm_state_str(sib_cm_id_state(p1)), "ESTABLISHED");
	/* a2's REQ again: MRA from p2, not REJ stale */
	while (!ev_count(SIB_CM_MRA_RECEIVED, a2) && !ev_count(SIB_CM_REJ_RECEIVED, a2) &&
	       f->now < 10000000000ull)
		f->now = sib_cm_tick(f->sn, f->now) ?: f->now + 1;
	assert_int_equal(ev_count(SIB_CM_MRA_RECEIVED, a2), 1);
	assert_int_equal(ev_count(SIB_CM_REJ_RECEIVED, a2), 0);
	assert_int_equal(ev_count(SIB_CM_DREQ_RECEIVED, a1), 0);
	CALLV(sib_cm_id_destroy(a1));
	CALLV(sib_cm_id_destroy(a2));
	CALLV(sib_cm_id_destroy(p1));
	CALLV(sib_cm_id_destroy(p2));
	CALLV(sib_cm_id_destroy(l));
	run_out(f, 10);
	assert_int_equal(sib_cm_counters(f->sn)->ids, 0);
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
		cmocka_unit_test_setup_teardown(test_req_retry_and_error, setup, teardown),
		cmocka_unit_test_setup_teardown(test_duplicates, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sidr, setup, teardown),
		cmocka_unit_test_setup_teardown(test_destroy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hostile, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_params, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dreq_lost, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dreq_crossed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ca_removed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_loopback, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dup_beats_stale, setup, teardown),
	};

	(void)argc, (void)argv;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
