// SPDX-License-Identifier: MIT
/*
 * Multicast group membership (IBA 10.5.2.x multicast, 11.3.1 Attach /
 * Detach QP to/from multicast group; ibv_attach_mcast(3)): which UD QP of
 * which connection is attached to which group, keyed by MGID and MLID (one
 * MLID per MGID and back), and the group's member inboxes published
 * read-only in the fabric map (shm->mcast[], shm->mlid_grp[]) for senders
 * to fan out to.  softibd owns it: a QP's attachments go with the QP, a
 * connection's with its QPs.  Until the SM and SA exist the MLID is the
 * caller's.  Single-threaded (the event loop); nothing is read back from
 * the map.
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/softibd.h"

struct mcast_att {
	struct sibd_client *c;
	uint32_t qp_handle;
	uint32_t inbox;
};

struct mcast_grp {
	uint16_t mlid;                  /* 0 = slot free */
	uint8_t mgid[16];
	uint32_t n;
	struct mcast_att att[SIB_MAX_MCAST_QP_ATTACH];
};

struct sibd_mcast {
	struct mcast_grp grp[SIB_MAX_MCAST_GRP];
	uint32_t total;                 /* attachments, all groups */
};

static struct mcast_grp *find(struct sibd_mcast *mc, const uint8_t *mgid, uint16_t mlid)
{
	for (unsigned int i = 0; i < SIB_MAX_MCAST_GRP; i++) {
		struct mcast_grp *g = &mc->grp[i];

		if (g->mlid && (mgid ? !memcmp(g->mgid, mgid, 16) : g->mlid == mlid))
			return g;
	}
	return NULL;
}

