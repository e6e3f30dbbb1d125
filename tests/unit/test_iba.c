// SPDX-License-Identifier: MIT
/*
 * Unit tests for src/iba/ packets and CRCs: every vector of iba-transport.md
 * §7 (decode, CRCs, rebuild byte for byte), every decode error path, ICRC
 * masking invariance, the VCRC tables and the RoCEv2 ICRC. IBA 7.7-7.8, 9.2-9.3.
 * Vectors are embedded (copied from shared/research/iba-vectors/vectors.json);
 * nothing is read at run time.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <endian.h>
#include <zlib.h>
#include <cmocka.h>

#include "iba/iba.h"
#include "iba/vcrc_table.h"

#define ALL_CHECKS (IBA_CHECK_ICRC | IBA_CHECK_VCRC | IBA_HAS_VCRC)

/* ---- helpers --------------------------------------------------------------- */

static size_t unhex(const char *s, uint8_t *out, size_t max)
{
	size_t n = 0;

	while (s[0] && s[1]) {
		unsigned v;

		assert_true(n < max);
		assert_int_equal(sscanf(s, "%2x", &v), 1);
		out[n++] = (uint8_t)v;
		s += 2;
	}
	assert_int_equal(s[0], '\0');
	return n;
}

static uint32_t ld_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static uint64_t member_get(const struct iba_pkt *p, const struct iba_field *f)
{
	const uint8_t *m = (const uint8_t *)p + f->pkt_off;
	uint8_t v8;
	uint16_t v16;
	uint32_t v32;
	uint64_t v64;

	switch (f->pkt_size) {
	case 1: memcpy(&v8, m, 1); return v8;
	case 2: memcpy(&v16, m, 2); return v16;
	case 4: memcpy(&v32, m, 4); return v32;
	case 8: memcpy(&v64, m, 8); return v64;
	}
	fail_msg("bad member size %u for %s", f->pkt_size, f->name);
	return 0;
}

/* Is header hid present in a packet with this LNH and opcode? */
static bool hdr_present(unsigned hid, const struct iba_pkt *p)
{
	if (hid == IBA_HID_LRH || hid == IBA_HID_BTH)
		return true;
	if (hid == IBA_HID_GRH)
		return p->lrh.lnh == IBA_LNH_GLOBAL;
	return iba_opcode_info(p->bth.opcode)->hdrs & (1u << (hid - IBA_HID_RDETH));
}

/* Every field of every header present must match. */
static void assert_hdrs_equal(const struct iba_pkt *got, const struct iba_pkt *want)
{
	const struct iba_field *f;
	size_t i, n;

	f = iba_fields(&n);
	for (i = 0; i < n; i++) {
		if (!hdr_present(f[i].hid, want))
			continue;
		if (member_get(got, &f[i]) != member_get(want, &f[i]))
			fail_msg("%s: got %#llx want %#llx", f[i].name,
				 (unsigned long long)member_get(got, &f[i]),
				 (unsigned long long)member_get(want, &f[i]));
	}
	if (want->lrh.lnh == IBA_LNH_GLOBAL) {
		assert_memory_equal(got->grh.sgid, want->grh.sgid, 16);
		assert_memory_equal(got->grh.dgid, want->grh.dgid, 16);
	}
}

/* Recompute ICRC and VCRC of a native packet of n bytes (VCRC included). */
static void refresh_crcs(uint8_t *b, size_t n)
{
	uint32_t ic = iba_icrc(b, n - 6);
	uint16_t vc;

	b[n - 6] = (uint8_t)ic;
	b[n - 5] = (uint8_t)(ic >> 8);
	b[n - 4] = (uint8_t)(ic >> 16);
	b[n - 3] = (uint8_t)(ic >> 24);
	vc = iba_vcrc(b, n - 2);
	b[n - 2] = (uint8_t)vc;
	b[n - 1] = (uint8_t)(vc >> 8);
}

static void refresh_vcrc(uint8_t *b, size_t n)
{
	uint16_t vc = iba_vcrc(b, n - 2);

	b[n - 2] = (uint8_t)vc;
	b[n - 1] = (uint8_t)(vc >> 8);
}

/* Decode from an exact-size heap copy, so that ASan sees any over-read. */
static int decode_exact(const uint8_t *b, size_t n, unsigned flags, struct iba_pkt *p)
{
	uint8_t *c = malloc(n ? n : 1);
	int rc;

	assert_non_null(c);
	memcpy(c, b, n);
	rc = iba_decode(c, n, flags, p);
	free(c);
	return rc;
}

/* ---- the vectors of iba-transport.md §7 ------------------------------------- */

/*
 * Hex copied from shared/research/iba-vectors/vectors.json ("native_hex",
 * "rocev2_ipv4_hex"); `want` is written from each vector's note and the
 * common parameters (P_Key 0xFFFF, QPs 0x11/0x12, LIDs 1/2, VA
 * 0x00007f0000001000, R_Key 0x1234), not from decoding the hex.
 */
enum payload_kind { PL_NONE, PL_STR, PL_IOTA };

struct vec {
	const char *name;
	const char *native;
	const char *rocev2;
	const char *icrc_wire, *vcrc_wire;
	struct iba_pkt want;
	uint32_t imm;		/* ImmDt, host order (want.immdt_be is set from it) */
	enum payload_kind pk;
	const char *str;
	uint32_t paylen;
};

#define LRH_FWD(words) { .lnh = 2, .dlid = 2, .pktlen = (words), .slid = 1 }
#define LRH_BACK(words) { .lnh = 2, .dlid = 1, .pktlen = (words), .slid = 2 }
#define VA 0x00007f0000001000ull

