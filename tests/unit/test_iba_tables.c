// SPDX-License-Identifier: MIT
/*
 * Unit tests for src/iba/ tables: the 256-entry opcode table (checked against
 * the installed <infiniband/opcode.h> and iba-transport.md §2), the header
 * field table (every field at max value, no neighbour clobbered), PSN
 * arithmetic, AETH RNR/credit codes and MTU. IBA 9.2, 9.3, 9.7.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <infiniband/opcode.h>

#include "iba/iba.h"

/* ---- opcode table ------------------------------------------------------------ */

struct known_op {
	unsigned opcode;
	const char *name;
};

/* Values from rdma-core's opcode.h; the names are the token spelled out. */
#define K(t, op) { IBV_OPCODE_##t##_##op, #t "_" #op }

static const struct known_op ibv_ops[] = {
	K(RC, SEND_FIRST), K(RC, SEND_MIDDLE), K(RC, SEND_LAST),
	K(RC, SEND_LAST_WITH_IMMEDIATE), K(RC, SEND_ONLY), K(RC, SEND_ONLY_WITH_IMMEDIATE),
	K(RC, RDMA_WRITE_FIRST), K(RC, RDMA_WRITE_MIDDLE), K(RC, RDMA_WRITE_LAST),
	K(RC, RDMA_WRITE_LAST_WITH_IMMEDIATE), K(RC, RDMA_WRITE_ONLY),
	K(RC, RDMA_WRITE_ONLY_WITH_IMMEDIATE), K(RC, RDMA_READ_REQUEST),
	K(RC, RDMA_READ_RESPONSE_FIRST), K(RC, RDMA_READ_RESPONSE_MIDDLE),
	K(RC, RDMA_READ_RESPONSE_LAST), K(RC, RDMA_READ_RESPONSE_ONLY),
	K(RC, ACKNOWLEDGE), K(RC, ATOMIC_ACKNOWLEDGE), K(RC, COMPARE_SWAP), K(RC, FETCH_ADD),

	K(UC, SEND_FIRST), K(UC, SEND_MIDDLE), K(UC, SEND_LAST),
	K(UC, SEND_LAST_WITH_IMMEDIATE), K(UC, SEND_ONLY), K(UC, SEND_ONLY_WITH_IMMEDIATE),
	K(UC, RDMA_WRITE_FIRST), K(UC, RDMA_WRITE_MIDDLE), K(UC, RDMA_WRITE_LAST),
	K(UC, RDMA_WRITE_LAST_WITH_IMMEDIATE), K(UC, RDMA_WRITE_ONLY),
	K(UC, RDMA_WRITE_ONLY_WITH_IMMEDIATE),

	K(RD, SEND_FIRST), K(RD, SEND_MIDDLE), K(RD, SEND_LAST),
	K(RD, SEND_LAST_WITH_IMMEDIATE), K(RD, SEND_ONLY), K(RD, SEND_ONLY_WITH_IMMEDIATE),
	K(RD, RDMA_WRITE_FIRST), K(RD, RDMA_WRITE_MIDDLE), K(RD, RDMA_WRITE_LAST),
	K(RD, RDMA_WRITE_LAST_WITH_IMMEDIATE), K(RD, RDMA_WRITE_ONLY),
	K(RD, RDMA_WRITE_ONLY_WITH_IMMEDIATE), K(RD, RDMA_READ_REQUEST),
	K(RD, RDMA_READ_RESPONSE_FIRST), K(RD, RDMA_READ_RESPONSE_MIDDLE),
	K(RD, RDMA_READ_RESPONSE_LAST), K(RD, RDMA_READ_RESPONSE_ONLY),
	K(RD, ACKNOWLEDGE), K(RD, ATOMIC_ACKNOWLEDGE), K(RD, COMPARE_SWAP), K(RD, FETCH_ADD),

	K(UD, SEND_ONLY), K(UD, SEND_ONLY_WITH_IMMEDIATE),
};

/* Opcodes opcode.h lacks (iba-transport.md §1.7, §2). XRC requests and
 * responses are the RC rows shifted by 0xA0, added in the test below. */
