// SPDX-License-Identifier: MIT
/*
 * Event forwarding of the built-in SM's SA (IBA 1.4 vol 1, 13.4.8.3
 * InformInfo, 15.2.5.12 InformInfoRecord, 13.4.8.2 Notice, 14.4.4 the SM's
 * traps), as OpenSM 3.3 does it (osm_sa_informinfo.c, osm_inform.c,
 * osm_drop_mgr.c, osm_state_mgr.c; facts only):
 *  - SubnAdmSet(InformInfo) subscribes (Subscribe 1) or unsubscribes (0)
 *    the requester's port: the subscription is the InformInfo with its QPN
 *    the requester's (1: the GSI), Reports go to the requester's LID.  A
 *    subscription equals another when the address, the GID (or, with GID
 *    0, the LID range), Type, IsGeneric, TrapNumber/DeviceID, the
 *    QPN/RespTimeValue word and ProducerType/VendorID are equal: then it is
 *    replaced.  0x0200 (ERR_REQ_INVALID) for a requester LID of no port,
 *    Subscribe > 1, a security trap (256-259) without the SM_Key, a GID
 *    or LID range with a port that shares no partition with the
 *    requester, a LIDRangeBegin past the LIDs in use, an unsubscribe of
 *    nothing; those answers carry the request, Subscribe 0 (o13-13.1.1).
 *    Success: GetResp with the InformInfo as sent.
 *  - Get/GetTable(InformInfoRecord): SubscriberGID and Enum (always 0)
 *    matched, only subscribers sharing a partition with the requester,
 *    QPN 0 (C15-0.2-1.16: no SM_Key here).
 *  - Notices: the SM issues trap 64 for a port new at a sweep, 65 for one
 *    gone (sa_sweep below), 66 and 67 when a group gets its first full
 *    member or loses its last (sa_mcast.c); IssuerLID and IssuerGID are
 *    the SM's, the port's GID or the MGID in DataDetails.  Each matching
 *    subscription gets Report(Notice) (class 0x03 method 0x06, TID
 *    0x02DAB000 upwards in its low 32 bits), sent again every 200 ms until
 *    its ReportResp arrives, at most 3 times more (OpenSM's
 *    transaction_timeout and transaction_retries defaults); then it is
 *    given up (counted).
 *  - Traps the SMAs send the SM (128, 144, ...; osm_trap_rcv.c): forwarded
 *    to the matching subscriptions with IssuerGID filled in, 129-131 kept
 *    back, repeats of one trap from one LID suppressed after 11 within
 *    5 s of each other (OpenSM's trap aging) until quiet 5 s (sib_sa_trap).
 *  - A port that leaves the subnet loses its subscriptions (OpenSM with
 *    drop_event_subscriptions; its default keeps them but sends nothing
 *    to a port it cannot find).
 * Single-threaded; bounded: SA_SUB_MAX subscriptions (0x0100 past it),
 * SA_REP_MAX Reports in flight (the oldest is given up), SA_TRAP_AGE_MAX
 * trap sources x contents aged (the one quiet soonest is forgotten).
 */
#include <stdlib.h>
#include <string.h>

#include "subnet/sa_int.h"

#define SA_ATTR_INFORM_INFO		0x0003
#define SA_ATTR_INFORM_INFO_RECORD	0x00F3
#define II_SIZE			36
#define IIR_SIZE		64
#define NOTICE_SIZE		80
#define SA_SUB_MAX		4096
/* Subscriptions one requesting port may hold (OpenSM has no bound; 4,096
 * from one process made each notice 4,096 Reports: hostile review). */
#define SA_SUB_PER_PORT		64
#define SA_REP_MAX		4096
#define REPORT_TIMEOUT_NS	200000000ull	/* OpenSM transaction_timeout 200 ms */
#define REPORT_RETRIES		3		/* OpenSM transaction_retries */
#define REPORT_TID_BASE		0x02DAB000u	/* OpenSM's first Report TID */
#define GSI_QKEY		0x80010000u
#define SA_TRAP_AGE_MAX		1024		/* trap sources x contents tracked */
#define SA_TRAP_QUIET_NS	5000000000ull	/* OSM_DEFAULT_TRAP_SUPRESSION_TIMEOUT 5 s */
#define SA_TRAP_REPEATS		11		/* forwarded before suppression */

