// SPDX-License-Identifier: MIT
/*
 * Fuzz harness for iba_decode() (src/iba/packet.c), libFuzzer style.
 *
 * Every input is decoded with every flag combination, from an exact-size
 * heap copy so that AddressSanitizer reports any read past len. A decode
 * that succeeds must describe the buffer consistently, must agree with the
 * field table and with the decodes under the other flags, and must survive
 * a rebuild: iba_build_headers() + payload + iba_finish() gives a packet
 * that decodes to the same fields and, when the original's CRCs were valid
 * and its reserved bits and pad bytes zero, to the same bytes. Any
 * violation prints what failed and calls abort().
 *
 * Built with tests/fuzz/driver.c (plain gcc, the ctest run) or with clang
 * -fsanitize=fuzzer (docs/fuzzing.md).
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "iba/iba.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
void fuzz_print_stats(FILE *out);

/* ---- failure reporting ---------------------------------------------------- */

static const uint8_t *g_buf;	/* the input being checked, for the report */
static size_t g_len;
static unsigned g_flags;

static void hexdump(FILE *out, const uint8_t *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		fprintf(out, "%02x%s", p[i], (i % 16 == 15 || i + 1 == len) ? "\n" : " ");
}

static void __attribute__((noreturn, format(printf, 4, 5)))
fail(const char *file, int line, const char *cond, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "fuzz_iba_decode: %s:%d: invariant violated (flags 0x%x, len %zu): (%s)",
		file, line, g_flags, g_len, cond);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (g_buf) {
		size_t n = g_len < 256 ? g_len : 256;

		fprintf(stderr, "first %zu bytes:\n", n);
		hexdump(stderr, g_buf, n);
	}
	abort();
}