static const struct known_op extra_ops[] = {
	{ 0x16, "RC_SEND_LAST_WITH_INVALIDATE" },
	{ 0x17, "RC_SEND_ONLY_WITH_INVALIDATE" },
	{ 0x1C, "RC_FLUSH" },
	{ 0x1D, "RC_ATOMIC_WRITE" },
	{ 0x55, "RD_RESYNC" },
	{ 0x80, "CNP" },
	{ 0x81, "CNP_ROCE" },
};

/* Headers after the BTH for each RC operation (§2 table, column "headers"). */
static const uint32_t rc_hdrs[32] = {
	[0x03] = IBA_HDR_IMMDT, [0x05] = IBA_HDR_IMMDT,
	[0x06] = IBA_HDR_RETH, [0x09] = IBA_HDR_IMMDT, [0x0A] = IBA_HDR_RETH,
	[0x0B] = IBA_HDR_RETH | IBA_HDR_IMMDT, [0x0C] = IBA_HDR_RETH,
	[0x0D] = IBA_HDR_AETH, [0x0F] = IBA_HDR_AETH, [0x10] = IBA_HDR_AETH,
	[0x11] = IBA_HDR_AETH, [0x12] = IBA_HDR_AETH | IBA_HDR_ATOMICACKETH,
	[0x13] = IBA_HDR_ATOMICETH, [0x14] = IBA_HDR_ATOMICETH,
	[0x16] = IBA_HDR_IETH, [0x17] = IBA_HDR_IETH,
	[0x1C] = IBA_HDR_FETH | IBA_HDR_RETH, [0x1D] = IBA_HDR_RETH,
};

static bool is_response_op(unsigned op)
{
	return op >= 0x0D && op <= 0x12;
}

/* Expected headers, from the transport rules of §2. */
static uint32_t expect_hdrs(unsigned opcode)
{
	unsigned t = opcode & 0xE0, op = opcode & 0x1F;

	switch (t) {
	case IBA_TRANSPORT_RC:
	case IBA_TRANSPORT_UC:
		return rc_hdrs[op];
	case IBA_TRANSPORT_RD:
		if (op == 0x15)
			return IBA_HDR_RDETH | IBA_HDR_DETH;
		return IBA_HDR_RDETH | (is_response_op(op) ? 0 : IBA_HDR_DETH) | rc_hdrs[op];
	case IBA_TRANSPORT_UD:
		return IBA_HDR_DETH | rc_hdrs[op];
	case IBA_TRANSPORT_XRC:
		return (is_response_op(op) ? 0 : IBA_HDR_XRCETH) | rc_hdrs[op];
	}
	return 0;
}

/* Wire order after the BTH, written out independently of opcode.c. */
static const uint32_t wire_order[] = {
	IBA_HDR_RDETH, IBA_HDR_DETH, IBA_HDR_XRCETH, IBA_HDR_FETH, IBA_HDR_RETH,
	IBA_HDR_ATOMICETH, IBA_HDR_AETH, IBA_HDR_ATOMICACKETH, IBA_HDR_IMMDT, IBA_HDR_IETH,
};
static const unsigned wire_bytes[] = { 4, 8, 4, 4, 16, 28, 4, 8, 4, 4 };

static void test_opcode_names(void **state)
{
	const char *want[256] = { 0 };
	char xname[64];
	unsigned i, named = 0, expected = 0;

	for (i = 0; i < sizeof(ibv_ops) / sizeof(ibv_ops[0]); i++)
		want[ibv_ops[i].opcode] = ibv_ops[i].name;
	for (i = 0; i < sizeof(extra_ops) / sizeof(extra_ops[0]); i++)
		want[extra_ops[i].opcode] = extra_ops[i].name;
	for (i = 0; i <= 0x17; i++) {	/* XRC: every RC op but RESYNC */
		if (i == 0x15)
			continue;
		assert_non_null(want[i]);
		snprintf(xname, sizeof(xname), "XRC_%s", want[i] + 3);
		want[0xA0 + i] = strdup(xname);
	}

	for (i = 0; i < 256; i++) {
		const struct iba_opcode_info *oi = iba_opcode_info((uint8_t)i);

		assert_non_null(oi);
		if (want[i]) {
			expected++;
			if (!oi->name || strcmp(oi->name, want[i]))
				fail_msg("opcode %#x: name %s, want %s", i,
					 oi->name ? oi->name : "(null)", want[i]);
		} else {
			if (oi->name || oi->hdrs || oi->flags || oi->eth_len)
				fail_msg("opcode %#x should be reserved", i);
		}
		if (oi->name)
			named++;
	}
	assert_int_equal(named, expected);
	assert_int_equal(expected, 21 + 12 + 22 + 2 + 4 + 2 + 23);
	for (i = 0xA0; i <= 0xB7; i++)
		free((char *)want[i]);
}