struct sa_sub {
	struct sa_sub *next;
	uint8_t ii[II_SIZE];		/* QPN: the subscriber's (1) */
	uint8_t gid[16];		/* SubscriberGID */
	uint16_t lid;			/* where Reports go */
};

struct sa_report {
	struct sa_report *next, *prev;	/* newest first; db->rep_oldest the last */
	uint8_t mad[MAD_SIZE];
	uint64_t tid;
	uint16_t dlid;
	unsigned int sends;
	uint64_t deadline;		/* 0: starts at the next tick */
};

static const struct sa_layout ii_layout = {
	.name = "InformInfo", .attr_id = SA_ATTR_INFORM_INFO, .size = II_SIZE,
};
static const struct sa_layout iir_layout = {
	.name = "InformInfoRecord", .attr_id = SA_ATTR_INFORM_INFO_RECORD, .size = IIR_SIZE,
};

static uint16_t be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static bool gid_zero(const uint8_t *g)
{
	static const uint8_t z[16];

	return !memcmp(g, z, 16);
}

/* The highest LID any end port owns, plus one (OpenSM's LID table size). */
static uint32_t lids_size(struct sib_subnet *sn)
{
	uint32_t top = 0;

	for (unsigned int i = 0; i < sn->fab.n_nodes; i++)
		for (unsigned int p = 0; p <= sn->fab.nodes[i]->num_ports; p++) {
			const struct sib_fab_node *n = sn->fab.nodes[i];

			if (sa_endport(n, (uint8_t)p)) {
				const struct mad_port_info *pi = sa_pinfo(n, (uint8_t)p);
				uint32_t end = pi->lid + (1u << pi->lmc);

				if (end > top)
					top = end;
			}
		}
	return top;
}

/* o13-14.1.1: the requester and the trap sources it names can reach each
 * other (a shared partition); LIDRangeBegin 0xFFFF names every port. */
static bool access_ok(struct sa_req *q, const uint8_t *ii, struct sib_fab_node *rn, uint8_t rp)
{
	struct sib_fab_node *n;
	uint8_t pn;
	uint32_t begin = be16(ii + 16), end = be16(ii + 18), size;

	if (!gid_zero(ii))
		return sa_port_by_guid(q->sn, sa_be_get(ii + 8, 8), &n, &pn) &&
		       sa_share_pkey(n, pn, rn, rp);
	if (begin == 0xFFFF)
		return true;
	size = lids_size(q->sn);
	if (!end)
		end = begin;
	else if (end >= size)
		end = size ? size - 1 : 0;
	if (begin >= size)
		return false;
	for (uint32_t lid = begin; lid <= end; lid++)
		if (sa_port_by_lid(q->sn, (uint16_t)lid, &n, &pn) && !sa_share_pkey(n, pn, rn, rp))
			return false;
	return true;
}

/* OpenSM's match_inf_rec: the same subscription (address, filter). */
static bool same_sub(const struct sa_sub *s, uint16_t lid, const uint8_t *ii)
{
	const uint8_t *h = s->ii;

	if (s->lid != lid)
		return false;
	if (!gid_zero(ii) ? memcmp(h, ii, 16) : memcmp(h + 16, ii + 16, 4))
		return false;
	return !memcmp(h + 24, ii + 24, 2) && h[22] == ii[22] && !memcmp(h + 26, ii + 26, 6) &&
	       !memcmp(h + 33, ii + 33, 3);
}

static struct sa_sub **find_sub(struct sa_db *db, uint16_t lid, const uint8_t *ii)
{
	for (struct sa_sub **l = &db->sub; *l; l = &(*l)->next)
		if (same_sub(*l, lid, ii))
			return l;
	return NULL;
}

