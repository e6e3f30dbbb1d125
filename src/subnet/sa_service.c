// SPDX-License-Identifier: MIT
/*
 * ServiceRecords of the built-in SM's SA (IBA 1.4 vol 1, 15.2.5.14), kept
 * and answered as OpenSM 3.3 does (osm_sa_service_record.c, osm_service.c;
 * facts only):
 *  - SubnAdmSet registers: ServiceID and ServiceGID must be in the
 *    ComponentMask (else 0x0200 ERR_REQ_INVALID); a record with the same
 *    RID (ServiceID, ServiceGID, ServiceP_Key as sent) is replaced, else
 *    the new one goes first; ServiceLease in seconds, 0xFFFFFFFF or no
 *    Lease bit: infinite.  With ServiceP_Key in the mask the requester's
 *    port, and the ServiceGID's port when the GID is in the mask too, must
 *    hold that P_Key (else 0x0200).  Any port may register for any GID:
 *    OpenSM has no own-GID rule (checked in its source).  The answer is
 *    the record as set, ServiceP_Key 0xFFFF when it was not in the mask.
 *  - SubnAdmDelete removes the record of the request's RID (0x0300 when
 *    there is none; the P_Key rule of Set) and answers it.
 *  - Get/GetTable: every record matching the mask (ServiceLease is never
 *    compared, as OpenSM) whose P_Key, when valid, the requester's port
 *    holds.  ServiceKey reads as 0 (15.2.5.14: only a trusted requester
 *    sees it; this SA has no SM_Key).
 *  - A lease runs from the SA's clock (sib_sa_tick, the host's): a record
 *    set at one tick expires at the first tick at least Lease seconds
 *    after the next (armed there, as the CM's timers are).
 * Bounded: SA_SVC_MAX records (0x0100 ERR_NO_RESOURCES past it).
 */
#include <stdlib.h>
#include <string.h>

#include "subnet/sa_int.h"

#define SA_ATTR_SERVICE_RECORD	0x0031
#define SR_SIZE			176	/* AttributeOffset 22 */
#define SR_RID_LEN		26	/* ServiceID, ServiceGID, ServiceP_Key */
#define SR_LEASE_OFF		28
#define SR_KEY_OFF		32
#define SR_PKEY_OFF		24
#define SR_LEASE_INFINITE	0xFFFFFFFFu
#define SA_SVC_MAX		4096
/* Records one requesting port may hold (OpenSM has no bound; here one
 * process filling the table locked every other port out: 0x0100). */
#define SA_SVC_PER_PORT		256
#define SR_BIT_ID		(1ull << 0)
#define SR_BIT_GID		(1ull << 1)
#define SR_BIT_PKEY		(1ull << 2)
#define SR_BIT_LEASE		(1ull << 4)
#define NS_PER_S		1000000000ull

struct sa_svc {
	struct sa_svc *next;
	uint8_t rec[SR_SIZE];	/* wire form, as registered */
	bool armed;		/* expires is set (a lease starts at the next tick) */
	uint64_t expires;	/* the SA clock's ns; 0 with armed: infinite */
	uint16_t owner_lid;	/* the requester's LID that registered it */
};

/* The layout answers need (the record's size; fields are matched here). */
static const struct sa_layout sr_layout = {
	.name = "ServiceRecord", .attr_id = SA_ATTR_SERVICE_RECORD, .size = SR_SIZE,
};

/* The bytes ComponentMask bit `bit` selects (15.2.5.14 table 193):
 * *off, *len; false for reserved and unknown bits. */
