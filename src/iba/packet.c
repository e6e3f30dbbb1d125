// SPDX-License-Identifier: MIT
/*
 * softib native IB packet decode and build: LRH (IBA 7.7), GRH (8.3), BTH
 * and ETHs (9.2, 9.3), padding and lengths, and the header field
 * table. Field layouts come from fields.h; this file only sequences them.
 * No I/O, no malloc, no state.
 */
#include <stddef.h>
#include <string.h>

#include "iba/fields.h"
#include "iba/iba.h"

/* ---- per-header codecs, expanded from the field lists --------------------- */

#define CODEC(name, LIST) \
	static inline void dec_##name(struct iba_pkt *p, const uint8_t *h) \
	{ LIST(IBA_X_DECODE) } \
	static inline void enc_##name(const struct iba_pkt *p, uint8_t *h) \
	{ LIST(IBA_X_ENCODE) }

CODEC(lrh, IBA_LRH_FIELDS)
CODEC(grh, IBA_GRH_FIELDS)
CODEC(bth, IBA_BTH_FIELDS)
CODEC(rdeth, IBA_RDETH_FIELDS)
CODEC(deth, IBA_DETH_FIELDS)
CODEC(xrceth, IBA_XRCETH_FIELDS)
CODEC(reth, IBA_RETH_FIELDS)
CODEC(atomiceth, IBA_ATOMICETH_FIELDS)
CODEC(aeth, IBA_AETH_FIELDS)
CODEC(atomicacketh, IBA_ATOMICACKETH_FIELDS)
CODEC(immdt, IBA_IMMDT_FIELDS)
CODEC(ieth, IBA_IETH_FIELDS)
CODEC(feth, IBA_FETH_FIELDS)

/*
 * Write-only encoders for the headers of at most 16 bytes: the whole header
 * is composed in a register from the same field list, reserved bits zero,
 * and stored once.  The data path builds headers straight into a peer's
 * inbox slot, whose lines the consumer's CPU wrote last: a field-by-field
 * read-modify-write there stalls on the line (68% of iba_build_headers in
 * a profile of ib_write_bw -s 8); stores do not wait for it.  A container
 * at byte `off` of `bytes` bytes holds bits [(hb - off - bytes) * 8, ...)
 * of the header read as one big-endian number of hb bytes.  IBA_FIELD_RAW
 * (ImmDt) is a copy of host memory: its bytes go out as they are.
 */
typedef unsigned __int128 iba_word;

#define IBA_X_WORD(hid, m, off, bytes, shift, mask, fl) \
	w |= (iba_word)(((fl) & IBA_FIELD_RAW) ? be32toh((uint32_t)p->m) : \
			((uint64_t)p->m & (uint64_t)(mask)) << (shift)) << ((hb - (off) - (bytes)) * 8);

/* Store the low n bytes of w big-endian at h (n constant, <= 16). */
static inline void st_word(uint8_t *h, unsigned n, iba_word w)
{
	uint64_t hi = htobe64((uint64_t)(w >> 64)), lo = htobe64((uint64_t)w);

	if (n > 8) {
		uint8_t b[16];

		memcpy(b, &hi, 8);
		memcpy(b + 8, &lo, 8);
		memcpy(h, b + 16 - n, n);
	} else if (n == 8) {
		memcpy(h, &lo, 8);
	} else {
		uint32_t v = htobe32((uint32_t)w);

		memcpy(h, &v, 4); /* every header of 4 bytes */
	}
}

#define WCODEC(name, LIST, N) \
	static inline void wenc_##name(const struct iba_pkt *p, uint8_t *h) \
	{ const unsigned hb = (N); iba_word w = 0; LIST(IBA_X_WORD) st_word(h, (N), w); }

