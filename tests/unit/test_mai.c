// SPDX-License-Identifier: MIT
/*
 * Unit tests for src/mai/ (include/softib/mai.h, seed 002): every
 * conversion pair round-trips (message <-> stream, filter <-> stream,
 * message <-> wire, streams through a tmpfile), hostile streams and MADs
 * are refused with their errno, and the filter engine decides who receives
 * (fields, quantifiers, consuming vs non-consuming, OOB).  IBA 13.4.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "softib/mai.h"

/* ---- helpers ----------------------------------------------------------------- */

/* A message with every field non-zero and distinct, from a seed. */
static void fill_mad(mai_mad_t *m, uint8_t type, unsigned seed)
{
	memset(m, 0, sizeof(*m));
	m->type = type;
	m->port = (uint8_t)(1 + seed % 36);
	m->qp = seed & 1;
	m->has_grh = 1;
	m->remote_qpn = 0xABCDEF ^ seed;
	m->remote_qkey = 0x80010000u + seed;
	m->pkey_index = (uint16_t)(0x7F + seed);
	m->data_len = type == MAI_TYPE_OOB ? (uint16_t)(17 + seed % 100) : MAI_MAD_DATA_SIZE;
	m->lrh = (struct mai_lrh){ .vl = 15, .lver = 1, .sl = 9, .lnh = 3, .dlid = 0xC001,
				   .slid = (uint16_t)(0x1234 + seed), .pktlen = 0x7FF };
	m->grh.ipver = 6;
	m->grh.tclass = 0xA5;
	m->grh.flow_label = 0xFEDCB;
	m->grh.paylen = 0x1122;
	m->grh.nxthdr = 0x1B;
	m->grh.hoplmt = 0xFF;
	for (unsigned i = 0; i < 16; i++) {
		m->grh.sgid[i] = (uint8_t)(0xF0 + i + seed);
		m->grh.dgid[i] = (uint8_t)(0x10 * i + seed);
	}
	m->base_version = 1;
	m->mgmt_class = 0x81;
	m->class_version = 1;
	m->method = 0x81;
	m->status = 0x8001;
	m->class_specific = 0x0203;
	m->tid = 0x0102030405060708ull + seed;
	m->attr_id = 0x0015;
	m->resv = 0x5A5A;
	m->attr_mod = 0xDEADBEEF;
	for (unsigned i = 0; i < m->data_len; i++)
		m->data[i] = (uint8_t)(i * 7 + seed);
}

/* Field by field (no padding compared); OOB data up to data_len. */
static void assert_mad_equal(const mai_mad_t *a, const mai_mad_t *b)
{
	assert_int_equal(a->type, b->type);
	assert_int_equal(a->port, b->port);
	assert_int_equal(a->qp, b->qp);
	assert_int_equal(a->has_grh, b->has_grh);
	assert_int_equal(a->remote_qpn, b->remote_qpn);
	assert_int_equal(a->remote_qkey, b->remote_qkey);
	assert_int_equal(a->pkey_index, b->pkey_index);
	assert_int_equal(a->data_len, b->data_len);
	assert_int_equal(a->lrh.vl, b->lrh.vl);
	assert_int_equal(a->lrh.lver, b->lrh.lver);
	assert_int_equal(a->lrh.sl, b->lrh.sl);
	assert_int_equal(a->lrh.lnh, b->lrh.lnh);
	assert_int_equal(a->lrh.dlid, b->lrh.dlid);
	assert_int_equal(a->lrh.slid, b->lrh.slid);
	assert_int_equal(a->lrh.pktlen, b->lrh.pktlen);
	assert_int_equal(a->grh.ipver, b->grh.ipver);
	assert_int_equal(a->grh.tclass, b->grh.tclass);
	assert_int_equal(a->grh.flow_label, b->grh.flow_label);
	assert_int_equal(a->grh.paylen, b->grh.paylen);
	assert_int_equal(a->grh.nxthdr, b->grh.nxthdr);
	assert_int_equal(a->grh.hoplmt, b->grh.hoplmt);
	assert_memory_equal(a->grh.sgid, b->grh.sgid, 16);
	assert_memory_equal(a->grh.dgid, b->grh.dgid, 16);
	assert_int_equal(a->base_version, b->base_version);
	assert_int_equal(a->mgmt_class, b->mgmt_class);
	assert_int_equal(a->class_version, b->class_version);
	assert_int_equal(a->method, b->method);
	assert_int_equal(a->status, b->status);
	assert_int_equal(a->class_specific, b->class_specific);
	assert_true(a->tid == b->tid);
	assert_int_equal(a->attr_id, b->attr_id);
	assert_int_equal(a->resv, b->resv);
	assert_int_equal(a->attr_mod, b->attr_mod);
	assert_memory_equal(a->data, b->data, a->data_len);
}

static void fill_filter(mai_filter_t *f, unsigned seed)
{
	memset(f, 0, sizeof(*f));
	f->handle = 0x01020304u + seed;
	f->flags = MAI_F_CONSUME;
	f->match = MAI_M_ALL;
	f->port = (uint8_t)(2 + seed);
	f->sl = 7;
	f->slid = 0x0102;
	f->dlid = 0xBEEF;
	for (unsigned i = 0; i < 16; i++) {
		f->sgid[i] = (uint8_t)(i + 1 + seed);
		f->dgid[i] = (uint8_t)(0xFF - i);
	}
	f->base_version = 1;
	f->mgmt_class = 0x04;
	f->class_version = 1;
	f->method = 0x01;
	f->attr_id = 0x0011;
	f->nquant = MAI_FILTER_QUANT_MAX;
	f->quant[0] = (struct mai_quant){ .offset = 0, .length = 1, .value = 1 };
	f->quant[1] = (struct mai_quant){ .offset = 24, .length = 8, .value = 0xFEDCBA9876543210ull };
	f->quant[2] = (struct mai_quant){ .offset = 254, .length = 2, .value = 0xABCD };
	f->quant[3] = (struct mai_quant){ .offset = 100, .length = 3, .value = 0x123456 };
}

