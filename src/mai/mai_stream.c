// SPDX-License-Identifier: MIT
/*
 * MAI conversions (seed 002 "endian independent data conversions"): the
 * checks on mai_mad_t and Filter_t, the message and filter byte streams
 * (mai_mmstream/rmstream, mai_mfstream/rfstream; layout in docs/mai.md) and
 * the MAD wire form (mai_towire/fromwire, IBA 13.4.2-13.4.3).
 * Everything read is hostile: bounded by the cursor, then checked before
 * the caller's structure is written.  Pure: no I/O, no locks, no allocation.
 */
#include <errno.h>
#include <string.h>

#include "softib/mai.h"
#include "mai/mai_be.h"

#define MAI_STREAM_VERSION	1
#define MAI_STREAM_HDR		8	/* magic[4], version, reserved, length be16 */

static const uint8_t magic_msg[4] = { 'M', 'A', 'I', 'M' };
static const uint8_t magic_filter[4] = { 'M', 'A', 'I', 'F' };

int mai_mad_check(const mai_mad_t *m)
{
	if (!m)
		return -EINVAL;
	if (m->type != MAI_TYPE_MAD && m->type != MAI_TYPE_RAW && m->type != MAI_TYPE_OOB)
		return -EINVAL;
	if (m->qp > 1 || m->has_grh > 1 || m->remote_qpn > 0xFFFFFF)
		return -EINVAL;
	if (m->lrh.vl > 0xF || m->lrh.lver > 0xF || m->lrh.sl > 0xF || m->lrh.lnh > 3 ||
	    m->lrh.pktlen > 0x7FF)
		return -EINVAL;
	if (m->grh.ipver > 0xF || m->grh.flow_label > 0xFFFFF)
		return -EINVAL;
	if (m->type == MAI_TYPE_OOB ? m->data_len > MAI_MAD_DATA_SIZE
				    : m->data_len != MAI_MAD_DATA_SIZE)
		return -EINVAL;
	return 0;
}

int mai_filter_check(const mai_filter_t *f)
{
	if (!f)
		return -EINVAL;
	if ((f->flags & ~(uint32_t)MAI_F_ALL) || (f->match & ~(uint32_t)MAI_M_ALL))
		return -EINVAL;
	if (f->sl > 0xF || f->nquant > MAI_FILTER_QUANT_MAX)
		return -EINVAL;
	for (unsigned i = 0; i < f->nquant; i++) {
		const struct mai_quant *q = &f->quant[i];

		if (q->length < 1 || q->length > MAI_QUANT_LEN_MAX ||
		    q->offset > MAI_MAD_SIZE - q->length)
			return -EINVAL;
		if (q->length < 8 && (q->value >> (8 * q->length)))
			return -EINVAL;
	}
	return 0;
}

void sib_mai_hdr_put(struct mai_cur *c, const struct mai_mad *m)
{
	mai_put(c, m->base_version, 1);
	mai_put(c, m->mgmt_class, 1);
	mai_put(c, m->class_version, 1);
	mai_put(c, m->method, 1);
	mai_put(c, m->status, 2);
	mai_put(c, m->class_specific, 2);
	mai_put(c, m->tid, 8);
	mai_put(c, m->attr_id, 2);
	mai_put(c, m->resv, 2);
	mai_put(c, m->attr_mod, 4);
}

void sib_mai_hdr_get(struct mai_cur *c, struct mai_mad *m)
{
	m->base_version = (uint8_t)mai_get(c, 1);
	m->mgmt_class = (uint8_t)mai_get(c, 1);
	m->class_version = (uint8_t)mai_get(c, 1);
	m->method = (uint8_t)mai_get(c, 1);
	m->status = (uint16_t)mai_get(c, 2);
	m->class_specific = (uint16_t)mai_get(c, 2);
	m->tid = mai_get(c, 8);
	m->attr_id = (uint16_t)mai_get(c, 2);
	m->resv = (uint16_t)mai_get(c, 2);
	m->attr_mod = (uint32_t)mai_get(c, 4);
}

static void stream_hdr_put(struct mai_cur *c, const uint8_t magic[4], size_t size)
{
	mai_put_bytes(c, magic, 4);
	mai_put(c, MAI_STREAM_VERSION, 1);
	mai_put(c, 0, 1);
	mai_put(c, size, 2);
}

/* 0 when buf[0..len) starts with a whole stream of this kind and size. */
static int stream_hdr_get(struct mai_cur *c, const uint8_t magic[4], size_t size)
{
	uint8_t got[4] = { 0 };

	if (c->len < MAI_STREAM_HDR)
		return -EMSGSIZE;
	mai_get_bytes(c, got, 4);
	if (memcmp(got, magic, 4) || mai_get(c, 1) != MAI_STREAM_VERSION || mai_get(c, 1) != 0)
		return -EBADMSG;
	if (mai_get(c, 2) != size)
		return -EBADMSG;
	if (c->len < size)
		return -EMSGSIZE;
	return 0;
}