static void test_opcode_hdrs_offsets(void **state)
{
	unsigned i, k, max_eth = 0;

	for (i = 0; i < 256; i++) {
		const struct iba_opcode_info *oi = iba_opcode_info((uint8_t)i);
		unsigned off = 0;

		if (!oi->name)
			continue;
		if (oi->flags & IBA_OP_CNP)
			assert_int_equal(oi->hdrs, 0);
		else if (oi->hdrs != expect_hdrs(i))
			fail_msg("%s: hdrs %#x want %#x", oi->name, oi->hdrs, expect_hdrs(i));
		assert_int_equal(oi->eth_len, iba_hdrs_len(oi->hdrs));
		if (oi->eth_len > max_eth)
			max_eth = oi->eth_len;

		/* Offsets follow the wire order, each header right after the last. */
		for (k = 0; k < sizeof(wire_order) / sizeof(wire_order[0]); k++) {
			assert_int_equal(iba_eth_bytes(wire_order[k]), wire_bytes[k]);
			if (oi->hdrs & wire_order[k]) {
				assert_int_equal(iba_eth_offset((uint8_t)i, wire_order[k]), off);
				off += wire_bytes[k];
			} else {
				assert_int_equal(iba_eth_offset((uint8_t)i, wire_order[k]),
						 IBA_ETH_NONE);
			}
		}
		assert_int_equal(off, oi->eth_len);
	}
	assert_int_equal(iba_eth_offset(0x0B, IBA_HDR_RETH | IBA_HDR_IMMDT), IBA_ETH_NONE);
	assert_int_equal(iba_eth_offset(0x0B, 0), IBA_ETH_NONE);
	assert_int_equal(iba_eth_bytes(0), 0);
	assert_int_equal(iba_eth_bytes(3), 0);
	assert_int_equal(iba_eth_bytes(1u << IBA_HDR_COUNT), 0);
	/* Spot checks from §1.5. */
	assert_int_equal(iba_eth_offset(0x4B, IBA_HDR_IMMDT), 4 + 8 + 16);
	assert_int_equal(iba_eth_offset(0xAB, IBA_HDR_IMMDT), 4 + 16);
	assert_int_equal(iba_eth_offset(0x12, IBA_HDR_ATOMICACKETH), 4);
	assert_int_equal(iba_eth_offset(0x1C, IBA_HDR_RETH), 4);
	assert_int_equal(iba_eth_offset(0x65, IBA_HDR_IMMDT), 8);
	assert_true(IBA_LRH_BYTES + IBA_GRH_BYTES + IBA_BTH_BYTES + max_eth <= IBA_MAX_HDR_BYTES);
	assert_int_equal(max_eth, 4 + 8 + 28);
}

