// SPDX-License-Identifier: MIT
/*
 * The IB CM agent (IBA 1.4 vol 1, chapter 12) of the subnet's CA ports:
 * CM ids with their communication IDs, the connection state machine as a
 * table (state x input -> action, next state), the CM MADs built and read
 * with src/iba/cm.h, retries and TimeWait on the host's clock, and the
 * queues that keep every handler call out of the call that caused it.
 * MADs leave through the MAD router (sib_mad_send, QP1 to QP1, LID routed,
 * channel SIB_MAD_CHAN_CM's TIDs) and arrive from it (sib_cm_recv).
 * Single-threaded; every MAD from the fabric is checked, a bad one dropped
 * and counted.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "iba/cm.h"
#include "subnet/cm.h"
#include "subnet/cm_int.h"
#include "subnet/mad_router.h"
#include "subnet/subnet.h"
#include "subnet/subnet_int.h"

static const char *const state_names[CM_STATE_MAX] = {
	"IDLE", "LISTEN", "REQ_SENT", "REQ_RCVD", "MRA_REQ_SENT", "MRA_REQ_RCVD",
	"REP_SENT", "REP_RCVD", "MRA_REP_SENT", "MRA_REP_RCVD", "ESTABLISHED",
	"DREQ_SENT", "DREQ_RCVD", "TIMEWAIT", "SIDR_REQ_SENT", "SIDR_REQ_RCVD",
};

static const char *const input_names[IN_MAX] = {
	"send REQ", "send REP", "send RTU", "send REJ", "send MRA", "send DREQ", "send DREP",
	"send SIDR_REQ", "send SIDR_REP", "listen", "establish",
	"REQ", "MRA", "REJ", "REP", "RTU", "DREQ", "DREP", "SIDR_REP", "timeout",
};

static const char *const event_names[SIB_CM_EVENT_MAX] = {
	"REQ_ERROR", "REQ_RECEIVED", "REP_ERROR", "REP_RECEIVED", "RTU_RECEIVED",
	"USER_ESTABLISHED", "DREQ_ERROR", "DREQ_RECEIVED", "DREP_RECEIVED", "TIMEWAIT_EXIT",
	"MRA_RECEIVED", "REJ_RECEIVED", "SIDR_REQ_ERROR", "SIDR_REQ_RECEIVED",
	"SIDR_REP_RECEIVED",
};

const char *sib_cm_state_str(unsigned int s)
{
	return s < CM_STATE_MAX ? state_names[s] : "?";
}

const char *sib_cm_event_str(enum sib_cm_event_type t)
{
	return (unsigned)t < SIB_CM_EVENT_MAX ? event_names[t] : "?";
}

/* ---- context ------------------------------------------------------------------ */

static uint32_t inv32(uint32_t a)
{
	uint32_t x = a; /* Newton: each step doubles the correct low bits */

	for (int i = 0; i < 5; i++)
		x *= 2u - a * x;
	return x;
}

struct sib_cm *cm_ctx(struct sib_subnet *sn)
{
	struct sib_cm *cm = sn->cm;
	struct timespec ts;

	if (cm)
		return cm;
	cm = calloc(1, sizeof(*cm));
	if (!cm)
		return NULL;
	cm->slots = calloc(CM_MAX_IDS, sizeof(*cm->slots));
	cm->gen = calloc(CM_MAX_IDS, sizeof(*cm->gen));
	if (!cm->slots || !cm->gen) {
		free(cm->slots);
		free(cm->gen);
		free(cm);
		return NULL;
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	cm->secret = (uint32_t)ts.tv_nsec * 2654435761u ^ (uint32_t)getpid();
	cm->mul_inv = inv32(CM_COMM_MUL);
	sn->cm = cm;
	return cm;
}

static void out_free_all(struct sib_cm *cm)
{
	while (cm->outh) {
		struct cm_out *o = cm->outh;

		cm->outh = o->next;
		free(o);
	}
	cm->outt = NULL;
	cm->nout = 0;
}

void sib_cm_free(struct sib_subnet *sn)
{
	struct sib_cm *cm = sn->cm;

	if (!cm)
		return;
	while (cm->live) {
		struct sib_cm_id *id = cm->live;

		cm->live = id->next;
		free(id);
	}
	while (cm->evh) {
		struct cm_ev *e = cm->evh;

		cm->evh = e->next;
		free(e);
	}
	out_free_all(cm);
	free(cm->slots);
	free(cm->gen);
	free(cm);
	sn->cm = NULL;
}

void sib_cm_set_tx_drop(struct sib_subnet *sn, sib_cm_tx_drop_fn drop, void *ctx)
{
	struct sib_cm *cm = cm_ctx(sn);

	if (cm) {
		cm->tx_drop = drop;
		cm->tx_drop_ctx = ctx;
	}
}

const struct sib_cm_counters *sib_cm_counters(const struct sib_subnet *sn)
{
	static const struct sib_cm_counters zero;

	return sn && sn->cm ? &sn->cm->ctr : &zero;
}

/* ---- comm IDs and ids ------------------------------------------------------- */

static uint32_t comm_id(const struct sib_cm *cm, uint32_t slot, uint16_t gen)
{
	return (((uint32_t)gen << 16 | slot) * CM_COMM_MUL) ^ cm->secret;
}

struct sib_cm_id *cm_id_by_comm(const struct sib_cm *cm, uint32_t cid)
{
	uint32_t x = (cid ^ cm->secret) * cm->mul_inv;
	struct sib_cm_id *id = cm->slots[x & 0xFFFF];

	return id && id->local_id == cid && cid ? id : NULL;
}

struct sib_cm_id *cm_id_alloc(struct sib_subnet *sn, struct sib_fab_node *n, uint8_t port)
{
	struct sib_cm *cm = cm_ctx(sn);
	struct sib_cm_id *id;
	uint32_t s;

