// SPDX-License-Identifier: MIT
/*
 * The IB CM agent's receive side (IBA 1.4 vol 1, 12.6, 12.9): a CM MAD
 * the router delivered at QP1 of a CA port is checked (class version,
 * method, attribute, length), then a REQ or SIDR_REQ finds its listener
 * (or a REJ 8 / SIDR_REP status 1 goes back), a duplicate or stale REQ is
 * answered, and any other message finds its id by comm ID and sender and
 * runs the state table.  Bad MADs are dropped and counted.
 */
#include <string.h>

#include "subnet/cm_int.h"
#include "subnet/mad_router.h"
#include "subnet/subnet.h"
#include "subnet/subnet_int.h"

/* ---- from the fabric ------------------------------------------------------------- */

static struct sib_cm_id *listener_for(struct sib_cm *cm, uint64_t sid)
{
	for (struct sib_cm_id *l = cm->live; l; l = l->next)
		if (l->state == CM_LISTEN && (sid & l->mask) == l->service_id)
			return l;
	return NULL;
}

/* A REJ for a REQ no id takes (no listener, no resources, stale). */
static void rej_req(struct sib_cm *cm, struct sib_fab_node *n, uint8_t port, uint16_t dlid,
		    const uint8_t *req, uint16_t reason)
{
	uint8_t m[CM_MAD_SIZE] = { 0 };

	cm_put_hdr(m, CM_ATTR_REJ, cm_next_tid(cm));
	cm_set(m, CM_REJ_REMOTE_COMM_ID, cm_get(req, CM_REQ_LOCAL_COMM_ID));
	cm_set(m, CM_REJ_MESSAGE_REJECTED, CM_MSG_REQ);
	cm_set(m, CM_REJ_REASON, reason);
	cm_queue_mad(cm, n, port, dlid, m);
}

static void req_event(struct sib_cm_id *id, struct sib_cm_id *l, const uint8_t *m)
{
	struct cm_ev *e = cm_ev_new(id, SIB_CM_REQ_RECEIVED);
	struct sib_cm_req_param *r;
	size_t len;

	if (!e)
		return;
	e->ev.listen_id = l;
	r = &e->ev.u.req;
	r->service_id = cm_get(m, CM_REQ_SERVICE_ID);
	r->qpn = (uint32_t)cm_get(m, CM_REQ_LOCAL_QPN);
	r->qp_type = cm_get(m, CM_REQ_TRANSPORT_SERVICE_TYPE) == CM_TST_RC ? 2 : 3;
	r->responder_resources = (uint8_t)cm_get(m, CM_REQ_RESPONDER_RESOURCES);
	r->initiator_depth = (uint8_t)cm_get(m, CM_REQ_INITIATOR_DEPTH);
	r->retry_count = (uint8_t)cm_get(m, CM_REQ_RETRY_COUNT);
	r->rnr_retry_count = (uint8_t)cm_get(m, CM_REQ_RNR_RETRY_COUNT);
	r->flow_control = (uint8_t)cm_get(m, CM_REQ_FLOW_CONTROL);
	r->srq = (uint8_t)cm_get(m, CM_REQ_SRQ);
	r->path_mtu = (uint8_t)cm_get(m, CM_REQ_PATH_MTU);
	r->local_cm_response_timeout = (uint8_t)cm_get(m, CM_REQ_LOCAL_CM_RESPONSE_TIMEOUT);
	r->remote_cm_response_timeout = (uint8_t)cm_get(m, CM_REQ_REMOTE_CM_RESPONSE_TIMEOUT);
	r->max_cm_retries = (uint8_t)cm_get(m, CM_REQ_MAX_CM_RETRIES);
	r->pkey = (uint16_t)cm_get(m, CM_REQ_PKEY);
	r->starting_psn = (uint32_t)cm_get(m, CM_REQ_STARTING_PSN);
	r->primary.slid = (uint16_t)cm_get(m, CM_REQ_PRIMARY_LOCAL_LID);
	r->primary.dlid = (uint16_t)cm_get(m, CM_REQ_PRIMARY_REMOTE_LID);
	memcpy(r->primary.sgid, cm_bytes(m, CM_REQ_PRIMARY_LOCAL_GID, &len), 16);
	memcpy(r->primary.dgid, cm_bytes(m, CM_REQ_PRIMARY_REMOTE_GID, &len), 16);
	r->primary.flow_label = (uint32_t)cm_get(m, CM_REQ_PRIMARY_FLOW_LABEL);
	r->primary.traffic_class = (uint8_t)cm_get(m, CM_REQ_PRIMARY_TRAFFIC_CLASS);
	r->primary.hop_limit = (uint8_t)cm_get(m, CM_REQ_PRIMARY_HOP_LIMIT);
	r->primary.sl = (uint8_t)cm_get(m, CM_REQ_PRIMARY_SL);
	r->primary.rate = (uint8_t)cm_get(m, CM_REQ_PRIMARY_PACKET_RATE);
	r->primary.packet_life_time = id->plt;
	r->primary.global = !cm_get(m, CM_REQ_PRIMARY_SUBNET_LOCAL);
	cm_ev_pdata(e, m, CM_ATTR_REQ);
}

