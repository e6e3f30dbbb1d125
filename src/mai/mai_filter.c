// SPDX-License-Identifier: MIT
/*
 * The MAI filter engine (seed 002: filters by physical source, LRH/GRH,
 * base MAD fields and (offset, length, value) quantifiers; consuming or
 * non-consuming): one pure decision of who receives a message, used alike
 * for softibd's own SMA/PMA agents and outside clients.  It must not queue,
 * send or answer: the caller does that with the channel list it returns.
 * Pure: no locks (the caller holds its filter list stable), no allocation.
 */
#include <errno.h>
#include <string.h>

#include "softib/mai.h"
#include "mai/mai_be.h"

/* The quantifier's bytes read from the MAD as mai_towire lays it out:
 * header (encoded on demand) then data; past an OOB's data_len, zeros. */
static uint64_t quant_read(const mai_mad_t *m, const uint8_t hdr[MAI_MAD_HDR_SIZE],
			   const struct mai_quant *q)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < q->length; i++) {
		unsigned off = q->offset + i;
		uint8_t b;

		if (off < MAI_MAD_HDR_SIZE)
			b = hdr[off];
		else if (off - MAI_MAD_HDR_SIZE < m->data_len)
			b = m->data[off - MAI_MAD_HDR_SIZE];
		else
			b = 0;
		v = v << 8 | b;
	}
	return v;
}

int mai_filter_match(const mai_filter_t *f, const mai_mad_t *m)
{
	uint32_t w = f->match;

	if ((w & MAI_M_PORT) && m->port != f->port)
		return 0;
	if ((w & MAI_M_SLID) && m->lrh.slid != f->slid)
		return 0;
	if ((w & MAI_M_DLID) && m->lrh.dlid != f->dlid)
		return 0;
	if ((w & MAI_M_SL) && m->lrh.sl != f->sl)
		return 0;
	if ((w & (MAI_M_SGID | MAI_M_DGID)) && !m->has_grh)
		return 0;
	if ((w & MAI_M_SGID) && memcmp(m->grh.sgid, f->sgid, 16))
		return 0;
	if ((w & MAI_M_DGID) && memcmp(m->grh.dgid, f->dgid, 16))
		return 0;
	if ((w & MAI_M_BASE_VER) && m->base_version != f->base_version)
		return 0;
	if ((w & MAI_M_CLASS) && m->mgmt_class != f->mgmt_class)
		return 0;
	if ((w & MAI_M_CLASS_VER) && m->class_version != f->class_version)
		return 0;
	if ((w & MAI_M_METHOD) && m->method != f->method)
		return 0;
	if ((w & MAI_M_ATTR) && m->attr_id != f->attr_id)
		return 0;
	if (f->nquant) {
		uint8_t hdr[MAI_MAD_HDR_SIZE];
		struct mai_cur c = { .w = hdr, .len = sizeof(hdr) };
		unsigned n = f->nquant < MAI_FILTER_QUANT_MAX ? f->nquant : MAI_FILTER_QUANT_MAX;

		sib_mai_hdr_put(&c, m);
		for (unsigned i = 0; i < n; i++) {
			const struct mai_quant *q = &f->quant[i];

			/* A filter that skipped mai_filter_check never matches. */
			if (q->length < 1 || q->length > MAI_QUANT_LEN_MAX ||
			    q->offset > MAI_MAD_SIZE - q->length)
				return 0;
			if (quant_read(m, hdr, q) != q->value)
				return 0;
		}
	}
	return 1;
}

/* Adds chan to out[] unless already there; returns the new count.  The
 * count keeps going past max so the caller learns how many receive. */
static size_t add_chan(uint32_t *out, size_t max, size_t cnt, uint32_t chan,
		       const struct mai_filter_ent *ents, size_t upto, const mai_mad_t *m,
		       int consuming_too)
{
	/* Seen before: an earlier entry of the same channel that also counted. */
	for (size_t j = 0; j < upto; j++)
		if (ents[j].chan == chan && ents[j].f &&
		    (consuming_too || !(ents[j].f->flags & MAI_F_CONSUME)) &&
		    mai_filter_match(ents[j].f, m))
			return cnt;
	if (cnt < max)
		out[cnt] = chan;
	return cnt + 1;
}