static const struct vec vecs[] = {
	{
		.name = "rc_send_only",
		.native = "00020002000800010430ffff000000128000010048656c6c6f0000002c7c890f0543",
		.rocev2 = "45000034000040004011b765c0a80101c0a80102c00012b7002000000430ffff"
			  "000000128000010048656c6c6f00000005dd9e7d",
		.icrc_wire = "2c7c890f", .vcrc_wire = "0543",
		.want = { .lrh = LRH_FWD(8), .bth = { .opcode = 0x04, .padcnt = 3,
			  .pkey = 0xffff, .dqpn = 0x12, .ackreq = 1, .psn = 0x100 } },
		.pk = PL_STR, .str = "Hello", .paylen = 5,
	},
	{
		.name = "rc_rdma_write_first",
		.native = "00020002004a00010600ffff000000120000010100007f0000001000000012340000"
			  "0200000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
			  "202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f4041"
			  "42434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f60616263"
			  "6465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f808182838485"
			  "868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9fa0a1a2a3a4a5a6a7"
			  "a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebfc0c1c2c3c4c5c6c7c8c9"
			  "cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedfe0e1e2e3e4e5e6e7e8e9eaeb"
			  "ecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff57bb7f749197",
		.rocev2 = "4500013c000040004011b65dc0a80101c0a80102c00012b7012800000600ffff0000"
			  "00120000010100007f0000001000000012340000020000010203040506070809"
			  "0a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20212223242526272829"
			  "2a2b2c2d2e2f303132333435363738393a3b3c3d3e3f40414243444546474849"
			  "4a4b4c4d4e4f505152535455565758595a5b5c5d5e5f60616263646566676869"
			  "6a6b6c6d6e6f707172737475767778797a7b7c7d7e7f80818283848586878889"
			  "8a8b8c8d8e8f909192939495969798999a9b9c9d9e9fa0a1a2a3a4a5a6a7a8a9"
			  "aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebfc0c1c2c3c4c5c6c7c8c9"
			  "cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedfe0e1e2e3e4e5e6e7e8e9"
			  "eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeffe0cdcb2e",
		.icrc_wire = "57bb7f74", .vcrc_wire = "9197",
		.want = { .lrh = LRH_FWD(0x4a), .bth = { .opcode = 0x06, .pkey = 0xffff,
			  .dqpn = 0x12, .psn = 0x101 },
			  .reth = { .va = VA, .rkey = 0x1234, .dmalen = 512 } },
		.pk = PL_IOTA, .paylen = 256,
	},
	{
		.name = "rc_rdma_read_request",
		.native = "00020002000a00010c00ffff000000128000010300007f0000001000000012340000"
			  "001033689522f758",
		.rocev2 = "4500003c000040004011b75dc0a80101c0a80102c00012b7002800000c00ffff0000"
			  "00128000010300007f00000010000000123400000010b8516692",
		.icrc_wire = "33689522", .vcrc_wire = "f758",
		.want = { .lrh = LRH_FWD(0x0a), .bth = { .opcode = 0x0c, .pkey = 0xffff,
			  .dqpn = 0x12, .ackreq = 1, .psn = 0x103 },
			  .reth = { .va = VA, .rkey = 0x1234, .dmalen = 16 } },
	},
	{
		.name = "rc_read_response_only",
		.native = "00020001000b00021000ffff00000011000001031f000001000102030405060708"
			  "090a0b0c0d0e0f3c557a35f04f",
		.rocev2 = "45000040000040004011b759c0a80102c0a80101c00012b7002c00001000ffff0000"
			  "0011000001031f000001000102030405060708090a0b0c0d0e0f35840083",
		.icrc_wire = "3c557a35", .vcrc_wire = "f04f",
		.want = { .lrh = LRH_BACK(0x0b), .bth = { .opcode = 0x10, .pkey = 0xffff,
			  .dqpn = 0x11, .psn = 0x103 },
			  .aeth = { .syndrome = 0x1f, .msn = 1 } },
		.pk = PL_IOTA, .paylen = 16,
	},
	{
		.name = "rc_ack",
		.native = "00020001000700021100ffff00000011000001001f0000011647fdd69160",
		.rocev2 = "45000030000040004011b769c0a80102c0a80101c00012b7001c00001100ffff0000"
			  "0011000001001f0000010b927ec3",
		.icrc_wire = "1647fdd6", .vcrc_wire = "9160",
		.want = { .lrh = LRH_BACK(7), .bth = { .opcode = 0x11, .pkey = 0xffff,
			  .dqpn = 0x11, .psn = 0x100 },
			  .aeth = { .syndrome = 0x1f, .msn = 1 } },
	},
	{
		.name = "rc_rnr_nak",
		.native = "00020001000700021100ffff00000011000001042e000001127eea6b2adb",
		.rocev2 = "45000030000040004011b769c0a80102c0a80101c00012b7001c00001100ffff0000"
			  "0011000001042e0000010fab697e",
		.icrc_wire = "127eea6b", .vcrc_wire = "2adb",
		.want = { .lrh = LRH_BACK(7), .bth = { .opcode = 0x11, .pkey = 0xffff,
			  .dqpn = 0x11, .psn = 0x104 },
			  .aeth = { .syndrome = 0x2e, .msn = 1 } },
	},
	{
		.name = "rc_nak_psn_seq",
		.native = "00020001000700021100ffff0000001100000104600000011c5121102c68",
		.rocev2 = "45000030000040004011b769c0a80102c0a80101c00012b7001c00001100ffff0000"
			  "001100000104600000010184a205",
		.icrc_wire = "1c512110", .vcrc_wire = "2c68",
		.want = { .lrh = LRH_BACK(7), .bth = { .opcode = 0x11, .pkey = 0xffff,
			  .dqpn = 0x11, .psn = 0x104 },
			  .aeth = { .syndrome = 0x60, .msn = 1 } },
	},
	{
		.name = "rc_cmp_swap",
		.native = "00020002000d00011300ffff000000128000010500007f000000104000001234111111"
			  "11111111110000000000000000bb7f3c7ee916",
		.rocev2 = "45000048000040004011b751c0a80101c0a80102c00012b7003400001300ffff0000"
			  "00128000010500007f000000104000001234111111111111111100000000000000"
			  "0032a4f326",
		.icrc_wire = "bb7f3c7e", .vcrc_wire = "e916",
		.want = { .lrh = LRH_FWD(0x0d), .bth = { .opcode = 0x13, .pkey = 0xffff,
			  .dqpn = 0x12, .ackreq = 1, .psn = 0x105 },
			  .atomic = { .va = VA + 0x40, .rkey = 0x1234,
				      .swap_add = 0x1111111111111111ull, .compare = 0 } },
	},
	{
		.name = "rc_atomic_ack",
		.native = "00020001000900021200ffff00000011000001051f0000030000000000000000fc95"
			  "ffe45f1e",
		.rocev2 = "45000038000040004011b761c0a80102c0a80101c00012b7002400001200ffff0000"
			  "0011000001051f0000030000000000000000462ebd35",
		.icrc_wire = "fc95ffe4", .vcrc_wire = "5f1e",
		.want = { .lrh = LRH_BACK(9), .bth = { .opcode = 0x12, .pkey = 0xffff,
			  .dqpn = 0x11, .psn = 0x105 },
			  .aeth = { .syndrome = 0x1f, .msn = 3 }, .atomic_ack = 0 },
	},
	{
		.name = "ud_send_only",
		.native = "00020002000a00016400ffff0000001200000000111111110000001155442d544553"
			  "5421879e72284942",
		.rocev2 = "4500003c000040004011b75dc0a80101c0a80102c00012b7002800006400ffff0000"
			  "001200000000111111110000001155442d54455354210ca78198",
		.icrc_wire = "879e7228", .vcrc_wire = "4942",
		.want = { .lrh = LRH_FWD(0x0a), .bth = { .opcode = 0x64, .pkey = 0xffff,
			  .dqpn = 0x12, .psn = 0 },
			  .deth = { .qkey = 0x11111111, .src_qp = 0x11 } },
		.pk = PL_STR, .str = "UD-TEST!", .paylen = 8,
	},
	{
		.name = "ud_send_only_imm",
		.native = "00020002000a00016590ffff00000012000000011111111100000011deadbeef6162"
			  "6300e37338dc3ba2",
		.rocev2 = "4500003c000040004011b75dc0a80101c0a80102c00012b7002800006590ffff0000"
			  "0012000000011111111100000011deadbeef61626300684acb6c",
		.icrc_wire = "e37338dc", .vcrc_wire = "3ba2",
		.want = { .lrh = LRH_FWD(0x0a), .bth = { .opcode = 0x65, .se = 1, .padcnt = 1,
			  .pkey = 0xffff, .dqpn = 0x12, .psn = 1 },
			  .deth = { .qkey = 0x11111111, .src_qp = 0x11 } },
		.imm = 0xDEADBEEF, .pk = PL_STR, .str = "abc", .paylen = 3,
	},
	{
		.name = "xrc_send_only",
		.native = "0002000200080001a400ffff000000128000020000000042585243211648bd17cbdd",
		.rocev2 = "45000034000040004011b765c0a80101c0a80102c00012b700200000a400ffff0000"
			  "00128000020000000042585243213fe9aa65",
		.icrc_wire = "1648bd17", .vcrc_wire = "cbdd",
		.want = { .lrh = LRH_FWD(8), .bth = { .opcode = 0xa4, .pkey = 0xffff,
			  .dqpn = 0x12, .ackreq = 1, .psn = 0x200 }, .xrc_srqn = 0x42 },
		.pk = PL_STR, .str = "XRC!", .paylen = 4,
	},
	{
		.name = "ud_send_only_grh_native",
		.native = "00030002001400016000000000201b40fe800000000000000000000000000001fe80"
			  "00000000000000000000000000026420ffff00000012000000021111111100000011"
			  "4752482d5544000080d593800005",
		.icrc_wire = "80d59380", .vcrc_wire = "0005",
		.want = { .lrh = { .lnh = 3, .dlid = 2, .pktlen = 0x14, .slid = 1 },
			  .grh = { .ipver = 6, .paylen = 32, .nxthdr = 0x1b, .hoplmt = 64,
				   .sgid = { 0xfe, 0x80, [15] = 1 },
				   .dgid = { 0xfe, 0x80, [15] = 2 } },
			  .bth = { .opcode = 0x64, .padcnt = 2, .pkey = 0xffff, .dqpn = 0x12,
				   .psn = 2 },
			  .deth = { .qkey = 0x11111111, .src_qp = 0x11 } },
		.pk = PL_STR, .str = "GRH-UD", .paylen = 6,
	},
};