/* An error answer that carries the request with Subscribe 0. */
static uint16_t refuse(struct sa_req *q, bool unsubscribe_bit)
{
	q->echo = true;
	memcpy(q->echo_data, q->wire + MAD_SA_HDR_SIZE, MAD_SA_DATA_SIZE);
	if (unsubscribe_bit)
		q->echo_data[23] = 0;
	return MAD_SA_STATUS_REQ_INVALID;
}

static uint16_t inform_set(struct sa_req *q, struct sa_db *db)
{
	const uint8_t *ii = q->wire + MAD_SA_HDR_SIZE;
	uint16_t trap = be16(ii + 26);
	struct sib_fab_node *rn;
	struct sa_sub **l, *s;
	uint8_t rp, key[II_SIZE];

	if (!sa_port_by_lid(q->sn, q->req_lid, &rn, &rp) || ii[23] > 1 ||
	    (!q->sa.sm_key && ii[22] && trap >= 256 && trap <= 259))
		return refuse(q, false);
	/* a subscription is kept with the requester's QPN (the GSI's, 1) and
	 * looked up so; an unsubscribe is looked up with the QPN it names */
	memcpy(key, ii, II_SIZE);
	if (ii[23]) {
		key[28] = key[29] = 0;
		key[30] = 1;
	}
	l = find_sub(db, q->req_lid, key);
	if (!ii[23]) {
		if (!l)
			return refuse(q, true);
		s = *l;
		*l = s->next;
		db->nsub--;
		free(s);
	} else {
		if (!access_ok(q, ii, rn, rp))
			return refuse(q, true);
		if (!l) {
			unsigned int mine = 0;

			for (const struct sa_sub *o = db->sub; o; o = o->next)
				mine += o->lid == q->req_lid;
			if (db->nsub >= SA_SUB_MAX || mine >= SA_SUB_PER_PORT ||
			    !(s = calloc(1, sizeof(*s)))) {
				q->echo = true;
				memcpy(q->echo_data, ii, MAD_SA_DATA_SIZE);
				q->echo_data[23] = 0;
				return MAD_SA_STATUS_NO_RESOURCES;
			}
			s->next = db->sub;
			db->sub = s;
			db->nsub++;
		} else {
			s = *l;
		}
		memcpy(s->ii, key, II_SIZE);
		sa_port_gid(rn, rp, s->gid);
		s->lid = q->req_lid;
	}
	memcpy(q->out + MAD_SA_HDR_SIZE, ii, II_SIZE);
	q->count = 1;
	return MAD_STATUS_SUCCESS;
}

uint16_t sa_inform(struct sa_req *q)
{
	struct sa_db *db = sa_db(q->sn);

	q->l = &ii_layout;
	if (q->sa.hdr.method != MAD_METHOD_SET)
		return MAD_STATUS_UNSUP_METHOD_ATTR;
	if (!db)
		return MAD_SA_STATUS_NO_RESOURCES;
	return inform_set(q, db);
}

uint16_t sa_inform_record(struct sa_req *q)
{
	const uint8_t *w = q->wire + MAD_SA_HDR_SIZE;
	struct sa_db *db = sa_db(q->sn);
	struct sib_fab_node *rn, *n;
	uint8_t rp, pn;

	q->l = &iir_layout;
	if (q->sa.hdr.method != MAD_METHOD_GET && q->sa.hdr.method != MAD_METHOD_GETTABLE)
		return MAD_STATUS_UNSUP_METHOD_ATTR;
	if (!db || !sa_port_by_lid(q->sn, q->req_lid, &rn, &rp))
		return MAD_SA_STATUS_REQ_INVALID;
	for (const struct sa_sub *s = db->sub; s; s = s->next) {
		size_t at = MAD_SA_HDR_SIZE + (size_t)q->count * IIR_SIZE;
		uint8_t *r = q->out + at;

		if (((q->sa.comp_mask & 1) && memcmp(w, s->gid, 16)) ||
		    ((q->sa.comp_mask & 2) && be16(w + 16) != 0) ||
		    !sa_port_by_guid(q->sn, sa_be_get(s->gid + 8, 8), &n, &pn) ||
		    !sa_share_pkey(rn, rp, n, pn))
			continue;
		if (at + IIR_SIZE > q->cap) {
			q->overflow = true;
			break;
		}
		memset(r, 0, IIR_SIZE);
		memcpy(r, s->gid, 16);
		memcpy(r + 24, s->ii, II_SIZE);
		r[24 + 28] = r[24 + 29] = r[24 + 30] = 0; /* QPN 0 (C15-0.2-1.16) */
		q->count++;
	}
	if (q->overflow)
		return MAD_SA_STATUS_NO_RESOURCES;
	if (q->sa.hdr.method == MAD_METHOD_GET && q->count != 1)
		return q->count ? MAD_SA_STATUS_TOO_MANY_RECORDS : MAD_SA_STATUS_NO_RECORDS;
	return MAD_STATUS_SUCCESS;
}