WCODEC(lrh, IBA_LRH_FIELDS, IBA_LRH_BYTES)
WCODEC(bth, IBA_BTH_FIELDS, IBA_BTH_BYTES)
WCODEC(rdeth, IBA_RDETH_FIELDS, IBA_RDETH_BYTES)
WCODEC(deth, IBA_DETH_FIELDS, IBA_DETH_BYTES)
WCODEC(xrceth, IBA_XRCETH_FIELDS, IBA_XRCETH_BYTES)
WCODEC(reth, IBA_RETH_FIELDS, IBA_RETH_BYTES)
WCODEC(aeth, IBA_AETH_FIELDS, IBA_AETH_BYTES)
WCODEC(atomicacketh, IBA_ATOMICACKETH_FIELDS, IBA_ATOMICACKETH_BYTES)
WCODEC(immdt, IBA_IMMDT_FIELDS, IBA_IMMDT_BYTES)
WCODEC(ieth, IBA_IETH_FIELDS, IBA_IETH_BYTES)
WCODEC(feth, IBA_FETH_FIELDS, IBA_FETH_BYTES)

/* The AtomicETH (28 bytes): built on the stack, then copied. */
static inline void wenc_atomiceth(const struct iba_pkt *p, uint8_t *h)
{
	uint8_t b[IBA_ATOMICETH_BYTES] = { 0 };

	enc_atomiceth(p, b);
	memcpy(h, b, sizeof(b));
}

/* The ETHs in wire order (FETH precedes RETH): X(bit, name, bytes). */
#define IBA_ETHS_IN_WIRE_ORDER(X) \
	X(IBA_HDR_RDETH, rdeth, IBA_RDETH_BYTES) \
	X(IBA_HDR_DETH, deth, IBA_DETH_BYTES) \
	X(IBA_HDR_XRCETH, xrceth, IBA_XRCETH_BYTES) \
	X(IBA_HDR_FETH, feth, IBA_FETH_BYTES) \
	X(IBA_HDR_RETH, reth, IBA_RETH_BYTES) \
	X(IBA_HDR_ATOMICETH, atomiceth, IBA_ATOMICETH_BYTES) \
	X(IBA_HDR_AETH, aeth, IBA_AETH_BYTES) \
	X(IBA_HDR_ATOMICACKETH, atomicacketh, IBA_ATOMICACKETH_BYTES) \
	X(IBA_HDR_IMMDT, immdt, IBA_IMMDT_BYTES) \
	X(IBA_HDR_IETH, ieth, IBA_IETH_BYTES)

