/* SPDX-License-Identifier: MIT */
/*
 * UD multicast in a context (IBA 10.5.2.x, 11.3.1; ibv_attach_mcast(3)):
 * attach and detach through softibd, which owns the membership and
 * publishes each group's member inboxes in the fabric map; this context's
 * own attachments (which of its QPs take a datagram to an MLID, for the
 * receive demux); the seqlock read of a group for a sender's fan-out; and
 * a sender QP's cache of member inbox mappings.  Locking: ctx->mcast_lock
 * (process-private) guards the attachment list; the ring cache is the
 * engine's (progress_lock).  Never trusts the map beyond bounds checks.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hca/transport.h"
#include "hca/ud.h"

#define SIB_MCAST_LOCAL_MAX 1024     /* attachments per context */
/* Seqlock retries before giving up: a bounded spin over softibd's rewrite
 * of a member list (microseconds). */
#define MCAST_READ_TRIES    4096

struct sib_mcast_local {
	uint32_t n;
	struct {
		uint8_t mgid[16];
		uint16_t mlid;
		uint32_t qpn;
	} e[SIB_MCAST_LOCAL_MAX];
};

/* A sender QP's mappings of member inboxes (engine context). */
struct sib_mcast_rings {
	uint32_t n;
	struct {
		uint32_t inbox, gen;
		struct sib_link_dest *dest; /* a reference */
	} r[SIB_MAX_MCAST_QP_ATTACH];
};

static bool mlid_ok(uint16_t lid)
{
	return lid >= SIB_MCAST_LID_MIN && lid != IBA_LID_PERMISSIVE;
}

/* ib_attach_mcast's checks: a UD QP, a multicast GID, a multicast LID. */
static int mcast_args(struct ibv_qp *ibqp, const union ibv_gid *gid, uint16_t lid)
{
	if (ibqp->qp_type != IBV_QPT_UD || gid->raw[0] != 0xff || !mlid_ok(lid))
		return EINVAL;
	if (!sib_host->mcast)
		return EOPNOTSUPP; /* a host without softibd's groups */
	return 0;
}

static int local_find(const struct sib_mcast_local *l, const union ibv_gid *gid, uint16_t lid, uint32_t qpn)
{
	for (uint32_t i = 0; l && i < l->n; i++)
		if (l->e[i].qpn == qpn && l->e[i].mlid == lid && !memcmp(l->e[i].mgid, gid->raw, 16))
			return (int)i;
	return -1;
}

/* ibv_attach_mcast: 0, EINVAL (see mcast_args, or softibd's group rules),
 * ENOMEM past the limits, EIO if softibd is gone. */
int sib_attach_mcast(struct ibv_qp *ibqp, const union ibv_gid *gid, uint16_t lid)
{
	struct sib_qp *qp = to_sqp(ibqp);
	struct sib_context *ctx = qp->ctx;
	int rc = mcast_args(ibqp, gid, lid);

	if (rc)
		return rc;
	pthread_mutex_lock(&ctx->mcast_lock);
	if (!ctx->mcast)
		ctx->mcast = calloc(1, sizeof(*ctx->mcast));
	rc = !ctx->mcast || ctx->mcast->n >= SIB_MCAST_LOCAL_MAX ? ENOMEM : 0;
	pthread_mutex_unlock(&ctx->mcast_lock);
	if (rc)
		return rc;
	rc = sib_host->mcast(qp->obj_handle, gid->raw, lid, true);
	if (rc)
		return rc;
	pthread_mutex_lock(&ctx->mcast_lock);
	if (local_find(ctx->mcast, gid, lid, ibqp->qp_num) < 0 && ctx->mcast->n < SIB_MCAST_LOCAL_MAX) {
		uint32_t i = ctx->mcast->n++;

		memcpy(ctx->mcast->e[i].mgid, gid->raw, 16);
		ctx->mcast->e[i].mlid = lid;
		ctx->mcast->e[i].qpn = ibqp->qp_num;
		qp->ud->mcast_attached++;
	}
	pthread_mutex_unlock(&ctx->mcast_lock);
	return 0;
}

/* ibv_detach_mcast: 0, or EINVAL if the QP is not attached to the group. */
int sib_detach_mcast(struct ibv_qp *ibqp, const union ibv_gid *gid, uint16_t lid)
{
	struct sib_qp *qp = to_sqp(ibqp);
	struct sib_context *ctx = qp->ctx;
	int rc = mcast_args(ibqp, gid, lid), i;

	if (rc)
		return rc;
	pthread_mutex_lock(&ctx->mcast_lock);
	i = local_find(ctx->mcast, gid, lid, ibqp->qp_num);
	if (i >= 0) {
		ctx->mcast->e[i] = ctx->mcast->e[--ctx->mcast->n];
		qp->ud->mcast_attached--;
	}
	pthread_mutex_unlock(&ctx->mcast_lock);
	return sib_host->mcast(qp->obj_handle, gid->raw, lid, false);
}