/* ---- Reports ---- */

/* The SM's port LID and GID. */
static uint16_t sm_lid(const struct sib_subnet *sn)
{
	return sn->sm.node ? sa_pinfo(sn->sm.node, sn->sm.port)->lid : 0;
}

static void report_send(struct sib_subnet *sn, const struct sa_report *r)
{
	mai_mad_t m;

	memset(&m, 0, sizeof(m));
	if (!sn->sm.node || mai_fromwire(r->mad, MAD_SIZE, &m) != MAD_SIZE)
		return;
	m.type = MAI_TYPE_MAD;
	m.port = sn->sm.port;
	m.qp = 1;
	m.remote_qpn = 1;
	m.remote_qkey = GSI_QKEY;
	m.data_len = MAI_MAD_DATA_SIZE;
	m.lrh.dlid = r->dlid;
	m.lrh.slid = sm_lid(sn);
	sib_mad_send(sn, sn->sm.node, sn->sm.port, &m);
}

/* Take r out of db's Reports (O(1): a notice to every subscriber gives up
 * the oldest once per Report when the table is full). */
static void rep_unlink(struct sa_db *db, struct sa_report *r)
{
	if (r->prev)
		r->prev->next = r->next;
	else
		db->rep = r->next;
	if (r->next)
		r->next->prev = r->prev;
	else
		db->rep_oldest = r->prev;
	db->nrep--;
	free(r);
}

/* Queue and send Report(notice) to the subscription's address. */
static void report(struct sib_subnet *sn, struct sa_db *db, const struct sa_sub *s,
		   const uint8_t *notice)
{
	struct mad_sa h;
	struct sa_report *r;

	if (db->nrep >= SA_REP_MAX && db->rep_oldest) { /* give the oldest up */
		rep_unlink(db, db->rep_oldest);
		db->ctr.reports_lost++;
	}
	if (!(r = calloc(1, sizeof(*r))))
		return;
	if (++db->report_tid < REPORT_TID_BASE)
		db->report_tid = REPORT_TID_BASE + 1;
	memset(&h, 0, sizeof(h));
	h.hdr.base_version = MAD_BASE_VERSION;
	h.hdr.mgmt_class = MAD_MGMT_CLASS_SUBN_ADM;
	h.hdr.class_version = MAD_SA_CLASS_VERSION;
	h.hdr.method = MAD_METHOD_REPORT;
	/* the SM's channel in TID bits 63..40: the ReportResp comes back to
	 * sib_sm_receive (mad_router.c routes responses by them) */
	h.hdr.tid = (uint64_t)SIB_MAD_CHAN_SM << MAI_TID_CHAN_SHIFT | db->report_tid;
	h.hdr.attr_id = MAD_ATTR_NOTICE;
	memcpy(h.data, notice, NOTICE_SIZE);
	mad_sa_encode(&h, r->mad);
	r->tid = h.hdr.tid;
	r->dlid = s->lid;
	r->sends = 1;
	r->next = db->rep;
	if (db->rep)
		db->rep->prev = r;
	else
		db->rep_oldest = r;
	db->rep = r;
	db->nrep++;
	db->ctr.reports_sent++;
	report_send(sn, r);
}