static void assert_filter_equal(const mai_filter_t *a, const mai_filter_t *b)
{
	assert_int_equal(a->handle, b->handle);
	assert_int_equal(a->flags, b->flags);
	assert_int_equal(a->match, b->match);
	assert_int_equal(a->port, b->port);
	assert_int_equal(a->sl, b->sl);
	assert_int_equal(a->slid, b->slid);
	assert_int_equal(a->dlid, b->dlid);
	assert_memory_equal(a->sgid, b->sgid, 16);
	assert_memory_equal(a->dgid, b->dgid, 16);
	assert_int_equal(a->base_version, b->base_version);
	assert_int_equal(a->mgmt_class, b->mgmt_class);
	assert_int_equal(a->class_version, b->class_version);
	assert_int_equal(a->method, b->method);
	assert_int_equal(a->attr_id, b->attr_id);
	assert_int_equal(a->nquant, b->nquant);
	for (unsigned i = 0; i < a->nquant; i++) {
		assert_int_equal(a->quant[i].offset, b->quant[i].offset);
		assert_int_equal(a->quant[i].length, b->quant[i].length);
		assert_true(a->quant[i].value == b->quant[i].value);
	}
}

/* ---- message stream ------------------------------------------------------------ */

static void test_mstream_roundtrip(void **state)
{
	static const uint8_t types[] = { MAI_TYPE_MAD, MAI_TYPE_RAW, MAI_TYPE_OOB };

	for (unsigned t = 0; t < 3; t++)
		for (unsigned seed = 0; seed < 8; seed++) {
			mai_mad_t a, b;
			uint8_t buf[MAI_MSTREAM_SIZE + 5];

			fill_mad(&a, types[t], seed);
			assert_int_equal(mai_mmstream(&a, buf, sizeof(buf)), MAI_MSTREAM_SIZE);
			memset(&b, 0xEE, sizeof(b));
			assert_int_equal(mai_rmstream(buf, sizeof(buf), &b), MAI_MSTREAM_SIZE);
			assert_mad_equal(&a, &b);
			/* What went out is what a second write gives: no stale bytes. */
			uint8_t buf2[MAI_MSTREAM_SIZE];
			assert_int_equal(mai_mmstream(&b, buf2, sizeof(buf2)), MAI_MSTREAM_SIZE);
			assert_memory_equal(buf, buf2, MAI_MSTREAM_SIZE);
		}
}

/* The layout is big-endian at fixed places (docs/mai.md): spot-check it. */
static void test_mstream_layout(void **state)
{
	mai_mad_t a;
	uint8_t buf[MAI_MSTREAM_SIZE];

	fill_mad(&a, MAI_TYPE_MAD, 0);
	assert_int_equal(mai_mmstream(&a, buf, sizeof(buf)), MAI_MSTREAM_SIZE);
	assert_memory_equal(buf, "MAIM", 4);
	assert_int_equal(buf[4], 1);
	assert_int_equal(buf[6] << 8 | buf[7], MAI_MSTREAM_SIZE);
	assert_int_equal(buf[8], MAI_TYPE_MAD);
	/* remote_qpn 0xABCDEF at 12..15 */
	assert_int_equal(buf[12], 0x00);
	assert_int_equal(buf[13], 0xAB);
	assert_int_equal(buf[15], 0xEF);
	/* the MAD header at 8 + 68 = 76: base version, class, tid */
	assert_int_equal(buf[76], 1);
	assert_int_equal(buf[77], 0x81);
	assert_int_equal(buf[84], 0x01);
	assert_int_equal(buf[91], 0x08);
}