/* Write group g's member inboxes (each once) into the map, under its seqlock. */
static void publish(struct sibd *d, struct mcast_grp *g)
{
	uint32_t idx = (uint32_t)(g - d->mcast->grp);
	struct sib_shm_mcast_grp *s = &d->shm->mcast[idx];
	struct sib_shm_mcast_member m[SIB_MAX_MCAST_QP_ATTACH];
	uint32_t n = 0, seq = atomic_load_explicit(&s->seq, memory_order_relaxed);

	for (uint32_t i = 0; i < g->n; i++) {
		uint32_t k;

		for (k = 0; k < n && m[k].inbox != g->att[i].inbox; k++)
			;
		if (k == n) {
			m[n].inbox = g->att[i].inbox;
			m[n++].gen = sibd_inbox_gen(d, g->att[i].inbox);
		}
	}
	atomic_store_explicit(&s->seq, seq + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	s->mlid = g->n ? g->mlid : 0;
	s->nmembers = (uint16_t)n;
	memcpy(s->mgid, g->mgid, 16);
	memcpy(s->members, m, n * sizeof(m[0]));
	atomic_store_explicit(&s->seq, seq + 2, memory_order_release);
	atomic_store_explicit(&d->shm->mlid_grp[g->mlid - SIB_MCAST_LID_MIN],
			      g->n ? (uint16_t)(idx + 1) : 0, memory_order_release);
	if (!g->n)
		g->mlid = 0; /* the group is gone with its last member */
}

static void att_remove(struct sibd_mcast *mc, struct mcast_grp *g, uint32_t i)
{
	g->att[i] = g->att[--g->n];
	mc->total--;
}

static int attach(struct sibd *d, struct sibd_client *c, const struct sib_ctl_mcast *m, uint32_t inbox)
{
	struct sibd_mcast *mc = d->mcast;
	struct mcast_grp *g = find(mc, m->mgid, 0);

	if (g && g->mlid != m->mlid)
		return -EINVAL; /* the MGID has another MLID */
	if (!g) {
		if (find(mc, NULL, m->mlid))
			return -EINVAL; /* the MLID belongs to another MGID */
		for (unsigned int i = 0; !g && i < SIB_MAX_MCAST_GRP; i++)
			if (!mc->grp[i].mlid)
				g = &mc->grp[i];
		if (!g)
			return -ENOMEM; /* max_mcast_grp */
		memset(g, 0, offsetof(struct mcast_grp, att));
		g->mlid = m->mlid;
		memcpy(g->mgid, m->mgid, 16);
	}
	for (uint32_t i = 0; i < g->n; i++)
		if (g->att[i].c == c && g->att[i].qp_handle == m->qp_handle)
			return 0; /* already attached: nothing changes */
	if (g->n >= SIB_MAX_MCAST_QP_ATTACH)
		return -ENOMEM; /* max_mcast_qp_attach */
	g->att[g->n].c = c;
	g->att[g->n].qp_handle = m->qp_handle;
	g->att[g->n++].inbox = inbox;
	mc->total++;
	publish(d, g);
	return 0;
}

static int detach(struct sibd *d, struct sibd_client *c, const struct sib_ctl_mcast *m)
{
	struct mcast_grp *g = find(d->mcast, m->mgid, 0);

	if (!g || g->mlid != m->mlid)
		return -EINVAL;
	for (uint32_t i = 0; i < g->n; i++) {
		if (g->att[i].c == c && g->att[i].qp_handle == m->qp_handle) {
			att_remove(d->mcast, g, i);
			publish(d, g);
			return 0;
		}
	}
	return -EINVAL; /* not attached (uverbs: EINVAL) */
}

/*
 * MCAST: EINVAL for an MLID outside 0xC000..0xFFFE, an MGID that is not
 * multicast (first byte 0xFF), a QP that is not UD (ib_attach_mcast), an
 * MGID/MLID pair that contradicts an existing group, or a detach of what
 * is not attached; EBADF for a handle that is not this connection's QP;
 * ENOMEM past max_mcast_grp or max_mcast_qp_attach.
 */
int sibd_cmd_mcast(struct sibd *d, struct sibd_client *c, struct sib_ctl_msg *msg, int *pass_fd)
{
	const struct sib_ctl_mcast *m = &msg->u.mcast;
	uint32_t qp_type, inbox;
	int ret;

	(void)pass_fd;
	if (m->mlid < SIB_MCAST_LID_MIN || m->mlid == 0xffff || m->mgid[0] != 0xff || m->attach > 1)
		return -EINVAL;
	ret = sibd_qp_info(c, m->qp_handle, &qp_type, &inbox);
	if (ret)
		return ret;
	if (qp_type != IBV_QPT_UD)
		return -EINVAL;
	if (!d->mcast) {
		d->mcast = calloc(1, sizeof(*d->mcast));
		if (!d->mcast)
			return -ENOMEM;
	}
	return m->attach ? attach(d, c, m, inbox) : detach(d, c, m);
}

void sibd_mcast_qp_gone(struct sibd *d, struct sibd_client *c, uint32_t qp_handle)
{
	if (!d->mcast || !d->mcast->total)
		return;
	for (unsigned int k = 0; k < SIB_MAX_MCAST_GRP; k++) {
		struct mcast_grp *g = &d->mcast->grp[k];
		bool changed = false;

		for (uint32_t i = 0; g->mlid && i < g->n;) {
			if (g->att[i].c == c && g->att[i].qp_handle == qp_handle) {
				att_remove(d->mcast, g, i);
				changed = true;
			} else {
				i++;
			}
		}
		if (changed)
			publish(d, g);
	}
}

uint32_t sibd_mcast_groups(const struct sibd *d, uint32_t *attachments)
{
	uint32_t n = 0;

	*attachments = d->mcast ? d->mcast->total : 0;
	for (unsigned int k = 0; d->mcast && k < SIB_MAX_MCAST_GRP; k++)
		n += d->mcast->grp[k].mlid != 0;
	return n;
}

void sibd_mcast_fini(struct sibd *d)
{
	free(d->mcast);
	d->mcast = NULL;
}
