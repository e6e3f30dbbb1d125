// SPDX-License-Identifier: MIT
/*
 * softib SA records (IBA 15.2.5) as field tables that embed the attribute
 * tables of mad.c, their ComponentMask bit names, and RMPP (IBA 13.6)
 * segmentation and reassembly. No I/O, no allocation, no state outside the
 * caller's arguments; hostile segments get a verdict, never an overflow.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "iba/fields.h"
#include "iba/mad_table.h"
#include "iba/sa.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define GID(T, name, m, off) FA(T, name, m, off, 1, 0, 0xFF, 16, 1)
#define EMB(T, layout, off, m) { layout, off, offsetof(T, m) }

/* ---- record tables --------------------------------------------------------- */

#define T struct sa_node_record
static const struct mad_field node_record_fields[] = {
	F(T, "LID", lid, 0, 2, 0, 0xFFFF),
};
static const struct sa_embed node_record_embeds[] = {
	EMB(T, "NodeInfo", 4, node_info),
	EMB(T, "NodeDescription", 44, node_desc),
};
static const char *const node_record_comp[] = {
	"LID", "reserved", "BaseVersion", "ClassVersion", "NodeType",
	"NumPorts", "SystemImageGUID", "NodeGUID", "PortGUID", "PartitionCap",
	"DeviceID", "Revision", "LocalPortNum", "VendorID", "NodeDescription",
};
#undef T

#define T struct sa_port_info_record
static const struct mad_field port_info_record_fields[] = {
	F(T, "EndportLID", endport_lid, 0, 2, 0, 0xFFFF),
	F(T, "PortNum", port_num, 2, 1, 0, 0xFF),
	F(T, "Options", options, 3, 1, 0, 0xFF),
};
static const struct sa_embed port_info_record_embeds[] = {
	EMB(T, "PortInfo", 4, port_info),
};
static const char *const port_info_record_comp[] = {	/* then PortInfo's */
	"EndportLID", "PortNum", "Options", "M_Key", "GidPrefix", "LID",
	"MasterSMLID", "CapabilityMask",
};
#undef T

#define T struct sa_switch_info_record
static const struct mad_field switch_info_record_fields[] = {
	F(T, "LID", lid, 0, 2, 0, 0xFFFF),
};
static const struct sa_embed switch_info_record_embeds[] = {
	EMB(T, "SwitchInfo", 4, switch_info),
};
static const char *const switch_info_record_comp[] = { "LID" };
#undef T

#define T struct sa_link_record
static const struct mad_field link_record_fields[] = {
	F(T, "FromLID", from_lid, 0, 2, 0, 0xFFFF),
	F(T, "FromPort", from_port, 2, 1, 0, 0xFF),
	F(T, "ToPort", to_port, 3, 1, 0, 0xFF),
	F(T, "ToLID", to_lid, 4, 2, 0, 0xFFFF),
};
static const char *const link_record_comp[] = {
	"FromLID", "FromPort", "ToPort", "ToLID",
};
#undef T

#define T struct sa_guid_info_record
static const struct mad_field guid_info_record_fields[] = {
	F(T, "LID", lid, 0, 2, 0, 0xFFFF),
	F(T, "BlockNum", block_num, 2, 1, 0, 0xFF),
};
static const struct sa_embed guid_info_record_embeds[] = {
	EMB(T, "GUIDInfo", 8, guid_info),
};
static const char *const guid_info_record_comp[] = {
	"LID", "BlockNum", "reserved", "reserved",
	"GUID0", "GUID1", "GUID2", "GUID3", "GUID4", "GUID5", "GUID6", "GUID7",
};
#undef T