#define NVECS (sizeof(vecs) / sizeof(vecs[0]))

/* RoCEv2 CNP (vectors.json "cnp_rocev2"): opcode 0x81, BECN, 16 zero bytes. */
static const char cnp_rocev2[] =
	"4500003c000040004011b75dc0a80102c0a80101c00012b7002800008100ffff4000001100"
	"0000000000000000000000000000000000000038b207cb";

/* The 52-byte RC RDMA_WRITE_ONLY packet (LNH 2, VL 7) of Mellanox's MPGA
 * generator, as quoted in iba-vectors/verify_vectors.py; ICRC 96 25 b7 5a. */
static const char mpga_hex[] =
	"7012375c000e17d20a2024870087b1b3000dec2a01710a1c015d400238f27a050000000e"
	"bb884d85fd5cfba4728bc0690ed40000";

static struct iba_pkt want_of(const struct vec *v)
{
	struct iba_pkt p = v->want;

	p.immdt_be = htobe32(v->imm);
	return p;
}

static void vec_payload(const struct vec *v, uint8_t *out)
{
	uint32_t i;

	if (v->pk == PL_STR)
		memcpy(out, v->str, v->paylen);
	else
		for (i = 0; i < v->paylen; i++)
			out[i] = (uint8_t)i;
}

static void test_vectors_decode(void **state)
{
	uint8_t b[512], icw[4], vcw[2], pl[256];
	struct iba_pkt p;
	size_t i, n;

	for (i = 0; i < NVECS; i++) {
		const struct vec *v = &vecs[i];
		struct iba_pkt want = want_of(v);

		n = unhex(v->native, b, sizeof(b));
		unhex(v->icrc_wire, icw, 4);
		unhex(v->vcrc_wire, vcw, 2);
		assert_memory_equal(b + n - 6, icw, 4);
		assert_memory_equal(b + n - 2, vcw, 2);

		/* The CRC functions alone. */
		assert_int_equal(iba_icrc(b, n - 6), ld_le32(icw));
		assert_int_equal(iba_vcrc(b, n - 2), vcw[0] | vcw[1] << 8);

		/* Full decode with every check, and with none. */
		assert_int_equal(decode_exact(b, n, ALL_CHECKS, &p), IBA_OK);
		assert_hdrs_equal(&p, &want);
		assert_ptr_equal(p.op, iba_opcode_info(v->want.bth.opcode));
		assert_int_equal(p.paylen, v->paylen);
		assert_int_equal(p.hdr_len, n - 6 - v->paylen - v->want.bth.padcnt);
		vec_payload(v, pl);
		assert_memory_equal(b + p.hdr_len, pl, v->paylen);
		assert_int_equal(iba_decode(b, n, ALL_CHECKS, &p), IBA_OK);
		assert_ptr_equal(p.payload, b + p.hdr_len);
		assert_int_equal(iba_decode(b, n, IBA_HAS_VCRC, &p), IBA_OK);
		assert_hdrs_equal(&p, &want);
		/* Without the VCRC in the buffer. */
		assert_int_equal(decode_exact(b, n - 2, IBA_CHECK_ICRC, &p), IBA_OK);
		assert_hdrs_equal(&p, &want);
	}
}

