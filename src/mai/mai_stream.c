// SPDX-License-Identifier: MIT
/*
 * MAI conversions (seed 002 "endian independent data conversions"): the
 * checks on mai_mad_t and Filter_t, the message and filter byte streams
 * (mai_mmstream/rmstream, mai_mfstream/rfstream; layout in docs/mai.md) and
 * the MAD wire form (mai_towire/fromwire, IBA 13.4; layout as in
 * ../shared/research/mad-formats.md §1).
 * Everything read is hostile: bounded by the cursor, then checked before
 * the caller's structure is written.  Pure: no I/O, no locks, no allocation.
 */
#include <errno.h>
#include <stddef.h>
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
	if (m->type != MAI_TYPE_MAD && m->type != MAI_TYPE_RAW && m->type != MAI_TYPE_OOB &&
	    m->type != MAI_TYPE_TIMEOUT)
		return -EINVAL;
	if (m->qp > 1 || m->has_grh > 1 || m->remote_qpn > 0xFFFFFF)
		return -EINVAL;
	if (m->lrh.vl > 0xF || m->lrh.lver > 0xF || m->lrh.sl > 0xF || m->lrh.lnh > 3 ||
	    m->lrh.pktlen > 0x7FF)
		return -EINVAL;
	if (m->grh.ipver > 0xF || m->grh.flow_label > 0xFFFFF)
		return -EINVAL;
	if (m->type == MAI_TYPE_OOB ? m->data_len > MAI_MAD_DATA_SIZE
	    : m->type == MAI_TYPE_TIMEOUT ? m->data_len != 0
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
	if ((f->flags & MAI_F_EXCLUSIVE) && !(f->flags & MAI_F_CONSUME))
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

/*
 * The stream and wire layouts as tables: each entry is a member written
 * big-endian in its own size, a byte array copied as is, or reserved zero
 * bytes.  Writer and reader walk the same table, so they cannot disagree.
 */
enum fld_kind { K_NUM, K_BYTES, K_ZERO };

struct fld {
	uint16_t off;		/* offsetof in the structure */
	uint16_t size;		/* bytes, in the structure and in the stream */
	uint8_t kind;		/* enum fld_kind */
};

#define NUM(T, m)	{ offsetof(T, m), sizeof(((T *)0)->m), K_NUM }
#define BYTES(T, m)	{ offsetof(T, m), sizeof(((T *)0)->m), K_BYTES }
#define ZERO(n)		{ 0, n, K_ZERO }
#define NFLD(t)		(sizeof(t) / sizeof((t)[0]))

/* IBA 13.4 (mad-formats.md §1): the common MAD header, 24 bytes. */
static const struct fld hdr_fields[] = {
	NUM(mai_mad_t, base_version), NUM(mai_mad_t, mgmt_class),
	NUM(mai_mad_t, class_version), NUM(mai_mad_t, method),
	NUM(mai_mad_t, status), NUM(mai_mad_t, class_specific),
	NUM(mai_mad_t, tid), NUM(mai_mad_t, attr_id), NUM(mai_mad_t, resv),
	NUM(mai_mad_t, attr_mod),
};

/* The message stream after its 8-byte header: routing, then the MAD. */
static const struct fld route_fields[] = {
	NUM(mai_mad_t, type), NUM(mai_mad_t, port), NUM(mai_mad_t, qp),
	NUM(mai_mad_t, has_grh), NUM(mai_mad_t, remote_qpn),
	NUM(mai_mad_t, remote_qkey), NUM(mai_mad_t, pkey_index),
	NUM(mai_mad_t, data_len),
	NUM(mai_mad_t, lrh.vl), NUM(mai_mad_t, lrh.lver), NUM(mai_mad_t, lrh.sl),
	NUM(mai_mad_t, lrh.lnh), NUM(mai_mad_t, lrh.dlid), NUM(mai_mad_t, lrh.slid),
	NUM(mai_mad_t, lrh.pktlen),
	NUM(mai_mad_t, grh.ipver), NUM(mai_mad_t, grh.tclass),
	NUM(mai_mad_t, grh.flow_label), NUM(mai_mad_t, grh.paylen),
	NUM(mai_mad_t, grh.nxthdr), NUM(mai_mad_t, grh.hoplmt),
	BYTES(mai_mad_t, grh.sgid), BYTES(mai_mad_t, grh.dgid),
};

static const struct fld data_field[] = { BYTES(mai_mad_t, data) };

/* The filter stream after its 8-byte header, then MAI_FILTER_QUANT_MAX
 * quantifier slots. */
static const struct fld filter_fields[] = {
	NUM(mai_filter_t, handle), NUM(mai_filter_t, flags), NUM(mai_filter_t, match),
	NUM(mai_filter_t, port), NUM(mai_filter_t, sl), NUM(mai_filter_t, slid),
	NUM(mai_filter_t, dlid), BYTES(mai_filter_t, sgid), BYTES(mai_filter_t, dgid),
	NUM(mai_filter_t, base_version), NUM(mai_filter_t, mgmt_class),
	NUM(mai_filter_t, class_version), NUM(mai_filter_t, method),
	NUM(mai_filter_t, attr_id), NUM(mai_filter_t, nquant), ZERO(1),
};

static const struct fld quant_fields[] = {
	NUM(struct mai_quant, offset), NUM(struct mai_quant, length), ZERO(1),
	NUM(struct mai_quant, value),
};

static void put_fields(struct mai_cur *c, const void *obj, const struct fld *t, size_t n)
{
	static const uint8_t zero[8];

	for (size_t i = 0; i < n; i++) {
		const uint8_t *p = (const uint8_t *)obj + t[i].off;
		uint8_t u8;
		uint16_t u16;
		uint32_t u32;
		uint64_t u64 = 0;

		switch (t[i].kind) {
		case K_ZERO:
			mai_put_bytes(c, zero, t[i].size);
			continue;
		case K_BYTES:
			mai_put_bytes(c, p, t[i].size);
			continue;
		}
		switch (t[i].size) {
		case 1: memcpy(&u8, p, 1); u64 = u8; break;
		case 2: memcpy(&u16, p, 2); u64 = u16; break;
		case 4: memcpy(&u32, p, 4); u64 = u32; break;
		case 8: memcpy(&u64, p, 8); break;
		}
		mai_put(c, u64, t[i].size);
	}
}

/* Reads a table into obj; returns 1 if a reserved byte was not zero. */
static int get_fields(struct mai_cur *c, void *obj, const struct fld *t, size_t n)
{
	int pad = 0;

	for (size_t i = 0; i < n; i++) {
		uint8_t *p = (uint8_t *)obj + t[i].off;
		uint64_t v;
		uint8_t u8;
		uint16_t u16;
		uint32_t u32;

		if (t[i].kind == K_BYTES) {
			mai_get_bytes(c, p, t[i].size);
			continue;
		}
		v = mai_get(c, t[i].size);
		if (t[i].kind == K_ZERO) {
			pad |= v != 0;
			continue;
		}
		switch (t[i].size) {
		case 1: u8 = (uint8_t)v; memcpy(p, &u8, 1); break;
		case 2: u16 = (uint16_t)v; memcpy(p, &u16, 2); break;
		case 4: u32 = (uint32_t)v; memcpy(p, &u32, 4); break;
		case 8: memcpy(p, &v, 8); break;
		}
	}
	return pad;
}

void sib_mai_hdr_put(struct mai_cur *c, const struct mai_mad *m)
{
	put_fields(c, m, hdr_fields, NFLD(hdr_fields));
}

void sib_mai_hdr_get(struct mai_cur *c, struct mai_mad *m)
{
	get_fields(c, m, hdr_fields, NFLD(hdr_fields));
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
	mai_mad_t t;

	if (mai_mad_check(m))
		return -EINVAL;
	if (!buf || cap < MAI_MSTREAM_SIZE)
		return -ENOSPC;
	/* OOB: the unused tail goes out as zeros, never as stale memory. */
	t = *m;
	memset(t.data + t.data_len, 0, MAI_MAD_DATA_SIZE - t.data_len);
	stream_hdr_put(&c, magic_msg, MAI_MSTREAM_SIZE);
	put_fields(&c, &t, route_fields, NFLD(route_fields));
	put_fields(&c, &t, hdr_fields, NFLD(hdr_fields));
	put_fields(&c, &t, data_field, NFLD(data_field));
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
	get_fields(&c, &t, route_fields, NFLD(route_fields));
	get_fields(&c, &t, hdr_fields, NFLD(hdr_fields));
	get_fields(&c, &t, data_field, NFLD(data_field));
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
	mai_filter_t t;

	if (mai_filter_check(f))
		return -EINVAL;
	if (!buf || cap < MAI_FSTREAM_SIZE)
		return -ENOSPC;
	/* Unused quantifier slots go out as zeros. */
	t = *f;
	memset(&t.quant[t.nquant], 0, (MAI_FILTER_QUANT_MAX - t.nquant) * sizeof(t.quant[0]));
	stream_hdr_put(&c, magic_filter, MAI_FSTREAM_SIZE);
	put_fields(&c, &t, filter_fields, NFLD(filter_fields));
	for (unsigned i = 0; i < MAI_FILTER_QUANT_MAX; i++)
		put_fields(&c, &t.quant[i], quant_fields, NFLD(quant_fields));
	return c.bad || c.pos != MAI_FSTREAM_SIZE ? -ENOSPC : (int)c.pos;
}

int mai_rfstream(const uint8_t *buf, size_t len, mai_filter_t *f)
{
	struct mai_cur c = { .r = buf, .len = buf ? len : 0 };
	mai_filter_t t;
	int rc, pad;

	if (!f)
		return -EINVAL;
	rc = stream_hdr_get(&c, magic_filter, MAI_FSTREAM_SIZE);
	if (rc)
		return rc;
	memset(&t, 0, sizeof(t));
	pad = get_fields(&c, &t, filter_fields, NFLD(filter_fields));
	for (unsigned i = 0; i < MAI_FILTER_QUANT_MAX; i++) {
		const struct mai_quant *q = &t.quant[i];

		pad |= get_fields(&c, &t.quant[i], quant_fields, NFLD(quant_fields));
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

	if (mai_mad_check(m) || m->type == MAI_TYPE_OOB || m->type == MAI_TYPE_TIMEOUT)
		return -EINVAL;
	if (!wire || cap < MAI_MAD_SIZE)
		return -ENOSPC;
	sib_mai_hdr_put(&c, m);
	put_fields(&c, m, data_field, NFLD(data_field));
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
	get_fields(&c, m, data_field, NFLD(data_field));
	m->type = MAI_TYPE_MAD;
	m->data_len = MAI_MAD_DATA_SIZE;
	return (int)c.pos;
}