	if (!cm || cm->ctr.ids >= CM_MAX_IDS)
		return NULL;
	for (s = 0; s < CM_MAX_IDS; s++)
		if (!cm->slots[(cm->hint + s) % CM_MAX_IDS])
			break;
	if (s == CM_MAX_IDS)
		return NULL;
	s = (cm->hint + s) % CM_MAX_IDS;
	id = calloc(1, sizeof(*id));
	if (!id)
		return NULL;
	do
		cm->gen[s]++;
	while (comm_id(cm, s, cm->gen[s]) == 0);
	id->sn = sn;
	id->node = n;
	id->port = port;
	id->slot = s;
	id->local_id = comm_id(cm, s, cm->gen[s]);
	id->state = CM_IDLE;
	cm->slots[s] = id;
	cm->hint = (s + 1) % CM_MAX_IDS;
	id->next = cm->live;
	if (cm->live)
		cm->live->prev = id;
	cm->live = id;
	cm->ctr.ids++;
	return id;
}

/* Drop the queued events of id (and its name as a listener in others). */
static void purge_events(struct sib_cm *cm, struct sib_cm_id *id)
{
	struct cm_ev **pp = &cm->evh, *e;

	cm->evt = NULL;
	while ((e = *pp)) {
		if (e->ev.id == id) {
			*pp = e->next;
			free(e);
			cm->nev--;
			continue;
		}
		if (e->ev.listen_id == id)
			e->ev.listen_id = NULL;
		cm->evt = e;
		pp = &e->next;
	}
	id->nevents = 0;
}

static void disarm(struct sib_cm_id *id);

static void id_free(struct sib_cm_id *id)
{
	struct sib_cm *cm = id->sn->cm;

	disarm(id);
	if (id->nevents || id->state == CM_LISTEN)
		purge_events(cm, id);
	if (id->state == CM_LISTEN)
		cm->nlisten--;
	if (id->prev)
		id->prev->next = id->next;
	else
		cm->live = id->next;
	if (id->next)
		id->next->prev = id->prev;
	cm->slots[id->slot] = NULL;
	cm->ctr.ids--;
	free(id);
}

/* ---- timers ---------------------------------------------------------------------- */

/* 4.096 us * 2^t in ns, capped (CM_TIMER_CAP_NS). */
static uint64_t t_ns(unsigned int t)
{
	uint64_t ns = 4096ull << (t > 31 ? 31 : t);

	return ns < CM_TIMER_CAP_NS ? ns : CM_TIMER_CAP_NS;
}

static uint64_t cap(uint64_t ns)
{
	return ns < CM_TIMER_CAP_NS ? (ns ? ns : 1) : CM_TIMER_CAP_NS;
}

/* Start a timer of ns at the next tick (the CM has no clock of its own). */
static void arm(struct sib_cm_id *id, uint64_t ns)
{
	if (!id->timer_pending && !id->deadline)
		id->sn->cm->ntimed++;
	id->timer_pending = true;
	id->pending_ns = cap(ns);
	id->deadline = 0;
}

static void disarm(struct sib_cm_id *id)
{
	if (id->timer_pending || id->deadline)
		id->sn->cm->ntimed--;
	id->timer_pending = false;
	id->deadline = 0;
}

/* TimeWait (IBA 12.9.8.3.2; linux cm.c: 2^(timeout-8) ms with the
 * path's LocalAckTimeout = PLT + 1). */
static void enter_timewait(struct sib_cm_id *id)
{
	arm(id, t_ns(id->plt + 1u));
}

/* ---- queues ------------------------------------------------------------------------ */

void cm_queue_mad(struct sib_cm *cm, struct sib_fab_node *n, uint8_t port, uint16_t dlid,
		      const uint8_t *mad)
{
	uint16_t attr = (uint16_t)(mad[16] << 8 | mad[17]);
	struct cm_out *o;

	if (!n || cm->nout >= CM_MAX_OUT || !(o = calloc(1, sizeof(*o)))) {
		cm->ctr.dropped++;
		return;
	}
	mai_fromwire(mad, CM_MAD_SIZE, &o->m);
	o->node = n;
	o->port = port;
	o->m.type = MAI_TYPE_MAD;
	o->m.qp = 1;
	o->m.port = port;
	o->m.remote_qpn = 1;
	o->m.remote_qkey = CM_GSI_QKEY;
	o->m.lrh.dlid = dlid;
	o->m.lrh.slid = sib_mad_port_lid(n, port);
	if (cm->outt)
		cm->outt->next = o;
	else
		cm->outh = o;
	cm->outt = o;
	cm->nout++;
	if (attr >= CM_ATTR_FIRST && attr <= CM_ATTR_LAST)
		cm->ctr.sent[attr - CM_ATTR_FIRST]++;
}

uint64_t cm_next_tid(struct sib_cm *cm)
{
	cm->tid = (cm->tid + 1) & ((1ull << MAI_TID_CHAN_SHIFT) - 1);
	return (uint64_t)SIB_MAD_CHAN_CM << MAI_TID_CHAN_SHIFT | cm->tid;
}

/* Start id's next message in id->msg. */
static uint8_t *msg_begin(struct sib_cm_id *id, uint16_t attr)
{
	memset(id->msg, 0, sizeof(id->msg));
	cm_put_hdr(id->msg, attr, cm_next_tid(id->sn->cm));
	return id->msg;
}

static void msg_send(struct sib_cm_id *id)
{
	cm_queue_mad(id->sn->cm, id->node, id->port, id->dlid, id->msg);
}

/* A new event for id (NULL: no memory; counted). */
struct cm_ev *cm_ev_new(struct sib_cm_id *id, enum sib_cm_event_type type)
{
	struct sib_cm *cm = id->sn->cm;
	struct cm_ev *e;