/* OpenSM's match_notice_to_inf_rec: does subscription ii want notice n? */
static bool sub_wants(const uint8_t *ii, const uint8_t *n)
{
	uint16_t lid = be16(n + 6), type = be16(ii + 24);

	if (!gid_zero(ii)) {
		if (memcmp(ii, n + 64, 16))
			return false;
	} else if (be16(ii + 16) != 0xFFFF && (be16(ii + 16) > lid || lid > be16(ii + 18))) {
		return false;
	}
	if (!ii[22] != !(n[0] & 0x80))
		return false;
	if (type != 0xFFFF && type != (n[0] & 0x7F))
		return false;
	if (be16(ii + 26) != 0xFFFF && be16(ii + 26) != be16(n + 4))
		return false;
	return sa_be_get(ii + 33, 3) == 0xFFFFFF || !memcmp(ii + 33, n + 1, 3);
}

/*
 * May the subscription's port hear of it (o13-17.1.1)?  66/67: the
 * group's P_Key in its table; 64/65: a partition shared with the port the
 * notice is about (one that left the fabric: yes, as OpenSM still knows
 * it then).  *drop: a mismatch of a LID-range subscription (o13-17.1.2).
 */
static bool sub_may(struct sib_subnet *sn, const struct sa_sub *s, uint16_t trap,
		    const uint8_t *gid, uint16_t pkey, bool *drop)
{
	struct sib_fab_node *d, *src;
	uint8_t dp, sp;
	bool full;

	*drop = false;
	if (!sa_port_by_lid(sn, s->lid, &d, &dp))
		return false;
	if (trap == SA_TRAP_MGID_CREATED || trap == SA_TRAP_MGID_DELETED)
		return sa_has_pkey(d, dp, pkey, &full);
	if (!sa_port_by_guid(sn, sa_be_get(gid + 8, 8), &src, &sp))
		return trap == SA_TRAP_GID_IN || trap == SA_TRAP_GID_OUT;
	if (sa_share_pkey(src, sp, d, dp))
		return true;
	*drop = be16(s->ii + 16) != 0xFFFF;
	return false;
}

/* Report notice n to every subscription that wants it and may see it
 * (src: the GID of the port it is about; pkey: 66/67's group's). */
static void notify(struct sib_subnet *sn, struct sa_db *db, const uint8_t *n, const uint8_t *src,
		   uint16_t pkey)
{
	uint16_t trap = (n[0] & 0x80) ? be16(n + 4) : 0;

	for (struct sa_sub **l = &db->sub, *s; (s = *l);) {
		bool drop = false;

		if (sub_wants(s->ii, n) && sub_may(sn, s, trap, src, pkey, &drop))
			report(sn, db, s, n);
		if (drop) {
			*l = s->next;
			db->nsub--;
			free(s);
			continue;
		}
		l = &s->next;
	}
}

void sa_notice(struct sib_subnet *sn, uint16_t trap, const uint8_t gid[16], uint16_t pkey)
{
	struct sa_db *db = sa_db(sn);
	uint8_t n[NOTICE_SIZE];

	if (!db || !db->sub || !sn->sm.node)
		return;
	memset(n, 0, sizeof(n));
	n[0] = 0x80 | MAD_NOTICE_TYPE_SUBN_MGMT;	/* generic, subnet management */
	n[3] = MAD_NOTICE_PROD_CLASS_MGR;
	n[4] = (uint8_t)(trap >> 8);
	n[5] = (uint8_t)trap;
	n[6] = (uint8_t)(sm_lid(sn) >> 8);
	n[7] = (uint8_t)sm_lid(sn);
	memcpy(n + 16, gid, 16);			/* DataDetails: GIDADDR */
	sa_port_gid(sn->sm.node, sn->sm.port, n + 64);	/* IssuerGID: the SM's */
	notify(sn, db, n, gid, pkey);
}

/* ---- traps the SMAs send: forwarded (OpenSM's osm_trap_rcv.c) ---- */