#define T struct sa_path_record
static const struct mad_field path_record_fields[] = {	/* IBA 15.2.5.16 */
	F(T, "ServiceID", service_id, 0, 8, 0, UINT64_MAX),
	GID(T, "DGID", dgid, 8),
	GID(T, "SGID", sgid, 24),
	F(T, "DLID", dlid, 40, 2, 0, 0xFFFF),
	F(T, "SLID", slid, 42, 2, 0, 0xFFFF),
	F(T, "RawTraffic", raw_traffic, 44, 4, 31, 0x1),
	F(T, "FlowLabel", flow_label, 44, 4, 8, 0xFFFFF),
	F(T, "HopLimit", hop_limit, 44, 4, 0, 0xFF),
	F(T, "TClass", tclass, 48, 1, 0, 0xFF),
	F(T, "Reversible", reversible, 49, 1, 7, 0x1),
	F(T, "NumbPath", numb_path, 49, 1, 0, 0x7F),
	F(T, "P_Key", pkey, 50, 2, 0, 0xFFFF),
	F(T, "QoSClass", qos_class, 52, 2, 4, 0xFFF),
	F(T, "SL", sl, 52, 2, 0, 0xF),
	F(T, "MTUSelector", mtu_selector, 54, 1, 6, 0x3),
	F(T, "MTU", mtu, 54, 1, 0, 0x3F),
	F(T, "RateSelector", rate_selector, 55, 1, 6, 0x3),
	F(T, "Rate", rate, 55, 1, 0, 0x3F),
	F(T, "PacketLifeTimeSelector", packet_life_time_selector, 56, 1, 6, 0x3),
	F(T, "PacketLifeTime", packet_life_time, 56, 1, 0, 0x3F),
	F(T, "Preference", preference, 57, 1, 0, 0xFF),
};
static const char *const path_record_comp[] = {
	"ServiceID", "ServiceID", "DGID", "SGID", "DLID", "SLID",
	"RawTraffic", "reserved", "FlowLabel", "HopLimit", "TClass",
	"Reversible", "NumbPath", "P_Key", "QoSClass", "SL", "MTUSelector",
	"MTU", "RateSelector", "Rate", "PacketLifeTimeSelector",
	"PacketLifeTime", "Preference",
};
#undef T

#define T struct sa_mcmember_record
static const struct mad_field mcmember_record_fields[] = {	/* 15.2.5.17 */
	GID(T, "MGID", mgid, 0),
	GID(T, "PortGID", port_gid, 16),
	F(T, "Q_Key", qkey, 32, 4, 0, 0xFFFFFFFF),
	F(T, "MLID", mlid, 36, 2, 0, 0xFFFF),
	F(T, "MTUSelector", mtu_selector, 38, 1, 6, 0x3),
	F(T, "MTU", mtu, 38, 1, 0, 0x3F),
	F(T, "TClass", tclass, 39, 1, 0, 0xFF),
	F(T, "P_Key", pkey, 40, 2, 0, 0xFFFF),
	F(T, "RateSelector", rate_selector, 42, 1, 6, 0x3),
	F(T, "Rate", rate, 42, 1, 0, 0x3F),
	F(T, "PacketLifeTimeSelector", packet_life_time_selector, 43, 1, 6, 0x3),
	F(T, "PacketLifeTime", packet_life_time, 43, 1, 0, 0x3F),
	F(T, "SL", sl, 44, 4, 28, 0xF),
	F(T, "FlowLabel", flow_label, 44, 4, 8, 0xFFFFF),
	F(T, "HopLimit", hop_limit, 44, 4, 0, 0xFF),
	F(T, "Scope", scope, 48, 1, 4, 0xF),
	F(T, "JoinState", join_state, 48, 1, 0, 0xF),
	F(T, "ProxyJoin", proxy_join, 49, 1, 7, 0x1),
};
static const char *const mcmember_record_comp[] = {
	"MGID", "PortGID", "Q_Key", "MLID", "MTUSelector", "MTU", "TClass",
	"P_Key", "RateSelector", "Rate", "PacketLifeTimeSelector",
	"PacketLifeTime", "SL", "FlowLabel", "HopLimit", "Scope", "JoinState",
	"ProxyJoin",
};
#undef T