static void test_opcode_flags(void **state)
{
	unsigned i;

	for (i = 0; i < 256; i++) {
		const struct iba_opcode_info *oi = iba_opcode_info((uint8_t)i);
		uint32_t f = oi->flags, h = oi->hdrs;
		unsigned op = i & 0x1F;
		const char *n = oi->name;
		int pos;

		if (!n)
			continue;
		if (f & IBA_OP_CNP) {
			assert_int_equal(f, IBA_OP_CNP | IBA_OP_PAYLOAD);
			continue;
		}
		/* Exactly one direction and one position. */
		assert_int_equal(!!(f & IBA_OP_REQ) + !!(f & IBA_OP_RESP), 1);
		pos = !!(f & IBA_OP_FIRST) + !!(f & IBA_OP_MIDDLE) + !!(f & IBA_OP_LAST) +
		      !!(f & IBA_OP_ONLY);
		assert_int_equal(pos, 1);
		assert_int_equal(!!(f & IBA_OP_FIRST), !!strstr(n, "_FIRST"));
		assert_int_equal(!!(f & IBA_OP_MIDDLE), !!strstr(n, "_MIDDLE"));
		assert_int_equal(!!(f & IBA_OP_LAST), !!strstr(n, "_LAST"));
		if (strstr(n, "_ONLY"))
			assert_true(f & IBA_OP_ONLY);
		assert_int_equal(!!(f & IBA_OP_RESP), is_response_op(op));
		assert_int_equal(!!(f & IBA_OP_SEND), !!strstr(n, "_SEND_"));
		assert_int_equal(!!(f & IBA_OP_WRITE), !!strstr(n, "_RDMA_WRITE_"));
		assert_int_equal(!!(f & IBA_OP_READ), !!strstr(n, "_RDMA_READ_REQUEST"));
		assert_int_equal(!!(f & IBA_OP_READ_RESP), !!strstr(n, "_RDMA_READ_RESPONSE_"));
		assert_int_equal(!!(f & IBA_OP_ATOMIC),
				 op == IBA_OPC_COMPARE_SWAP || op == IBA_OPC_FETCH_ADD);
		assert_int_equal(!!(f & IBA_OP_ACK), !!strstr(n, "ACKNOWLEDGE"));
		assert_int_equal(!!(f & IBA_OP_FLUSH), op == IBA_OPC_FLUSH);
		assert_int_equal(!!(f & IBA_OP_ATOMIC_WRITE), op == IBA_OPC_ATOMIC_WRITE);
		assert_int_equal(!!(f & IBA_OP_IMM), !!(h & IBA_HDR_IMMDT));
		assert_int_equal(!!(f & IBA_OP_IMM), !!strstr(n, "_WITH_IMMEDIATE"));
		assert_int_equal(!!(f & IBA_OP_INV), !!(h & IBA_HDR_IETH));
		assert_int_equal(!!(f & IBA_OP_INV), !!strstr(n, "_WITH_INVALIDATE"));
		assert_int_equal(!!(f & IBA_OP_PAYLOAD),
				 !!(f & (IBA_OP_SEND | IBA_OP_WRITE | IBA_OP_READ_RESP |
					 IBA_OP_ATOMIC_WRITE)));
		/* RWR: every SEND packet, WRITE with immediate (LAST/ONLY). */
		assert_int_equal(!!(f & IBA_OP_RWR),
				 !!(f & IBA_OP_SEND) ||
				 ((f & IBA_OP_WRITE) && (f & IBA_OP_IMM)));
		/* COMP: the end of a request message at the responder. */
		assert_int_equal(!!(f & IBA_OP_COMP),
				 (f & IBA_OP_REQ) && op != IBA_OPC_RESYNC &&
				 (f & (IBA_OP_LAST | IBA_OP_ONLY)));
		/* AETH on responses except READ_RESPONSE_MIDDLE. */
		assert_int_equal(!!(h & IBA_HDR_AETH),
				 is_response_op(op) && op != IBA_OPC_RDMA_READ_RESPONSE_MIDDLE);
	}
	/* Spot checks. */
	assert_int_equal(iba_opcode_info(0x04)->flags,
			 IBA_OP_REQ | IBA_OP_SEND | IBA_OP_ONLY | IBA_OP_PAYLOAD |
			 IBA_OP_RWR | IBA_OP_COMP);
	assert_int_equal(iba_opcode_info(0x07)->flags,
			 IBA_OP_REQ | IBA_OP_WRITE | IBA_OP_MIDDLE | IBA_OP_PAYLOAD);
	assert_int_equal(iba_opcode_info(0x0C)->flags,
			 IBA_OP_REQ | IBA_OP_READ | IBA_OP_ONLY | IBA_OP_COMP);
	assert_int_equal(iba_opcode_info(0x11)->flags, IBA_OP_RESP | IBA_OP_ACK | IBA_OP_ONLY);
}