int mai_filter_specificity(const mai_filter_t *f)
{
	int n = f->nquant < MAI_FILTER_QUANT_MAX ? f->nquant : MAI_FILTER_QUANT_MAX;

	for (uint32_t w = f->match & MAI_M_ALL; w; w &= w - 1)
		n++; /* one per field compared */
	return n;
}

int mai_filter_same(const mai_filter_t *a, const mai_filter_t *b)
{
	uint32_t w = a->match;

	if (w != b->match || a->nquant != b->nquant ||
	    (a->flags & MAI_F_CONSUME) != (b->flags & MAI_F_CONSUME))
		return 0;
	if (((w & MAI_M_PORT) && a->port != b->port) || ((w & MAI_M_SL) && a->sl != b->sl) ||
	    ((w & MAI_M_SLID) && a->slid != b->slid) || ((w & MAI_M_DLID) && a->dlid != b->dlid) ||
	    ((w & MAI_M_SGID) && memcmp(a->sgid, b->sgid, 16)) ||
	    ((w & MAI_M_DGID) && memcmp(a->dgid, b->dgid, 16)) ||
	    ((w & MAI_M_BASE_VER) && a->base_version != b->base_version) ||
	    ((w & MAI_M_CLASS) && a->mgmt_class != b->mgmt_class) ||
	    ((w & MAI_M_CLASS_VER) && a->class_version != b->class_version) ||
	    ((w & MAI_M_METHOD) && a->method != b->method) ||
	    ((w & MAI_M_ATTR) && a->attr_id != b->attr_id))
		return 0;
	for (unsigned i = 0; i < a->nquant && i < MAI_FILTER_QUANT_MAX; i++)
		if (a->quant[i].offset != b->quant[i].offset ||
		    a->quant[i].length != b->quant[i].length || a->quant[i].value != b->quant[i].value)
			return 0;
	return 1;
}

/* Does consuming filter a take precedence over b: an internal agent's
 * first, then more specific, then newer. */
static int beats(const struct mai_filter_ent *a, int spec_a, const struct mai_filter_ent *b,
		 int spec_b)
{
	if (a->internal != b->internal)
		return a->internal > b->internal;
	return spec_a > spec_b || (spec_a == spec_b && a->seq > b->seq);
}

int mai_match(const struct mai_filter_ent *ents, size_t n, const mai_mad_t *m,
	      uint32_t *out, size_t max)
{
	size_t cnt = 0;

	if (!m || (n && !ents) || (max && !out))
		return -EINVAL;
	if (m->type != MAI_TYPE_MAD && m->type != MAI_TYPE_RAW && m->type != MAI_TYPE_OOB)
		return -EINVAL;

	if (m->type != MAI_TYPE_OOB) {
		/* Exclusive delivery: the most specific passing consuming
		 * filter, the newest among equals. */
		const struct mai_filter_ent *best = NULL;
		int best_spec = -1;

		for (size_t i = 0; i < n; i++) {
			int spec;

			if (!ents[i].f || !(ents[i].f->flags & MAI_F_CONSUME))
				continue;
			spec = mai_filter_specificity(ents[i].f);
			if ((!best || beats(&ents[i], spec, best, best_spec)) &&
			    mai_filter_match(ents[i].f, m)) {
				best = &ents[i];
				best_spec = spec;
			}
		}
		if (best) {
			if (max)
				out[0] = best->chan;
			return 1;
		}
	}
	for (size_t i = 0; i < n; i++) {
		const mai_filter_t *f = ents[i].f;
		int oob = m->type == MAI_TYPE_OOB;

		if (!f || (!oob && (f->flags & MAI_F_CONSUME)) || !mai_filter_match(f, m))
			continue;
		cnt = add_chan(out, max, cnt, ents[i].chan, ents, i, m, oob);
	}
	return cnt > (size_t)INT32_MAX ? INT32_MAX : (int)cnt;
}