	if (id->zombie)
		return NULL;
	if (cm->nev >= CM_MAX_EVENTS + 64u || !(e = calloc(1, sizeof(*e)))) {
		cm->ctr.dropped++;
		return NULL;
	}
	e->ev.type = type;
	e->ev.id = id;
	e->ev.node = id->node;
	e->ev.port_num = id->port;
	if (cm->evt)
		cm->evt->next = e;
	else
		cm->evh = e;
	cm->evt = e;
	cm->nev++;
	id->nevents++;
	return e;
}

/* The private data of the message in mad onto e. */
void cm_ev_pdata(struct cm_ev *e, const uint8_t *mad, uint16_t attr)
{
	size_t len;
	const uint8_t *p = cm_bytes(mad, cm_pdata_field(attr), &len);

	if (p) {
		memcpy(e->pdata, p, len);
		e->ev.pdata_len = (uint8_t)len;
	}
}

/* ---- actions -------------------------------------------------------------------- */

/* An action: returns the state to enter (`next`, the table's, or another),
 * or -errno with nothing changed. */
typedef int (*cm_act)(struct sib_cm_id *id, const struct cm_arg *a, int next);

static int put_pdata(uint8_t *mad, uint16_t attr, const uint8_t *pd, uint8_t len)
{
	return cm_set_bytes(mad, cm_pdata_field(attr), pd, pd ? len : 0) < 0 ? -EINVAL : 0;
}

static bool pdata_fits(uint16_t attr, const uint8_t *pd, uint8_t len)
{
	const struct cm_field *f = cm_field(cm_pdata_field(attr));

	return f && (!len || pd) && len <= f->bytes;
}

static void put_av(uint8_t *m, const struct sib_cm_av *av)
{
	cm_set(m, CM_REQ_PRIMARY_LOCAL_LID, av->slid);
	cm_set(m, CM_REQ_PRIMARY_REMOTE_LID, av->dlid);
	cm_set_bytes(m, CM_REQ_PRIMARY_LOCAL_GID, av->sgid, 16);
	cm_set_bytes(m, CM_REQ_PRIMARY_REMOTE_GID, av->dgid, 16);
	cm_set(m, CM_REQ_PRIMARY_FLOW_LABEL, av->flow_label);
	cm_set(m, CM_REQ_PRIMARY_PACKET_RATE, av->rate);
	cm_set(m, CM_REQ_PRIMARY_TRAFFIC_CLASS, av->traffic_class);
	cm_set(m, CM_REQ_PRIMARY_HOP_LIMIT, av->hop_limit);
	cm_set(m, CM_REQ_PRIMARY_SL, av->sl);
	cm_set(m, CM_REQ_PRIMARY_SUBNET_LOCAL, !av->global);
	cm_set(m, CM_REQ_PRIMARY_LOCAL_ACK_TIMEOUT, av->packet_life_time + 1u);
}

static int a_listen(struct sib_cm_id *id, const struct cm_arg *a, int next)
{
	const uint64_t *sm = a->param; /* service ID, mask */
	struct sib_cm *cm = id->sn->cm;

	for (struct sib_cm_id *l = cm->live; l; l = l->next)
		if (l->state == CM_LISTEN && l->service_id == (sm[0] & sm[1]) && l->mask == sm[1])
			return -EBUSY;
	if (cm->nlisten >= CM_MAX_LISTEN)
		return -ENOMEM;
	id->service_id = sm[0] & sm[1];
	id->mask = sm[1];
	cm->nlisten++;
	return next;
}

static int a_send_req(struct sib_cm_id *id, const struct cm_arg *a, int next)
{
	const struct sib_cm_req_param *p = a->param;
	uint8_t *m;

	if (p->qpn == 0 || p->qpn > 0xFFFFFF || p->primary.dlid == 0 ||
	    (p->qp_type != 2 && p->qp_type != 3) || p->max_cm_retries > 15 ||
	    p->local_cm_response_timeout > 31 || p->remote_cm_response_timeout > 31 ||
	    p->primary.packet_life_time > 30 || !pdata_fits(CM_ATTR_REQ, p->pdata, p->pdata_len))
		return -EINVAL;
	m = msg_begin(id, CM_ATTR_REQ);
	cm_set(m, CM_REQ_LOCAL_COMM_ID, id->local_id);
	cm_set(m, CM_REQ_SERVICE_ID, p->service_id);
	cm_set(m, CM_REQ_LOCAL_CA_GUID, id->node->node_guid);
	cm_set(m, CM_REQ_LOCAL_QPN, p->qpn);
	cm_set(m, CM_REQ_RESPONDER_RESOURCES, p->responder_resources);
	cm_set(m, CM_REQ_INITIATOR_DEPTH, p->initiator_depth);
	cm_set(m, CM_REQ_REMOTE_CM_RESPONSE_TIMEOUT, p->remote_cm_response_timeout);
	cm_set(m, CM_REQ_TRANSPORT_SERVICE_TYPE, p->qp_type == 2 ? CM_TST_RC : CM_TST_UC);
	cm_set(m, CM_REQ_FLOW_CONTROL, p->flow_control);
	cm_set(m, CM_REQ_STARTING_PSN, p->starting_psn);
	cm_set(m, CM_REQ_LOCAL_CM_RESPONSE_TIMEOUT, p->local_cm_response_timeout);
	cm_set(m, CM_REQ_RETRY_COUNT, p->retry_count);
	cm_set(m, CM_REQ_PKEY, p->pkey);
	cm_set(m, CM_REQ_PATH_MTU, p->path_mtu);
	cm_set(m, CM_REQ_RNR_RETRY_COUNT, p->rnr_retry_count);
	cm_set(m, CM_REQ_MAX_CM_RETRIES, p->max_cm_retries);
	cm_set(m, CM_REQ_SRQ, p->srq);
	put_av(m, &p->primary);
	put_pdata(m, CM_ATTR_REQ, p->pdata, p->pdata_len);
	id->dlid = p->primary.dlid;
	id->local_qpn = p->qpn;
	id->plt = p->primary.packet_life_time;
	id->remote_id = 0;
	id->remote_ca_guid = 0;
	id->max_retries = p->max_cm_retries;
	id->retries_left = p->max_cm_retries;
	/* linux cm.c: 2 * packet life + the passive side's response time */
	id->timeout_ns = cap(2 * t_ns(id->plt) + t_ns(p->remote_cm_response_timeout));
	msg_send(id);
	arm(id, id->timeout_ns);
	return next;
}

static int a_send_rep(struct sib_cm_id *id, const struct cm_arg *a, int next)
{
	const struct sib_cm_rep_param *p = a->param;
	uint8_t *m;

	if (p->qpn == 0 || p->qpn > 0xFFFFFF || !pdata_fits(CM_ATTR_REP, p->pdata, p->pdata_len))
		return -EINVAL;
	m = msg_begin(id, CM_ATTR_REP);
	cm_set(m, CM_REP_LOCAL_COMM_ID, id->local_id);
	cm_set(m, CM_REP_REMOTE_COMM_ID, id->remote_id);
	cm_set(m, CM_REP_LOCAL_QPN, p->qpn);
	cm_set(m, CM_REP_STARTING_PSN, p->starting_psn);
	cm_set(m, CM_REP_RESPONDER_RESOURCES, p->responder_resources);
	cm_set(m, CM_REP_INITIATOR_DEPTH, p->initiator_depth);
	cm_set(m, CM_REP_TARGET_ACK_DELAY, p->target_ack_delay);
	cm_set(m, CM_REP_FAILOVER_ACCEPTED, p->failover_accepted);
	cm_set(m, CM_REP_FLOW_CONTROL, p->flow_control);
	cm_set(m, CM_REP_RNR_RETRY_COUNT, p->rnr_retry_count);
	cm_set(m, CM_REP_SRQ, p->srq);
	cm_set(m, CM_REP_LOCAL_CA_GUID, id->node->node_guid);
	put_pdata(m, CM_ATTR_REP, p->pdata, p->pdata_len);
	id->local_qpn = p->qpn;
	id->retries_left = id->max_retries;
	id->timeout_ns = cap(2 * t_ns(id->plt) + t_ns(id->rsp_timeout));
	msg_send(id);
	arm(id, id->timeout_ns);
	return next;
}

/* RTU, DREP: comm IDs and private data only; RTU ends the handshake's
 * timer, DREP starts TimeWait. */
static int a_send_short(struct sib_cm_id *id, const struct cm_arg *a, int next, uint16_t attr)
{
	uint8_t *m;

	if (!pdata_fits(attr, a->pdata, a->len))
		return -EINVAL;
	m = msg_begin(id, attr);
	cm_set(m, CM_RTU_LOCAL_COMM_ID, id->local_id);	/* same place in RTU, DREP, DREQ */
	cm_set(m, CM_RTU_REMOTE_COMM_ID, id->remote_id);
	if (attr == CM_ATTR_DREQ)
		cm_set(m, CM_DREQ_REMOTE_QPN, id->remote_qpn);
	put_pdata(m, attr, a->pdata, a->len);
	msg_send(id);
	return next;
}

static int a_send_rtu(struct sib_cm_id *id, const struct cm_arg *a, int next)
{
	next = a_send_short(id, a, next, CM_ATTR_RTU);
	if (next >= 0)
		disarm(id);
	return next;
}

static int a_send_drep(struct sib_cm_id *id, const struct cm_arg *a, int next)
{
	next = a_send_short(id, a, next, CM_ATTR_DREP);
	if (next >= 0)
		enter_timewait(id);
	return next;
}

static int a_send_dreq(struct sib_cm_id *id, const struct cm_arg *a, int next)
{
	next = a_send_short(id, a, next, CM_ATTR_DREQ);
	if (next >= 0) {
		id->retries_left = id->max_retries;
		arm(id, id->timeout_ns ? id->timeout_ns : t_ns(id->plt + 1u));
	}
	return next;
}

static uint8_t msg_ref(uint8_t state)
{
	switch (state) {
	case CM_REQ_RCVD: case CM_MRA_REQ_SENT: case CM_REQ_SENT: case CM_MRA_REQ_RCVD:
		return CM_MSG_REQ;
	case CM_REP_RCVD: case CM_MRA_REP_SENT: case CM_REP_SENT: case CM_MRA_REP_RCVD:
		return CM_MSG_REP;
	default:
		return CM_MSG_OTHER;
	}
}

static int a_send_rej(struct sib_cm_id *id, const struct cm_arg *a, int next)
{
	uint8_t *m;

	if (!pdata_fits(CM_ATTR_REJ, a->pdata, a->len) || a->ari_len > 72 ||
	    (a->ari_len && !a->ari))
		return -EINVAL;
	m = msg_begin(id, CM_ATTR_REJ);
	cm_set(m, CM_REJ_LOCAL_COMM_ID, id->local_id);
	cm_set(m, CM_REJ_REMOTE_COMM_ID, id->remote_id);
	cm_set(m, CM_REJ_MESSAGE_REJECTED, msg_ref(id->state));
	cm_set(m, CM_REJ_ARI_LENGTH, a->ari_len);
	cm_set(m, CM_REJ_REASON, a->reason);
	cm_set_bytes(m, CM_REJ_ARI, a->ari, a->ari_len);
	put_pdata(m, CM_ATTR_REJ, a->pdata, a->len);
	msg_send(id);
	disarm(id);
	if (next == CM_TIMEWAIT)
		enter_timewait(id);
	return next;
}

static int a_send_mra(struct sib_cm_id *id, const struct cm_arg *a, int next)
{
	uint8_t *m;

	if (!pdata_fits(CM_ATTR_MRA, a->pdata, a->len) || a->service_timeout > 31)
		return -EINVAL;
	m = msg_begin(id, CM_ATTR_MRA);
	cm_set(m, CM_MRA_LOCAL_COMM_ID, id->local_id);
	cm_set(m, CM_MRA_REMOTE_COMM_ID, id->remote_id);
	cm_set(m, CM_MRA_MESSAGE_MRAED, msg_ref(id->state));
	cm_set(m, CM_MRA_SERVICE_TIMEOUT, a->service_timeout);
	put_pdata(m, CM_ATTR_MRA, a->pdata, a->len);
	msg_send(id);
	return next;
}

static int a_send_sidr_req(struct sib_cm_id *id, const struct cm_arg *a, int next)
{
	const struct sib_cm_sidr_req_param *p = a->param;
	uint8_t *m;

	if (p->path.dlid == 0 || p->max_cm_retries > 15 || p->timeout > 31 ||
	    !pdata_fits(CM_ATTR_SIDR_REQ, p->pdata, p->pdata_len))
		return -EINVAL;
	m = msg_begin(id, CM_ATTR_SIDR_REQ);
	cm_set(m, CM_SIDR_REQ_REQUEST_ID, id->local_id);
	cm_set(m, CM_SIDR_REQ_PKEY, p->pkey);
	cm_set(m, CM_SIDR_REQ_SERVICE_ID, p->service_id);
	put_pdata(m, CM_ATTR_SIDR_REQ, p->pdata, p->pdata_len);
	id->dlid = p->path.dlid;
	id->plt = p->path.packet_life_time;
	id->service_id = p->service_id;
	id->max_retries = id->retries_left = p->max_cm_retries;
	id->timeout_ns = t_ns(p->timeout);
	msg_send(id);
	arm(id, id->timeout_ns);
	return next;
}

void cm_put_sidr_rep(uint8_t *m, uint32_t rid, uint64_t sid, const struct sib_cm_sidr_rep_param *p)
{
	cm_set(m, CM_SIDR_REP_REQUEST_ID, rid);
	cm_set(m, CM_SIDR_REP_STATUS, p->status);
	cm_set(m, CM_SIDR_REP_SERVICE_ID, sid);
	if (p->status == CM_SIDR_VALID) {
		cm_set(m, CM_SIDR_REP_QPN, p->qpn);
		cm_set(m, CM_SIDR_REP_QKEY, p->qkey);
	}
	put_pdata(m, CM_ATTR_SIDR_REP, p->pdata, p->pdata_len);
}

static int a_send_sidr_rep(struct sib_cm_id *id, const struct cm_arg *a, int next)
{
	const struct sib_cm_sidr_rep_param *p = a->param;

	if (p->qpn > 0xFFFFFF || !pdata_fits(CM_ATTR_SIDR_REP, p->pdata, p->pdata_len))
		return -EINVAL;
	cm_put_sidr_rep(msg_begin(id, CM_ATTR_SIDR_REP), id->remote_id, id->service_id, p);
	msg_send(id);
	return next;
}

static int a_establish(struct sib_cm_id *id, const struct cm_arg *a, int next)
{
	(void)a;
	disarm(id);
	cm_ev_new(id, SIB_CM_USER_ESTABLISHED);
	return next;
}

/* ---- received -------------------------------------------------------------------- */

static int r_rep(struct sib_cm_id *id, const struct cm_arg *a, int next)
{
	const uint8_t *m = a->mad;
	struct cm_ev *e;

	id->remote_id = (uint32_t)cm_get(m, CM_REP_LOCAL_COMM_ID);
	id->remote_qpn = (uint32_t)cm_get(m, CM_REP_LOCAL_QPN);
	id->remote_ca_guid = cm_get(m, CM_REP_LOCAL_CA_GUID);
	disarm(id);
	if ((e = cm_ev_new(id, SIB_CM_REP_RECEIVED))) {
		struct sib_cm_rep_param *r = &e->ev.u.rep;

		r->qpn = id->remote_qpn;
		r->starting_psn = (uint32_t)cm_get(m, CM_REP_STARTING_PSN);
		r->responder_resources = (uint8_t)cm_get(m, CM_REP_RESPONDER_RESOURCES);
		r->initiator_depth = (uint8_t)cm_get(m, CM_REP_INITIATOR_DEPTH);
		r->target_ack_delay = (uint8_t)cm_get(m, CM_REP_TARGET_ACK_DELAY);
		r->failover_accepted = (uint8_t)cm_get(m, CM_REP_FAILOVER_ACCEPTED);
		r->flow_control = (uint8_t)cm_get(m, CM_REP_FLOW_CONTROL);
		r->rnr_retry_count = (uint8_t)cm_get(m, CM_REP_RNR_RETRY_COUNT);
		r->srq = (uint8_t)cm_get(m, CM_REP_SRQ);
		cm_ev_pdata(e, m, CM_ATTR_REP);
	}
	return next;
}

/* RTU, DREQ, DREP: an event with the private data. */
static int r_simple(struct sib_cm_id *id, const struct cm_arg *a, int next,
		    enum sib_cm_event_type type, uint16_t attr)
{
	struct cm_ev *e;