static int all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return 0;
	return 1;
}

int mai_mmstream(const mai_mad_t *m, uint8_t *buf, size_t cap)
{
	struct mai_cur c = { .w = buf, .len = cap };
	static const uint8_t zero[MAI_MAD_DATA_SIZE];

	if (mai_mad_check(m))
		return -EINVAL;
	if (!buf || cap < MAI_MSTREAM_SIZE)
		return -ENOSPC;
	stream_hdr_put(&c, magic_msg, MAI_MSTREAM_SIZE);
	mai_put(&c, m->type, 1);
	mai_put(&c, m->port, 1);
	mai_put(&c, m->qp, 1);
	mai_put(&c, m->has_grh, 1);
	mai_put(&c, m->remote_qpn, 4);
	mai_put(&c, m->remote_qkey, 4);
	mai_put(&c, m->pkey_index, 2);
	mai_put(&c, m->data_len, 2);
	mai_put(&c, m->lrh.vl, 1);
	mai_put(&c, m->lrh.lver, 1);
	mai_put(&c, m->lrh.sl, 1);
	mai_put(&c, m->lrh.lnh, 1);
	mai_put(&c, m->lrh.dlid, 2);
	mai_put(&c, m->lrh.slid, 2);
	mai_put(&c, m->lrh.pktlen, 2);
	mai_put(&c, m->grh.ipver, 1);
	mai_put(&c, m->grh.tclass, 1);
	mai_put(&c, m->grh.flow_label, 4);
	mai_put(&c, m->grh.paylen, 2);
	mai_put(&c, m->grh.nxthdr, 1);
	mai_put(&c, m->grh.hoplmt, 1);
	mai_put_bytes(&c, m->grh.sgid, 16);
	mai_put_bytes(&c, m->grh.dgid, 16);
	sib_mai_hdr_put(&c, m);
	/* OOB: the unused tail goes out as zeros, never as stale memory. */
	mai_put_bytes(&c, m->data, m->data_len);
	mai_put_bytes(&c, zero, MAI_MAD_DATA_SIZE - m->data_len);
	return c.bad || c.pos != MAI_MSTREAM_SIZE ? -ENOSPC : (int)c.pos;
}

int mai_rmstream(const uint8_t *buf, size_t len, mai_mad_t *m)
{
	struct mai_cur c = { .r = buf, .len = buf ? len : 0 };
	mai_mad_t t;
	int rc;

	if (!m)
		return -EINVAL;
	rc = stream_hdr_get(&c, magic_msg, MAI_MSTREAM_SIZE);
	if (rc)
		return rc;
	memset(&t, 0, sizeof(t));
	t.type = (uint8_t)mai_get(&c, 1);
	t.port = (uint8_t)mai_get(&c, 1);
	t.qp = (uint8_t)mai_get(&c, 1);
	t.has_grh = (uint8_t)mai_get(&c, 1);
	t.remote_qpn = (uint32_t)mai_get(&c, 4);
	t.remote_qkey = (uint32_t)mai_get(&c, 4);
	t.pkey_index = (uint16_t)mai_get(&c, 2);
	t.data_len = (uint16_t)mai_get(&c, 2);
	t.lrh.vl = (uint8_t)mai_get(&c, 1);
	t.lrh.lver = (uint8_t)mai_get(&c, 1);
	t.lrh.sl = (uint8_t)mai_get(&c, 1);
	t.lrh.lnh = (uint8_t)mai_get(&c, 1);
	t.lrh.dlid = (uint16_t)mai_get(&c, 2);
	t.lrh.slid = (uint16_t)mai_get(&c, 2);
	t.lrh.pktlen = (uint16_t)mai_get(&c, 2);
	t.grh.ipver = (uint8_t)mai_get(&c, 1);
	t.grh.tclass = (uint8_t)mai_get(&c, 1);
	t.grh.flow_label = (uint32_t)mai_get(&c, 4);
	t.grh.paylen = (uint16_t)mai_get(&c, 2);
	t.grh.nxthdr = (uint8_t)mai_get(&c, 1);
	t.grh.hoplmt = (uint8_t)mai_get(&c, 1);
	mai_get_bytes(&c, t.grh.sgid, 16);
	mai_get_bytes(&c, t.grh.dgid, 16);
	sib_mai_hdr_get(&c, &t);
	mai_get_bytes(&c, t.data, MAI_MAD_DATA_SIZE);
	if (c.bad || c.pos != MAI_MSTREAM_SIZE)
		return -EMSGSIZE;
	if (mai_mad_check(&t))
		return -EBADMSG;
	/* A well-formed writer sends zeros past an OOB's data_len. */
	if (!all_zero(t.data + t.data_len, MAI_MAD_DATA_SIZE - t.data_len))
		return -EBADMSG;
	*m = t;
	return (int)c.pos;
}