void sib_mcast_qp_gone(struct sib_qp *qp)
{
	struct sib_context *ctx = qp->ctx;

	if (!qp->ud || !qp->ud->mcast_attached)
		return;
	pthread_mutex_lock(&ctx->mcast_lock);
	for (uint32_t i = 0; ctx->mcast && i < ctx->mcast->n;) {
		if (ctx->mcast->e[i].qpn == qp->ibv.qp_base.qp_num)
			ctx->mcast->e[i] = ctx->mcast->e[--ctx->mcast->n];
		else
			i++;
	}
	qp->ud->mcast_attached = 0;
	pthread_mutex_unlock(&ctx->mcast_lock);
}

void sib_mcast_ctx_fini(struct sib_context *ctx)
{
	free(ctx->mcast);
	ctx->mcast = NULL;
}

uint32_t sib_mcast_local_qps(struct sib_context *ctx, uint16_t mlid, const uint8_t *dgid, uint32_t *qpns,
			     uint32_t max)
{
	uint32_t n = 0;

	pthread_mutex_lock(&ctx->mcast_lock);
	for (uint32_t i = 0; ctx->mcast && i < ctx->mcast->n && n < max; i++)
		if (ctx->mcast->e[i].mlid == mlid && (!dgid || !memcmp(dgid, ctx->mcast->e[i].mgid, 16)))
			qpns[n++] = ctx->mcast->e[i].qpn;
	pthread_mutex_unlock(&ctx->mcast_lock);
	return n;
}

uint32_t sib_mcast_members(uint16_t mlid, struct sib_shm_mcast_member *m)
{
	uint16_t slot;

	if (!mlid_ok(mlid))
		return 0;
	slot = atomic_load_explicit(&sib_fabric->mlid_grp[mlid - SIB_MCAST_LID_MIN], memory_order_acquire);
	if (!slot || slot > SIB_MAX_MCAST_GRP)
		return 0;
	const struct sib_shm_mcast_grp *g = &sib_fabric->mcast[slot - 1];

	for (int t = 0; t < MCAST_READ_TRIES; t++) {
		uint32_t s1 = atomic_load_explicit(&g->seq, memory_order_acquire), n;

		if (s1 & 1)
			continue;
		n = g->nmembers;
		if (n > SIB_MAX_MCAST_QP_ATTACH)
			n = 0;
		memcpy(m, g->members, n * sizeof(*m));
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&g->seq, memory_order_relaxed) == s1)
			return g->mlid == mlid ? n : 0;
	}
	return 0; /* softibd keeps writing: this datagram is lost */
}

uint32_t sib_mcast_members_routed(struct sib_qp *qp, uint16_t mlid, struct sib_shm_mcast_member *m)
{
	uint32_t n = sib_mcast_members(mlid, m), k = 0;
	const uint64_t *mask;

	if (!n)
		return 0;
	mask = sib_link_mroute(&qp->ctx->link, qp->port_num ? qp->port_num : 1, mlid);
	if (!mask)
		return UINT32_MAX; /* asked by the engine thread: retry later */
	for (uint32_t i = 0; i < n; i++) {
		uint32_t dev = m[i].inbox < SIB_MAX_INBOXES ?
			       sib_fabric->inboxes[m[i].inbox].dev_index : SIB_MAX_DEVICES;

		if (sib_link_mroute_reaches_dev(mask, dev))
			m[k++] = m[i];
	}
	return k;
}

enum sib_link_verdict sib_mcast_dest(struct sib_qp *qp, uint32_t inbox, uint32_t gen,
				     struct sib_link_dest **d)
{
	struct sib_mcast_rings *c = qp->ud->mcast_rings;
	enum sib_link_verdict v;

	*d = NULL;
	if (!c) {
		c = qp->ud->mcast_rings = calloc(1, sizeof(*c));
		if (!c)
			return SIB_LINK_UNREACHABLE;
	}
	for (uint32_t i = 0; i < c->n; i++) {
		if (c->r[i].inbox == inbox && c->r[i].gen == gen) {
			*d = c->r[i].dest;
			return SIB_LINK_OK;
		}
	}
	v = sib_link_dest_get(&qp->ctx->link, inbox, gen, d);
	if (v != SIB_LINK_OK)
		return v;
	/* On a miss, let go of members whose context is gone (their inbox
	 * generation moved): a dead member's inbox is not kept mapped. */
	for (uint32_t i = 0; i < c->n;) {
		uint32_t now = sib_link_inbox_gen(c->r[i].inbox);

		if (now == c->r[i].gen) {
			i++;
			continue;
		}
		sib_link_dest_put(c->r[i].dest);
		c->r[i] = c->r[--c->n];
	}
	if (c->n == SIB_MAX_MCAST_QP_ATTACH) {
		/* Full: start over (a sender of many groups maps again). */
		for (uint32_t i = 0; i < c->n; i++)
			sib_link_dest_put(c->r[i].dest);
		c->n = 0;
	}
	c->r[c->n].inbox = inbox;
	c->r[c->n].gen = gen;
	c->r[c->n++].dest = *d;
	return SIB_LINK_OK;
}

void sib_mcast_rings_release(struct sib_qp *qp)
{
	struct sib_mcast_rings *c = qp->ud ? qp->ud->mcast_rings : NULL;

	if (!c)
		return;
	for (uint32_t i = 0; i < c->n; i++)
		sib_link_dest_put(c->r[i].dest);
	free(c);
	qp->ud->mcast_rings = NULL;
}