static bool sr_field(unsigned int bit, unsigned int *off, unsigned int *len)
{
	static const struct { uint8_t off, len; } head[7] = {
		{ 0, 8 }, { 8, 16 }, { 24, 2 }, { 0, 0 }, { 28, 4 }, { 32, 16 }, { 48, 64 },
	};

	if (bit < 7) {
		*off = head[bit].off;
		*len = head[bit].len;
	} else if (bit < 23) {			/* ServiceData8[16] */
		*off = 112 + (bit - 7);
		*len = 1;
	} else if (bit < 31) {			/* ServiceData16[8] */
		*off = 128 + 2 * (bit - 23);
		*len = 2;
	} else if (bit < 35) {			/* ServiceData32[4] */
		*off = 144 + 4 * (bit - 31);
		*len = 4;
	} else if (bit < 37) {			/* ServiceData64[2] */
		*off = 160 + 8 * (bit - 35);
		*len = 8;
	} else {
		return false;
	}
	return *len != 0;
}

/* Does stored record have match the request's want on every mask bit
 * (ServiceLease excepted, as OpenSM's get_matching_sr)? */
static bool sr_match(uint64_t mask, const uint8_t *want, const uint8_t *have)
{
	for (unsigned int bit = 0; bit < 64; bit++) {
		unsigned int off, len;

		if (!(mask >> bit & 1) || (1ull << bit) == SR_BIT_LEASE || !sr_field(bit, &off, &len))
			continue;
		if (memcmp(want + off, have + off, len))
			return false;
	}
	return true;
}

static uint16_t sr_pkey(const uint8_t *rec)
{
	return (uint16_t)sa_be_get(rec + SR_PKEY_OFF, 2);
}

/* The P_Key rule of Set and Delete (OpenSM's validate_sr). */
static bool sr_valid(struct sa_req *q, const uint8_t *w)
{
	struct sib_fab_node *rn, *sn_;
	uint8_t rp, sp;
	bool full;

	if (!sa_port_by_lid(q->sn, q->req_lid, &rn, &rp))
		return false;
	if (!(q->sa.comp_mask & SR_BIT_PKEY))
		return true;
	if (!sa_has_pkey(rn, rp, sr_pkey(w), &full))
		return false;
	if (!(q->sa.comp_mask & SR_BIT_GID))
		return true;
	return sa_port_by_guid(q->sn, sa_be_get(w + 16, 8), &sn_, &sp) &&
	       sa_has_pkey(sn_, sp, sr_pkey(w), &full);
}

static struct sa_svc *by_rid(struct sa_db *db, const uint8_t *w, struct sa_svc ***link)
{
	struct sa_svc **l;

	for (l = &db->svc; *l; l = &(*l)->next)
		if (!memcmp((*l)->rec, w, SR_RID_LEN)) {
			if (link)
				*link = l;
			return *l;
		}
	return NULL;
}

/* The answer's one record: rec with ServiceKey 0. */
static void answer_one(struct sa_req *q, const uint8_t *rec)
{
	memcpy(q->out + MAD_SA_HDR_SIZE, rec, SR_SIZE);
	memset(q->out + MAD_SA_HDR_SIZE + SR_KEY_OFF, 0, 16);
	q->count = 1;
}

static uint16_t sr_set(struct sa_req *q, struct sa_db *db, uint8_t *w)
{
	struct sa_svc *s;

	if ((q->sa.comp_mask & (SR_BIT_ID | SR_BIT_GID)) != (SR_BIT_ID | SR_BIT_GID) ||
	    !sr_valid(q, w))
		return MAD_SA_STATUS_REQ_INVALID;
	if (!(q->sa.comp_mask & SR_BIT_LEASE))
		memset(w + SR_LEASE_OFF, 0xFF, 4);
	s = by_rid(db, w, NULL);
	if (!s) {
		unsigned int mine = 0;

		for (const struct sa_svc *o = db->svc; o; o = o->next)
			mine += o->owner_lid == q->req_lid;
		if (db->nsvc >= SA_SVC_MAX || mine >= SA_SVC_PER_PORT || !(s = calloc(1, sizeof(*s))))
			return MAD_SA_STATUS_NO_RESOURCES;
		s->owner_lid = q->req_lid;
		s->next = db->svc;
		db->svc = s;
		db->nsvc++;
	}
	memcpy(s->rec, w, SR_SIZE);
	s->armed = sa_be_get(w + SR_LEASE_OFF, 4) == SR_LEASE_INFINITE;
	s->expires = 0;
	answer_one(q, w);
	if (!(q->sa.comp_mask & SR_BIT_PKEY)) /* OpenSM's answer: the default P_Key */
		memset(q->out + MAD_SA_HDR_SIZE + SR_PKEY_OFF, 0xFF, 2);
	return MAD_STATUS_SUCCESS;
}