/* One trap source and content seen lately: OpenSM's trap aging tracker. */
struct sa_trap_age {
	uint16_t lid;				/* the trap's source */
	uint8_t notice[MAD_SMP_DATA_SIZE];	/* as it came */
	uint32_t count;				/* seen since it was last quiet */
	uint64_t expires;			/* quiet from then (SA clock) */
};

/* The aging entry of (lid, notice) at db->now_ns: made or refreshed
 * (count 1 when new or quiet since its expiry); NULL without memory. */
static struct sa_trap_age *trap_age(struct sa_db *db, uint16_t lid, const uint8_t *notice)
{
	struct sa_trap_age *v = db->trap_age, *e = NULL;
	unsigned int k = 0;

	for (unsigned int i = 0; i < db->ntrap_age; i++) {	/* drop the quiet ones */
		if (v[i].expires <= db->now_ns)
			continue;
		v[k++] = v[i];
	}
	db->ntrap_age = k;
	for (unsigned int i = 0; i < k && !e; i++)
		if (v[i].lid == lid && !memcmp(v[i].notice, notice, MAD_SMP_DATA_SIZE))
			e = &v[i];
	if (!e) {
		if (!v && !(v = db->trap_age = calloc(SA_TRAP_AGE_MAX, sizeof(*v))))
			return NULL;
		if (k == SA_TRAP_AGE_MAX) {	/* full: the one quiet soonest goes */
			unsigned int o = 0;

			for (unsigned int i = 1; i < k; i++)
				if (v[i].expires < v[o].expires)
					o = i;
			v[o] = v[--k];
		}
		e = &v[k++];
		db->ntrap_age = k;
		memset(e, 0, sizeof(*e));
		e->lid = lid;
		memcpy(e->notice, notice, MAD_SMP_DATA_SIZE);
	}
	if (e->count < UINT32_MAX)
		e->count++;
	e->expires = db->now_ns + SA_TRAP_QUIET_NS;
	return e;
}

/*
 * A Trap(Notice) SMP (mad: 256 bytes) the built-in SM's port took (sma.c
 * answered it with TrapRepress).  As OpenSM: the same trap from the same
 * LID more than 11 times, each within 5 s of the last, is not forwarded
 * (nor swept on) until it has been quiet 5 s; traps 129-131 are not
 * forwarded; the rest go, with IssuerGID set to the GID of the port
 * owning IssuerLID (none: dropped), to every matching subscription whose
 * port shares a partition with that port.  The source is IssuerLID: the
 * SMA here sends no LRH SLID that differs from it.
 */
void sib_sa_trap(struct sib_subnet *sn, const uint8_t *mad)
{
	const uint8_t *nt = mad + MAD_SMP_DATA_OFFS;
	struct sa_db *db = sn->sm_external ? NULL : sa_db(sn);
	uint16_t lid = be16(nt + 6), trap = be16(nt + 4);
	struct sa_trap_age *e;
	struct sib_fab_node *n;
	uint8_t pn, notice[NOTICE_SIZE];

	if (!db)
		return;
	e = trap_age(db, lid, nt);
	if (e && e->count > SA_TRAP_REPEATS) {
		db->ctr.traps_suppressed++;
		return;
	}
	if ((nt[0] & 0x80) && trap >= 129 && trap <= 131)
		return;	/* OpenSM marks the port unhealthy instead */
	if (!sa_port_by_lid(sn, lid, &n, &pn)) {
		db->ctr.traps_dropped++;
		return;
	}
	db->ctr.traps_forwarded++;
	memset(notice, 0, sizeof(notice));
	memcpy(notice, nt, MAD_SMP_DATA_SIZE);
	sa_port_gid(n, pn, notice + 64);	/* IssuerGID (IBA 13.4.8.2) */
	if (db->sub && sn->sm.node)
		notify(sn, db, notice, notice + 64, 0);
}

void sib_sa_report_resp(struct sib_subnet *sn, const mai_mad_t *m)
{
	struct sa_db *db = sn->mcg ? sa_db(sn) : NULL;

	for (struct sa_report *r = db ? db->rep : NULL; r; r = r->next)
		if (r->tid == m->tid && r->dlid == m->lrh.slid) {
			rep_unlink(db, r);
			db->ctr.reports_acked++;
			return;
		}
	if (db)
		db->ctr.report_resp_dropped++;
}