static void test_mstream_hostile(void **state)
{
	mai_mad_t a, b, keep;
	uint8_t buf[MAI_MSTREAM_SIZE], bad[MAI_MSTREAM_SIZE];

	fill_mad(&a, MAI_TYPE_OOB, 3);
	assert_int_equal(mai_mmstream(&a, buf, sizeof(buf)), MAI_MSTREAM_SIZE);
	memset(&keep, 0x77, sizeof(keep));

	/* every truncation */
	for (size_t len = 0; len < MAI_MSTREAM_SIZE; len++) {
		b = keep;
		assert_int_equal(mai_rmstream(buf, len, &b), -EMSGSIZE);
		assert_memory_equal(&b, &keep, sizeof(b));	/* untouched */
	}
	assert_int_equal(mai_rmstream(NULL, 100, &b), -EMSGSIZE);
	/* a filter stream is not a message stream */
	mai_filter_t f;
	uint8_t fb[MAI_FSTREAM_SIZE];
	fill_filter(&f, 0);
	assert_int_equal(mai_mfstream(&f, fb, sizeof(fb)), MAI_FSTREAM_SIZE);
	assert_int_equal(mai_rmstream(fb, sizeof(fb), &b), -EBADMSG);

	struct { size_t off; uint8_t val; } edits[] = {
		{ 0, 'X' },		/* magic */
		{ 4, 2 },		/* version */
		{ 5, 1 },		/* reserved */
		{ 6, 0xFF },		/* length beyond the buffer */
		{ 7, 0x00 },		/* length too short */
		{ 8, 0 },		/* type 0 */
		{ 8, 9 },		/* type 9 */
		{ 10, 2 },		/* qp 2 */
		{ 11, 2 },		/* has_grh 2 */
		{ 12, 1 },		/* remote_qpn > 24 bits */
		{ 22, 0x01 },		/* data_len 0x1xx > 232 */
		{ 24, 0x10 },		/* vl 16 */
		{ 26, 0x10 },		/* sl 16 */
		{ 27, 4 },		/* lnh 4 */
		{ 32, 0x08 },		/* pktlen > 11 bits */
		{ 34, 0x10 },		/* ipver 16 */
		{ 36, 0x10 },		/* flow label > 20 bits */
		{ MAI_MSTREAM_SIZE - 1, 1 },	/* non-zero past an OOB's data_len */
	};
	for (size_t i = 0; i < sizeof(edits) / sizeof(edits[0]); i++) {
		memcpy(bad, buf, sizeof(bad));
		bad[edits[i].off] = edits[i].val;
		b = keep;
		/* (a length field other than the known size is malformed too) */
		assert_int_equal(mai_rmstream(bad, sizeof(bad), &b), -EBADMSG);
		assert_memory_equal(&b, &keep, sizeof(b));
	}
	/* A MAD (not OOB) must carry a whole MAD. */
	fill_mad(&a, MAI_TYPE_MAD, 1);
	assert_int_equal(mai_mmstream(&a, buf, sizeof(buf)), MAI_MSTREAM_SIZE);
	buf[23] = 100;	/* data_len low byte: 0x0064 */
	assert_int_equal(mai_rmstream(buf, sizeof(buf), &b), -EBADMSG);
}

static void test_mstream_writer_errors(void **state)
{
	mai_mad_t a;
	uint8_t buf[MAI_MSTREAM_SIZE];

	fill_mad(&a, MAI_TYPE_MAD, 0);
	assert_int_equal(mai_mmstream(&a, buf, MAI_MSTREAM_SIZE - 1), -ENOSPC);
	assert_int_equal(mai_mmstream(&a, NULL, MAI_MSTREAM_SIZE), -ENOSPC);
	assert_int_equal(mai_mmstream(NULL, buf, sizeof(buf)), -EINVAL);
	a.data_len = 10;
	assert_int_equal(mai_mmstream(&a, buf, sizeof(buf)), -EINVAL);
	fill_mad(&a, MAI_TYPE_OOB, 0);
	a.data_len = MAI_MAD_DATA_SIZE + 1;
	assert_int_equal(mai_mmstream(&a, buf, sizeof(buf)), -EINVAL);
	fill_mad(&a, MAI_TYPE_MAD, 0);
	a.lrh.sl = 16;
	assert_int_equal(mai_mad_check(&a), -EINVAL);
	a.lrh.sl = 15;
	assert_int_equal(mai_mad_check(&a), 0);
	a.remote_qpn = 1u << 24;
	assert_int_equal(mai_mad_check(&a), -EINVAL);
}

/* ---- filter stream ------------------------------------------------------------- */

static void test_fstream_roundtrip(void **state)
{
	for (unsigned nq = 0; nq <= MAI_FILTER_QUANT_MAX; nq++) {
		mai_filter_t a, b;
		uint8_t buf[MAI_FSTREAM_SIZE];

		fill_filter(&a, nq);
		a.nquant = (uint8_t)nq;
		a.flags = nq & 1 ? MAI_F_CONSUME : 0;
		assert_int_equal(mai_mfstream(&a, buf, sizeof(buf)), MAI_FSTREAM_SIZE);
		memset(&b, 0xEE, sizeof(b));
		assert_int_equal(mai_rfstream(buf, sizeof(buf), &b), MAI_FSTREAM_SIZE);
		assert_filter_equal(&a, &b);
	}
}

