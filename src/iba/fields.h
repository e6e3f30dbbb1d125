/* SPDX-License-Identifier: MIT */
/*
 * softib IBA header field lists (private to src/iba/ and its tests).
 * Owns: the one description of every scalar field of LRH, GRH, BTH and the
 * ETHs (IBA 7.7, 8.3, 9.2, 9.3) and the generic big-endian get/put.
 * Each list expands both into the iba_fields() table and, with constant
 * arguments, into the inlined data-path codecs. No I/O, no state.
 */
#ifndef SOFTIB_IBA_FIELDS_H
#define SOFTIB_IBA_FIELDS_H

#include <endian.h>
#include <string.h>

#include "iba/iba.h"

/*
 * X(hid, struct iba_pkt member, byte offset, container bytes, shift, mask, flags)
 * The container is a big-endian 1/2/4/8-byte word at the byte offset; the
 * field is (container >> shift) & mask. Reserved bits belong to no field.
 */
#define IBA_LRH_FIELDS(X) \
	X(LRH, lrh.vl,		0, 1, 4, 0xF, 0) \
	X(LRH, lrh.lver,	0, 1, 0, 0xF, 0) \
	X(LRH, lrh.sl,		1, 1, 4, 0xF, 0) \
	X(LRH, lrh.lnh,		1, 1, 0, 0x3, 0) \
	X(LRH, lrh.dlid,	2, 2, 0, 0xFFFF, 0) \
	X(LRH, lrh.pktlen,	4, 2, 0, 0x7FF, 0) \
	X(LRH, lrh.slid,	6, 2, 0, 0xFFFF, 0)

/* GRH bytes 8-23 SGID and 24-39 DGID are copied as arrays. */
#define IBA_GRH_FIELDS(X) \
	X(GRH, grh.ipver,	0, 1, 4, 0xF, 0) \
	X(GRH, grh.tclass,	0, 2, 4, 0xFF, 0) \
	X(GRH, grh.flow_label,	0, 4, 0, 0xFFFFF, 0) \
	X(GRH, grh.paylen,	4, 2, 0, 0xFFFF, 0) \
	X(GRH, grh.nxthdr,	6, 1, 0, 0xFF, 0) \
	X(GRH, grh.hoplmt,	7, 1, 0, 0xFF, 0)

#define IBA_BTH_FIELDS(X) \
	X(BTH, bth.opcode,	0, 1, 0, 0xFF, 0) \
	X(BTH, bth.se,		1, 1, 7, 0x1, 0) \
	X(BTH, bth.mig,		1, 1, 6, 0x1, 0) \
	X(BTH, bth.padcnt,	1, 1, 4, 0x3, 0) \
	X(BTH, bth.tver,	1, 1, 0, 0xF, 0) \
	X(BTH, bth.pkey,	2, 2, 0, 0xFFFF, 0) \
	X(BTH, bth.fecn,	4, 1, 7, 0x1, 0) \
	X(BTH, bth.becn,	4, 1, 6, 0x1, 0) \
	X(BTH, bth.dqpn,	4, 4, 0, 0xFFFFFF, 0) \
	X(BTH, bth.ackreq,	8, 1, 7, 0x1, 0) \
	X(BTH, bth.psn,		8, 4, 0, 0xFFFFFF, 0)

#define IBA_RDETH_FIELDS(X) \
	X(RDETH, rdeth_een,	0, 4, 0, 0xFFFFFF, 0)

#define IBA_DETH_FIELDS(X) \
	X(DETH, deth.qkey,	0, 4, 0, 0xFFFFFFFF, 0) \
	X(DETH, deth.src_qp,	4, 4, 0, 0xFFFFFF, 0)

#define IBA_XRCETH_FIELDS(X) \
	X(XRCETH, xrc_srqn,	0, 4, 0, 0xFFFFFF, 0)

#define IBA_RETH_FIELDS(X) \
	X(RETH, reth.va,	0, 8, 0, UINT64_MAX, 0) \
	X(RETH, reth.rkey,	8, 4, 0, 0xFFFFFFFF, 0) \
	X(RETH, reth.dmalen,	12, 4, 0, 0xFFFFFFFF, 0)

#define IBA_ATOMICETH_FIELDS(X) \
	X(ATOMICETH, atomic.va,		0, 8, 0, UINT64_MAX, 0) \
	X(ATOMICETH, atomic.rkey,	8, 4, 0, 0xFFFFFFFF, 0) \
	X(ATOMICETH, atomic.swap_add,	12, 8, 0, UINT64_MAX, 0) \
	X(ATOMICETH, atomic.compare,	20, 8, 0, UINT64_MAX, 0)