/* Reports due at db->now_ns go again or are given up; the next deadline. */
static uint64_t report_tick(struct sib_subnet *sn, struct sa_db *db)
{
	uint64_t next = 0;

	for (struct sa_report *r = db->rep, *nx; r; r = nx) {
		nx = r->next;
		if (!r->deadline) {
			r->deadline = db->now_ns + REPORT_TIMEOUT_NS;
		} else if (r->deadline <= db->now_ns) {
			if (r->sends > REPORT_RETRIES) {
				rep_unlink(db, r);
				db->ctr.reports_lost++;
				continue;
			}
			r->sends++;
			r->deadline = db->now_ns + REPORT_TIMEOUT_NS;
			db->ctr.reports_resent++;
			report_send(sn, r);
		}
		if (!next || r->deadline < next)
			next = r->deadline;
	}
	return next;
}

uint64_t sib_sa_tick(struct sib_subnet *sn, uint64_t now_ns)
{
	struct sa_db *db = sn && sn->mcg ? sa_db(sn) : NULL;
	uint64_t a, b;

	if (!db)
		return 0;
	db->now_ns = now_ns;
	if (sn->sma.sm_traps - db->ctr.traps_suppressed != db->sm_traps) {
		/* a trap (128: a link went down or up) reached the SM since the
		 * last tick, not suppressed: it sweeps, as OpenSM does on one
		 * (outside the trap's call chain: here) */
		db->sm_traps = sn->sma.sm_traps - db->ctr.traps_suppressed;
		if (!sn->sm_external && !sn->sm_sweeping)
			sib_sm_sweep(sn);
	}
	a = sa_service_tick(db);
	b = report_tick(sn, db);
	return !a ? b : !b ? a : a < b ? a : b;
}

void sib_sa_status(struct sib_subnet *sn, struct sib_sa_status *st)
{
	const struct sa_db *db = sn && sn->mcg ? sa_db(sn) : NULL;

	memset(st, 0, sizeof(*st));
	if (!db)
		return;
	st->services = db->nsvc;
	st->subscriptions = db->nsub;
	st->reports_pending = db->nrep;
	st->ctr = db->ctr;
}

/* ---- the sweep: ports in and out of service ---- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Is end port (n, pn) in service after this sweep: found by discovery, a
 * LID, and (a CA port) ACTIVE? */
static bool in_service(const struct sib_subnet *sn, const struct sib_fab_node *n, uint8_t pn)
{
	if (!sa_endport(n, pn) || n->mgmt->sm_seen != sn->sm.sweeps)
		return false;
	return n->type == SIB_NODE_SWITCH || sa_pinfo(n, pn)->port_state == MAD_PORT_STATE_ACTIVE;
}

/* One end port in service: its GUID and its link's LinkDowned count. */
struct svc_port {
	uint64_t guid;
	uint64_t downs;
};

static int cmp_port(const void *a, const void *b)
{
	return cmp_u64(&((const struct svc_port *)a)->guid, &((const struct svc_port *)b)->guid);
}

static const struct svc_port *find_svc(const struct svc_port *v, unsigned int n, uint64_t g)
{
	struct svc_port key = { .guid = g };

	return bsearch(&key, v, n, sizeof(*v), cmp_port);
}

/* The end ports in service, sorted by GUID; *cnt of them (NULL: no memory). */
static struct svc_port *service_set(struct sib_subnet *sn, unsigned int *cnt)
{
	unsigned int k = 0, cap = 1;
	struct svc_port *v;