	disarm(id);
	if ((e = cm_ev_new(id, type)))
		cm_ev_pdata(e, a->mad, attr);
	return next;
}

static int r_rtu(struct sib_cm_id *id, const struct cm_arg *a, int next)
{
	return r_simple(id, a, next, SIB_CM_RTU_RECEIVED, CM_ATTR_RTU);
}

static int r_dreq(struct sib_cm_id *id, const struct cm_arg *a, int next)
{
	return r_simple(id, a, next, SIB_CM_DREQ_RECEIVED, CM_ATTR_DREQ);
}

static int r_drep(struct sib_cm_id *id, const struct cm_arg *a, int next)
{
	r_simple(id, a, next, SIB_CM_DREP_RECEIVED, CM_ATTR_DREP);
	enter_timewait(id);
	return next;
}

/* A DREQ again in TimeWait: its DREP was lost, send it again (IBA 12.9.8.3.2). */
static int r_dreq_tw(struct sib_cm_id *id, const struct cm_arg *a, int next)
{
	struct cm_arg none = { 0 };

	(void)a;
	a_send_short(id, &none, next, CM_ATTR_DREP);
	return next;
}

static int r_rej(struct sib_cm_id *id, const struct cm_arg *a, int next)
{
	const uint8_t *m = a->mad;
	struct cm_ev *e;
	size_t len;

	disarm(id);
	if ((e = cm_ev_new(id, SIB_CM_REJ_RECEIVED))) {
		unsigned int ari_len = (unsigned int)cm_get(m, CM_REJ_ARI_LENGTH);

		e->ev.u.rej.reason = (uint16_t)cm_get(m, CM_REJ_REASON);
		e->ev.u.rej.ari_len = (uint8_t)(ari_len > 72 ? 72 : ari_len);
		memcpy(e->ari, cm_bytes(m, CM_REJ_ARI, &len), sizeof(e->ari));
		cm_ev_pdata(e, m, CM_ATTR_REJ);
	}
	if (next == CM_TIMEWAIT)
		enter_timewait(id);
	return next;
}

static int r_mra(struct sib_cm_id *id, const struct cm_arg *a, int next)
{
	const uint8_t *m = a->mad;
	unsigned int st = (unsigned int)cm_get(m, CM_MRA_SERVICE_TIMEOUT);
	struct cm_ev *e;

	if (cm_get(m, CM_MRA_MESSAGE_MRAED) != msg_ref(id->state))
		return -EINVAL;
	/* linux cm.c: the message's timer becomes service time + packet life */
	arm(id, t_ns(st) + t_ns(id->plt + 1u));
	if ((e = cm_ev_new(id, SIB_CM_MRA_RECEIVED))) {
		e->ev.u.mra.service_timeout = (uint8_t)st;
		cm_ev_pdata(e, m, CM_ATTR_MRA);
	}
	return next;
}

/* A REQ again for a passive id (IBA 12.9.8.3.1's duplicate): MRA while the
 * user decides, the REP again once sent. */
static int r_dup_req(struct sib_cm_id *id, const struct cm_arg *a, int next)
{
	struct cm_arg mra = { .service_timeout = (uint8_t)(id->rsp_timeout + 2u > 31 ? 31 : id->rsp_timeout + 2u) };

	(void)a;
	if (id->state == CM_REQ_RCVD || id->state == CM_MRA_REQ_SENT)
		return a_send_mra(id, &mra, next);
	msg_send(id); /* REP_SENT, MRA_REP_RCVD: id->msg is the REP */
	id->sn->cm->ctr.resent++;
	return next;
}

/* A REP again at the active side: the RTU (or MRA) was lost. */
static int r_dup_rep(struct sib_cm_id *id, const struct cm_arg *a, int next)
{
	(void)a;
	msg_send(id);
	id->sn->cm->ctr.resent++;
	return next;
}

static int r_sidr_rep(struct sib_cm_id *id, const struct cm_arg *a, int next)
{
	const uint8_t *m = a->mad;
	struct cm_ev *e;

	disarm(id);
	if ((e = cm_ev_new(id, SIB_CM_SIDR_REP_RECEIVED))) {
		e->ev.u.sidr_rep.status = (uint8_t)cm_get(m, CM_SIDR_REP_STATUS);
		e->ev.u.sidr_rep.qpn = (uint32_t)cm_get(m, CM_SIDR_REP_QPN);
		e->ev.u.sidr_rep.qkey = (uint32_t)cm_get(m, CM_SIDR_REP_QKEY);
		cm_ev_pdata(e, m, CM_ATTR_SIDR_REP);
	}
	return next;
}

static int a_ignore(struct sib_cm_id *id, const struct cm_arg *a, int next)
{
	(void)id, (void)a;
	return next;
}

/* The response timer ran out: the message again while retries are left,
 * then the *_ERROR event; TimeWait's end frees the comm ID's wait. */
static int t_timeout(struct sib_cm_id *id, const struct cm_arg *a, int next)
{
	static const struct { uint8_t state, event, next; } err[] = {
		{ CM_REQ_SENT, SIB_CM_REQ_ERROR, CM_IDLE },
		{ CM_MRA_REQ_RCVD, SIB_CM_REQ_ERROR, CM_IDLE },
		{ CM_REP_SENT, SIB_CM_REP_ERROR, CM_IDLE },
		{ CM_MRA_REP_RCVD, SIB_CM_REP_ERROR, CM_IDLE },
		{ CM_DREQ_SENT, SIB_CM_DREQ_ERROR, CM_TIMEWAIT },
		{ CM_SIDR_REQ_SENT, SIB_CM_SIDR_REQ_ERROR, CM_IDLE },
		{ CM_TIMEWAIT, SIB_CM_TIMEWAIT_EXIT, CM_IDLE },
	};

	(void)a, (void)next;
	if (id->state != CM_TIMEWAIT && id->retries_left) {
		id->retries_left--;
		id->sn->cm->ctr.resent++;
		msg_send(id);
		arm(id, id->timeout_ns);
		return CM_STAY;
	}
	for (size_t i = 0; i < sizeof(err) / sizeof(err[0]); i++)
		if (err[i].state == id->state) {
			if (id->state != CM_TIMEWAIT)
				id->sn->cm->ctr.timeouts++;
			cm_ev_new(id, err[i].event);
			if (err[i].next == CM_TIMEWAIT)
				enter_timewait(id);
			return err[i].next;
		}
	return CM_STAY;
}

/* ---- the table ------------------------------------------------------------------ */

struct cm_tr {
	cm_act act;	/* NULL: not allowed (-EINVAL; a received MAD is dropped) */
	uint8_t next;
};

#define T(s, i, a, n) [CM_##s][IN_##i] = { a, CM_##n }
static const struct cm_tr table[CM_STATE_MAX][IN_MAX] = {
	T(IDLE, LISTEN, a_listen, LISTEN),
	T(IDLE, TX_REQ, a_send_req, REQ_SENT),
	T(IDLE, TX_SIDR_REQ, a_send_sidr_req, SIDR_REQ_SENT),
	T(REQ_SENT, RX_REP, r_rep, REP_RCVD),
	T(REQ_SENT, RX_REJ, r_rej, IDLE),
	T(REQ_SENT, RX_MRA, r_mra, MRA_REQ_RCVD),
	T(REQ_SENT, TX_REJ, a_send_rej, IDLE),
	T(REQ_SENT, TIMEOUT, t_timeout, STAY),
	T(MRA_REQ_RCVD, RX_REP, r_rep, REP_RCVD),
	T(MRA_REQ_RCVD, RX_REJ, r_rej, IDLE),
	T(MRA_REQ_RCVD, RX_MRA, a_ignore, STAY),
	T(MRA_REQ_RCVD, TX_REJ, a_send_rej, IDLE),
	T(MRA_REQ_RCVD, TIMEOUT, t_timeout, STAY),
	T(REQ_RCVD, TX_REP, a_send_rep, REP_SENT),
	T(REQ_RCVD, TX_REJ, a_send_rej, IDLE),
	T(REQ_RCVD, TX_MRA, a_send_mra, MRA_REQ_SENT),
	T(REQ_RCVD, RX_REQ, r_dup_req, MRA_REQ_SENT),
	T(REQ_RCVD, RX_REJ, r_rej, IDLE),
	T(MRA_REQ_SENT, TX_REP, a_send_rep, REP_SENT),
	T(MRA_REQ_SENT, TX_REJ, a_send_rej, IDLE),
	T(MRA_REQ_SENT, RX_REQ, r_dup_req, STAY),
	T(MRA_REQ_SENT, RX_REJ, r_rej, IDLE),
	T(REP_SENT, RX_RTU, r_rtu, ESTABLISHED),
	T(REP_SENT, RX_REJ, r_rej, TIMEWAIT),
	T(REP_SENT, RX_MRA, r_mra, MRA_REP_RCVD),
	T(REP_SENT, RX_REQ, r_dup_req, STAY),
	T(REP_SENT, TX_REJ, a_send_rej, TIMEWAIT),
	T(REP_SENT, ESTABLISH, a_establish, ESTABLISHED),
	T(REP_SENT, TIMEOUT, t_timeout, STAY),
	T(MRA_REP_RCVD, RX_RTU, r_rtu, ESTABLISHED),
	T(MRA_REP_RCVD, RX_REJ, r_rej, TIMEWAIT),
	T(MRA_REP_RCVD, RX_MRA, a_ignore, STAY),
	T(MRA_REP_RCVD, RX_REQ, r_dup_req, STAY),
	T(MRA_REP_RCVD, TX_REJ, a_send_rej, TIMEWAIT),
	T(MRA_REP_RCVD, ESTABLISH, a_establish, ESTABLISHED),
	T(MRA_REP_RCVD, TIMEOUT, t_timeout, STAY),
	T(REP_RCVD, TX_RTU, a_send_rtu, ESTABLISHED),
	T(REP_RCVD, TX_REJ, a_send_rej, IDLE),
	T(REP_RCVD, TX_MRA, a_send_mra, MRA_REP_SENT),
	T(REP_RCVD, RX_REP, a_ignore, STAY),
	T(REP_RCVD, RX_REJ, r_rej, IDLE),
	T(MRA_REP_SENT, TX_RTU, a_send_rtu, ESTABLISHED),
	T(MRA_REP_SENT, TX_REJ, a_send_rej, IDLE),
	T(MRA_REP_SENT, RX_REP, r_dup_rep, STAY),
	T(MRA_REP_SENT, RX_REJ, r_rej, IDLE),
	T(ESTABLISHED, TX_DREQ, a_send_dreq, DREQ_SENT),
	T(ESTABLISHED, RX_DREQ, r_dreq, DREQ_RCVD),
	T(ESTABLISHED, RX_REP, r_dup_rep, STAY),
	T(ESTABLISHED, RX_RTU, a_ignore, STAY),
	T(ESTABLISHED, RX_REJ, r_rej, TIMEWAIT),
	T(DREQ_SENT, RX_DREP, r_drep, TIMEWAIT),
	T(DREQ_SENT, RX_DREQ, r_dreq, DREQ_RCVD),
	T(DREQ_SENT, TIMEOUT, t_timeout, STAY),
	T(DREQ_RCVD, TX_DREP, a_send_drep, TIMEWAIT),
	T(DREQ_RCVD, RX_DREQ, a_ignore, STAY),
	T(TIMEWAIT, RX_DREQ, r_dreq_tw, STAY),
	T(TIMEWAIT, RX_DREP, a_ignore, STAY),
	T(TIMEWAIT, RX_REJ, a_ignore, STAY),
	T(TIMEWAIT, TIMEOUT, t_timeout, IDLE),
	T(SIDR_REQ_SENT, RX_SIDR_REP, r_sidr_rep, IDLE),
	T(SIDR_REQ_SENT, TIMEOUT, t_timeout, STAY),
	T(SIDR_REQ_RCVD, TX_SIDR_REP, a_send_sidr_rep, IDLE),
};
#undef T

/* Run input `in` on id: the action, then the state.  0 or -errno. */
int cm_step(struct sib_cm_id *id, enum cm_input in, const struct cm_arg *a)
{
	const struct cm_tr *t = &table[id->state][in];
	int next;

	if (!t->act || (in < IN_RX_REQ && !id->node))
		return -EINVAL;
	next = t->act(id, a, t->next);
	if (next < 0)
		return next;
	if (next != CM_STAY) {
		if (id->state == CM_LISTEN && next != CM_LISTEN)
			id->sn->cm->nlisten--;
		id->state = (uint8_t)next;
	}
	return 0;
}

const char *sib_cm_input_str(unsigned int in)
{
	return in < IN_MAX ? input_names[in] : "?";
}

/* ---- the user's calls -------------------------------------------------------------- */

struct sib_cm_id *sib_cm_id_new(struct sib_subnet *sn, struct sib_fab_node *n, uint8_t port,
				sib_cm_handler handler, void *ctx)
{
	struct sib_cm_id *id;

	if (!sn || !n || n->type != SIB_NODE_CA || port == 0 || port > n->num_ports)
		return NULL;
	id = cm_id_alloc(sn, n, port);
	if (id) {
		id->handler = handler;
		id->ctx = ctx;
	}
	return id;
}

void sib_cm_id_set_handler(struct sib_cm_id *id, sib_cm_handler handler, void *ctx)
{
	id->handler = handler;
	id->ctx = ctx;
}

uint32_t sib_cm_id_local_comm_id(const struct sib_cm_id *id)
{
	return id->local_id;
}

unsigned int sib_cm_id_state(const struct sib_cm_id *id)
{
	return id->state;
}

int sib_cm_listen(struct sib_cm_id *id, uint64_t service_id, uint64_t mask)
{
	uint64_t sm[2] = { service_id, mask };
	struct cm_arg a = { .param = sm };

	return cm_step(id, IN_LISTEN, &a);
}

int sib_cm_send_req(struct sib_cm_id *id, const struct sib_cm_req_param *p)
{
	struct cm_arg a = { .param = p };

	return p ? cm_step(id, IN_TX_REQ, &a) : -EINVAL;
}

int sib_cm_send_rep(struct sib_cm_id *id, const struct sib_cm_rep_param *p)
{
	struct cm_arg a = { .param = p };

	return p ? cm_step(id, IN_TX_REP, &a) : -EINVAL;
}

int sib_cm_send_rtu(struct sib_cm_id *id, const uint8_t *pdata, uint8_t len)
{
	struct cm_arg a = { .pdata = pdata, .len = len };

	return cm_step(id, IN_TX_RTU, &a);
}

int sib_cm_send_rej(struct sib_cm_id *id, uint16_t reason, const uint8_t *ari, uint8_t ari_len,
		    const uint8_t *pdata, uint8_t len)
{
	struct cm_arg a = { .pdata = pdata, .len = len, .reason = reason, .ari = ari,
			    .ari_len = ari_len };

	return cm_step(id, IN_TX_REJ, &a);
}

int sib_cm_send_mra(struct sib_cm_id *id, uint8_t service_timeout, const uint8_t *pdata, uint8_t len)
{
	struct cm_arg a = { .pdata = pdata, .len = len, .service_timeout = service_timeout };

	return cm_step(id, IN_TX_MRA, &a);
}

int sib_cm_send_dreq(struct sib_cm_id *id, const uint8_t *pdata, uint8_t len)
{
	struct cm_arg a = { .pdata = pdata, .len = len };

	return cm_step(id, IN_TX_DREQ, &a);
}

int sib_cm_send_drep(struct sib_cm_id *id, const uint8_t *pdata, uint8_t len)
{
	struct cm_arg a = { .pdata = pdata, .len = len };

	return cm_step(id, IN_TX_DREP, &a);
}

int sib_cm_send_sidr_req(struct sib_cm_id *id, const struct sib_cm_sidr_req_param *p)
{
	struct cm_arg a = { .param = p };

	return p ? cm_step(id, IN_TX_SIDR_REQ, &a) : -EINVAL;
}

int sib_cm_send_sidr_rep(struct sib_cm_id *id, const struct sib_cm_sidr_rep_param *p)
{
	struct cm_arg a = { .param = p };

	return p ? cm_step(id, IN_TX_SIDR_REP, &a) : -EINVAL;
}

int sib_cm_establish(struct sib_cm_id *id)
{
	return cm_step(id, IN_ESTABLISH, &(struct cm_arg){ 0 });
}

/* A passive id a listener made whose REQ/SIDR_REQ_RECEIVED is still queued. */
static struct sib_cm_id *pending_child(struct sib_cm *cm, const struct sib_cm_id *l)
{
	for (struct cm_ev *e = cm->evh; e; e = e->next)
		if (e->ev.listen_id == l && e->ev.id != l)
			return e->ev.id;
	return NULL;
}

/* What destroying an id in each state sends (linux cm.c cm_destroy_id, as
 * facts), and whether the id then waits in TimeWait. */
void sib_cm_id_destroy(struct sib_cm_id *id)
{
	struct cm_arg rej = { .reason = CM_REJ_CONSUMER_DEFINED };
	struct cm_arg none = { 0 };
	struct sib_cm_sidr_rep_param sr = { .status = CM_SIDR_REJECT };

	struct sib_cm_id *child;
	uint8_t guid[8];

	if (!id)
		return;
	/* a REQ its user never saw is rejected with the listener */
	while (id->state == CM_LISTEN && (child = pending_child(id->sn->cm, id)))
		sib_cm_id_destroy(child);
	if (id->nevents)
		purge_events(id->sn->cm, id);
	id->zombie = true;
	id->handler = NULL;
	if (!id->node) {
		id_free(id);
		return;
	}
	switch (id->state) {
	case CM_REQ_SENT: case CM_MRA_REQ_RCVD:
		/* REJ Timeout with this CA's GUID as ARI (IBA 12.6.7.2) */
		for (int i = 0; i < 8; i++)
			guid[i] = (uint8_t)(id->node->node_guid >> (56 - 8 * i));
		rej.reason = CM_REJ_TIMEOUT;
		rej.ari = guid;
		rej.ari_len = 8;
		cm_step(id, IN_TX_REJ, &rej);
		break;
	case CM_REQ_RCVD: case CM_MRA_REQ_SENT: case CM_REP_RCVD: case CM_MRA_REP_SENT:
	case CM_REP_SENT: case CM_MRA_REP_RCVD:
		cm_step(id, IN_TX_REJ, &rej);
		break;
	case CM_ESTABLISHED:
		cm_step(id, IN_TX_DREQ, &none);
		id->state = CM_TIMEWAIT;
		enter_timewait(id);
		break;
	case CM_DREQ_SENT:
		id->state = CM_TIMEWAIT;
		enter_timewait(id);
		break;
	case CM_DREQ_RCVD:
		cm_step(id, IN_TX_DREP, &none);
		break;
	case CM_SIDR_REQ_RCVD:
		none.param = &sr;
		cm_step(id, IN_TX_SIDR_REP, &none);
		break;
	default:
		break;
	}
	if (id->state != CM_TIMEWAIT)
		id_free(id);
}

/* ---- the host's calls ------------------------------------------------------------ */

static void deliver(struct sib_cm *cm, struct cm_ev *e)
{
	struct sib_cm_id *id = e->ev.id;
	union { struct sib_cm_event ev; } u = { e->ev };

	id->nevents--;
	if (id->zombie || !id->handler)
		return;
	u.ev.pdata = u.ev.pdata_len ? e->pdata : NULL;
	switch (u.ev.type) {
	case SIB_CM_REQ_RECEIVED: u.ev.u.req.pdata = e->pdata; u.ev.u.req.pdata_len = u.ev.pdata_len; break;
	case SIB_CM_REP_RECEIVED: u.ev.u.rep.pdata = e->pdata; u.ev.u.rep.pdata_len = u.ev.pdata_len; break;
	case SIB_CM_SIDR_REQ_RECEIVED:
		u.ev.u.sidr_req.pdata = e->pdata;
		u.ev.u.sidr_req.pdata_len = u.ev.pdata_len;
		break;
	case SIB_CM_SIDR_REP_RECEIVED:
		u.ev.u.sidr_rep.pdata = e->pdata;
		u.ev.u.sidr_rep.pdata_len = u.ev.pdata_len;
		break;
	case SIB_CM_REJ_RECEIVED: u.ev.u.rej.ari = e->ari; break;
	default: break;
	}
	(void)cm;
	if (id->handler(id, &u.ev, id->ctx))
		sib_cm_id_destroy(id);
}

/* The test hook's verdict on a MAD about to leave. */
static bool tx_dropped(struct sib_cm *cm, const mai_mad_t *m)
{
	uint8_t w[CM_MAD_SIZE];

	return cm->tx_drop && mai_towire(m, w, sizeof(w)) == CM_MAD_SIZE &&
	       cm->tx_drop(cm->tx_drop_ctx, w, m->lrh.slid, m->lrh.dlid);
}

void sib_cm_dispatch(struct sib_subnet *sn)
{
	struct sib_cm *cm = sn ? sn->cm : NULL;

	if (!cm || cm->in_dispatch)
		return;
	cm->in_dispatch = true;
	for (;;) {
		if (cm->outh) {
			struct cm_out *o = cm->outh;

			cm->outh = o->next;
			if (!cm->outh)
				cm->outt = NULL;
			cm->nout--;
			if (!tx_dropped(cm, &o->m))
				sib_mad_send(sn, o->node, o->port, &o->m);
			free(o);
			continue;
		}
		if (cm->evh) {
			struct cm_ev *e = cm->evh;

			cm->evh = e->next;
			if (!cm->evh)
				cm->evt = NULL;
			cm->nev--;
			deliver(cm, e);
			free(e);
			continue;
		}
		break;
	}
	cm->in_dispatch = false;
}

/* Start the timers armed since the last tick at now; the earliest deadline. */
static uint64_t start_timers(struct sib_cm *cm, uint64_t now)
{
	uint64_t next = 0;

	for (struct sib_cm_id *id = cm->live; id; id = id->next) {
		if (id->timer_pending) {
			id->timer_pending = false;
			id->deadline = now + id->pending_ns;
		}
		if (id->deadline && (!next || id->deadline < next))
			next = id->deadline;
	}
	return next;
}

uint64_t sib_cm_tick(struct sib_subnet *sn, uint64_t now_ns)
{
	struct sib_cm *cm = sn ? sn->cm : NULL;
	struct sib_cm_id *id, *nx;

	if (!cm)
		return 0;
	sib_cm_dispatch(sn);
	if (!cm->ntimed)
		return 0;	/* nothing to walk the ids for */
	start_timers(cm, now_ns);
	for (id = cm->live; id; id = nx) {
		nx = id->next;
		if (!id->deadline || id->deadline > now_ns)
			continue;
		disarm(id);
		cm_step(id, IN_TIMEOUT, &(struct cm_arg){ 0 });
		if (id->zombie && id->state == CM_IDLE)
			id_free(id);
	}
	sib_cm_dispatch(sn);
	return cm->ntimed ? start_timers(cm, now_ns) : 0;
}

void sib_cm_node_gone(struct sib_subnet *sn, struct sib_fab_node *n)
{
	struct sib_cm *cm = sn->cm;
	struct sib_cm_id *id, *nx;
	struct cm_out **pp;

	if (!cm)
		return;
	for (id = cm->live; id; id = nx) {
		nx = id->next;
		if (id->node != n)
			continue;
		if (id->zombie) {
			id_free(id);
			continue;
		}
		disarm(id);
		id->node = NULL;
	}
	for (struct cm_ev *e = cm->evh; e; e = e->next)
		if (e->ev.node == n)
			e->ev.node = NULL;	/* the event still comes, without its node */
	for (pp = &cm->outh, cm->outt = NULL; *pp;) {
		struct cm_out *o = *pp;

		if (o->node == n) {
			*pp = o->next;
			free(o);
			cm->nout--;
			continue;
		}
		cm->outt = o;
		pp = &o->next;
	}
}