/* ---- header fields -------------------------------------------------------- */

/* The header bits of a field, from its {offset, container, shift, mask}
 * spelled out bit by bit (independent of iba_field_put). */
static void field_bits(const struct iba_field *f, uint8_t *bits)
{
	unsigned i;

	for (i = 0; i < f->bytes * 8u; i++) {
		bool set = (f->flags & IBA_FIELD_RAW) ? true :
			   i >= f->shift && i - f->shift < 64 && ((f->mask >> (i - f->shift)) & 1);

		if (set)
			bits[f->off + f->bytes - 1 - i / 8] |= (uint8_t)(1u << (i % 8));
	}
}

/* Reserved bits per header (iba-transport.md §1.2-1.5); GRH GIDs are arrays. */
static void reserved_bits(unsigned hid, uint8_t *r)
{
	switch (hid) {
	case IBA_HID_LRH:
		r[1] = 0x0C;
		r[4] = 0xF8;
		break;
	case IBA_HID_GRH:
		memset(r + 8, 0xFF, 32);
		break;
	case IBA_HID_BTH:
		r[4] = 0x3F;
		r[8] = 0x7F;
		break;
	case IBA_HID_RDETH:
	case IBA_HID_XRCETH:
		r[0] = 0xFF;
		break;
	case IBA_HID_DETH:
		r[4] = 0xFF;
		break;
	case IBA_HID_FETH:
		r[0] = r[1] = r[2] = 0xFF;
		r[3] = 0xC0;
		break;
	}
}

static void test_field_table_layout(void **state)
{
	const struct iba_field *f;
	size_t n, i;
	unsigned hid, k, count[IBA_HID_COUNT] = { 0 };

	f = iba_fields(&n);
	assert_int_equal(n, 7 + 6 + 11 + 1 + 2 + 1 + 3 + 4 + 2 + 1 + 1 + 1 + 2);
	for (hid = 0; hid < IBA_HID_COUNT; hid++) {
		uint8_t cover[64] = { 0 }, want[64];
		unsigned sz = iba_hdr_bytes(hid);

		assert_true(sz > 0 && sz <= sizeof(cover));
		for (i = 0; i < n; i++) {
			uint8_t bits[64] = { 0 };

			if (f[i].hid != hid)
				continue;
			count[hid]++;
			assert_true(f[i].off + f[i].bytes <= sz);
			assert_true(f[i].bytes == 1 || f[i].bytes == 2 || f[i].bytes == 4 ||
				    f[i].bytes == 8);
			assert_true(f[i].pkt_size * 8u >= 64 - (unsigned)__builtin_clzll(f[i].mask));
			field_bits(&f[i], bits);
			for (k = 0; k < sz; k++) {
				if (cover[k] & bits[k])
					fail_msg("%s overlaps another field", f[i].name);
				cover[k] |= bits[k];
			}
		}
		assert_true(count[hid] > 0);
		/* Fields plus reserved bits cover the header exactly. */
		memset(want, 0, sizeof(want));
		reserved_bits(hid, want);
		for (k = 0; k < sz; k++)
			if ((cover[k] | want[k]) != 0xFF || (cover[k] & want[k]))
				fail_msg("hid %u byte %u: fields %#x reserved %#x", hid, k,
					 cover[k], want[k]);
	}
	assert_int_equal(iba_hdr_bytes(IBA_HID_COUNT), 0);
}

/* Every field at its max value into a zero header, and 0 into an all-1s
 * header: only that field's bits may change (catches a setter that clobbers
 * a neighbour, like rxe's old resv6a/QPN bug). */