static void test_fstream_hostile(void **state)
{
	mai_filter_t a, b, keep;
	uint8_t buf[MAI_FSTREAM_SIZE], bad[MAI_FSTREAM_SIZE];

	fill_filter(&a, 0);
	a.nquant = 2;
	assert_int_equal(mai_mfstream(&a, buf, sizeof(buf)), MAI_FSTREAM_SIZE);
	memset(&keep, 0x55, sizeof(keep));
	for (size_t len = 0; len < MAI_FSTREAM_SIZE; len++) {
		b = keep;
		assert_int_equal(mai_rfstream(buf, len, &b), -EMSGSIZE);
		assert_memory_equal(&b, &keep, sizeof(b));
	}
	/* offsets: handle 8, flags 12, match 16, port 20, sl 21, ..., nquant 64,
	 * pad 65, quant[i] at 66 + 12 i (offset 2, length 1, pad 1, value 8) */
	struct { size_t off; uint8_t val; } edits[] = {
		{ 3, 'M' },		/* magic "MAIM": a message stream */
		{ 4, 0 },		/* version */
		{ 7, 0xFF },		/* length */
		{ 12, 0x80 },		/* unknown flag */
		{ 16, 0x80 },		/* unknown match bit */
		{ 21, 16 },		/* sl 16 */
		{ 64, MAI_FILTER_QUANT_MAX + 1 },	/* too many quantifiers */
		{ 65, 1 },		/* pad */
		{ 66 + 2, 0 },		/* quant[0].length 0 */
		{ 66 + 2, 9 },		/* quant[0].length 9 */
		{ 66 + 1, 0xFF },	/* quant[0] offset 255, made 2 bytes long below */
		{ 66 + 3, 1 },		/* quant pad */
		{ 66 + 4, 1 },		/* quant[0] value does not fit 1 byte */
		{ 66 + 12 * 2 + 11, 1 },	/* unused slot not zero */
	};
	for (size_t i = 0; i < sizeof(edits) / sizeof(edits[0]); i++) {
		memcpy(bad, buf, sizeof(bad));
		bad[edits[i].off] = edits[i].val;
		if (edits[i].off == 66 + 1)
			bad[66 + 2] = 2;	/* bytes 255..256: past the MAD */
		b = keep;
		assert_int_equal(mai_rfstream(bad, sizeof(bad), &b), -EBADMSG);
		assert_memory_equal(&b, &keep, sizeof(b));
	}
	/* writer: an invalid filter is refused, a short buffer too */
	a.quant[0].offset = MAI_MAD_SIZE;
	assert_int_equal(mai_filter_check(&a), -EINVAL);
	assert_int_equal(mai_mfstream(&a, buf, sizeof(buf)), -EINVAL);
	fill_filter(&a, 0);
	assert_int_equal(mai_mfstream(&a, buf, MAI_FSTREAM_SIZE - 1), -ENOSPC);
	a.quant[1].offset = MAI_MAD_SIZE - 8;	/* last 8 bytes: allowed */
	assert_int_equal(mai_filter_check(&a), 0);
	a.quant[1].offset = MAI_MAD_SIZE - 7;
	assert_int_equal(mai_filter_check(&a), -EINVAL);
}

/* Streams are for crossing boundaries: write several to a file, read back. */
static void test_streams_tmpfile(void **state)
{
	FILE *fp = tmpfile();
	mai_mad_t m[3], r;
	mai_filter_t f[2], g;
	uint8_t buf[MAI_MSTREAM_SIZE];

	assert_non_null(fp);
	fill_mad(&m[0], MAI_TYPE_MAD, 1);
	fill_mad(&m[1], MAI_TYPE_OOB, 2);
	fill_mad(&m[2], MAI_TYPE_RAW, 3);
	fill_filter(&f[0], 1);
	fill_filter(&f[1], 2);
	f[1].nquant = 1;
	for (int i = 0; i < 3; i++) {
		assert_int_equal(mai_mmstream(&m[i], buf, sizeof(buf)), MAI_MSTREAM_SIZE);
		assert_int_equal(fwrite(buf, 1, MAI_MSTREAM_SIZE, fp), MAI_MSTREAM_SIZE);
		if (i < 2) {
			assert_int_equal(mai_mfstream(&f[i], buf, sizeof(buf)), MAI_FSTREAM_SIZE);
			assert_int_equal(fwrite(buf, 1, MAI_FSTREAM_SIZE, fp), MAI_FSTREAM_SIZE);
		}
	}
	rewind(fp);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(fread(buf, 1, MAI_MSTREAM_SIZE, fp), MAI_MSTREAM_SIZE);
		assert_int_equal(mai_rmstream(buf, MAI_MSTREAM_SIZE, &r), MAI_MSTREAM_SIZE);
		assert_mad_equal(&m[i], &r);
		if (i < 2) {
			assert_int_equal(fread(buf, 1, MAI_FSTREAM_SIZE, fp), MAI_FSTREAM_SIZE);
			assert_int_equal(mai_rfstream(buf, MAI_FSTREAM_SIZE, &g), MAI_FSTREAM_SIZE);
			assert_filter_equal(&f[i], &g);
		}
	}
	/* A file cut short mid-stream: the reader says truncated. */
	assert_int_equal(fread(buf, 1, 1, fp), 0);
	fclose(fp);
	fill_mad(&m[0], MAI_TYPE_MAD, 4);
	assert_int_equal(mai_mmstream(&m[0], buf, sizeof(buf)), MAI_MSTREAM_SIZE);
	assert_int_equal(mai_rmstream(buf, MAI_MSTREAM_SIZE / 2, &r), -EMSGSIZE);
}

/* Random damage to valid streams: a reader either refuses with -EMSGSIZE or
 * -EBADMSG and leaves the structure alone, or accepts a stream that writes
 * back byte for byte (one encoding per value, nothing ignored). */
static uint32_t rnd_state = 12345;

static uint32_t rnd(void)
{
	rnd_state = rnd_state * 1103515245u + 12345u;
	return rnd_state >> 8;
}