/* The id a REQ names again (same remote comm ID and CA GUID), or that owns
 * its QPN on that CA (a stale connection, IBA 12.9.8.3.1). */
static struct sib_cm_id *find_remote(struct sib_cm *cm, uint64_t guid, uint32_t rid, uint32_t qpn,
				     bool *stale)
{
	struct sib_cm_id *old = NULL;

	for (struct sib_cm_id *id = cm->live; id; id = id->next) {
		if (!id->passive || id->remote_ca_guid != guid || id->state == CM_IDLE ||
		    id->state == CM_SIDR_REQ_RCVD)
			continue;
		if (id->remote_id == rid) {
			*stale = false;
			return id;
		}
		/* a QP connected still: the passive side of a connection the
		 * active side forgot (TimeWait's QPNs may be reused at once) */
		if (id->remote_qpn == qpn && id->state == CM_ESTABLISHED)
			old = id;
	}
	*stale = old != NULL;
	return old;
}

static void rx_req(struct sib_cm *cm, struct sib_fab_node *n, uint8_t port, uint16_t slid,
		   const uint8_t *m)
{
	uint32_t rid = (uint32_t)cm_get(m, CM_REQ_LOCAL_COMM_ID);
	uint32_t qpn = (uint32_t)cm_get(m, CM_REQ_LOCAL_QPN);
	uint64_t guid = cm_get(m, CM_REQ_LOCAL_CA_GUID);
	uint16_t dlid = (uint16_t)cm_get(m, CM_REQ_PRIMARY_LOCAL_LID);
	unsigned int tst = (unsigned int)cm_get(m, CM_REQ_TRANSPORT_SERVICE_TYPE);
	struct sib_cm_id *id, *l;
	bool stale = false;
	uint8_t ack;

	if (!rid || !qpn) {
		cm->ctr.dropped++;
		return;
	}
	dlid = dlid ? dlid : slid;
	if ((id = find_remote(cm, guid, rid, qpn, &stale))) {
		if (!stale) {
			if (cm_step(id, IN_RX_REQ, &(struct cm_arg){ .mad = m }))
				cm->ctr.dropped++; /* a duplicate past the handshake */
			return;
		}
		rej_req(cm, n, port, dlid, m, CM_REJ_STALE_CONN);
		if (id->state == CM_ESTABLISHED) /* the old one is stale too: disconnect it */
			cm_step(id, IN_TX_DREQ, &(struct cm_arg){ 0 });
		return;
	}
	if (!(l = listener_for(cm, cm_get(m, CM_REQ_SERVICE_ID)))) {
		rej_req(cm, n, port, dlid, m, CM_REJ_INVALID_SERVICE_ID);
		return;
	}
	if (tst != CM_TST_RC && tst != CM_TST_UC) {
		rej_req(cm, n, port, dlid, m, CM_REJ_INVALID_TRANSPORT_TYPE);
		return;
	}
	if (cm->nev >= CM_MAX_EVENTS || !(id = cm_id_alloc(l->sn, n, port))) {
		rej_req(cm, n, port, dlid, m, CM_REJ_NO_RESOURCES);
		return;
	}
	id->handler = l->handler;
	id->ctx = l->ctx;
	id->passive = true;
	id->state = CM_REQ_RCVD;
	id->remote_id = rid;
	id->remote_ca_guid = guid;
	id->remote_qpn = qpn;
	id->dlid = dlid;
	id->service_id = cm_get(m, CM_REQ_SERVICE_ID);
	ack = (uint8_t)cm_get(m, CM_REQ_PRIMARY_LOCAL_ACK_TIMEOUT);
	id->plt = ack ? ack - 1u : 0;
	id->rsp_timeout = (uint8_t)cm_get(m, CM_REQ_LOCAL_CM_RESPONSE_TIMEOUT);
	id->max_retries = (uint8_t)cm_get(m, CM_REQ_MAX_CM_RETRIES);
	req_event(id, l, m);
}