	for (unsigned int i = 0; i < sn->fab.n_nodes; i++)
		cap += sn->fab.nodes[i]->num_ports + 1u;
	if (!(v = calloc(cap, sizeof(*v))))
		return NULL;
	for (unsigned int i = 0; i < sn->fab.n_nodes; i++)
		for (unsigned int p = 0; p <= sn->fab.nodes[i]->num_ports; p++) {
			struct sib_fab_node *n = sn->fab.nodes[i];
			uint8_t gid[16];

			if (!in_service(sn, n, (uint8_t)p))
				continue;
			sa_port_gid(n, (uint8_t)p, gid);
			v[k].guid = sa_be_get(gid + 8, 8);
			v[k++].downs = n->mgmt->port[p].pma.link_downed;
		}
	qsort(v, k, sizeof(*v), cmp_port);
	*cnt = k;
	return v;
}

static void port_gid_of(const struct sib_subnet *sn, uint64_t guid, uint8_t gid[16])
{
	uint64_t pre = sn->sm.node ? sa_pinfo(sn->sm.node, sn->sm.port)->gid_prefix : 0;

	for (int i = 0; i < 8; i++) {
		gid[i] = (uint8_t)(pre >> (56 - 8 * i));
		gid[8 + i] = (uint8_t)(guid >> (56 - 8 * i));
	}
}

/* Port guid left: trap 65, its subscriptions dropped. */
static void port_left(struct sib_subnet *sn, struct sa_db *db, uint64_t guid)
{
	uint8_t gid[16];

	port_gid_of(sn, guid, gid);
	sa_notice(sn, SA_TRAP_GID_OUT, gid, 0);
	for (struct sa_sub **l = &db->sub, *s; (s = *l);) {
		if (sa_be_get(s->gid + 8, 8) == guid) {
			*l = s->next;
			db->nsub--;
			db->ctr.subs_dropped++;
			free(s);
			continue;
		}
		l = &s->next;
	}
}

/*
 * After a sweep: a port in service before and not now left (trap 65, its
 * subscriptions and memberships go); one whose link went down and up
 * since (its LinkDowned count moved: the SM missed the moment, as
 * softib's SM sweeps on link up, not on trap 128) left and came back
 * (65, then 64); one new is in service (64).  OpenSM's drop manager and
 * state manager do the same at their sweeps.
 */
bool sib_sa_sweep(struct sib_subnet *sn)
{
	struct sa_db *db = sa_db(sn);
	struct svc_port *in, *old;
	uint64_t *stay;
	unsigned int nin = 0, nstay = 0;
	uint8_t gid[16];
	bool changed;

	if (!db || !(in = service_set(sn, &nin)))
		return false;
	if (!(stay = calloc(nin + 1, sizeof(*stay)))) {
		free(in);
		return false;
	}
	old = (struct svc_port *)db->in_service;
	for (unsigned int i = 0; db->swept && i < db->nin; i++) {
		const struct svc_port *now = find_svc(in, nin, old[i].guid);

		if (!now || now->downs != old[i].downs)
			port_left(sn, db, old[i].guid);
	}
	for (unsigned int i = 0; i < nin; i++) {
		const struct svc_port *was = db->swept ? find_svc(old, db->nin, in[i].guid) : NULL;

		if (was && was->downs == in[i].downs) {
			stay[nstay++] = in[i].guid;
		} else if (db->swept) {
			port_gid_of(sn, in[i].guid, gid);
			sa_notice(sn, SA_TRAP_GID_IN, gid, 0);
			if (!was)
				stay[nstay++] = in[i].guid; /* new: nothing to leave */
		} else {
			stay[nstay++] = in[i].guid;
		}
	}
	free(db->in_service);
	db->in_service = (uint64_t *)in;
	db->nin = nin;
	db->swept = true;
	/* stay is sorted: a subsequence of in */
	changed = sa_mcast_ports_left(sn, stay, nstay);
	free(stay);
	return changed;
}

void sa_inform_free(struct sa_db *db)
{
	while (db->sub) {
		struct sa_sub *s = db->sub;

		db->sub = s->next;
		free(s);
	}
	while (db->rep) {
		struct sa_report *r = db->rep;

		db->rep = r->next;
		free(r);
	}
	free(db->in_service);
	db->in_service = NULL;
	free(db->trap_age);
	db->trap_age = NULL;
	db->rep_oldest = NULL;
	db->nsub = db->nrep = db->nin = db->ntrap_age = 0;
}