/* Decode the ETHs named by hdrs.  Returns bytes consumed. */
static inline unsigned dec_eths(struct iba_pkt *p, const uint8_t *h, uint32_t hdrs)
{
	const uint8_t *h0 = h;

#define STEP(bit, name, len) \
	if (hdrs & (bit)) { dec_##name(p, h); h += (len); }
	IBA_ETHS_IN_WIRE_ORDER(STEP)
#undef STEP
	return (unsigned)(h - h0);
}

/* Encode the ETHs named by hdrs (write-only).  Returns bytes written. */
static inline unsigned enc_eths(const struct iba_pkt *p, uint8_t *h, uint32_t hdrs)
{
	uint8_t *h0 = h;

#define STEP(bit, name, len) \
	if (hdrs & (bit)) { wenc_##name(p, h); h += (len); }
	IBA_ETHS_IN_WIRE_ORDER(STEP)
#undef STEP
	return (unsigned)(h - h0);
}

static inline uint32_t ld_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static inline void st_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

/* ---- decode ---------------------------------------------------------------- */

int iba_decode(const uint8_t *buf, size_t len, unsigned flags, struct iba_pkt *p)
{
	const uint8_t *h;
	size_t icrc_off, nhdr, rest;
	unsigned vcrc = (flags & (IBA_HAS_VCRC | IBA_CHECK_VCRC)) ? IBA_VCRC_BYTES : 0;
	uint32_t hdrs;

	memset(p, 0, sizeof(*p));
	if (len < IBA_LRH_BYTES)
		return IBA_ERR_SHORT;
	dec_lrh(p, buf);
	if (p->lrh.lnh != IBA_LNH_LOCAL && p->lrh.lnh != IBA_LNH_GLOBAL)
		return IBA_ERR_LNH;

	/* PktLen counts LRH..ICRC; the buffer holds exactly that (+ VCRC). */
	if (len < (size_t)p->lrh.pktlen * 4 + vcrc)
		return IBA_ERR_SHORT;
	if (len > (size_t)p->lrh.pktlen * 4 + vcrc)
		return IBA_ERR_PKTLEN;
	nhdr = IBA_LRH_BYTES + IBA_BTH_BYTES +
	       (p->lrh.lnh == IBA_LNH_GLOBAL ? IBA_GRH_BYTES : 0);
	if ((size_t)p->lrh.pktlen * 4 < nhdr + IBA_ICRC_BYTES)
		return IBA_ERR_PKTLEN;
	icrc_off = (size_t)p->lrh.pktlen * 4 - IBA_ICRC_BYTES;

	if ((flags & IBA_CHECK_VCRC) &&
	    iba_vcrc(buf, icrc_off + IBA_ICRC_BYTES) !=
	    (uint16_t)(buf[icrc_off + 4] | buf[icrc_off + 5] << 8))
		return IBA_ERR_VCRC;
	if ((flags & IBA_CHECK_ICRC) && iba_icrc(buf, icrc_off) != ld_le32(buf + icrc_off))
		return IBA_ERR_ICRC;

	h = buf + IBA_LRH_BYTES;
	if (p->lrh.lnh == IBA_LNH_GLOBAL) {
		dec_grh(p, h);
		memcpy(p->grh.sgid, h + 8, 16);
		memcpy(p->grh.dgid, h + 24, 16);
		if (p->grh.ipver != IBA_GRH_IPVER || p->grh.nxthdr != IBA_GRH_NXTHDR_IBA ||
		    p->grh.paylen != icrc_off + IBA_ICRC_BYTES - IBA_LRH_BYTES - IBA_GRH_BYTES)
			return IBA_ERR_GRH;
		h += IBA_GRH_BYTES;
	}

	dec_bth(p, h);
	if (p->bth.tver != 0)
		return IBA_ERR_TVER;
	p->op = iba_opcode_info(p->bth.opcode);
	if (!p->op->name)
		return IBA_ERR_OPCODE;
	hdrs = p->op->hdrs;
	h += IBA_BTH_BYTES;
	nhdr += p->op->eth_len;
	if (nhdr > icrc_off)
		return IBA_ERR_PKTLEN;
	dec_eths(p, h, hdrs);

	rest = icrc_off - nhdr;		/* payload + pad, a multiple of 4 */
	if (p->bth.padcnt > rest)
		return IBA_ERR_PAD;
	if (rest && !(p->op->flags & IBA_OP_PAYLOAD))
		return IBA_ERR_PKTLEN;
	p->hdr_len = (uint32_t)nhdr;
	p->payload = buf + nhdr;
	p->paylen = (uint32_t)(rest - p->bth.padcnt);
	return IBA_OK;
}

/* ---- build ----------------------------------------------------------------- */

size_t iba_build_headers(uint8_t *buf, const struct iba_pkt *p)
{
	const struct iba_opcode_info *op = iba_opcode_info(p->bth.opcode);
	uint8_t *h = buf;

	/* Every byte is stored exactly once, reserved bits zero; buf is
	 * never read (see wenc_*). */
	wenc_lrh(p, h);
	h += IBA_LRH_BYTES;
	if (p->lrh.lnh == IBA_LNH_GLOBAL) {
		uint8_t g[IBA_GRH_BYTES] = { 0 };

		enc_grh(p, g);
		memcpy(g + 8, p->grh.sgid, 16);
		memcpy(g + 24, p->grh.dgid, 16);
		memcpy(h, g, sizeof(g));
		h += IBA_GRH_BYTES;
	}
	wenc_bth(p, h);
	h += IBA_BTH_BYTES;
	h += enc_eths(p, h, op->hdrs);
	return (size_t)(h - buf);
}

/* Field layouts for the few fields iba_finish() patches in place. */
#define F_PKTLEN	4, 2, 0, 0x7FF, 0
#define F_PADCNT	1, 1, 4, 0x3, 0
#define F_GRH_PAYLEN	4, 2, 0, 0xFFFF, 0

size_t iba_finish(uint8_t *buf, size_t hdr_len, size_t paylen, unsigned flags)
{
	size_t pad = iba_pad(paylen);
	size_t n = hdr_len + paylen + pad;	/* bytes before the ICRC */
	bool global = (buf[1] & 3) == IBA_LNH_GLOBAL;
	uint8_t *bth = buf + IBA_LRH_BYTES + (global ? IBA_GRH_BYTES : 0);

	memset(buf + hdr_len + paylen, 0, pad);
	iba_put(bth, F_PADCNT, pad);
	iba_put(buf, F_PKTLEN, (n + IBA_ICRC_BYTES) / 4);
	if (global)
		iba_put(buf + IBA_LRH_BYTES, F_GRH_PAYLEN,
			n + IBA_ICRC_BYTES - IBA_LRH_BYTES - IBA_GRH_BYTES);
	st_le32(buf + n, (flags & IBA_NO_ICRC) ? 0 : iba_icrc(buf, n));
	n += IBA_ICRC_BYTES;
	if (flags & IBA_HAS_VCRC) {
		uint16_t v = iba_vcrc(buf, n);

		buf[n++] = (uint8_t)v;
		buf[n++] = (uint8_t)(v >> 8);
	}
	return n;
}

/* ---- errors ---------------------------------------------------------------- */

static const char *const err_str[] = {
	[-IBA_OK] = "success",
	[-IBA_ERR_SHORT] = "packet shorter than its headers or PktLen",
	[-IBA_ERR_LNH] = "LRH.LNH is not IBA transport",
	[-IBA_ERR_PKTLEN] = "bad LRH.PktLen or length",
	[-IBA_ERR_TVER] = "bad BTH.TVer",
	[-IBA_ERR_OPCODE] = "reserved BTH opcode",
	[-IBA_ERR_ICRC] = "ICRC mismatch",
	[-IBA_ERR_VCRC] = "VCRC mismatch",
	[-IBA_ERR_GRH] = "bad GRH (IPVer, NxtHdr or PayLen)",
	[-IBA_ERR_PAD] = "bad BTH.PadCnt",
};

const char *iba_strerror(int err)
{
	if (err > 0 || err <= -(int)(sizeof(err_str) / sizeof(err_str[0])))
		return "unknown error";
	return err_str[-err];
}

/* ---- field table ----------------------------------------------------------- */

#define IBA_X_TABLE(H, m, o, b, s, msk, fl) \
	{ .name = #m, .hid = IBA_HID_##H, .off = o, .bytes = b, .shift = s, \
	  .flags = fl, .pkt_size = sizeof(((struct iba_pkt *)0)->m), \
	  .pkt_off = offsetof(struct iba_pkt, m), .mask = msk },

static const struct iba_field field_table[] = {
	IBA_ALL_FIELDS(IBA_X_TABLE)
};

static const uint8_t hdr_bytes[IBA_HID_COUNT] = {
	[IBA_HID_LRH] = IBA_LRH_BYTES,
	[IBA_HID_GRH] = IBA_GRH_BYTES,
	[IBA_HID_BTH] = IBA_BTH_BYTES,
	[IBA_HID_RDETH] = IBA_RDETH_BYTES,
	[IBA_HID_DETH] = IBA_DETH_BYTES,
	[IBA_HID_XRCETH] = IBA_XRCETH_BYTES,
	[IBA_HID_RETH] = IBA_RETH_BYTES,
	[IBA_HID_ATOMICETH] = IBA_ATOMICETH_BYTES,
	[IBA_HID_AETH] = IBA_AETH_BYTES,
	[IBA_HID_ATOMICACKETH] = IBA_ATOMICACKETH_BYTES,
	[IBA_HID_IMMDT] = IBA_IMMDT_BYTES,
	[IBA_HID_IETH] = IBA_IETH_BYTES,
	[IBA_HID_FETH] = IBA_FETH_BYTES,
};

const struct iba_field *iba_fields(size_t *count)
{
	*count = sizeof(field_table) / sizeof(field_table[0]);
	return field_table;
}

unsigned iba_hdr_bytes(unsigned hid)
{
	return hid < IBA_HID_COUNT ? hdr_bytes[hid] : 0;
}

uint64_t iba_field_get(const struct iba_field *f, const uint8_t *hdr)
{
	return iba_get(hdr, f->off, f->bytes, f->shift, f->mask, f->flags);
}

void iba_field_put(const struct iba_field *f, uint8_t *hdr, uint64_t v)
{
	iba_put(hdr, f->off, f->bytes, f->shift, f->mask, f->flags, v);
}