#define REC_E(n, name, id, size) \
	{ name, id, size, n##_fields, N(n##_fields), n##_embeds, N(n##_embeds), \
	  n##_comp, N(n##_comp) }
#define REC_0(n, name, id, size) \
	{ name, id, size, n##_fields, N(n##_fields), NULL, 0, \
	  n##_comp, N(n##_comp) }
static const struct sa_layout layouts[] = {
	REC_E(node_record, "NodeRecord", SA_ATTR_NODE_RECORD, 112),
	REC_E(port_info_record, "PortInfoRecord", SA_ATTR_PORT_INFO_RECORD, 72),
	REC_0(path_record, "PathRecord", SA_ATTR_PATH_RECORD, 64),
	REC_0(mcmember_record, "MCMemberRecord", SA_ATTR_MCMEMBER_RECORD, 56),
	REC_0(link_record, "LinkRecord", SA_ATTR_LINK_RECORD, 8),
	REC_E(switch_info_record, "SwitchInfoRecord", SA_ATTR_SWITCH_INFO_RECORD, 24),
	REC_E(guid_info_record, "GUIDInfoRecord", SA_ATTR_GUID_INFO_RECORD, 72),
};

const struct sa_layout *sa_layouts(size_t *n)
{
	*n = N(layouts);
	return layouts;
}

const struct sa_layout *sa_layout_find(uint16_t attr_id)
{
	for (size_t i = 0; i < N(layouts); i++)
		if (layouts[i].attr_id == attr_id)
			return &layouts[i];
	return NULL;
}

/* The attribute layout an embed names (mad.c's tables; by name, as attribute
 * IDs repeat across classes). NULL only for a table error here. */
static const struct mad_layout *embed_layout(const struct sa_embed *e)
{
	size_t n;
	const struct mad_layout *l = mad_layouts(&n);

	for (size_t i = 0; i < n; i++)
		if (strcmp(l[i].name, e->layout) == 0)
			return &l[i];
	return NULL;
}

size_t sa_layout_flatten(const struct sa_layout *l, struct mad_field *out,
			 size_t max)
{
	size_t k = 0;

	for (size_t i = 0; i < l->nfields; i++, k++)
		if (k < max)
			out[k] = l->fields[i];
	for (size_t e = 0; e < l->nembeds; e++) {
		const struct mad_layout *m = embed_layout(&l->embeds[e]);

		for (size_t i = 0; m && i < m->nfields; i++, k++) {
			if (k >= max)
				continue;
			out[k] = m->fields[i];
			out[k].off = (uint16_t)(out[k].off + l->embeds[e].off);
			out[k].member = (uint16_t)(out[k].member + l->embeds[e].member);
		}
	}
	return k;
}

/* A record's own fields as a struct mad_layout, to run mad.c's engine. */
static struct mad_layout own_layout(const struct sa_layout *l)
{
	return (struct mad_layout){ l->name, l->attr_id, l->size, l->fields,
				    l->nfields };
}

void sa_record_decode(const struct sa_layout *l, const uint8_t *p, void *rec)
{
	struct mad_layout own = own_layout(l);

	mad_layout_decode(&own, p, rec);
	for (size_t e = 0; e < l->nembeds; e++) {
		const struct mad_layout *m = embed_layout(&l->embeds[e]);

		if (m)
			mad_layout_decode(m, p + l->embeds[e].off,
					  (uint8_t *)rec + l->embeds[e].member);
	}
}

void sa_record_encode(const struct sa_layout *l, const void *rec, uint8_t *p)
{
	struct mad_layout own = own_layout(l);

	memset(p, 0, l->size);
	mad_layout_encode(&own, rec, p);
	for (size_t e = 0; e < l->nembeds; e++) {
		const struct mad_layout *m = embed_layout(&l->embeds[e]);

		if (m)
			mad_layout_encode(m, (const uint8_t *)rec + l->embeds[e].member,
					  p + l->embeds[e].off);
	}
}

uint64_t sa_comp_mask(const struct sa_layout *l, const char *field)
{
	uint64_t m = 0;

	for (size_t i = 0; i < l->ncomp && i < 64; i++)
		if (strcmp(l->comp[i], field) == 0)
			m |= 1ull << i;
	return m;
}

#define X_CODEC(n, id) \
	void sa_##n##_decode(struct sa_##n *r, const uint8_t *p) \
	{ \
		memset(r, 0, sizeof(*r)); \
		sa_record_decode(sa_layout_find(id), p, r); \
	} \
	void sa_##n##_encode(const struct sa_##n *r, uint8_t *p) \
	{ \
		sa_record_encode(sa_layout_find(id), r, p); \
	}
X_CODEC(node_record, SA_ATTR_NODE_RECORD)
X_CODEC(port_info_record, SA_ATTR_PORT_INFO_RECORD)
X_CODEC(switch_info_record, SA_ATTR_SWITCH_INFO_RECORD)
X_CODEC(link_record, SA_ATTR_LINK_RECORD)
X_CODEC(guid_info_record, SA_ATTR_GUID_INFO_RECORD)
X_CODEC(path_record, SA_ATTR_PATH_RECORD)
X_CODEC(mcmember_record, SA_ATTR_MCMEMBER_RECORD)
#undef X_CODEC

/* ---- RMPP (IBA 13.6) ------------------------------------------------------- */

/* RMPP header bytes (IBA 13.6.2.1): 24 version, 25 type, 26 RRespTime|flags,
 * 27 status, 28-31 Data1, 32-35 Data2. */
static void rmpp_set(uint8_t *mad, uint8_t type, uint8_t flags, uint8_t status,
		     uint32_t d1, uint32_t d2)
{
	mad[24] = SA_RMPP_VERSION;
	mad[25] = type;
	iba_put(mad, 26, 1, 0, 0x7, 0, flags);
	mad[27] = status;
	iba_put(mad, 28, 4, 0, 0xFFFFFFFF, 0, d1);
	iba_put(mad, 32, 4, 0, 0xFFFFFFFF, 0, d2);
}

uint32_t sa_rmpp_nsegs(size_t data_len)
{
	if (data_len == 0)
		return 1;
	if (data_len > SA_RMPP_MAX_DATA)
		return SA_RMPP_MAX_SEGS + 1;
	return (uint32_t)((data_len + MAD_SA_DATA_SIZE - 1) / MAD_SA_DATA_SIZE);
}

int sa_rmpp_build_seg(const uint8_t *msg, size_t msg_len, uint32_t seg,
		      uint8_t *out)
{
	size_t data_len, off, n;
	uint32_t nsegs, pad, flags = MAD_RMPP_FLAG_ACTIVE, len = 0;

	if (!msg || !out || msg_len < MAD_SA_HDR_SIZE)
		return -EINVAL;
	data_len = msg_len - MAD_SA_HDR_SIZE;
	if (data_len > SA_RMPP_MAX_DATA)
		return -EMSGSIZE;
	nsegs = sa_rmpp_nsegs(data_len);
	if (seg == 0 || seg > nsegs)
		return -EINVAL;
	/* Linux get_pad_size: a whole segment of pad for an empty message */
	pad = data_len ? (uint32_t)((MAD_SA_DATA_SIZE - data_len % MAD_SA_DATA_SIZE)
				    % MAD_SA_DATA_SIZE) : MAD_SA_DATA_SIZE;
	if (seg == 1) {
		flags |= MAD_RMPP_FLAG_FIRST;
		len = nsegs * SA_RMPP_SEG_PAYLOAD - pad;
	}
	if (seg == nsegs) {
		flags |= MAD_RMPP_FLAG_LAST;
		len = SA_RMPP_SEG_PAYLOAD - pad;
	}
	memset(out, 0, MAD_SIZE);
	memcpy(out, msg, MAD_SA_HDR_SIZE);
	rmpp_set(out, MAD_RMPP_TYPE_DATA, (uint8_t)flags, 0, seg, len);
	off = (size_t)(seg - 1) * MAD_SA_DATA_SIZE;
	n = data_len - off < MAD_SA_DATA_SIZE ? data_len - off : MAD_SA_DATA_SIZE;
	memcpy(out + MAD_SA_HDR_SIZE, msg + MAD_SA_HDR_SIZE + off, n);
	return 0;
}

static const char *const verdict_names[] = {
	[SA_RMPP_ACCEPTED] = "accepted",
	[SA_RMPP_COMPLETE] = "complete",
	[SA_RMPP_DUPLICATE] = "duplicate",
	[SA_RMPP_OUT_OF_ORDER] = "out_of_order",
	[SA_RMPP_OUT_OF_WINDOW] = "out_of_window",
	[SA_RMPP_TOO_BIG] = "too_big",
	[SA_RMPP_BAD] = "bad",
	[SA_RMPP_PEER_ABORT] = "peer_abort",
	[SA_RMPP_NOT_RMPP] = "not_rmpp",
	[SA_RMPP_FINISHED] = "finished",
};

const char *sa_rmpp_verdict_str(enum sa_rmpp_verdict v)
{
	if ((unsigned)v >= N(verdict_names) || !verdict_names[v])
		return "unknown";
	return verdict_names[v];
}

void sa_rmpp_recv_init(struct sa_rmpp_recv *r, uint8_t *buf, size_t cap,
		       uint32_t window)
{
	memset(r, 0, sizeof(*r));
	r->buf = buf;
	r->cap = cap;
	/* clamped so newwin (<= 2 x SA_RMPP_MAX_SEGS + 1) never wraps */
	r->window = window == 0 ? 1 : window > SA_RMPP_MAX_SEGS ? SA_RMPP_MAX_SEGS : window;
	r->newwin = 1 + r->window;	/* Linux start_rmpp: 1 + window_size */
}

/* The reply to seg: its 56-byte header, R flipped, then the RMPP fields. */
static void reply(const uint8_t *seg, uint8_t *out, uint8_t type,
		  uint8_t status, uint32_t d1, uint32_t d2)
{
	memset(out, 0, MAD_SIZE);
	memcpy(out, seg, MAD_SA_HDR_SIZE);
	out[3] ^= MAD_METHOD_RESP_MASK;
	rmpp_set(out, type, MAD_RMPP_FLAG_ACTIVE, status, d1, d2);
}

static enum sa_rmpp_verdict rmpp_abort(struct sa_rmpp_recv *r, const uint8_t *mad,
				       uint8_t *out, bool *rep, uint8_t status)
{
	r->aborted = true;
	if (status == SA_RMPP_STATUS_RESX) {
		reply(mad, out, MAD_RMPP_TYPE_STOP, status, 0, 0);
		*rep = true;
		return SA_RMPP_TOO_BIG;
	}
	reply(mad, out, MAD_RMPP_TYPE_ABORT, status, 0, 0);
	*rep = true;
	return SA_RMPP_BAD;
}

static enum sa_rmpp_verdict ack(struct sa_rmpp_recv *r, const uint8_t *mad,
				uint8_t *out, bool *rep, enum sa_rmpp_verdict v)
{
	reply(mad, out, MAD_RMPP_TYPE_ACK, 0, r->last, r->newwin);
	*rep = true;
	return v;
}

enum sa_rmpp_verdict sa_rmpp_recv_seg(struct sa_rmpp_recv *r,
				      const uint8_t *mad, uint8_t *out,
				      bool *rep)
{
	struct mad_sa s;
	uint32_t seg, plen, flags;
	uint64_t off, n;

	*rep = false;
	if (mad_sa_decode(&s, mad) < 0 || !(s.rmpp.rmpp_flags & MAD_RMPP_FLAG_ACTIVE))
		return SA_RMPP_NOT_RMPP;
	seg = s.rmpp.seg_num;
	plen = s.rmpp.payload_len;
	flags = s.rmpp.rmpp_flags;
	if (r->aborted)
		return SA_RMPP_FINISHED;
	if (s.rmpp.rmpp_type == MAD_RMPP_TYPE_STOP ||
	    s.rmpp.rmpp_type == MAD_RMPP_TYPE_ABORT) {
		r->aborted = true;
		return SA_RMPP_PEER_ABORT;
	}
	if (r->done) {
		if (s.rmpp.rmpp_type == MAD_RMPP_TYPE_DATA && seg >= 1 && seg <= r->last)
			return ack(r, mad, out, rep, SA_RMPP_DUPLICATE);
		return SA_RMPP_FINISHED;
	}
	if (s.rmpp.rmpp_version != SA_RMPP_VERSION)
		return rmpp_abort(r, mad, out, rep, SA_RMPP_STATUS_UNV);
	if (s.rmpp.rmpp_type != MAD_RMPP_TYPE_DATA)
		return rmpp_abort(r, mad, out, rep, SA_RMPP_STATUS_BADT);
	if (s.rmpp.rmpp_status != 0)
		return rmpp_abort(r, mad, out, rep, SA_RMPP_STATUS_BAD_STATUS);
	if (seg == 0 || (seg == 1) != !!(flags & MAD_RMPP_FLAG_FIRST))
		return rmpp_abort(r, mad, out, rep, SA_RMPP_STATUS_BAD_SEG);
	if (seg <= r->last)
		return ack(r, mad, out, rep, SA_RMPP_DUPLICATE);
	if (seg > r->newwin)
		return SA_RMPP_OUT_OF_WINDOW;
	if (seg != r->last + 1)
		return SA_RMPP_OUT_OF_ORDER;
	if (seg > SA_RMPP_MAX_SEGS)
		return rmpp_abort(r, mad, out, rep, SA_RMPP_STATUS_S2B);

	off = (uint64_t)(seg - 1) * MAD_SA_DATA_SIZE;
	n = MAD_SA_DATA_SIZE;
	if (seg == 1) {
		/* PayloadLength 0 = unknown; else at least its class headers */
		if (((uint64_t)plen + SA_RMPP_SEG_PAYLOAD - 1) / SA_RMPP_SEG_PAYLOAD >
		    SA_RMPP_MAX_SEGS)
			return rmpp_abort(r, mad, out, rep, SA_RMPP_STATUS_RESX);
		r->first_len = plen;
	}
	if (flags & MAD_RMPP_FLAG_LAST) {
		uint32_t nsegs = r->first_len ?
			(r->first_len + SA_RMPP_SEG_PAYLOAD - 1) / SA_RMPP_SEG_PAYLOAD : seg;
		uint32_t pad = SA_RMPP_SEG_PAYLOAD - plen;

		/* 220 - pad, with pad < 200 (200 only for an empty message) */
		if (plen > SA_RMPP_SEG_PAYLOAD || plen < SA_RMPP_SEG_PAYLOAD - MAD_SA_DATA_SIZE ||
		    (pad == MAD_SA_DATA_SIZE && seg != 1) || nsegs != seg ||
		    (r->first_len &&
		     r->first_len != nsegs * SA_RMPP_SEG_PAYLOAD - pad))
			return rmpp_abort(r, mad, out, rep, SA_RMPP_STATUS_BAD_LEN);
		n = plen - (SA_RMPP_SEG_PAYLOAD - MAD_SA_DATA_SIZE);
	}
	if (MAD_SA_HDR_SIZE + off + n > r->cap)
		return rmpp_abort(r, mad, out, rep, SA_RMPP_STATUS_RESX);
	if (seg == 1)
		memcpy(r->buf, mad, MAD_SA_HDR_SIZE);
	memcpy(r->buf + MAD_SA_HDR_SIZE + off, mad + MAD_SA_HDR_SIZE, n);
	r->len = MAD_SA_HDR_SIZE + off + n;
	r->last = seg;
	if (flags & MAD_RMPP_FLAG_LAST) {
		r->done = true;
		return ack(r, mad, out, rep, SA_RMPP_COMPLETE);
	}
	if (seg == r->newwin) {
		r->newwin += r->window;
		return ack(r, mad, out, rep, SA_RMPP_ACCEPTED);
	}
	if (seg == 1)
		return ack(r, mad, out, rep, SA_RMPP_ACCEPTED);
	return SA_RMPP_ACCEPTED;
}