static void test_vectors_build(void **state)
{
	uint8_t want[512], b[512];
	struct iba_pkt p;
	size_t i, n, hl, len;

	for (i = 0; i < NVECS; i++) {
		const struct vec *v = &vecs[i];

		n = unhex(v->native, want, sizeof(want));
		p = want_of(v);
		/* iba_finish must compute these. */
		p.lrh.pktlen = 0;
		p.bth.padcnt = 0;
		p.grh.paylen = 0;
		memset(b, 0xA5, sizeof(b));	/* dirty buffer: reserved bits and pad */
		hl = iba_build_headers(b, &p);
		assert_int_equal(hl, n - 6 - v->paylen - v->want.bth.padcnt);
		vec_payload(v, b + hl);
		len = iba_finish(b, hl, v->paylen, IBA_HAS_VCRC);
		assert_int_equal(len, n);
		assert_memory_equal(b, want, n);
		/* Without the VCRC. */
		memset(b, 0x5A, sizeof(b));
		hl = iba_build_headers(b, &p);
		vec_payload(v, b + hl);
		assert_int_equal(iba_finish(b, hl, v->paylen, 0), n - 2);
		assert_memory_equal(b, want, n - 2);
	}
}

static void test_rocev2_icrc(void **state)
{
	uint8_t b[512];
	size_t i, n;

	for (i = 0; i < NVECS; i++) {
		if (!vecs[i].rocev2)
			continue;
		n = unhex(vecs[i].rocev2, b, sizeof(b));
		assert_int_equal(iba_icrc_rocev2_ipv4(b, n - 4), ld_le32(b + n - 4));
	}
	n = unhex(cnp_rocev2, b, sizeof(b));
	assert_int_equal(iba_icrc_rocev2_ipv4(b, n - 4), ld_le32(b + n - 4));
	assert_int_equal(b[28], 0x81);
	assert_string_equal(iba_opcode_info(b[28])->name, "CNP_ROCE");
}

static void test_mpga_icrc(void **state)
{
	uint8_t b[64];
	struct iba_pkt p;
	size_t n = unhex(mpga_hex, b, sizeof(b));

	assert_int_equal(n, 52);
	assert_int_equal(iba_icrc(b, n), 0x5ab72596);	/* wire 96 25 b7 5a */
	b[n++] = 0x96;
	b[n++] = 0x25;
	b[n++] = 0xb7;
	b[n++] = 0x5a;
	assert_int_equal(decode_exact(b, n, IBA_CHECK_ICRC, &p), IBA_OK);
	assert_int_equal(p.lrh.vl, 7);
	assert_int_equal(p.lrh.pktlen, 14);
	assert_string_equal(p.op->name, "RC_RDMA_WRITE_ONLY");
	assert_int_equal(p.bth.padcnt, 2);
	assert_int_equal(p.paylen, 52 - 8 - 12 - 16 - 2);
}

/* ---- decode error paths ------------------------------------------------------ */

static void test_err_truncated(void **state)
{
	uint8_t b[512];
	struct iba_pkt p;
	size_t i, n, l;

	for (i = 0; i < NVECS; i++) {
		n = unhex(vecs[i].native, b, sizeof(b));
		for (l = 0; l < n; l++) {
			assert_int_equal(decode_exact(b, l, ALL_CHECKS, &p), IBA_ERR_SHORT);
			assert_int_equal(decode_exact(b, l, 0, &p),
					 l < n - 2 ? IBA_ERR_SHORT :
					 l == n - 2 ? IBA_OK : IBA_ERR_PKTLEN);
		}
		/* One byte too many. */
		b[n] = 0;
		assert_int_equal(decode_exact(b, n + 1, ALL_CHECKS, &p), IBA_ERR_PKTLEN);
	}
}

static void set_pktlen(uint8_t *b, unsigned words)
{
	b[4] = (uint8_t)((b[4] & 0xF8) | ((words >> 8) & 7));
	b[5] = (uint8_t)words;
}

static void test_err_pktlen(void **state)
{
	uint8_t b[512], c[512];
	struct iba_pkt p;
	size_t i, n;

	for (i = 0; i < NVECS; i++) {
		n = unhex(vecs[i].native, b, sizeof(b));
		memcpy(c, b, n);
		set_pktlen(c, vecs[i].want.lrh.pktlen - 1);	/* buffer too long */
		assert_int_equal(decode_exact(c, n, IBA_HAS_VCRC, &p), IBA_ERR_PKTLEN);
		set_pktlen(c, vecs[i].want.lrh.pktlen + 1);	/* buffer too short */
		assert_int_equal(decode_exact(c, n, IBA_HAS_VCRC, &p), IBA_ERR_SHORT);
		set_pktlen(c, 0);
		assert_int_equal(decode_exact(c, 2, IBA_HAS_VCRC, &p), IBA_ERR_SHORT);
		assert_int_equal(decode_exact(c, 8, IBA_HAS_VCRC, &p), IBA_ERR_PKTLEN);
	}

	/* PktLen too small for LRH+BTH+ICRC (24 bytes): 5 words. */
	n = unhex(vecs[0].native, b, sizeof(b));
	set_pktlen(b, 5);
	assert_int_equal(decode_exact(b, 22, IBA_HAS_VCRC, &p), IBA_ERR_PKTLEN);
	/* ... and for LRH+GRH+BTH+ICRC (64 bytes) on a global packet. */
	n = unhex(vecs[NVECS - 1].native, b, sizeof(b));
	set_pktlen(b, 15);
	assert_int_equal(decode_exact(b, 62, IBA_HAS_VCRC, &p), IBA_ERR_PKTLEN);
	set_pktlen(b, 16);			/* fits; then GRH.PayLen is wrong */
	refresh_crcs(b, 66);
	assert_int_equal(decode_exact(b, 66, ALL_CHECKS, &p), IBA_ERR_GRH);

	/* ETHs do not fit: an ACK (room for AETH) relabelled READ request (RETH). */
	n = unhex(vecs[4].native, b, sizeof(b));
	b[8] = 0x0c;
	refresh_crcs(b, n);
	assert_int_equal(decode_exact(b, n, ALL_CHECKS, &p), IBA_ERR_PKTLEN);

	/* Payload on an opcode without one: an ACK with 4 extra bytes. */
	{
		struct iba_pkt a = vecs[4].want;
		size_t hl = iba_build_headers(b, &a);

		memcpy(b + hl, "abcd", 4);
		n = iba_finish(b, hl, 4, IBA_HAS_VCRC);
		assert_int_equal(decode_exact(b, n, ALL_CHECKS, &p), IBA_ERR_PKTLEN);
	}
}