static uint16_t sr_delete(struct sa_req *q, struct sa_db *db, const uint8_t *w)
{
	struct sa_svc **link, *s;

	if (!sr_valid(q, w))
		return MAD_SA_STATUS_REQ_INVALID;
	if (!(s = by_rid(db, w, &link)))
		return MAD_SA_STATUS_NO_RECORDS;
	*link = s->next;
	db->nsvc--;
	answer_one(q, s->rec);
	free(s);
	return MAD_STATUS_SUCCESS;
}

static uint16_t sr_get(struct sa_req *q, struct sa_db *db, const uint8_t *w)
{
	struct sib_fab_node *rn;
	uint8_t rp;
	bool full;

	if (!sa_port_by_lid(q->sn, q->req_lid, &rn, &rp))
		return MAD_SA_STATUS_REQ_INVALID;
	for (const struct sa_svc *s = db->svc; s; s = s->next) {
		size_t at = MAD_SA_HDR_SIZE + (size_t)q->count * SR_SIZE;
		uint16_t pk = sr_pkey(s->rec);

		if (!sr_match(q->sa.comp_mask, w, s->rec) ||
		    ((pk & 0x7FFF) && !sa_has_pkey(rn, rp, pk, &full)))
			continue;
		if (at + SR_SIZE > q->cap) {
			q->overflow = true;
			break;
		}
		memcpy(q->out + at, s->rec, SR_SIZE);
		memset(q->out + at + SR_KEY_OFF, 0, 16);
		q->count++;
	}
	if (q->overflow)
		return MAD_SA_STATUS_NO_RESOURCES;
	if (q->sa.hdr.method == MAD_METHOD_GET && q->count != 1)
		return q->count ? MAD_SA_STATUS_TOO_MANY_RECORDS : MAD_SA_STATUS_NO_RECORDS;
	return MAD_STATUS_SUCCESS;
}

uint16_t sa_service(struct sa_req *q)
{
	struct sa_db *db = sa_db(q->sn);
	uint8_t w[SR_SIZE];

	q->l = &sr_layout;
	memcpy(w, q->wire + MAD_SA_HDR_SIZE, SR_SIZE);
	if (!db)
		return MAD_SA_STATUS_NO_RESOURCES;
	switch (q->sa.hdr.method) {
	case MAD_METHOD_SET: return sr_set(q, db, w);
	case MAD_METHOD_DELETE: return sr_delete(q, db, w);
	case MAD_METHOD_GET:
	case MAD_METHOD_GETTABLE: return sr_get(q, db, w);
	default: return MAD_STATUS_UNSUP_METHOD_ATTR;
	}
}

uint64_t sa_service_tick(struct sa_db *db)
{
	uint64_t next = 0;

	for (struct sa_svc **l = &db->svc, *s; (s = *l);) {
		if (!s->armed) { /* a lease set since the last tick starts now */
			s->armed = true;
			s->expires = db->now_ns + sa_be_get(s->rec + SR_LEASE_OFF, 4) * NS_PER_S;
			if (!s->expires)
				s->expires = 1;
		}
		if (s->expires && s->expires <= db->now_ns) {
			*l = s->next;
			db->nsvc--;
			db->ctr.leases_expired++;
			free(s);
			continue;
		}
		if (s->expires && (!next || s->expires < next))
			next = s->expires;
		l = &s->next;
	}
	return next;
}

void sa_service_free(struct sa_db *db)
{
	while (db->svc) {
		struct sa_svc *s = db->svc;

		db->svc = s->next;
		free(s);
	}
	db->nsvc = 0;
}
