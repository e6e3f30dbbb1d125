/* SPDX-License-Identifier: MIT */
/*
 * librdmacm's QPs, CQs and SRQs (rdma-core v44 cma.c, man rdma_create_qp,
 * rdma_create_srq, rdma_init_qp_attr): CQs and completion channels made
 * when the caller gives none (cq_context = the id, which
 * rdma_get_send_comp/_recv_comp check), the QP moved to INIT (RC) or to
 * RTS (UD) at once with softibd's rdma_init_qp_attr values, and the
 * transitions of connect, accept, disconnect and reject.  Only the public
 * verbs API is used.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/rdma_cma.h>

#include "rdmacm/cma_priv.h"

static int set_errno(int e)
{
	errno = e;
	return -1;
}

void cma_ah_from_wire(struct ibv_ah_attr *ah, const struct sib_cm_ah *w)
{
	memset(ah, 0, sizeof(*ah));
	memcpy(ah->grh.dgid.raw, w->dgid, 16);
	ah->grh.flow_label = w->flow_label & 0xfffff;
	ah->grh.sgid_index = w->sgid_index;
	ah->grh.hop_limit = w->hop_limit;
	ah->grh.traffic_class = w->traffic_class;
	ah->dlid = w->dlid;
	ah->sl = w->sl & 0xf;
	ah->src_path_bits = w->src_path_bits & 0x7f;
	ah->static_rate = w->static_rate;
	ah->is_global = !!w->is_global;
	ah->port_num = w->port_num;
}

/* INIT_QP_ATTR of id p for attr->qp_state: the attributes and their mask. */
int cma_init_qp_attr(struct cma_id *p, struct ibv_qp_attr *attr, int *mask)
{
	const struct sib_cm_qp_attr *w;
	struct sib_ctl_cm c;

	cma_id_cmd(p, &c, SIB_CM_CMD_INIT_QP_ATTR);
	c.qp_state = attr->qp_state;
	if (cma_call(&c, NULL))
		return -1;
	w = &c.qp_attr;
	memset(attr, 0, sizeof(*attr));
	attr->qp_state = w->qp_state;
	attr->qp_access_flags = (int)w->qp_access_flags;
	attr->qkey = w->qkey;
	attr->rq_psn = w->rq_psn & 0xffffff;
	attr->sq_psn = w->sq_psn & 0xffffff;
	attr->dest_qp_num = w->dest_qp_num & 0xffffff;
	attr->pkey_index = w->pkey_index;
	attr->port_num = w->port_num;
	attr->path_mtu = w->path_mtu;
	attr->max_rd_atomic = w->max_rd_atomic;
	attr->max_dest_rd_atomic = w->max_dest_rd_atomic;
	attr->min_rnr_timer = w->min_rnr_timer;
	attr->timeout = w->timeout;
	attr->retry_cnt = w->retry_cnt;
	attr->rnr_retry = w->rnr_retry;
	cma_ah_from_wire(&attr->ah_attr, &w->ah);
	*mask = (int)w->mask;
	return 0;
}

RDMACM_EXPORT int rdma_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *qp_attr,
				    int *qp_attr_mask)
{
	if (!id || !qp_attr || !qp_attr_mask)
		return set_errno(EINVAL);
	return cma_init_qp_attr((struct cma_id *)id, qp_attr, qp_attr_mask);
}

static int modify(struct cma_id *p, enum ibv_qp_state state, struct ibv_qp_attr *attr, int *mask)
{
	attr->qp_state = state;
	return cma_init_qp_attr(p, attr, mask);
}

static int do_modify(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	int rc = ibv_modify_qp(qp, attr, mask);

	return rc ? set_errno(rc > 0 ? rc : errno) : 0;
}

/*
 * RTR (rdma-core ucma_modify_qp_rtr); resp_res 0xff keeps the answer's.
 * First INIT -> INIT with the connection's values: the QP was made INIT
 * before the handshake gave the responder resources that decide
 * REMOTE_READ and REMOTE_ATOMIC access (linux cm.c cm_init_qp_init_attr).
 */
int cma_modify_qp_rtr(struct cma_id *p, uint8_t resp_res)
{
	struct ibv_qp_attr attr;
	int mask;

	if (modify(p, IBV_QPS_INIT, &attr, &mask) || do_modify(p->id.qp, &attr, mask))
		return -1;
	if (modify(p, IBV_QPS_RTR, &attr, &mask))
		return -1;
	if (resp_res != RDMA_MAX_RESP_RES)
		attr.max_dest_rd_atomic = resp_res;
	return do_modify(p->id.qp, &attr, mask);
}