int mai_mfstream(const mai_filter_t *f, uint8_t *buf, size_t cap)
{
	struct mai_cur c = { .w = buf, .len = cap };

	if (mai_filter_check(f))
		return -EINVAL;
	if (!buf || cap < MAI_FSTREAM_SIZE)
		return -ENOSPC;
	stream_hdr_put(&c, magic_filter, MAI_FSTREAM_SIZE);
	mai_put(&c, f->handle, 4);
	mai_put(&c, f->flags, 4);
	mai_put(&c, f->match, 4);
	mai_put(&c, f->port, 1);
	mai_put(&c, f->sl, 1);
	mai_put(&c, f->slid, 2);
	mai_put(&c, f->dlid, 2);
	mai_put_bytes(&c, f->sgid, 16);
	mai_put_bytes(&c, f->dgid, 16);
	mai_put(&c, f->base_version, 1);
	mai_put(&c, f->mgmt_class, 1);
	mai_put(&c, f->class_version, 1);
	mai_put(&c, f->method, 1);
	mai_put(&c, f->attr_id, 2);
	mai_put(&c, f->nquant, 1);
	mai_put(&c, 0, 1);
	for (unsigned i = 0; i < MAI_FILTER_QUANT_MAX; i++) {
		/* Unused slots go out as zeros. */
		const struct mai_quant *q = &f->quant[i];
		int used = i < f->nquant;

		mai_put(&c, used ? q->offset : 0, 2);
		mai_put(&c, used ? q->length : 0, 1);
		mai_put(&c, 0, 1);
		mai_put(&c, used ? q->value : 0, 8);
	}
	return c.bad || c.pos != MAI_FSTREAM_SIZE ? -ENOSPC : (int)c.pos;
}

int mai_rfstream(const uint8_t *buf, size_t len, mai_filter_t *f)
{
	struct mai_cur c = { .r = buf, .len = buf ? len : 0 };
	mai_filter_t t;
	int rc, pad = 0;

	if (!f)
		return -EINVAL;
	rc = stream_hdr_get(&c, magic_filter, MAI_FSTREAM_SIZE);
	if (rc)
		return rc;
	memset(&t, 0, sizeof(t));
	t.handle = (uint32_t)mai_get(&c, 4);
	t.flags = (uint32_t)mai_get(&c, 4);
	t.match = (uint32_t)mai_get(&c, 4);
	t.port = (uint8_t)mai_get(&c, 1);
	t.sl = (uint8_t)mai_get(&c, 1);
	t.slid = (uint16_t)mai_get(&c, 2);
	t.dlid = (uint16_t)mai_get(&c, 2);
	mai_get_bytes(&c, t.sgid, 16);
	mai_get_bytes(&c, t.dgid, 16);
	t.base_version = (uint8_t)mai_get(&c, 1);
	t.mgmt_class = (uint8_t)mai_get(&c, 1);
	t.class_version = (uint8_t)mai_get(&c, 1);
	t.method = (uint8_t)mai_get(&c, 1);
	t.attr_id = (uint16_t)mai_get(&c, 2);
	t.nquant = (uint8_t)mai_get(&c, 1);
	pad |= mai_get(&c, 1) != 0;
	for (unsigned i = 0; i < MAI_FILTER_QUANT_MAX; i++) {
		struct mai_quant *q = &t.quant[i];

		q->offset = (uint16_t)mai_get(&c, 2);
		q->length = (uint8_t)mai_get(&c, 1);
		pad |= mai_get(&c, 1) != 0;
		q->value = mai_get(&c, 8);
		/* Slots past nquant must be zero, as mai_mfstream writes them. */
		if (i >= t.nquant && (q->offset || q->length || q->value))
			pad = 1;
	}
	if (c.bad || c.pos != MAI_FSTREAM_SIZE)
		return -EMSGSIZE;
	if (pad || mai_filter_check(&t))
		return -EBADMSG;
	*f = t;
	return (int)c.pos;
}

int mai_towire(const mai_mad_t *m, uint8_t *wire, size_t cap)
{
	struct mai_cur c = { .w = wire, .len = cap };

	if (mai_mad_check(m) || m->type == MAI_TYPE_OOB)
		return -EINVAL;
	if (!wire || cap < MAI_MAD_SIZE)
		return -ENOSPC;
	sib_mai_hdr_put(&c, m);
	mai_put_bytes(&c, m->data, MAI_MAD_DATA_SIZE);
	return c.bad ? -ENOSPC : (int)c.pos;
}

int mai_fromwire(const uint8_t *wire, size_t len, mai_mad_t *m)
{
	struct mai_cur c = { .r = wire, .len = len };

	if (!m)
		return -EINVAL;
	if (!wire || len != MAI_MAD_SIZE)
		return -EMSGSIZE;
	sib_mai_hdr_get(&c, m);
	mai_get_bytes(&c, m->data, MAI_MAD_DATA_SIZE);
	m->type = MAI_TYPE_MAD;
	m->data_len = MAI_MAD_DATA_SIZE;
	return (int)c.pos;
}