static void test_streams_damaged(void **state)
{
	unsigned accepted = 0, refused = 0;

	for (unsigned iter = 0; iter < 20000; iter++) {
		uint8_t buf[MAI_MSTREAM_SIZE], out[MAI_MSTREAM_SIZE];
		int is_msg = iter & 1;
		size_t size = is_msg ? MAI_MSTREAM_SIZE : MAI_FSTREAM_SIZE;
		size_t len = rnd() % 8 ? size : rnd() % (size + 1);
		mai_mad_t m, mkeep;
		mai_filter_t f, fkeep;
		int rc;

		if (is_msg) {
			fill_mad(&m, (uint8_t)(1 + iter % 3), iter);
			assert_int_equal(mai_mmstream(&m, buf, sizeof(buf)), MAI_MSTREAM_SIZE);
		} else {
			fill_filter(&f, iter);
			f.nquant = (uint8_t)(iter % (MAI_FILTER_QUANT_MAX + 1));
			assert_int_equal(mai_mfstream(&f, buf, sizeof(buf)), MAI_FSTREAM_SIZE);
		}
		for (unsigned k = 1 + rnd() % 3; k; k--)
			buf[rnd() % size] ^= (uint8_t)(1u << (rnd() % 8));
		memset(&mkeep, 0x33, sizeof(mkeep));
		memset(&fkeep, 0x33, sizeof(fkeep));
		m = mkeep;
		f = fkeep;
		rc = is_msg ? mai_rmstream(buf, len, &m) : mai_rfstream(buf, len, &f);
		if (rc < 0) {
			assert_true(rc == -EMSGSIZE || rc == -EBADMSG);
			if (is_msg)
				assert_memory_equal(&m, &mkeep, sizeof(m));
			else
				assert_memory_equal(&f, &fkeep, sizeof(f));
			refused++;
			continue;
		}
		assert_int_equal(rc, (int)size);
		rc = is_msg ? mai_mmstream(&m, out, sizeof(out)) : mai_mfstream(&f, out, sizeof(out));
		assert_int_equal(rc, (int)size);
		assert_memory_equal(buf, out, size);
		accepted++;
	}
	/* both outcomes happen: the test cannot pass by refusing everything */
	assert_true(accepted > 1000);
	assert_true(refused > 1000);
}

/* ---- wire ---------------------------------------------------------------------- */

static void test_wire_roundtrip(void **state)
{
	for (unsigned seed = 0; seed < 8; seed++) {
		mai_mad_t a, b;
		uint8_t wire[MAI_MAD_SIZE + 3];

		fill_mad(&a, MAI_TYPE_MAD, seed);
		assert_int_equal(mai_towire(&a, wire, sizeof(wire)), MAI_MAD_SIZE);
		/* routing is the caller's: copy it, scramble every MAD field */
		b = a;
		b.type = MAI_TYPE_RAW;
		b.data_len = 1;
		b.base_version = b.mgmt_class = b.class_version = b.method = 0xEE;
		b.status = b.class_specific = b.attr_id = b.resv = 0xEEEE;
		b.tid = 0xEEEEEEEEEEEEEEEEull;
		b.attr_mod = 0xEEEEEEEE;
		memset(b.data, 0xEE, sizeof(b.data));
		assert_int_equal(mai_fromwire(wire, MAI_MAD_SIZE, &b), MAI_MAD_SIZE);
		assert_mad_equal(&a, &b);
	}
}

/* mad-formats.md §1 offsets, big-endian: the wire is what a real HCA sends. */
static void test_wire_layout(void **state)
{
	mai_mad_t a;
	uint8_t w[MAI_MAD_SIZE];
	static const uint8_t hdr[24] = {
		0x01, 0x81, 0x01, 0x81,		/* base, class (DR SMP), version, GetResp */
		0x80, 0x01, 0x02, 0x03,		/* status (D bit), hop pointer 2, hop count 3 */
		0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,	/* TID */
		0x00, 0x15, 0x5A, 0x5A,		/* PortInfo, reserved */
		0xDE, 0xAD, 0xBE, 0xEF,		/* attribute modifier */
	};

	fill_mad(&a, MAI_TYPE_MAD, 0);
	assert_int_equal(mai_towire(&a, w, sizeof(w)), MAI_MAD_SIZE);
	assert_memory_equal(w, hdr, sizeof(hdr));
	assert_memory_equal(w + 24, a.data, MAI_MAD_DATA_SIZE);
}

static void test_wire_hostile(void **state)
{
	mai_mad_t a, b;
	uint8_t w[MAI_MAD_SIZE];

	fill_mad(&a, MAI_TYPE_MAD, 0);
	assert_int_equal(mai_towire(&a, w, MAI_MAD_SIZE - 1), -ENOSPC);
	assert_int_equal(mai_towire(&a, NULL, MAI_MAD_SIZE), -ENOSPC);
	fill_mad(&a, MAI_TYPE_OOB, 0);
	assert_int_equal(mai_towire(&a, w, sizeof(w)), -EINVAL);	/* OOB has no wire form */
	fill_mad(&a, MAI_TYPE_MAD, 0);
	a.qp = 2;
	assert_int_equal(mai_towire(&a, w, sizeof(w)), -EINVAL);

	memset(w, 0x11, sizeof(w));
	memset(&b, 0, sizeof(b));
	assert_int_equal(mai_fromwire(w, MAI_MAD_SIZE - 1, &b), -EMSGSIZE);
	assert_int_equal(mai_fromwire(w, MAI_MAD_SIZE + 1, &b), -EMSGSIZE);
	assert_int_equal(mai_fromwire(w, 0, &b), -EMSGSIZE);
	assert_int_equal(mai_fromwire(NULL, MAI_MAD_SIZE, &b), -EMSGSIZE);
	assert_int_equal(b.type, 0);	/* untouched */
	assert_int_equal(mai_fromwire(w, MAI_MAD_SIZE, NULL), -EINVAL);
	/* a bad base version is decoded as is: the agent answers it with a status */
	w[0] = 0x7F;
	assert_int_equal(mai_fromwire(w, MAI_MAD_SIZE, &b), MAI_MAD_SIZE);
	assert_int_equal(b.base_version, 0x7F);
}