static void test_field_put_get_isolation(void **state)
{
	const struct iba_field *f;
	size_t n, i, j;
	unsigned k;

	f = iba_fields(&n);
	for (i = 0; i < n; i++) {
		uint8_t h[64], bits[64] = { 0 };
		unsigned sz = iba_hdr_bytes(f[i].hid);

		field_bits(&f[i], bits);

		memset(h, 0, sizeof(h));
		iba_field_put(&f[i], h, UINT64_MAX);
		for (k = 0; k < sz; k++)
			assert_int_equal(h[k], bits[k]);
		assert_int_equal(iba_field_get(&f[i], h), f[i].mask);
		for (j = 0; j < n; j++)
			if (j != i && f[j].hid == f[i].hid)
				assert_int_equal(iba_field_get(&f[j], h), 0);

		memset(h, 0xFF, sizeof(h));
		iba_field_put(&f[i], h, 0);
		for (k = 0; k < sz; k++)
			assert_int_equal(h[k], (uint8_t)~bits[k]);
		assert_int_equal(iba_field_get(&f[i], h), 0);
		for (j = 0; j < n; j++)
			if (j != i && f[j].hid == f[i].hid)
				assert_int_equal(iba_field_get(&f[j], h), f[j].mask);

		/* Values wider than the field are masked, not spilled. */
		memset(h, 0, sizeof(h));
		iba_field_put(&f[i], h, f[i].mask + 1 == 0 ? 0 : f[i].mask + 1);
		if (!(f[i].flags & IBA_FIELD_RAW))
			for (k = 0; k < sz; k++)
				assert_int_equal(h[k], 0);
	}
}

/* Same through iba_build_headers (the inlined data-path encoders): an
 * all-max packet with one field zeroed, and an all-zero packet with one
 * field at max, for every field of every header. */
static uint8_t opcode_with(unsigned hid)
{
	unsigned i;

	if (hid < IBA_HID_RDETH)
		return 0x04;
	for (i = 0; i < 256; i++)
		if (iba_opcode_info((uint8_t)i)->hdrs & (1u << (hid - IBA_HID_RDETH)))
			return (uint8_t)i;
	fail_msg("no opcode carries hid %u", hid);
	return 0;
}

static void member_set(struct iba_pkt *p, const struct iba_field *f, uint64_t v)
{
	uint8_t *m = (uint8_t *)p + f->pkt_off;
	uint8_t v8 = (uint8_t)v;
	uint16_t v16 = (uint16_t)v;
	uint32_t v32 = (uint32_t)v;

	switch (f->pkt_size) {
	case 1: memcpy(m, &v8, 1); break;
	case 2: memcpy(m, &v16, 2); break;
	case 4: memcpy(m, &v32, 4); break;
	default: memcpy(m, &v, 8); break;
	}
}

static unsigned hdr_offset(unsigned hid, uint8_t opcode)
{
	switch (hid) {
	case IBA_HID_LRH:
		return 0;
	case IBA_HID_GRH:
		return 8;
	case IBA_HID_BTH:
		return 48;
	default:
		return 60 + iba_eth_offset(opcode, 1u << (hid - IBA_HID_RDETH));
	}
}

static void test_field_build_isolation(void **state)
{
	const struct iba_field *f;
	size_t n, i, j;
	int pass;

	f = iba_fields(&n);
	for (i = 0; i < n; i++) {
		uint8_t op = opcode_with(f[i].hid);

		/* Opcode and LNH choose the layout; they are covered above. */
		if (!strcmp(f[i].name, "bth.opcode") || !strcmp(f[i].name, "lrh.lnh"))
			continue;
		for (pass = 0; pass < 2; pass++) {
			uint8_t b[IBA_MAX_HDR_BYTES];
			struct iba_pkt p;
			size_t hl;

			memset(&p, 0, sizeof(p));
			for (j = 0; j < n; j++)
				member_set(&p, &f[j], pass ? 0 : f[j].mask);
			member_set(&p, &f[i], pass ? f[i].mask : 0);
			p.lrh.lnh = IBA_LNH_GLOBAL;
			p.bth.opcode = op;
			memset(b, 0x5A, sizeof(b));
			hl = iba_build_headers(b, &p);
			assert_int_equal(hl, 60 + iba_opcode_info(op)->eth_len);
			for (j = 0; j < n; j++) {
				uint64_t want, got;
				unsigned off;

				if (!strcmp(f[j].name, "bth.opcode") || !strcmp(f[j].name, "lrh.lnh"))
					continue;
				if (f[j].hid >= IBA_HID_RDETH &&
				    !(iba_opcode_info(op)->hdrs & (1u << (f[j].hid - IBA_HID_RDETH))))
					continue;
				off = hdr_offset(f[j].hid, op);
				got = iba_field_get(&f[j], b + off);
				want = (j == i) == !!pass ? f[j].mask : 0;
				if (got != want)
					fail_msg("%s with %s %s: got %#llx", f[j].name, f[i].name,
						 pass ? "max" : "zero", (unsigned long long)got);
			}
		}
	}
}

