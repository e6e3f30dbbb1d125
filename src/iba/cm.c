// SPDX-License-Identifier: MIT
/*
 * softib CM MADs (IBA 1.4 vol 1, 12.6): the field table of every message,
 * get/set by field, the common header, names.  Pure: no I/O, no
 * allocation; every offset is checked against the MAD size at compile time.
 */
#include <string.h>

#include "iba/cm.h"
#include "iba/fields.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

static const struct cm_field cm_fields[CM_FIELD_COUNT] = {
#define CM_X_ROW(id, at, nm, o, b, s, m) \
	[CM_##id] = { .attr = CM_ATTR_##at, .name = nm, .off = o, .bytes = b, .shift = s, .mask = m },
	CM_FIELDS(CM_X_ROW)
#undef CM_X_ROW
};

/* Every field lies inside the 232 data bytes of the MAD. */
#define CM_X_CHECK(id, attr, nm, o, b, s, m) \
	_Static_assert((o) + (b) <= CM_MAD_SIZE - CM_HDR_SIZE, #id " past the MAD");
CM_FIELDS(CM_X_CHECK)
#undef CM_X_CHECK

const struct cm_field *cm_field(enum cm_field_id id)
{
	return (unsigned)id < CM_FIELD_COUNT ? &cm_fields[id] : NULL;
}

static bool scalar(const struct cm_field *f)
{
	return f->bytes == 1 || f->bytes == 2 || f->bytes == 4 || f->bytes == 8;
}

uint64_t cm_get(const uint8_t *mad, enum cm_field_id id)
{
	const struct cm_field *f = cm_field(id);

	if (!f || !scalar(f))
		return 0;
	return iba_get(mad + CM_HDR_SIZE, f->off, f->bytes, f->shift, f->mask, 0);
}

void cm_set(uint8_t *mad, enum cm_field_id id, uint64_t v)
{
	const struct cm_field *f = cm_field(id);

	if (f && scalar(f))
		iba_put(mad + CM_HDR_SIZE, f->off, f->bytes, f->shift, f->mask, 0, v);
}

const uint8_t *cm_bytes(const uint8_t *mad, enum cm_field_id id, size_t *len)
{
	const struct cm_field *f = cm_field(id);

	if (!f || scalar(f)) {
		*len = 0;
		return NULL;
	}
	*len = f->bytes;
	return mad + CM_HDR_SIZE + f->off;
}

int cm_set_bytes(uint8_t *mad, enum cm_field_id id, const uint8_t *src, size_t len)
{
	const struct cm_field *f = cm_field(id);
	uint8_t *p;

	if (!f || scalar(f) || len > f->bytes)
		return -1;
	p = mad + CM_HDR_SIZE + f->off;
	if (len)
		memcpy(p, src, len);
	memset(p + len, 0, f->bytes - len);
	return (int)len;
}

enum cm_field_id cm_pdata_field(uint16_t attr)
{
	static const enum cm_field_id pd[CM_ATTR_COUNT] = {
		[CM_ATTR_REQ - CM_ATTR_FIRST] = CM_REQ_PRIVATE_DATA,
		[CM_ATTR_MRA - CM_ATTR_FIRST] = CM_MRA_PRIVATE_DATA,
		[CM_ATTR_REJ - CM_ATTR_FIRST] = CM_REJ_PRIVATE_DATA,
		[CM_ATTR_REP - CM_ATTR_FIRST] = CM_REP_PRIVATE_DATA,
		[CM_ATTR_RTU - CM_ATTR_FIRST] = CM_RTU_PRIVATE_DATA,
		[CM_ATTR_DREQ - CM_ATTR_FIRST] = CM_DREQ_PRIVATE_DATA,
		[CM_ATTR_DREP - CM_ATTR_FIRST] = CM_DREP_PRIVATE_DATA,
		[CM_ATTR_SIDR_REQ - CM_ATTR_FIRST] = CM_SIDR_REQ_PRIVATE_DATA,
		[CM_ATTR_SIDR_REP - CM_ATTR_FIRST] = CM_SIDR_REP_PRIVATE_DATA,
		[CM_ATTR_LAP - CM_ATTR_FIRST] = CM_FIELD_COUNT,
		[CM_ATTR_APR - CM_ATTR_FIRST] = CM_FIELD_COUNT,
	};

	if (attr < CM_ATTR_FIRST || attr > CM_ATTR_LAST)
		return CM_FIELD_COUNT;
	return pd[attr - CM_ATTR_FIRST];
}

void cm_put_hdr(uint8_t *mad, uint16_t attr, uint64_t tid)
{
	memset(mad, 0, CM_HDR_SIZE);
	mad[0] = 1;			/* BaseVersion */
	mad[1] = CM_MGMT_CLASS;
	mad[2] = CM_CLASS_VERSION;
	mad[3] = CM_METHOD_SEND;
	iba_st_be(mad + 8, 8, tid);
	iba_st_be(mad + 16, 2, attr);
}

const char *cm_attr_str(uint16_t attr)
{
	static const char *const s[CM_ATTR_COUNT] = {
		"REQ", "MRA", "REJ", "REP", "RTU", "DREQ", "DREP",
		"SIDR_REQ", "SIDR_REP", "LAP", "APR",
	};

	return attr >= CM_ATTR_FIRST && attr <= CM_ATTR_LAST ? s[attr - CM_ATTR_FIRST] : "?";
}

const char *cm_rej_reason_str(uint16_t reason)
{
	static const char *const s[] = {
		[CM_REJ_NO_QP] = "no QP available",
		[CM_REJ_NO_EEC] = "no EEC available",
		[CM_REJ_NO_RESOURCES] = "no resources available",
		[CM_REJ_TIMEOUT] = "timeout",
		[CM_REJ_UNSUPPORTED] = "unsupported request",
		[CM_REJ_INVALID_COMM_ID] = "invalid communication ID",
		[CM_REJ_INVALID_COMM_INSTANCE] = "invalid communication instance",
		[CM_REJ_INVALID_SERVICE_ID] = "invalid service ID",
		[CM_REJ_INVALID_TRANSPORT_TYPE] = "invalid transport service type",
		[CM_REJ_STALE_CONN] = "stale connection",
		[CM_REJ_RDC_NOT_EXIST] = "RDC does not exist",
		[CM_REJ_INVALID_GID] = "primary remote port GID rejected",
		[CM_REJ_INVALID_LID] = "primary remote port LID rejected",
		[CM_REJ_INVALID_SL] = "invalid primary SL",
		[CM_REJ_INVALID_TRAFFIC_CLASS] = "invalid primary traffic class",
		[CM_REJ_INVALID_HOP_LIMIT] = "invalid primary hop limit",
		[CM_REJ_INVALID_PACKET_RATE] = "invalid primary packet rate",
		[CM_REJ_INVALID_ALT_GID] = "alternate remote port GID rejected",
		[CM_REJ_INVALID_ALT_LID] = "alternate remote port LID rejected",
		[CM_REJ_INVALID_ALT_SL] = "invalid alternate SL",
		[CM_REJ_INVALID_ALT_TRAFFIC_CLASS] = "invalid alternate traffic class",
		[CM_REJ_INVALID_ALT_HOP_LIMIT] = "invalid alternate hop limit",
		[CM_REJ_INVALID_ALT_PACKET_RATE] = "invalid alternate packet rate",
		[CM_REJ_PORT_CM_REDIRECT] = "port and CM redirection",
		[CM_REJ_PORT_REDIRECT] = "port redirection",
		[CM_REJ_INVALID_MTU] = "invalid path MTU",
		[CM_REJ_INSUFFICIENT_RESP_RESOURCES] = "insufficient responder resources",
		[CM_REJ_CONSUMER_DEFINED] = "consumer reject",
		[CM_REJ_INVALID_RNR_RETRY] = "RNR retry count reject",
		[CM_REJ_DUPLICATE_LOCAL_COMM_ID] = "duplicate local comm ID",
		[CM_REJ_INVALID_CLASS_VERSION] = "unsupported class version",
		[CM_REJ_INVALID_FLOW_LABEL] = "invalid primary flow label",
		[CM_REJ_INVALID_ALT_FLOW_LABEL] = "invalid alternate flow label",
		[CM_REJ_VENDOR_OPTION_NOT_SUPPORTED] = "vendor option not supported",
	};

	return reason < N(s) && s[reason] ? s[reason] : "?";
}