int cma_modify_qp_rts(struct cma_id *p, uint8_t init_depth)
{
	struct ibv_qp_attr attr;
	int mask;

	if (modify(p, IBV_QPS_RTS, &attr, &mask))
		return -1;
	if (init_depth != RDMA_MAX_INIT_DEPTH)
		attr.max_rd_atomic = init_depth;
	return do_modify(p->id.qp, &attr, mask);
}

int cma_modify_qp_err(struct cma_id *p)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };

	if (!p->id.qp)
		return 0;
	return do_modify(p->id.qp, &attr, IBV_QP_STATE);
}

/* RC and UC: INIT with the id's P_Key index, port and access (rdma-core ucma_init_conn_qp). */
static int init_conn_qp(struct cma_id *p, struct ibv_qp *qp)
{
	struct ibv_qp_attr attr;
	int mask;

	if (modify(p, IBV_QPS_INIT, &attr, &mask))
		return -1;
	return do_modify(qp, &attr, mask);
}

/* UD: INIT (Q_Key) -> RTR -> RTS with sq_psn 0 (rdma-core ucma_init_ud_qp). */
static int init_ud_qp(struct cma_id *p, struct ibv_qp *qp)
{
	struct ibv_qp_attr attr;
	int mask;

	if (modify(p, IBV_QPS_INIT, &attr, &mask) || do_modify(qp, &attr, mask))
		return -1;
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTR;
	if (do_modify(qp, &attr, IBV_QP_STATE))
		return -1;
	attr.qp_state = IBV_QPS_RTS;
	attr.sq_psn = 0;
	return do_modify(qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

static void destroy_cqs(struct rdma_cm_id *id)
{
	if (id->qp_type == IBV_QPT_XRC_RECV && id->srq)
		return;
	if (id->recv_cq) {
		ibv_destroy_cq(id->recv_cq);
		if (id->send_cq == id->recv_cq)
			id->send_cq = NULL;
		id->recv_cq = NULL;
	}
	if (id->recv_cq_channel) {
		ibv_destroy_comp_channel(id->recv_cq_channel);
		if (id->send_cq_channel == id->recv_cq_channel)
			id->send_cq_channel = NULL;
		id->recv_cq_channel = NULL;
	}
	if (id->send_cq) {
		ibv_destroy_cq(id->send_cq);
		id->send_cq = NULL;
	}
	if (id->send_cq_channel) {
		ibv_destroy_comp_channel(id->send_cq_channel);
		id->send_cq_channel = NULL;
	}
}

/* A CQ of cqe entries with its own completion channel, cq_context = id. */
static int make_cq(struct rdma_cm_id *id, int cqe, struct ibv_comp_channel **chp, struct ibv_cq **cqp)
{
	*chp = ibv_create_comp_channel(id->verbs);
	if (!*chp)
		return -1;
	*cqp = ibv_create_cq(id->verbs, cqe > 0 ? cqe : 1, id, *chp, 0);
	return *cqp ? 0 : -1;
}

/* rdma-core ucma_create_cqs: a receive and a send CQ when asked for (non-zero sizes). */
static int create_cqs(struct rdma_cm_id *id, uint32_t send_size, uint32_t recv_size)
{
	if (recv_size && make_cq(id, (int)recv_size, &id->recv_cq_channel, &id->recv_cq))
		goto err;
	if (send_size && make_cq(id, (int)send_size, &id->send_cq_channel, &id->send_cq))
		goto err;
	return 0;
err:
	{
		int e = errno;

		destroy_cqs(id);
		return set_errno(e ? e : ENOMEM);
	}
}

RDMACM_EXPORT int rdma_create_qp_ex(struct rdma_cm_id *id, struct ibv_qp_init_attr_ex *attr)
{
	struct cma_id *p = (struct cma_id *)id;
	struct ibv_qp *qp;
	int rc;

	if (!id || !attr || id->qp)
		return set_errno(EINVAL);
	if (!id->verbs)
		return set_errno(EINVAL);
	if ((attr->comp_mask & IBV_QP_INIT_ATTR_PD) && attr->pd) {
		if (attr->pd->context != id->verbs)
			return set_errno(EINVAL);
	} else {
		if (!id->pd)
			return set_errno(EINVAL);
		attr->pd = id->pd;
		attr->comp_mask |= IBV_QP_INIT_ATTR_PD;
	}
	if (id->srq && !attr->srq)
		attr->srq = id->srq;
	if (create_cqs(id, (attr->send_cq || id->send_cq) ? 0 : attr->cap.max_send_wr,
		       (attr->recv_cq || id->recv_cq) ? 0 : attr->cap.max_recv_wr))
		return -1;
	if (!attr->send_cq)
		attr->send_cq = id->send_cq;
	if (!attr->recv_cq)
		attr->recv_cq = id->recv_cq;
	qp = ibv_create_qp_ex(id->verbs, attr);
	if (!qp) {
		rc = errno ? errno : ENOMEM;
		goto err;
	}
	if (id->qp_type == IBV_QPT_UD || attr->qp_type == IBV_QPT_UD)
		rc = init_ud_qp(p, qp);
	else
		rc = init_conn_qp(p, qp);
	if (rc) {
		rc = errno;
		ibv_destroy_qp(qp);
		goto err;
	}
	id->qp = qp;
	return 0;
err:
	destroy_cqs(id);
	return set_errno(rc);
}

RDMACM_EXPORT int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd,
				 struct ibv_qp_init_attr *qp_init_attr)
{
	struct ibv_qp_init_attr_ex ex;
	int rc;

	if (!id || !qp_init_attr)
		return set_errno(EINVAL);
	memset(&ex, 0, sizeof(ex));
	memcpy(&ex, qp_init_attr, sizeof(*qp_init_attr));
	ex.comp_mask = IBV_QP_INIT_ATTR_PD;
	ex.pd = pd ? pd : id->pd;
	rc = rdma_create_qp_ex(id, &ex);
	if (!rc)
		memcpy(qp_init_attr, &ex, sizeof(*qp_init_attr));
	return rc;
}

RDMACM_EXPORT void rdma_destroy_qp(struct rdma_cm_id *id)
{
	if (!id)
		return;
	if (id->qp)
		ibv_destroy_qp(id->qp);
	id->qp = NULL;
	destroy_cqs(id);
}

RDMACM_EXPORT int rdma_create_srq_ex(struct rdma_cm_id *id, struct ibv_srq_init_attr_ex *attr)
{
	struct ibv_srq *srq;

	if (!id || !attr || id->srq || !id->verbs)
		return set_errno(EINVAL);
	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE)) {
		attr->comp_mask |= IBV_SRQ_INIT_ATTR_TYPE;
		attr->srq_type = id->qp_type == IBV_QPT_XRC_RECV ? IBV_SRQT_XRC : IBV_SRQT_BASIC;
	}
	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd) {
		attr->comp_mask |= IBV_SRQ_INIT_ATTR_PD;
		attr->pd = id->pd;
	}
	if (!attr->pd)
		return set_errno(EINVAL);
	if (attr->srq_type == IBV_SRQT_XRC) {
		if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_CQ) || !attr->cq) {
			if (create_cqs(id, 0, attr->attr.max_wr))
				return -1;
			attr->comp_mask |= IBV_SRQ_INIT_ATTR_CQ;
			attr->cq = id->recv_cq;
		}
		srq = ibv_create_srq_ex(id->verbs, attr);
	} else {
		struct ibv_srq_init_attr basic = { .srq_context = attr->srq_context, .attr = attr->attr };

		srq = ibv_create_srq(attr->pd, &basic);
		if (srq)
			attr->attr = basic.attr;
	}
	if (!srq) {
		int e = errno ? errno : ENOMEM;

		if (attr->srq_type == IBV_SRQT_XRC)
			destroy_cqs(id);
		return set_errno(e);
	}
	id->srq = srq;
	return 0;
}

RDMACM_EXPORT int rdma_create_srq(struct rdma_cm_id *id, struct ibv_pd *pd,
				  struct ibv_srq_init_attr *attr)
{
	struct ibv_srq_init_attr_ex ex;
	int rc;

	if (!id || !attr)
		return set_errno(EINVAL);
	memset(&ex, 0, sizeof(ex));
	ex.srq_context = attr->srq_context;
	ex.attr = attr->attr;
	ex.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD;
	ex.srq_type = id->qp_type == IBV_QPT_XRC_RECV ? IBV_SRQT_XRC : IBV_SRQT_BASIC;
	ex.pd = pd ? pd : id->pd;
	rc = rdma_create_srq_ex(id, &ex);
	if (!rc)
		attr->attr = ex.attr;
	return rc;
}

RDMACM_EXPORT void rdma_destroy_srq(struct rdma_cm_id *id)
{
	if (!id || !id->srq)
		return;
	ibv_destroy_srq(id->srq);
	id->srq = NULL;
	if (id->qp_type == IBV_QPT_XRC_RECV)
		destroy_cqs(id);
}