/* Known bytes for a few fields (rc_send_only of iba-vectors, §7). */
static void test_field_known_bytes(void **state)
{
	static const uint8_t lrh[8] = { 0x00, 0x02, 0x00, 0x02, 0x00, 0x08, 0x00, 0x01 };
	static const uint8_t bth[12] = { 0x04, 0x30, 0xff, 0xff, 0x00, 0x00, 0x00, 0x12,
					 0x80, 0x00, 0x01, 0x00 };
	const struct iba_field *f;
	size_t n, i;
	unsigned seen = 0;

	f = iba_fields(&n);
	for (i = 0; i < n; i++) {
		const char *nm = f[i].name;
		uint64_t v;

		if (f[i].hid == IBA_HID_LRH)
			v = iba_field_get(&f[i], lrh);
		else if (f[i].hid == IBA_HID_BTH)
			v = iba_field_get(&f[i], bth);
		else
			continue;
		seen++;
		if (!strcmp(nm, "lrh.lnh"))
			assert_int_equal(v, 2);
		else if (!strcmp(nm, "lrh.dlid"))
			assert_int_equal(v, 2);
		else if (!strcmp(nm, "lrh.pktlen"))
			assert_int_equal(v, 8);
		else if (!strcmp(nm, "lrh.slid"))
			assert_int_equal(v, 1);
		else if (!strcmp(nm, "bth.opcode"))
			assert_int_equal(v, 4);
		else if (!strcmp(nm, "bth.padcnt"))
			assert_int_equal(v, 3);
		else if (!strcmp(nm, "bth.pkey"))
			assert_int_equal(v, 0xffff);
		else if (!strcmp(nm, "bth.dqpn"))
			assert_int_equal(v, 0x12);
		else if (!strcmp(nm, "bth.ackreq"))
			assert_int_equal(v, 1);
		else if (!strcmp(nm, "bth.psn"))
			assert_int_equal(v, 0x100);
		else
			assert_int_equal(v, 0);
	}
	assert_int_equal(seen, 7 + 11);
}

/* ---- PSN, AETH, MTU ---------------------------------------------------------- */

static void test_psn(void **state)
{
	assert_int_equal(iba_psn_add(0xFFFFFF, 1), 0);
	assert_int_equal(iba_psn_add(0xFFFFF0, 0x20), 0x10);
	assert_int_equal(iba_psn_add(5, 0), 5);
	assert_int_equal(iba_psn_add(0, 0xFFFFFF), 0xFFFFFF);
	assert_int_equal(iba_psn_add(1, 0xFFFFFFFF), 0);

	assert_int_equal(iba_psn_cmp(7, 7), 0);
	assert_true(iba_psn_cmp(0, 0xFFFFFF) > 0);
	assert_true(iba_psn_cmp(0xFFFFFF, 0) < 0);
	assert_true(iba_psn_cmp(0x10, 0xFFFFF0) > 0);
	assert_true(iba_psn_cmp(100, 99) > 0);
	assert_true(iba_psn_cmp(99, 100) < 0);
	/* Window: ahead by up to 2^23 - 1, behind by up to 2^23. */
	assert_true(iba_psn_cmp(0x7FFFFF, 0) > 0);
	assert_true(iba_psn_cmp(0x800000, 0) < 0);
	assert_true(iba_psn_cmp(0, 0x800000) < 0);
	assert_true(iba_psn_cmp(0x123456 + 0x7FFFFF, 0x123456) > 0);
	/* Upper bits of the arguments are ignored. */
	assert_int_equal(iba_psn_cmp(0xFF000005, 5), 0);

	assert_int_equal(iba_psn_diff(0x10, 0xFFFFF0), 0x20);
	assert_int_equal(iba_psn_diff(0xFFFFF0, 0x10), -0x20);
	assert_int_equal(iba_psn_diff(0x800000, 0), -0x800000);
	assert_int_equal(iba_psn_diff(0x7FFFFF, 0), 0x7FFFFF);
}