/* ---- filter engine ------------------------------------------------------------- */

/* A received PortInfo Get SMP, LID-routed, on port 1. */
static void rx_mad(mai_mad_t *m)
{
	fill_mad(m, MAI_TYPE_MAD, 0);
	m->port = 1;
	m->has_grh = 0;
	m->mgmt_class = 0x01;
	m->method = 0x01;
	m->attr_id = 0x0015;
	m->lrh.slid = 5;
	m->lrh.dlid = 7;
	m->lrh.sl = 0;
	m->data[0] = 0x12;	/* MAD byte 24 */
	m->data[1] = 0x34;
	m->data[MAI_MAD_DATA_SIZE - 1] = 0x99;	/* MAD byte 255 */
}

static mai_filter_t filt(uint32_t flags, uint32_t match, uint8_t cls, uint8_t method, uint16_t attr)
{
	mai_filter_t f;

	memset(&f, 0, sizeof(f));
	f.flags = flags;
	f.match = match;
	f.mgmt_class = cls;
	f.method = method;
	f.attr_id = attr;
	return f;
}

static void test_match_fields(void **state)
{
	mai_mad_t m;
	mai_filter_t f;

	rx_mad(&m);
	f = filt(0, 0, 0, 0, 0);
	assert_true(mai_filter_match(&f, &m));	/* matches everything */
	f = filt(0, MAI_M_CLASS | MAI_M_METHOD | MAI_M_ATTR, 0x01, 0x01, 0x0015);
	assert_true(mai_filter_match(&f, &m));
	f.attr_id = 0x0011;
	assert_false(mai_filter_match(&f, &m));
	f = filt(0, MAI_M_CLASS, 0x81, 0, 0);	/* DR class, MAD is LID-routed */
	assert_false(mai_filter_match(&f, &m));
	f = filt(0, MAI_M_METHOD, 0, 0x81, 0);	/* the response is its own method */
	assert_false(mai_filter_match(&f, &m));
	m.method = 0x81;
	assert_true(mai_filter_match(&f, &m));
	m.method = 0x01;

	f = filt(0, MAI_M_PORT | MAI_M_SLID | MAI_M_DLID | MAI_M_SL, 0, 0, 0);
	f.port = 1;
	f.slid = 5;
	f.dlid = 7;
	assert_true(mai_filter_match(&f, &m));
	f.port = 2;
	assert_false(mai_filter_match(&f, &m));
	f.port = 1;
	f.sl = 1;
	assert_false(mai_filter_match(&f, &m));
	f.sl = 0;
	f.dlid = 8;
	assert_false(mai_filter_match(&f, &m));

	f = filt(0, MAI_M_BASE_VER | MAI_M_CLASS_VER, 0, 0, 0);
	f.base_version = 1;
	f.class_version = 1;
	assert_true(mai_filter_match(&f, &m));
	f.base_version = 2;
	assert_false(mai_filter_match(&f, &m));

	/* GRH fields: a MAD without a GRH never matches them */
	f = filt(0, MAI_M_SGID, 0, 0, 0);
	fill_mad(&m, MAI_TYPE_MAD, 0);
	memcpy(f.sgid, m.grh.sgid, 16);
	assert_true(mai_filter_match(&f, &m));
	f.sgid[15] ^= 1;
	assert_false(mai_filter_match(&f, &m));
	f.sgid[15] ^= 1;
	m.has_grh = 0;
	assert_false(mai_filter_match(&f, &m));
	m.has_grh = 1;
	f.match = MAI_M_DGID;
	memcpy(f.dgid, m.grh.dgid, 16);
	assert_true(mai_filter_match(&f, &m));
	f.dgid[0] ^= 0x80;
	assert_false(mai_filter_match(&f, &m));
}

static void test_match_quantifiers(void **state)
{
	mai_mad_t m;
	mai_filter_t f = filt(0, 0, 0, 0, 0);

	rx_mad(&m);
	f.nquant = 1;
	f.quant[0] = (struct mai_quant){ .offset = 24, .length = 2, .value = 0x1234 };
	assert_true(mai_filter_match(&f, &m));
	f.quant[0].value = 0x3412;	/* byte order is the wire's */
	assert_false(mai_filter_match(&f, &m));
	/* header bytes: class at 1, attribute ID at 16..17, TID at 8..15 */
	f.quant[0] = (struct mai_quant){ .offset = 16, .length = 2, .value = 0x0015 };
	assert_true(mai_filter_match(&f, &m));
	f.quant[0] = (struct mai_quant){ .offset = 8, .length = 8, .value = 0x0102030405060708ull };
	assert_true(mai_filter_match(&f, &m));
	/* straddling header and data: bytes 23..24 = attr_mod low byte, data[0] */
	f.quant[0] = (struct mai_quant){ .offset = 23, .length = 2, .value = 0xEF12 };
	assert_true(mai_filter_match(&f, &m));
	/* last byte of the MAD */
	f.quant[0] = (struct mai_quant){ .offset = 255, .length = 1, .value = 0x99 };
	assert_true(mai_filter_match(&f, &m));
	/* all quantifiers must hold */
	f.nquant = 2;
	f.quant[1] = (struct mai_quant){ .offset = 1, .length = 1, .value = 0x01 };
	assert_true(mai_filter_match(&f, &m));
	f.quant[1].value = 0x81;
	assert_false(mai_filter_match(&f, &m));
	/* an unchecked, out-of-range quantifier never matches (no read past) */
	f.nquant = 1;
	f.quant[0] = (struct mai_quant){ .offset = 250, .length = 8, .value = 0 };
	assert_false(mai_filter_match(&f, &m));
	/* OOB: bytes past data_len read as zero */
	fill_mad(&m, MAI_TYPE_OOB, 0);
	m.data_len = 4;
	m.data[4] = 0x55;
	f.quant[0] = (struct mai_quant){ .offset = 28, .length = 1, .value = 0 };
	assert_true(mai_filter_match(&f, &m));
}