#define CHECK(cond, ...) \
	do { if (!(cond)) fail(__FILE__, __LINE__, #cond, " " __VA_ARGS__); } while (0)

/* ---- field table helpers -------------------------------------------------- */

static const struct iba_field *fields;
static size_t n_fields;
/* Per header id: the bits that belong to some field (1) or are reserved (0). */
static uint8_t defined[IBA_HID_COUNT][IBA_GRH_BYTES];

static void init_tables(void)
{
	size_t i;

	if (fields)
		return;
	fields = iba_fields(&n_fields);
	for (i = 0; i < n_fields; i++) {
		const struct iba_field *f = &fields[i];

		if (f->hid >= IBA_HID_COUNT || f->off + f->bytes > iba_hdr_bytes(f->hid)) {
			fprintf(stderr, "fuzz_iba_decode: field %s outside its header\n", f->name);
			abort();
		}
		iba_field_put(f, defined[f->hid], UINT64_MAX);
	}
	/* SGID and DGID are byte arrays, not in the field table. */
	memset(defined[IBA_HID_GRH] + 8, 0xFF, 32);
}

static uint64_t member_get(const struct iba_pkt *p, const struct iba_field *f)
{
	const unsigned char *m = (const unsigned char *)p + f->pkt_off;
	uint8_t v8;
	uint16_t v16;
	uint32_t v32;
	uint64_t v64;

	switch (f->pkt_size) {
	case 1:
		memcpy(&v8, m, 1);
		return v8;
	case 2:
		memcpy(&v16, m, 2);
		return v16;
	case 4:
		memcpy(&v32, m, 4);
		return v32;
	default:
		memcpy(&v64, m, 8);
		return v64;
	}
}

/* Byte offset of header hid in the packet, or -1 if the packet has none. */
static long hdr_offset(const struct iba_pkt *p, unsigned hid)
{
	long bth = IBA_LRH_BYTES + (p->lrh.lnh == IBA_LNH_GLOBAL ? IBA_GRH_BYTES : 0);
	unsigned off;

	switch (hid) {
	case IBA_HID_LRH:
		return 0;
	case IBA_HID_GRH:
		return p->lrh.lnh == IBA_LNH_GLOBAL ? IBA_LRH_BYTES : -1;
	case IBA_HID_BTH:
		return bth;
	default:
		off = iba_eth_offset(p->bth.opcode, 1u << (hid - IBA_HID_RDETH));
		return off == IBA_ETH_NONE ? -1 : bth + IBA_BTH_BYTES + (long)off;
	}
}

/* Decoded packets a and b hold the same fields (payload compared by value). */
static void check_same_fields(const struct iba_pkt *a, const struct iba_pkt *b,
			      const char *what)
{
	size_t i;

	for (i = 0; i < n_fields; i++)
		CHECK(member_get(a, &fields[i]) == member_get(b, &fields[i]),
		      "%s: field %s differs: 0x%llx vs 0x%llx", what, fields[i].name,
		      (unsigned long long)member_get(a, &fields[i]),
		      (unsigned long long)member_get(b, &fields[i]));
	CHECK(!memcmp(a->grh.sgid, b->grh.sgid, 16), "%s: SGID differs", what);
	CHECK(!memcmp(a->grh.dgid, b->grh.dgid, 16), "%s: DGID differs", what);
	CHECK(a->op == b->op, "%s: opcode info differs", what);
	CHECK(a->hdr_len == b->hdr_len, "%s: hdr_len %u vs %u", what, a->hdr_len, b->hdr_len);
	CHECK(a->paylen == b->paylen, "%s: paylen %u vs %u", what, a->paylen, b->paylen);
	CHECK(!a->paylen || !memcmp(a->payload, b->payload, a->paylen), "%s: payload differs",
	      what);
}

static uint32_t ld_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

/* ---- statistics (printed by the standalone driver) ------------------------ */

#define N_RC 10		/* IBA_OK, IBA_ERR_SHORT .. IBA_ERR_PAD */
static unsigned long st_rc[N_RC];	/* decode results, over all flag sets */
static unsigned long st_ok_inputs;	/* inputs that decoded under some flags */
static unsigned long st_rebuilt;	/* successful decodes rebuilt and compared */
static unsigned long st_identical;	/* ... of which had to be byte-identical */
static unsigned long st_opcodes[256];	/* successful decodes per opcode */

void fuzz_print_stats(FILE *out)
{
	unsigned i, n_ops = 0;

	for (i = 0; i < 256; i++)
		n_ops += st_opcodes[i] != 0;
	fprintf(out, "  decode results (inputs x 8 flag sets):");
	for (i = 0; i < N_RC; i++)
		fprintf(out, " %s=%lu", i ? iba_strerror(-(int)i) : "ok", st_rc[i]);
	fprintf(out, "\n  inputs decoded under some flags: %lu, distinct opcodes decoded: %u\n",
		st_ok_inputs, n_ops);
	fprintf(out, "  rebuilt and re-decoded: %lu, of which byte-identical by rule: %lu\n",
		st_rebuilt, st_identical);
}

/* ---- the checks on one successful decode ----------------------------------- */

/* The opcode, its ETH layout, the lengths and the GRH of a decoded packet. */
static void check_layout(const uint8_t *buf, size_t len, size_t vcrc, const struct iba_pkt *p)
{
	bool global = p->lrh.lnh == IBA_LNH_GLOBAL;
	size_t nhdr, n, i;

	/* The opcode and the lengths. */
	CHECK(p->op != NULL);
	CHECK(p->op->name != NULL);
	CHECK(p->op == iba_opcode_info(p->bth.opcode));
	CHECK(p->op->eth_len == iba_hdrs_len(p->op->hdrs));
	/* The opcode's ETHs tile its eth_len, in the table's order and sizes. */
	for (i = 0, n = 0; i < IBA_HDR_COUNT; i++) {
		uint32_t bit = 1u << i;
		unsigned off = iba_eth_offset(p->bth.opcode, bit);

		CHECK(iba_eth_bytes(bit) == iba_hdr_bytes(IBA_HID_RDETH + i), "ETH bit %zu", i);
		if (!(p->op->hdrs & bit)) {
			CHECK(off == IBA_ETH_NONE, "%s: offset for absent ETH bit %zu", p->op->name, i);
			continue;
		}
		CHECK(off != IBA_ETH_NONE && off + iba_eth_bytes(bit) <= p->op->eth_len,
		      "%s: ETH bit %zu at %u", p->op->name, i, off);
		n += iba_eth_bytes(bit);
	}
	CHECK(n == p->op->eth_len, "%s: ETHs add up to %zu", p->op->name, n);
	CHECK(p->lrh.lnh == IBA_LNH_LOCAL || global, "lnh %u", p->lrh.lnh);
	CHECK(p->bth.tver == 0);
	nhdr = IBA_LRH_BYTES + (global ? IBA_GRH_BYTES : 0) + IBA_BTH_BYTES + p->op->eth_len;
	CHECK(p->hdr_len == nhdr, "hdr_len %u, expected %zu", p->hdr_len, nhdr);
	CHECK(p->hdr_len <= IBA_MAX_HDR_BYTES);
	CHECK(p->hdr_len + p->paylen + p->bth.padcnt + IBA_ICRC_BYTES + vcrc == len,
	      "hdr_len %u + paylen %u + pad %u + ICRC + VCRC %zu != len", p->hdr_len,
	      p->paylen, p->bth.padcnt, vcrc);
	CHECK(p->bth.padcnt == iba_pad(p->paylen), "padcnt %u for paylen %u", p->bth.padcnt,
	      p->paylen);
	CHECK((size_t)p->lrh.pktlen * 4 + vcrc == len, "pktlen %u", p->lrh.pktlen);
	CHECK(p->payload == buf + p->hdr_len, "payload pointer off by %td",
	      p->payload - (buf + p->hdr_len));
	CHECK(p->payload >= buf && p->payload + p->paylen <= buf + len);
	CHECK((p->op->flags & IBA_OP_PAYLOAD) || (!p->paylen && !p->bth.padcnt),
	      "%s carries %u payload bytes", p->op->name, p->paylen);
	if (global) {
		CHECK(p->grh.ipver == IBA_GRH_IPVER);
		CHECK(p->grh.nxthdr == IBA_GRH_NXTHDR_IBA);
		CHECK(p->grh.paylen + IBA_LRH_BYTES + IBA_GRH_BYTES + vcrc == len,
		      "GRH paylen %u", p->grh.paylen);
		CHECK(!memcmp(p->grh.sgid, buf + IBA_LRH_BYTES + 8, 16));
		CHECK(!memcmp(p->grh.dgid, buf + IBA_LRH_BYTES + 24, 16));
	}
}

/* Every decoded field equals what the field table reads from the wire bytes. */
static void check_fields(const uint8_t *buf, const struct iba_pkt *p)
{
	size_t i;

	/* Every field as the field table reads it from the wire; absent headers
	 * leave their members zero. ETHs sit inside the header bytes. */
	for (i = 0; i < n_fields; i++) {
		const struct iba_field *f = &fields[i];
		long off = hdr_offset(p, f->hid);
		uint64_t want = 0;

		if (off >= 0) {
			CHECK((size_t)off + iba_hdr_bytes(f->hid) <= p->hdr_len,
			      "header %u at %ld past hdr_len %u", f->hid, off, p->hdr_len);
			want = iba_field_get(f, buf + off);
		}
		CHECK(member_get(p, f) == want, "%s = 0x%llx, wire says 0x%llx", f->name,
		      (unsigned long long)member_get(p, f), (unsigned long long)want);
	}
}

/* Whether the reserved header bits and the pad bytes of a decoded packet are all zero. */
static bool reserved_bits_clear(const uint8_t *buf, const struct iba_pkt *p)
{
	unsigned hid;
	size_t i;

	/* Reserved bits of the headers and the pad bytes. */
	for (hid = 0; hid < IBA_HID_COUNT; hid++) {
		long off = hdr_offset(p, hid);

		if (off < 0)
			continue;
		for (i = 0; i < iba_hdr_bytes(hid); i++)
			if (buf[off + i] & ~defined[hid][i])
				return false;
	}
	for (i = 0; i < p->bth.padcnt; i++)
		if (p->payload[p->paylen + i])
			return false;
	return true;
}

/* Rebuilds p, decodes the result again and compares it with buf (all bytes if canonical). */
static void check_rebuilt(const uint8_t *buf, size_t len, size_t vcrc, const struct iba_pkt *p,
			  bool canonical)
{
	size_t cap, n, i;
	struct iba_pkt q;
	uint8_t *out;
	unsigned hid;
	int rc;

	/* Rebuild. iba_build_headers() wants IBA_MAX_HDR_BYTES; iba_finish()
	 * wants hdr_len + paylen + 3 + 4 + 2. Nothing more, so that ASan sees
	 * a write past either. */
	cap = p->hdr_len + p->paylen + 3 + IBA_ICRC_BYTES + IBA_VCRC_BYTES;
	if (cap < IBA_MAX_HDR_BYTES)
		cap = IBA_MAX_HDR_BYTES;
	out = malloc(cap);
	CHECK(out != NULL);
	n = iba_build_headers(out, p);
	CHECK(n == p->hdr_len, "iba_build_headers gave %zu, decode %u", n, p->hdr_len);
	memcpy(out + n, p->payload, p->paylen);
	n = iba_finish(out, n, p->paylen, vcrc ? IBA_HAS_VCRC : 0);
	CHECK(n == len, "iba_finish gave %zu", n);

	rc = iba_decode(out, n, IBA_CHECK_ICRC | (vcrc ? IBA_CHECK_VCRC : 0), &q);
	CHECK(rc == IBA_OK, "rebuilt packet does not decode: %s", iba_strerror(rc));
	check_same_fields(p, &q, "rebuilt");
	CHECK(q.payload == out + q.hdr_len);

	/* Same bytes, but for the reserved bits, the pad and the CRCs. */
	for (hid = 0; hid < IBA_HID_COUNT; hid++) {
		long off = hdr_offset(p, hid);

		if (off < 0)
			continue;
		for (i = 0; i < iba_hdr_bytes(hid); i++)
			CHECK(!((buf[off + i] ^ out[off + i]) & defined[hid][i]),
			      "rebuilt header %u byte %zu: 0x%02x vs 0x%02x", hid, i,
			      buf[off + i], out[off + i]);
	}
	for (i = 0; i < p->bth.padcnt; i++)
		CHECK(!out[p->hdr_len + p->paylen + i], "rebuilt pad not zero");
	/* With valid CRCs, zero reserved bits and a zero pad, identical. */
	if (canonical) {
		for (i = 0; i < len; i++)
			CHECK(buf[i] == out[i], "rebuilt byte %zu: 0x%02x vs 0x%02x", i, buf[i],
			      out[i]);
		st_identical++;
	}
	st_rebuilt++;
	free(out);
}

static void check_decoded(const uint8_t *buf, size_t len, unsigned flags,
			  const struct iba_pkt *p)
{
	size_t vcrc = (flags & (IBA_HAS_VCRC | IBA_CHECK_VCRC)) ? IBA_VCRC_BYTES : 0;
	bool reserved_clear, icrc_ok, vcrc_ok;
	size_t icrc_off;

	check_layout(buf, len, vcrc, p);
	check_fields(buf, p);
	reserved_clear = reserved_bits_clear(buf, p);
	icrc_off = len - vcrc - IBA_ICRC_BYTES;
	icrc_ok = iba_icrc(buf, icrc_off) == ld_le32(buf + icrc_off);
	vcrc_ok = !vcrc || iba_vcrc(buf, len - vcrc) ==
			   (uint16_t)(buf[len - 2] | buf[len - 1] << 8);
	if (flags & IBA_CHECK_ICRC)
		CHECK(icrc_ok, "ICRC checked but wrong");
	if (flags & IBA_CHECK_VCRC)
		CHECK(vcrc_ok, "VCRC checked but wrong");
	check_rebuilt(buf, len, vcrc, p, icrc_ok && vcrc_ok && reserved_clear);
}

/* ---- the entry point ------------------------------------------------------- */

static bool is_crc_err(int rc)
{
	return rc == IBA_ERR_ICRC || rc == IBA_ERR_VCRC;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct iba_pkt pkt[8];
	int rc[8];
	unsigned f, base;
	bool any_ok = false;
	uint8_t *buf;
	size_t n;

	init_tables();
	/* Exact size: ASan reports a read even one byte past the input. A
	 * zero-length input may get NULL, which is fine with len 0. */
	buf = malloc(size);
	if (!buf && size)
		return 0;
	if (size)
		memcpy(buf, data, size);
	g_buf = buf;
	g_len = size;

	/* The CRCs promise to read nothing past len, whatever the bytes. */
	(void)iba_icrc(buf, size);
	(void)iba_vcrc(buf, size);
	(void)iba_icrc_rocev2_ipv4(buf, size);
	(void)iba_icrc_rocev2_ipv6(buf, size);
	if (size >= 4) {
		int32_t v;
		uint32_t bits;

		memcpy(&v, buf, 4);
		CHECK(iba_strerror(v) != NULL);
		memcpy(&bits, buf, 4);
		n = iba_eth_bytes(bits);
		CHECK(n == 0 || ((bits & (bits - 1)) == 0 && n % 4 == 0), "iba_eth_bytes(0x%x) = %zu",
		      bits, n);
	}

	/* Flags: 0x1 CHECK_ICRC, 0x2 CHECK_VCRC, 0x4 HAS_VCRC: all eight. */
	for (f = 0; f < 8; f++) {
		g_flags = f;
		memset(&pkt[f], 0xA5, sizeof(pkt[f]));
		rc[f] = iba_decode(buf, size, f, &pkt[f]);
		CHECK(rc[f] <= 0 && rc[f] > -N_RC, "unknown return %d", rc[f]);
		CHECK(strcmp(iba_strerror(rc[f]), "unknown error"));
		st_rc[-rc[f]]++;
		if (rc[f] == IBA_OK) {
			any_ok = true;
			if (pkt[f].op)
				st_opcodes[pkt[f].bth.opcode]++;
			check_decoded(buf, size, f, &pkt[f]);
		}
	}
	st_ok_inputs += any_ok;

	/* The flag sets against one another. CHECK_VCRC implies HAS_VCRC. */
	g_flags = 0xFF;
	CHECK(rc[IBA_CHECK_VCRC] == rc[IBA_CHECK_VCRC | IBA_HAS_VCRC]);
	CHECK(rc[IBA_CHECK_VCRC | IBA_CHECK_ICRC] ==
	      rc[IBA_CHECK_VCRC | IBA_CHECK_ICRC | IBA_HAS_VCRC]);
	/* PktLen*4 is len or len - 2: never both. */
	CHECK(rc[0] != IBA_OK || rc[IBA_HAS_VCRC] != IBA_OK);
	/* Two groups by where PktLen ends: {0, ICRC} and {HAS_VCRC, + ICRC,
	 * + CHECK_VCRC, + both} (flags 2 and 3 equal 6 and 7, checked above). */
	for (base = 0; base <= IBA_HAS_VCRC; base += IBA_HAS_VCRC) {
		unsigned last = base ? base + 3 : base + 1;

		for (f = base + 1; f <= last; f++) {
			/* A CRC check can only add a CRC error, or come first. */
			if (rc[base] == IBA_OK) {
				CHECK(rc[f] == IBA_OK || is_crc_err(rc[f]),
				      "flags 0x%x: %d where flags 0x%x decode", f, rc[f], base);
				if (rc[f] == IBA_OK)
					check_same_fields(&pkt[base], &pkt[f], "flag sets");
			} else {
				CHECK(rc[f] == rc[base] || is_crc_err(rc[f]),
				      "flags 0x%x: %d, flags 0x%x: %d", f, rc[f], base, rc[base]);
				if (rc[base] == IBA_ERR_SHORT || rc[base] == IBA_ERR_LNH)
					CHECK(rc[f] == rc[base]);
			}
			if (is_crc_err(rc[f]))
				CHECK((rc[f] == IBA_ERR_ICRC && (f & IBA_CHECK_ICRC)) ||
				      (rc[f] == IBA_ERR_VCRC && (f & IBA_CHECK_VCRC)),
				      "flags 0x%x gave %s", f, iba_strerror(rc[f]));
		}
		/* A packet otherwise fine fails exactly the checks whose CRC is
		 * wrong; with both asked, the VCRC is checked first. */
		if (rc[base] == IBA_OK) {
			size_t vc = base ? IBA_VCRC_BYTES : 0;
			size_t icrc_off = size - vc - IBA_ICRC_BYTES;
			bool icrc_ok = iba_icrc(buf, icrc_off) == ld_le32(buf + icrc_off);
			bool vcrc_ok = !vc || iba_vcrc(buf, size - vc) ==
					       (uint16_t)(buf[size - 2] | buf[size - 1] << 8);
			int want_i = icrc_ok ? IBA_OK : IBA_ERR_ICRC;
			int want_v = vcrc_ok ? IBA_OK : IBA_ERR_VCRC;

			CHECK(rc[base | IBA_CHECK_ICRC] == want_i, "ICRC check gave %d", rc[base | 1]);
			if (base) {
				CHECK(rc[base | IBA_CHECK_VCRC] == want_v, "VCRC check gave %d",
				      rc[base | 2]);
				CHECK(rc[base | IBA_CHECK_VCRC | IBA_CHECK_ICRC] ==
				      (want_v != IBA_OK ? want_v : want_i), "both checks gave %d",
				      rc[base | 3]);
			}
		}
	}

	free(buf);
	g_buf = NULL;
	return 0;
}