static void test_rnr_timer(void **state)
{
	/* iba-transport.md §3, in ms x 1000. */
	static const uint32_t us[32] = {
		655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1280,
		1920, 2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720, 40960, 61440,
		81920, 122880, 163840, 245760, 327680, 491520,
	};
	unsigned c;

	for (c = 0; c < 32; c++)
		assert_int_equal(iba_rnr_timer_us((uint8_t)c), us[c]);
	assert_int_equal(iba_rnr_timer_us(25), 61440);	/* not rxe's 61410 */
	assert_int_equal(iba_rnr_timer_us(0), 655360);
	assert_int_equal(iba_rnr_timer_us(0x2E), 1280);	/* whole syndrome: RNR, 14 */
	assert_int_equal(iba_aeth_type(0x2E), IBA_AETH_RNR_NAK);
	assert_int_equal(iba_aeth_value(0x2E), 14);
	assert_int_equal(iba_aeth_type(0x60 | IBA_NAK_PSN_SEQ), IBA_AETH_NAK);
	assert_int_equal(iba_aeth_type(0x1F), IBA_AETH_ACK);
}

static void test_credits(void **state)
{
	static const uint32_t cr[31] = {
		0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512,
		768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768,
	};
	uint32_t free_rwqes;
	unsigned c;

	for (c = 0; c < 31; c++) {
		assert_int_equal(iba_aeth_credits((uint8_t)c), cr[c]);
		assert_int_equal(iba_aeth_credit_code(cr[c]), c);
	}
	assert_int_equal(iba_aeth_credits(IBA_AETH_CREDIT_INVALID), UINT32_MAX);
	assert_int_equal(iba_aeth_credits(0x1F), UINT32_MAX);
	assert_int_equal(iba_aeth_credit_code(5), 4);		/* 4 credits */
	assert_int_equal(iba_aeth_credit_code(7), 5);		/* 6 credits */
	assert_int_equal(iba_aeth_credit_code(32767), 29);
	assert_int_equal(iba_aeth_credit_code(UINT32_MAX), 30);
	for (free_rwqes = 0; free_rwqes < 70000; free_rwqes++) {
		c = iba_aeth_credit_code(free_rwqes);
		assert_true(c <= 30);
		assert_true(iba_aeth_credits((uint8_t)c) <= free_rwqes);
		assert_true(c == 30 || iba_aeth_credits((uint8_t)(c + 1)) > free_rwqes);
	}
}

static void test_mtu(void **state)
{
	assert_int_equal(iba_mtu_bytes(0), 0);
	assert_int_equal(iba_mtu_bytes(1), 256);
	assert_int_equal(iba_mtu_bytes(2), 512);
	assert_int_equal(iba_mtu_bytes(3), 1024);
	assert_int_equal(iba_mtu_bytes(4), 2048);
	assert_int_equal(iba_mtu_bytes(5), 4096);
	assert_int_equal(iba_mtu_bytes(6), 0);
	assert_int_equal(iba_mtu_bytes(~0u), 0);
	assert_int_equal(iba_pad(0), 0);
	assert_int_equal(iba_pad(5), 3);
	assert_int_equal(iba_pad(6), 2);
	assert_int_equal(iba_pad(7), 1);
	assert_int_equal(iba_pad(4096), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_opcode_names),
		cmocka_unit_test(test_opcode_hdrs_offsets),
		cmocka_unit_test(test_opcode_flags),
		cmocka_unit_test(test_field_table_layout),
		cmocka_unit_test(test_field_put_get_isolation),
		cmocka_unit_test(test_field_build_isolation),
		cmocka_unit_test(test_field_known_bytes),
		cmocka_unit_test(test_psn),
		cmocka_unit_test(test_rnr_timer),
		cmocka_unit_test(test_credits),
		cmocka_unit_test(test_mtu),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