static void test_match_consuming(void **state)
{
	mai_mad_t m;
	uint32_t out[8];
	mai_filter_t nc_all = filt(0, 0, 0, 0, 0);
	mai_filter_t nc_sma = filt(0, MAI_M_CLASS, 0x01, 0, 0);
	mai_filter_t c_old = filt(MAI_F_CONSUME, MAI_M_CLASS | MAI_M_ATTR, 0x01, 0, 0x0015);
	mai_filter_t c_new = filt(MAI_F_CONSUME, MAI_M_CLASS, 0x01, 0, 0);
	mai_filter_t c_other = filt(MAI_F_CONSUME, MAI_M_CLASS, 0x04, 0, 0);

	rx_mad(&m);
	/* only non-consuming filters: every matching channel, once, in order */
	struct mai_filter_ent e1[] = {
		{ .chan = 10, .seq = 1, .f = &nc_all },
		{ .chan = 11, .seq = 2, .f = &nc_sma },
		{ .chan = 10, .seq = 3, .f = &nc_sma },	/* same channel again */
		{ .chan = 12, .seq = 4, .f = &c_other },	/* consuming, no match */
	};
	assert_int_equal(mai_match(e1, 4, &m, out, 8), 2);
	assert_int_equal(out[0], 10);
	assert_int_equal(out[1], 11);
	/* short output array: the count still says how many */
	assert_int_equal(mai_match(e1, 4, &m, out, 1), 2);
	assert_int_equal(out[0], 10);

	/* a passing consuming filter takes it exclusively, whatever its place */
	struct mai_filter_ent e2[] = {
		{ .chan = 10, .seq = 1, .f = &nc_all },
		{ .chan = 20, .seq = 2, .f = &c_old },
		{ .chan = 11, .seq = 3, .f = &nc_sma },
	};
	out[0] = 0;
	assert_int_equal(mai_match(e2, 3, &m, out, 8), 1);
	assert_int_equal(out[0], 20);

	/* two consuming filters pass: the more specific wins whatever the age
	 * (c_old names class and attribute, c_new only the class) */
	struct mai_filter_ent e3[] = {
		{ .chan = 21, .seq = 9, .f = &c_new },
		{ .chan = 20, .seq = 2, .f = &c_old },
		{ .chan = 10, .seq = 1, .f = &nc_all },
	};
	assert_int_equal(mai_filter_specificity(&c_new), 1);
	assert_int_equal(mai_filter_specificity(&c_old), 2);
	assert_int_equal(mai_match(e3, 3, &m, out, 8), 1);
	assert_int_equal(out[0], 20);
	e3[0].seq = 1;
	e3[1].seq = 9;
	assert_int_equal(mai_match(e3, 3, &m, out, 8), 1);
	assert_int_equal(out[0], 20);
	/* equally specific: the newest (takeover) wins, either order */
	mai_filter_t c_eq = filt(MAI_F_CONSUME, MAI_M_CLASS | MAI_M_METHOD, 0x01, m.method, 0);
	e3[0].f = &c_eq;
	e3[0].seq = 10;
	assert_int_equal(mai_match(e3, 3, &m, out, 8), 1);
	assert_int_equal(out[0], 21);
	e3[0].seq = 3;
	assert_int_equal(mai_match(e3, 3, &m, out, 8), 1);
	assert_int_equal(out[0], 20);
	/* a quantifier counts as much as a field */
	c_new.nquant = 1;
	c_new.quant[0] = (struct mai_quant){ .offset = 1, .length = 1, .value = 0x01 };
	c_new.match |= MAI_M_BASE_VER;
	c_new.base_version = m.base_version;
	assert_int_equal(mai_filter_specificity(&c_new), 3);
	e3[0].f = &c_new;
	assert_int_equal(mai_match(e3, 3, &m, out, 8), 1);
	assert_int_equal(out[0], 21);
	/* the more specific one stops matching (another attribute): the other keeps it */
	e3[0].f = &c_eq;
	m.attr_id = 0x0011;
	assert_int_equal(mai_match(e3, 3, &m, out, 8), 1);
	assert_int_equal(out[0], 21);
	c_eq.match |= MAI_M_ATTR;
	c_eq.attr_id = 0x0020;
	assert_int_equal(mai_match(e3, 3, &m, out, 8), 1);
	assert_int_equal(out[0], 10);	/* no consumer passes: the copy goes out */

	/* nobody */
	m.mgmt_class = 0x03;
	struct mai_filter_ent e4[] = { { .chan = 11, .seq = 1, .f = &nc_sma } };
	assert_int_equal(mai_match(e4, 1, &m, out, 8), 0);
	assert_int_equal(mai_match(NULL, 0, &m, out, 8), 0);
	m.type = 0;
	assert_int_equal(mai_match(e4, 1, &m, out, 8), -EINVAL);
}