#define IBA_AETH_FIELDS(X) \
	X(AETH, aeth.syndrome,	0, 1, 0, 0xFF, 0) \
	X(AETH, aeth.msn,	0, 4, 0, 0xFFFFFF, 0)

#define IBA_ATOMICACKETH_FIELDS(X) \
	X(ATOMICACKETH, atomic_ack, 0, 8, 0, UINT64_MAX, 0)

#define IBA_IMMDT_FIELDS(X) \
	X(IMMDT, immdt_be,	0, 4, 0, 0xFFFFFFFF, IBA_FIELD_RAW)

#define IBA_IETH_FIELDS(X) \
	X(IETH, ieth_rkey,	0, 4, 0, 0xFFFFFFFF, 0)

#define IBA_FETH_FIELDS(X) \
	X(FETH, feth.sel,	3, 1, 4, 0x3, 0) \
	X(FETH, feth.plt,	3, 1, 0, 0xF, 0)

#define IBA_ALL_FIELDS(X) \
	IBA_LRH_FIELDS(X) IBA_GRH_FIELDS(X) IBA_BTH_FIELDS(X) \
	IBA_RDETH_FIELDS(X) IBA_DETH_FIELDS(X) IBA_XRCETH_FIELDS(X) \
	IBA_RETH_FIELDS(X) IBA_ATOMICETH_FIELDS(X) IBA_AETH_FIELDS(X) \
	IBA_ATOMICACKETH_FIELDS(X) IBA_IMMDT_FIELDS(X) IBA_IETH_FIELDS(X) \
	IBA_FETH_FIELDS(X)

/* Big-endian container load/store; unaligned-safe. */
static inline uint64_t iba_ld_be(const uint8_t *p, unsigned bytes)
{
	uint16_t v16;
	uint32_t v32;
	uint64_t v64;

	switch (bytes) {
	case 1:
		return p[0];
	case 2:
		memcpy(&v16, p, 2);
		return be16toh(v16);
	case 4:
		memcpy(&v32, p, 4);
		return be32toh(v32);
	default:
		memcpy(&v64, p, 8);
		return be64toh(v64);
	}
}

static inline void iba_st_be(uint8_t *p, unsigned bytes, uint64_t v)
{
	uint16_t v16;
	uint32_t v32;
	uint64_t v64;

	switch (bytes) {
	case 1:
		p[0] = (uint8_t)v;
		break;
	case 2:
		v16 = htobe16((uint16_t)v);
		memcpy(p, &v16, 2);
		break;
	case 4:
		v32 = htobe32((uint32_t)v);
		memcpy(p, &v32, 4);
		break;
	default:
		v64 = htobe64(v);
		memcpy(p, &v64, 8);
		break;
	}
}

/* The generic get/put: the value a decoded member holds <-> header bits.
 * IBA_FIELD_RAW fields are 4-byte host-memory copies (ImmDt). */
static inline uint64_t iba_get(const uint8_t *h, unsigned off, unsigned bytes,
			       unsigned shift, uint64_t mask, unsigned flags)
{
	uint32_t raw;

	if (flags & IBA_FIELD_RAW) {
		memcpy(&raw, h + off, 4);
		return raw;
	}
	return (iba_ld_be(h + off, bytes) >> shift) & mask;
}

static inline void iba_put(uint8_t *h, unsigned off, unsigned bytes,
			   unsigned shift, uint64_t mask, unsigned flags, uint64_t v)
{
	uint64_t w;
	uint32_t raw;

	if (flags & IBA_FIELD_RAW) {
		raw = (uint32_t)v;
		memcpy(h + off, &raw, 4);
		return;
	}
	w = iba_ld_be(h + off, bytes);
	w &= ~(mask << shift);
	w |= (v & mask) << shift;
	iba_st_be(h + off, bytes, w);
}

/* Expanders for the data path: p is a struct iba_pkt *, h the header start. */
#define IBA_X_DECODE(hid, m, off, bytes, shift, mask, fl) \
	p->m = (__typeof__(p->m))iba_get(h, off, bytes, shift, mask, fl);
#define IBA_X_ENCODE(hid, m, off, bytes, shift, mask, fl) \
	iba_put(h, off, bytes, shift, mask, fl, p->m);

#endif /* SOFTIB_IBA_FIELDS_H */