static void rx_sidr_req(struct sib_cm *cm, struct sib_fab_node *n, uint8_t port, uint16_t slid,
			const uint8_t *m)
{
	uint32_t rid = (uint32_t)cm_get(m, CM_SIDR_REQ_REQUEST_ID);
	uint64_t sid = cm_get(m, CM_SIDR_REQ_SERVICE_ID);
	struct sib_cm_id *id, *l;
	struct cm_ev *e;

	for (id = cm->live; id; id = id->next)
		if (id->state == CM_SIDR_REQ_RCVD && id->remote_id == rid && id->dlid == slid) {
			cm->ctr.dropped++; /* a duplicate while the user decides */
			return;
		}
	l = listener_for(cm, sid);
	if (!l || cm->nev >= CM_MAX_EVENTS || !(id = cm_id_alloc(l->sn, n, port))) {
		struct sib_cm_sidr_rep_param p = {
			.status = l ? CM_SIDR_REJECT : CM_SIDR_UNSUPPORTED_SID,
		};
		uint8_t r[CM_MAD_SIZE] = { 0 };

		cm_put_hdr(r, CM_ATTR_SIDR_REP, cm_next_tid(cm));
		cm_put_sidr_rep(r, rid, sid, &p);
		cm_queue_mad(cm, n, port, slid, r);
		return;
	}
	id->handler = l->handler;
	id->ctx = l->ctx;
	id->passive = true;
	id->state = CM_SIDR_REQ_RCVD;
	id->remote_id = rid;
	id->dlid = slid;
	id->service_id = sid;
	if ((e = cm_ev_new(id, SIB_CM_SIDR_REQ_RECEIVED))) {
		e->ev.listen_id = l;
		e->ev.u.sidr_req.service_id = sid;
		e->ev.u.sidr_req.pkey = (uint16_t)cm_get(m, CM_SIDR_REQ_PKEY);
		e->ev.u.sidr_req.path.slid = slid;
		e->ev.u.sidr_req.path.dlid = sib_mad_port_lid(n, port);
		cm_ev_pdata(e, m, CM_ATTR_SIDR_REQ);
	}
}

/* The id a REJ with no RemoteCommID is for: the passive id of the REQ it
 * rejects (the active side gave up before knowing the peer's comm ID;
 * linux cm.c matches these by the remote ID too). */
static struct sib_cm_id *rej_target(struct sib_cm *cm, uint32_t peer, uint16_t slid)
{
	for (struct sib_cm_id *id = cm->live; id; id = id->next)
		if (id->passive && id->remote_id == peer && id->dlid == slid &&
		    id->state != CM_SIDR_REQ_RCVD)
			return id;
	return NULL;
}

/* An answer: the id its RemoteCommID (SIDR_REP: RequestID) names, at this
 * port, from the peer's LID, and from the peer's comm ID once known. */
static void rx_reply(struct sib_cm *cm, struct sib_fab_node *n, uint8_t port, uint16_t slid,
		     uint16_t attr, const uint8_t *m)
{
	static const uint8_t in_of[CM_ATTR_COUNT] = {
		[CM_ATTR_MRA - CM_ATTR_FIRST] = IN_RX_MRA, [CM_ATTR_REJ - CM_ATTR_FIRST] = IN_RX_REJ,
		[CM_ATTR_REP - CM_ATTR_FIRST] = IN_RX_REP, [CM_ATTR_RTU - CM_ATTR_FIRST] = IN_RX_RTU,
		[CM_ATTR_DREQ - CM_ATTR_FIRST] = IN_RX_DREQ,
		[CM_ATTR_DREP - CM_ATTR_FIRST] = IN_RX_DREP,
		[CM_ATTR_SIDR_REP - CM_ATTR_FIRST] = IN_RX_SIDR_REP,
	};
	bool sidr = attr == CM_ATTR_SIDR_REP;
	/* LocalCommID at 0 and RemoteCommID at 4 in MRA, REJ, REP, RTU, DREQ, DREP */
	uint32_t cid = (uint32_t)cm_get(m, sidr ? CM_SIDR_REP_REQUEST_ID : CM_REP_REMOTE_COMM_ID);
	uint32_t peer = sidr ? 0 : (uint32_t)cm_get(m, CM_REP_LOCAL_COMM_ID);
	struct sib_cm_id *id;

	if (attr == CM_ATTR_REJ && cid == 0 && peer)
		id = rej_target(cm, peer, slid);
	else
		id = cm_id_by_comm(cm, cid);
	if (!id || id->node != n || id->port != port || id->dlid != slid ||
	    (id->remote_id && peer && id->remote_id != peer) ||
	    (!peer && !sidr && attr != CM_ATTR_REJ) ||
	    cm_step(id, (enum cm_input)in_of[attr - CM_ATTR_FIRST], &(struct cm_arg){ .mad = m }))
		cm->ctr.dropped++;
}

void sib_cm_recv(struct sib_subnet *sn, struct sib_fab_node *n, uint8_t port, const mai_mad_t *mad)
{
	struct sib_cm *cm = cm_ctx(sn);
	uint8_t m[CM_MAD_SIZE];
	uint16_t attr = mad->attr_id;

	if (!cm)
		return;
	if (n->type != SIB_NODE_CA || port == 0 || port > n->num_ports || mad->qp != 1 ||
	    mad->class_version != CM_CLASS_VERSION || mad->method != CM_METHOD_SEND ||
	    attr < CM_ATTR_REQ || attr > CM_ATTR_SIDR_REP ||
	    mai_towire(mad, m, sizeof(m)) != CM_MAD_SIZE || cm->nev >= CM_MAX_EVENTS) {
		cm->ctr.dropped++;
		return;
	}
	cm->ctr.received[attr - CM_ATTR_FIRST]++;
	if (attr == CM_ATTR_REQ)
		rx_req(cm, n, port, mad->lrh.slid, m);
	else if (attr == CM_ATTR_SIDR_REQ)
		rx_sidr_req(cm, n, port, mad->lrh.slid, m);
	else
		rx_reply(cm, n, port, mad->lrh.slid, attr, m);
}