/* softibd's own agents (internal) come before every client filter, even a
 * more specific or newer one; MAI_F_EXCLUSIVE's template comparison. */
static void test_match_internal(void **state)
{
	mai_mad_t m;
	uint32_t out[8];
	mai_filter_t agent = filt(MAI_F_CONSUME, MAI_M_CLASS | MAI_M_METHOD, 0x01, 0, 0);
	mai_filter_t client = filt(MAI_F_CONSUME, MAI_M_CLASS | MAI_M_METHOD | MAI_M_ATTR, 0x01, 0,
				   0);

	rx_mad(&m);
	agent.method = client.method = m.method;
	client.attr_id = m.attr_id;
	struct mai_filter_ent e[] = {
		{ .chan = 30, .seq = 7, .f = &client },
		{ .chan = 1, .seq = 0, .f = &agent, .internal = 1 },
	};
	assert_int_equal(mai_match(e, 2, &m, out, 8), 1);
	assert_int_equal(out[0], 1);
	e[1].internal = 0; /* as a client it loses to the more specific one */
	assert_int_equal(mai_match(e, 2, &m, out, 8), 1);
	assert_int_equal(out[0], 30);
	e[1].internal = 1; /* an internal filter that does not pass claims nothing */
	m.method ^= 0x02;
	client.method = m.method;
	assert_int_equal(mai_match(e, 2, &m, out, 8), 1);
	assert_int_equal(out[0], 30);

	/* the same template: fields named by match, quantifiers, consuming */
	mai_filter_t a = filt(MAI_F_CONSUME, MAI_M_CLASS | MAI_M_METHOD, 0x04, 0x01, 0);
	mai_filter_t b = a;

	b.handle = 99;
	b.attr_id = 0x1234;	/* not named by match */
	b.flags |= MAI_F_EXCLUSIVE;
	assert_int_equal(mai_filter_same(&a, &b), 1);
	b.method = 0x02;
	assert_int_equal(mai_filter_same(&a, &b), 0);
	b = a;
	b.flags = 0;
	assert_int_equal(mai_filter_same(&a, &b), 0);
	b = a;
	b.match |= MAI_M_ATTR;
	assert_int_equal(mai_filter_same(&a, &b), 0);
	b = a;
	b.nquant = a.nquant = 1;
	a.quant[0] = (struct mai_quant){ .offset = 37, .length = 3, .value = 0x1405 };
	b.quant[0] = a.quant[0];
	assert_int_equal(mai_filter_same(&a, &b), 1);
	b.quant[0].value = 0x1406;
	assert_int_equal(mai_filter_same(&a, &b), 0);
	/* EXCLUSIVE needs CONSUME */
	b = a;
	assert_int_equal(mai_filter_check(&b), 0);
	b.flags = MAI_F_EXCLUSIVE;
	assert_int_equal(mai_filter_check(&b), -EINVAL);
	b.flags = MAI_F_EXCLUSIVE | MAI_F_CONSUME;
	assert_int_equal(mai_filter_check(&b), 0);
}

static void test_match_oob(void **state)
{
	mai_mad_t m;
	uint32_t out[8];
	mai_filter_t nc = filt(0, MAI_M_CLASS, 0x01, 0, 0);
	mai_filter_t c1 = filt(MAI_F_CONSUME, MAI_M_CLASS, 0x01, 0, 0);
	mai_filter_t c2 = filt(MAI_F_CONSUME, MAI_M_CLASS | MAI_M_METHOD, 0x01, 0x01, 0);
	mai_filter_t other = filt(MAI_F_CONSUME, MAI_M_CLASS, 0x04, 0, 0);

	rx_mad(&m);
	m.type = MAI_TYPE_OOB;
	m.data_len = 16;
	/* OOB goes to every channel with a passing filter, consumers included */
	struct mai_filter_ent e[] = {
		{ .chan = 30, .seq = 5, .f = &c1 },
		{ .chan = 31, .seq = 6, .f = &c2 },
		{ .chan = 32, .seq = 1, .f = &nc },
		{ .chan = 30, .seq = 7, .f = &nc },	/* channel 30 once */
		{ .chan = 33, .seq = 8, .f = &other },
	};
	assert_int_equal(mai_match(e, 5, &m, out, 8), 3);
	assert_int_equal(out[0], 30);
	assert_int_equal(out[1], 31);
	assert_int_equal(out[2], 32);
	/* the same as a MAD: the most specific consumer only (c2 names the method) */
	m.type = MAI_TYPE_MAD;
	m.data_len = MAI_MAD_DATA_SIZE;
	assert_int_equal(mai_match(e, 5, &m, out, 8), 1);
	assert_int_equal(out[0], 31);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mstream_roundtrip),
		cmocka_unit_test(test_mstream_layout),
		cmocka_unit_test(test_mstream_hostile),
		cmocka_unit_test(test_mstream_writer_errors),
		cmocka_unit_test(test_fstream_roundtrip),
		cmocka_unit_test(test_fstream_hostile),
		cmocka_unit_test(test_streams_tmpfile),
		cmocka_unit_test(test_streams_damaged),
		cmocka_unit_test(test_wire_roundtrip),
		cmocka_unit_test(test_wire_layout),
		cmocka_unit_test(test_wire_hostile),
		cmocka_unit_test(test_match_fields),
		cmocka_unit_test(test_match_quantifiers),
		cmocka_unit_test(test_match_consuming),
		cmocka_unit_test(test_match_internal),
		cmocka_unit_test(test_match_oob),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