static void test_err_lnh(void **state)
{
	uint8_t b[512];
	struct iba_pkt p;
	size_t i, n;
	unsigned lnh;

	for (i = 0; i < NVECS; i++) {
		for (lnh = IBA_LNH_RAW; lnh <= IBA_LNH_IP6; lnh++) {
			n = unhex(vecs[i].native, b, sizeof(b));
			b[1] = (uint8_t)((b[1] & ~3) | lnh);
			refresh_vcrc(b, n);
			assert_int_equal(decode_exact(b, n, ALL_CHECKS, &p), IBA_ERR_LNH);
			assert_int_equal(iba_icrc(b, n - 6), 0);	/* raw: no ICRC */
		}
	}
}

static void test_err_tver_opcode(void **state)
{
	static const uint8_t reserved[] = { 0x15, 0x18, 0x1b, 0x1e, 0x1f, 0x2c, 0x3f,
					    0x4c + 0x10, 0x56, 0x60, 0x63, 0x66, 0x82,
					    0x9f, 0xb5, 0xbc, 0xc0, 0xe0, 0xff };
	uint8_t b[512];
	struct iba_pkt p;
	size_t i, j, n, bth;
	unsigned tv;

	for (i = 0; i < NVECS; i++) {
		bth = vecs[i].want.lrh.lnh == IBA_LNH_GLOBAL ? 48 : 8;
		for (tv = 1; tv < 16; tv++) {
			n = unhex(vecs[i].native, b, sizeof(b));
			b[bth + 1] = (uint8_t)((b[bth + 1] & 0xF0) | tv);
			refresh_crcs(b, n);
			assert_int_equal(decode_exact(b, n, ALL_CHECKS, &p), IBA_ERR_TVER);
		}
		for (j = 0; j < sizeof(reserved); j++) {
			n = unhex(vecs[i].native, b, sizeof(b));
			b[bth] = reserved[j];
			refresh_crcs(b, n);
			assert_int_equal(decode_exact(b, n, ALL_CHECKS, &p), IBA_ERR_OPCODE);
		}
	}
}

static void test_err_grh(void **state)
{
	const struct vec *v = &vecs[NVECS - 1];
	uint8_t b[512];
	struct iba_pkt p;
	size_t n;

	n = unhex(v->native, b, sizeof(b));
	b[8 + 6] = 0x1c;			/* NxtHdr */
	refresh_crcs(b, n);
	assert_int_equal(decode_exact(b, n, ALL_CHECKS, &p), IBA_ERR_GRH);

	n = unhex(v->native, b, sizeof(b));
	b[8] = (uint8_t)((4 << 4) | (b[8] & 0x0F));	/* IPVer 4 */
	refresh_crcs(b, n);
	assert_int_equal(decode_exact(b, n, ALL_CHECKS, &p), IBA_ERR_GRH);

	n = unhex(v->native, b, sizeof(b));
	b[8 + 5] += 4;				/* PayLen */
	refresh_crcs(b, n);
	assert_int_equal(decode_exact(b, n, ALL_CHECKS, &p), IBA_ERR_GRH);

	/* A local packet relabelled global: the BTH is read as a GRH. */
	n = unhex(vecs[1].native, b, sizeof(b));
	b[1] |= 3;
	refresh_crcs(b, n);
	assert_int_equal(decode_exact(b, n, ALL_CHECKS, &p), IBA_ERR_GRH);
}

static void test_err_pad(void **state)
{
	uint8_t b[512];
	struct iba_pkt p, s;
	size_t n, hl;
	unsigned pad;

	for (pad = 1; pad <= 3; pad++) {
		/* An ACK with PadCnt != 0. */
		n = unhex(vecs[4].native, b, sizeof(b));
		b[9] = (uint8_t)(b[9] | pad << 4);
		refresh_crcs(b, n);
		assert_int_equal(decode_exact(b, n, ALL_CHECKS, &p), IBA_ERR_PAD);

		/* A SEND_ONLY without payload but with pad. */
		s = vecs[0].want;
		hl = iba_build_headers(b, &s);
		n = iba_finish(b, hl, 0, IBA_HAS_VCRC);
		assert_int_equal(decode_exact(b, n, ALL_CHECKS, &p), IBA_OK);
		assert_int_equal(p.paylen, 0);
		b[9] = (uint8_t)(b[9] | pad << 4);
		refresh_crcs(b, n);
		assert_int_equal(decode_exact(b, n, ALL_CHECKS, &p), IBA_ERR_PAD);
	}
}

static void test_err_crcs(void **state)
{
	uint8_t b[512];
	struct iba_pkt p;
	size_t i, n, k;
	unsigned bit;

	for (i = 0; i < NVECS; i++) {
		for (k = 0; k < 4; k++) {
			for (bit = 0; bit < 8; bit++) {
				n = unhex(vecs[i].native, b, sizeof(b));
				b[n - 6 + k] ^= (uint8_t)(1u << bit);
				/* The VCRC covers the ICRC and catches it first. */
				assert_int_equal(decode_exact(b, n, ALL_CHECKS, &p), IBA_ERR_VCRC);
				assert_int_equal(decode_exact(b, n, IBA_CHECK_ICRC | IBA_HAS_VCRC, &p),
						 IBA_ERR_ICRC);
				assert_int_equal(decode_exact(b, n, IBA_HAS_VCRC, &p), IBA_OK);
				refresh_vcrc(b, n);
				assert_int_equal(decode_exact(b, n, ALL_CHECKS, &p), IBA_ERR_ICRC);
				assert_int_equal(decode_exact(b, n - 2, IBA_CHECK_ICRC, &p),
						 IBA_ERR_ICRC);
			}
		}
		for (k = 0; k < 2; k++) {
			n = unhex(vecs[i].native, b, sizeof(b));
			b[n - 2 + k] ^= 0x10;
			assert_int_equal(decode_exact(b, n, ALL_CHECKS, &p), IBA_ERR_VCRC);
			/* CHECK_VCRC alone implies that the VCRC is there. */
			assert_int_equal(decode_exact(b, n, IBA_CHECK_VCRC, &p), IBA_ERR_VCRC);
			assert_int_equal(decode_exact(b, n, IBA_CHECK_ICRC | IBA_HAS_VCRC, &p),
					 IBA_OK);
		}
	}
}

/* Negative control and invariance: payload bits change the ICRC, variant
 * fields do not (but do change the VCRC). */
static void test_icrc_invariance(void **state)
{
	uint8_t b[512];
	struct iba_pkt p;
	size_t i, n, k;
	uint32_t ic;

	for (i = 0; i < NVECS; i++) {
		const struct vec *v = &vecs[i];
		bool global = v->want.lrh.lnh == IBA_LNH_GLOBAL;
		size_t bth = global ? 48 : 8;

		n = unhex(v->native, b, sizeof(b));
		ic = ld_le32(b + n - 6);

		/* Every invariant bit from the BTH to the end of the payload. */
		for (k = bth; k < n - 6; k++) {
			if (k == bth + 4)
				continue;
			b[k] ^= 0x01;
			assert_int_not_equal(iba_icrc(b, n - 6), ic);
			refresh_vcrc(b, n);
			assert_int_equal(decode_exact(b, n, ALL_CHECKS, &p), IBA_ERR_ICRC);
			b[k] ^= 0x01;
		}
		refresh_vcrc(b, n);

		/* Variant: BTH byte 4 (FECN, BECN, resv6). */
		b[bth + 4] ^= 0xFF;
		assert_int_equal(iba_icrc(b, n - 6), ic);
		assert_int_not_equal(iba_vcrc(b, n - 2), b[n - 2] | b[n - 1] << 8);
		b[bth + 4] ^= 0xFF;
		if (!global) {
			b[0] ^= 0xF0;			/* VL */
			assert_int_equal(iba_icrc(b, n - 6), ic);
			b[0] ^= 0xF0;
			for (k = 0; k < 8; k++) {	/* the rest of the LRH is invariant */
				uint8_t x = k == 0 ? 0x0F : k == 1 ? 0xFC : 0xFF;

				b[k] ^= x;
				assert_int_not_equal(iba_icrc(b, n - 6), ic);
				b[k] ^= x;
			}
		} else {
			for (k = 0; k < 8; k++) {	/* the whole LRH but LNH */
				uint8_t x = k == 1 ? 0xFC : 0xFF;

				b[k] ^= x;
				assert_int_equal(iba_icrc(b, n - 6), ic);
				b[k] ^= x;
			}
			b[8] ^= 0x0F;			/* TClass high nibble */
			b[9] ^= 0xFF;			/* TClass low, FlowLabel */
			b[10] ^= 0xFF;
			b[11] ^= 0xFF;
			b[15] ^= 0xFF;			/* HopLmt */
			assert_int_equal(iba_icrc(b, n - 6), ic);
			b[8] ^= 0x0F;
			b[9] ^= 0xFF;
			b[10] ^= 0xFF;
			b[11] ^= 0xFF;
			b[15] ^= 0xFF;
			for (k = 8; k < 48; k++) {	/* the rest of the GRH is invariant */
				if (k >= 9 && k <= 11)
					continue;
				if (k == 15)
					continue;
				b[k] ^= k == 8 ? 0xF0 : 0xFF;
				assert_int_not_equal(iba_icrc(b, n - 6), ic);
				b[k] ^= k == 8 ? 0xF0 : 0xFF;
			}
		}
		assert_int_equal(decode_exact(b, n, ALL_CHECKS, &p), IBA_OK);
	}
}

/* RoCEv2: TOS, TTL, IP checksum, UDP checksum and BTH byte 4 are masked;
 * addresses, ports, lengths and the payload are not. */
static void test_rocev2_invariance(void **state)
{
	static const size_t variant[] = { 1, 8, 10, 11, 26, 27, 32 };
	static const size_t invariant[] = { 0, 2, 3, 4, 5, 6, 7, 9, 12, 15, 16, 19,
					    20, 21, 22, 23, 24, 25, 28, 29, 30, 31, 33, 39 };
	uint8_t b[512];
	size_t i, n;
	uint32_t ic;

	n = unhex(vecs[0].rocev2, b, sizeof(b));
	ic = ld_le32(b + n - 4);
	for (i = 0; i < sizeof(variant) / sizeof(variant[0]); i++) {
		b[variant[i]] ^= 0xFF;
		assert_int_equal(iba_icrc_rocev2_ipv4(b, n - 4), ic);
		b[variant[i]] ^= 0xFF;
	}
	for (i = 0; i < sizeof(invariant) / sizeof(invariant[0]); i++) {
		b[invariant[i]] ^= 0x01;
		assert_int_not_equal(iba_icrc_rocev2_ipv4(b, n - 4), ic);
		b[invariant[i]] ^= 0x01;
	}
	for (i = 40; i < n - 4; i++) {
		b[i] ^= 0x80;
		assert_int_not_equal(iba_icrc_rocev2_ipv4(b, n - 4), ic);
		b[i] ^= 0x80;
	}
}

/* ---- independent references: whole-packet masked copy + zlib, bitwise VCRC -- */

static uint32_t ref_icrc(const uint8_t *pkt, size_t len, int kind)
{
	uint8_t m[9000];
	size_t o;

	assert_true(len + 8 <= sizeof(m));
	memset(m, 0xFF, 8);
	memcpy(m + 8, pkt, len);
	switch (kind) {
	case 2:		/* native local: no dummy LRH */
		m[8] |= 0xF0;
		m[8 + 12] = 0xFF;
		return (uint32_t)crc32(0, m + 8, (uInt)len);
	case 3:		/* native global */
		memset(m + 8, 0xFF, 8);
		m[16] |= 0x0F;
		m[17] = m[18] = m[19] = 0xFF;
		m[23] = 0xFF;
		m[8 + 48 + 4] = 0xFF;
		return (uint32_t)crc32(0, m + 8, (uInt)len);
	case 4:		/* RoCEv2 IPv4 */
		o = 8 + (size_t)(m[8] & 0xF) * 4;
		m[9] = m[16] = m[18] = m[19] = 0xFF;
		m[o + 6] = m[o + 7] = 0xFF;
		m[o + 12] = 0xFF;
		return (uint32_t)crc32(0, m, (uInt)(len + 8));
	default:	/* RoCEv2 IPv6 */
		m[8] |= 0x0F;
		m[9] = m[10] = m[11] = 0xFF;
		m[15] = 0xFF;
		m[8 + 46] = m[8 + 47] = 0xFF;
		m[8 + 52] = 0xFF;
		return (uint32_t)crc32(0, m, (uInt)(len + 8));
	}
}

static uint16_t ref_vcrc(const uint8_t *p, size_t len)
{
	uint16_t c = 0xFFFF;
	size_t i;
	int k;

	for (i = 0; i < len; i++) {
		c ^= p[i];
		for (k = 0; k < 8; k++)
			c = (c & 1) ? (uint16_t)((c >> 1) ^ 0xD008) : (uint16_t)(c >> 1);
	}
	return c ^ 0xFFFF;
}

static void test_vcrc_tables(void **state)
{
	uint16_t t[16][256];
	unsigned n, k;
	int b;

	for (n = 0; n < 256; n++) {
		uint16_t c = (uint16_t)n;

		for (b = 0; b < 8; b++)
			c = (c & 1) ? (uint16_t)((c >> 1) ^ 0xD008) : (uint16_t)(c >> 1);
		t[0][n] = c;
	}
	for (k = 1; k < 16; k++)
		for (n = 0; n < 256; n++)
			t[k][n] = (uint16_t)((t[k - 1][n] >> 8) ^ t[0][t[k - 1][n] & 0xFF]);
	assert_memory_equal(t, vcrc_tab, sizeof(t));
	assert_int_equal(vcrc_tab[0][1], 0x1BA1);
}

static void test_crc_random(void **state)
{
	static uint8_t buf[4200 + 64];
	struct iba_pkt p, q;
	uint8_t *b;
	size_t len, off, i;
	unsigned seed = 12345;

	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)rand_r(&seed);

	/* VCRC at every length up to 100 and every alignment, and at 4 KiB. */
	for (off = 0; off < 8; off++)
		for (len = 0; len <= 100; len++)
			assert_int_equal(iba_vcrc(buf + off, len), ref_vcrc(buf + off, len));
	assert_int_equal(iba_vcrc(buf + 3, 4096 + 60), ref_vcrc(buf + 3, 4096 + 60));
	assert_int_equal(ref_vcrc((const uint8_t *)"", 0), 0);

	/* ICRC against the whole-copy reference, each packet kind. */
	for (len = 60; len < 4200; len += 97) {
		b = buf + (len & 7);
		b[1] = (uint8_t)((b[1] & ~3) | 2);
		assert_int_equal(iba_icrc(b, len), ref_icrc(b, len, 2));
		b[1] |= 3;
		assert_int_equal(iba_icrc(b, len), ref_icrc(b, len, 3));
		b[0] = 0x45;
		assert_int_equal(iba_icrc_rocev2_ipv4(b, len), ref_icrc(b, len, 4));
		b[0] = 0x47;			/* IHL 7: two option words */
		assert_int_equal(iba_icrc_rocev2_ipv4(b, len), ref_icrc(b, len, 4));
		b[0] = 0x60;
		assert_int_equal(iba_icrc_rocev2_ipv6(b, len), ref_icrc(b, len, 6));
	}

	/* Short inputs must not read past len (ASan) and must not crash. */
	for (len = 0; len < 60; len++) {
		uint8_t *c = malloc(len ? len : 1);

		memcpy(c, buf, len);
		if (len >= 2)
			c[1] = (uint8_t)((c[1] & ~3) | 2);
		(void)iba_icrc(c, len);
		if (len >= 2)
			c[1] |= 3;
		(void)iba_icrc(c, len);
		if (len >= 1)
			c[0] = 0x4F;
		(void)iba_icrc_rocev2_ipv4(c, len);
		(void)iba_icrc_rocev2_ipv6(c, len);
		(void)iba_vcrc(c, len);
		free(c);
	}

	/* A max-size (4 KiB payload) global packet round trip. */
	p = vecs[NVECS - 1].want;
	p.bth.opcode = 0x64;
	b = buf;
	len = iba_build_headers(b, &p);
	for (i = 0; i < 4093; i++)
		b[len + i] = (uint8_t)(i * 7);
	assert_int_equal(iba_finish(b, len, 4093, IBA_HAS_VCRC), len + 4093 + 3 + 6);
	assert_int_equal(decode_exact(b, len + 4093 + 9, ALL_CHECKS, &q), IBA_OK);
	assert_int_equal(q.paylen, 4093);
	assert_int_equal(q.bth.padcnt, 3);
	assert_int_equal(q.lrh.pktlen, (len + 4096 + 4) / 4);
	assert_int_equal(q.grh.paylen, 12 + 8 + 4096 + 4);
	assert_int_equal(iba_icrc(b, len + 4096), ref_icrc(b, len + 4096, 3));
}

/* ---- build/decode round trip over every opcode --------------------------- */

static uint64_t rnd64(unsigned *seed)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 4; i++)
		v = v << 16 ^ (uint64_t)(rand_r(seed) & 0xFFFF);
	return v;
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

static void test_roundtrip_all_opcodes(void **state)
{
	static uint8_t b[IBA_MAX_HDR_BYTES + 300];
	const struct iba_field *f;
	struct iba_pkt p, q;
	size_t nf, i, hl, len;
	unsigned op, rep, seed = 99;

	f = iba_fields(&nf);
	for (op = 0; op < 256; op++) {
		const struct iba_opcode_info *oi = iba_opcode_info((uint8_t)op);

		if (!oi->name)
			continue;
		for (rep = 0; rep < 8; rep++) {
			uint32_t paylen = (oi->flags & IBA_OP_PAYLOAD) ? rep * 37 % 257 : 0;

			memset(&p, 0, sizeof(p));
			for (i = 0; i < nf; i++)
				member_set(&p, &f[i], rnd64(&seed) & f[i].mask);
			p.lrh.lnh = rep & 1 ? IBA_LNH_GLOBAL : IBA_LNH_LOCAL;
			p.grh.ipver = 6;
			p.grh.nxthdr = 0x1B;
			for (i = 0; i < 16; i++) {
				p.grh.sgid[i] = (uint8_t)rand_r(&seed);
				p.grh.dgid[i] = (uint8_t)rand_r(&seed);
			}
			p.bth.opcode = (uint8_t)op;
			p.bth.tver = 0;
			hl = iba_build_headers(b, &p);
			assert_int_equal(hl, 8 + (rep & 1 ? 40 : 0) + 12 + oi->eth_len);
			assert_true(hl <= IBA_MAX_HDR_BYTES);
			memset(b + hl, 0xEE, paylen);
			len = iba_finish(b, hl, paylen, IBA_HAS_VCRC);
			assert_int_equal(decode_exact(b, len, ALL_CHECKS, &q), IBA_OK);
			p.lrh.pktlen = (uint16_t)((len - 2) / 4);
			p.bth.padcnt = (uint8_t)iba_pad(paylen);
			p.grh.paylen = (uint16_t)(len - 2 - 48);
			assert_hdrs_equal(&q, &p);
			assert_int_equal(q.paylen, paylen);
			assert_int_equal(q.hdr_len, hl);
			for (i = 0; i < IBA_HDR_COUNT; i++) {
				uint32_t bit = 1u << i;

				if (oi->hdrs & bit)
					assert_true(iba_eth_offset((uint8_t)op, bit) <
						    oi->eth_len);
			}
		}
	}
}

/*
 * The builder writes every header byte itself (it never reads the buffer,
 * which may hold anything: a reused inbox slot) and exactly what the field
 * table says: each field masked into its container, reserved bits zero.
 * Reference: a zeroed buffer with every field of every header present put
 * through iba_field_put at its header's offset.  Values are random over
 * the whole member, beyond the field's mask.
 */
static void test_build_matches_field_table(void **state)
{
	static uint8_t b[IBA_MAX_HDR_BYTES], ref[IBA_MAX_HDR_BYTES];
	const struct iba_field *f;
	struct iba_pkt p;
	size_t nf, i, hl;
	unsigned op, rep, seed = 7;

	(void)state;
	f = iba_fields(&nf);
	for (op = 0; op < 256; op++) {
		const struct iba_opcode_info *oi = iba_opcode_info((uint8_t)op);

		if (!oi->name)
			continue;
		for (rep = 0; rep < 16; rep++) {
			bool global = rep & 1;
			size_t bth = IBA_LRH_BYTES + (global ? IBA_GRH_BYTES : 0);

			memset(&p, 0, sizeof(p));
			for (i = 0; i < nf; i++)
				member_set(&p, &f[i], rnd64(&seed));
			p.lrh.lnh = global ? IBA_LNH_GLOBAL : IBA_LNH_LOCAL;
			p.bth.opcode = (uint8_t)op;
			for (i = 0; i < 16; i++) {
				p.grh.sgid[i] = (uint8_t)rand_r(&seed);
				p.grh.dgid[i] = (uint8_t)rand_r(&seed);
			}
			memset(b, rep * 17 + 1, sizeof(b)); /* garbage the builder must overwrite */
			hl = iba_build_headers(b, &p);
			assert_int_equal(hl, bth + IBA_BTH_BYTES + oi->eth_len);

			memset(ref, 0, sizeof(ref));
			for (i = 0; i < nf; i++) {
				unsigned hid = f[i].hid;
				size_t off;

				if (!hdr_present(hid, &p))
					continue;
				if (hid == IBA_HID_LRH)
					off = 0;
				else if (hid == IBA_HID_GRH)
					off = IBA_LRH_BYTES;
				else if (hid == IBA_HID_BTH)
					off = bth;
				else
					off = bth + IBA_BTH_BYTES +
					      iba_eth_offset((uint8_t)op, 1u << (hid - IBA_HID_RDETH));
				iba_field_put(&f[i], ref + off, member_get(&p, &f[i]));
			}
			if (global) {
				memcpy(ref + IBA_LRH_BYTES + 8, p.grh.sgid, 16);
				memcpy(ref + IBA_LRH_BYTES + 24, p.grh.dgid, 16);
			}
			if (memcmp(b, ref, hl)) {
				for (i = 0; i < hl && b[i] == ref[i]; i++)
					;
				fail_msg("opcode %#x %s: byte %zu is %#x, the field table says %#x", op,
					 global ? "GRH" : "LRH", i, b[i], ref[i]);
			}
		}
	}
}

static void test_strerror(void **state)
{
	int e, f;

	for (e = IBA_OK; e >= IBA_ERR_PAD; e--) {
		assert_non_null(iba_strerror(e));
		assert_string_not_equal(iba_strerror(e), "unknown error");
		for (f = e - 1; f >= IBA_ERR_PAD; f--)
			assert_string_not_equal(iba_strerror(e), iba_strerror(f));
	}
	assert_string_equal(iba_strerror(1), "unknown error");
	assert_string_equal(iba_strerror(IBA_ERR_PAD - 1), "unknown error");
	assert_string_equal(iba_strerror(-1000000), "unknown error");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vectors_decode),
		cmocka_unit_test(test_vectors_build),
		cmocka_unit_test(test_rocev2_icrc),
		cmocka_unit_test(test_mpga_icrc),
		cmocka_unit_test(test_err_truncated),
		cmocka_unit_test(test_err_pktlen),
		cmocka_unit_test(test_err_lnh),
		cmocka_unit_test(test_err_tver_opcode),
		cmocka_unit_test(test_err_grh),
		cmocka_unit_test(test_err_pad),
		cmocka_unit_test(test_err_crcs),
		cmocka_unit_test(test_icrc_invariance),
		cmocka_unit_test(test_rocev2_invariance),
		cmocka_unit_test(test_vcrc_tables),
		cmocka_unit_test(test_crc_random),
		cmocka_unit_test(test_roundtrip_all_opcodes),
		cmocka_unit_test(test_build_matches_field_table),
		cmocka_unit_test(test_strerror),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
