// SPDX-License-Identifier: MIT
/*
 * src/iba/sa.c unit tests: SA record layouts (IBA 15.2.5) against the
 * verified NodeRecord vectors of ../shared/research/mad-vectors, generic
 * field-table checks (disjoint, round trip), ComponentMask bits, and RMPP
 * (IBA 13.6) segmentation/reassembly including hostile segments.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "iba/sa.h"
#include "../data/mad_vectors.h"

/* reassembled_noderecord.hex: the 392-byte message a umad reader gets */
static const char reassembled_hex[] =
	"0103029200000000000000070000009900110000000000000101030000000001000001780000000000000000000e0000000000000000000000010000010101010008f104000001000008f104000001000008f104000001010080101700000000010002c94831206d6c78355f30000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000020000010102080008f104000002000008f104000002000008f104000002000008c73800000000010002c9533100000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000030000010101020008f104000003000008f104000003000008f104000003010080101700000000010002c94832206d6c78355f300000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000";

static size_t unhex(const char *s, uint8_t *out, size_t max)
{
	size_t n = 0;
	unsigned v;

	while (s[0] && s[1] && n < max && sscanf(s, "%2x", &v) == 1) {
		out[n++] = (uint8_t)v;
		s += 2;
	}
	return n;
}

static const struct mad_vector *vec(const char *name)
{
	for (size_t i = 0; i < sizeof(mad_vectors) / sizeof(mad_vectors[0]); i++)
		if (strcmp(mad_vectors[i].name, name) == 0)
			return &mad_vectors[i];
	fail_msg("no vector %s", name);
	return NULL;
}

/* ---- records ------------------------------------------------------------------ */

static void test_noderecord_vector(void **state)
{
	(void)state;
	uint8_t msg[512], out[112];
	size_t len = unhex(reassembled_hex, msg, sizeof(msg));
	const struct sa_layout *l = sa_layout_find(SA_ATTR_NODE_RECORD);
	struct sa_node_record r;
	struct mad_sa s;

	assert_int_equal(len, 392);
	assert_non_null(l);
	assert_int_equal(mad_sa_decode(&s, msg), 0);
	assert_int_equal(s.attr_offset * 8, l->size);
	assert_int_equal((len - MAD_SA_HDR_SIZE) % l->size, 0);	/* saquery's count */
	assert_int_equal((len - MAD_SA_HDR_SIZE) / l->size, 3);

	sa_node_record_decode(&r, msg + 56);
	assert_int_equal(r.lid, 1);
	assert_int_equal(r.node_info.base_version, 1);
	assert_int_equal(r.node_info.node_type, MAD_NODE_TYPE_CA);
	assert_int_equal(r.node_info.num_ports, 1);
	assert_int_equal(r.node_info.sys_guid, 0x0008f10400000100ull);
	assert_int_equal(r.node_info.node_guid, 0x0008f10400000100ull);
	assert_int_equal(r.node_info.port_guid, 0x0008f10400000101ull);
	assert_int_equal(r.node_info.partition_cap, 128);
	assert_int_equal(r.node_info.device_id, 0x1017);
	assert_int_equal(r.node_info.local_port_num, 1);
	assert_int_equal(r.node_info.vendor_id, 0x0002c9);
	assert_memory_equal(r.node_desc.description, "H1 mlx5_0", 10);
	sa_node_record_encode(&r, out);
	assert_memory_equal(out, msg + 56, 112);

	sa_node_record_decode(&r, msg + 56 + 112);
	assert_int_equal(r.lid, 2);
	assert_int_equal(r.node_info.node_type, MAD_NODE_TYPE_SWITCH);
	assert_int_equal(r.node_info.num_ports, 8);
	assert_int_equal(r.node_info.local_port_num, 1);	/* as the vector has it */
	assert_memory_equal(r.node_desc.description, "S1", 3);
	sa_node_record_encode(&r, out);
	assert_memory_equal(out, msg + 56 + 112, 112);

	sa_node_record_decode(&r, msg + 56 + 224);
	assert_int_equal(r.lid, 3);
	assert_int_equal(r.node_info.port_guid, 0x0008f10400000301ull);
	assert_memory_equal(r.node_desc.description, "H2 mlx5_0", 10);
	sa_node_record_encode(&r, out);
	assert_memory_equal(out, msg + 56 + 224, 112);

	/* the two RMPP segment vectors carry the same records */
	assert_memory_equal(vec("sa_gettableresp_noderecord_seg1")->mad + 56, msg + 56, 200);
	assert_memory_equal(vec("sa_gettableresp_noderecord_seg2")->mad + 56, msg + 256, 136);
}

static void set_member(uint8_t *obj, const struct mad_field *f, unsigned k,
		       uint64_t v)
{
	memcpy(obj + f->member + k * f->msize, &v, f->msize);	/* little-endian host */
}

/* Every field of every record (own and embedded) covers exactly its bits,
 * no two fields share a bit, and each decodes back into its member only. */
static void test_record_fields_disjoint(void **state)
{
	(void)state;
	size_t n;
	const struct sa_layout *l = sa_layouts(&n);

	assert_int_equal(n, 7);
	for (size_t i = 0; i < n; i++) {
		struct mad_field f[128];
		size_t nf = sa_layout_flatten(&l[i], f, 128);
		uint8_t used[MAD_SA_DATA_SIZE] = { 0 };

		assert_true(nf <= 128 && nf >= 1);
		assert_int_equal(l[i].size % 8, 0);
		assert_true(l[i].ncomp >= 1 && l[i].ncomp <= 64);
		for (size_t j = 0; j < nf; j++) {
			for (unsigned k = 0; k < f[j].count; k++) {
				uint8_t obj[512] = { 0 }, back[512] = { 0 }, p[MAD_SA_DATA_SIZE] = { 0 };
				unsigned off = f[j].off + k * f[j].stride;

				assert_true(f[j].member + (k + 1) * f[j].msize <= 512);
				set_member(obj, &f[j], k, f[j].mask);
				sa_record_encode(&l[i], obj, p);
				for (unsigned b = 0; b < (unsigned)f[j].bytes * 8; b++) {
					unsigned bit = (unsigned)f[j].bytes * 8 - 1 - b;
					bool mine = b >= f[j].shift && ((f[j].mask >> (b - f[j].shift)) & 1);
					unsigned byte = off + bit / 8;
					uint8_t m = (uint8_t)(0x80 >> (bit % 8));

					if (!mine)
						continue;
					assert_true(byte < l[i].size);
					if (!(p[byte] & m))
						fail_msg("%s.%s bit missing", l[i].name, f[j].name);
					if (used[byte] & m)
						fail_msg("%s.%s overlaps", l[i].name, f[j].name);
					used[byte] |= m;
					p[byte] &= (uint8_t)~m;
				}
				for (unsigned b = 0; b < MAD_SA_DATA_SIZE; b++)
					if (p[b])
						fail_msg("%s.%s[%u] set byte %u", l[i].name, f[j].name, k, b);
				set_member(obj, &f[j], k, f[j].mask);
				sa_record_encode(&l[i], obj, p);
				sa_record_decode(&l[i], p, back);
				assert_memory_equal(obj, back, sizeof(obj));
			}
		}
	}
}

/* Byte positions and ComponentMask bits from mad-formats.md §4.2-4.3. */
static void test_record_positions_and_comp_mask(void **state)
{
	(void)state;
	uint8_t p[MAD_SA_DATA_SIZE];
	struct sa_path_record pr = { 0 };
	struct sa_mcmember_record mc = { 0 };
	struct sa_link_record lr = { .from_lid = 0x0102, .from_port = 3,
				     .to_port = 4, .to_lid = 0x0506 };
	struct sa_guid_info_record gr = { .lid = 7, .block_num = 2 };
	struct sa_port_info_record pir = { .endport_lid = 9, .port_num = 1 };
	struct sa_switch_info_record sir = { .lid = 2 };

	pr.dlid = 0x1234;
	pr.sl = 5;
	pr.mtu_selector = 2;
	pr.mtu = MAD_MTU_4096;
	pr.reversible = 1;
	pr.numb_path = 1;
	pr.flow_label = 0xABCDE;
	pr.hop_limit = 0x40;
	pr.preference = 9;
	sa_path_record_encode(&pr, p);
	assert_int_equal(p[40], 0x12);
	assert_int_equal(p[41], 0x34);
	assert_int_equal(p[53], 5);
	assert_int_equal(p[54], 0x80 | MAD_MTU_4096);
	assert_int_equal(p[49], 0x81);
	assert_int_equal(p[44], 0x0A);
	assert_int_equal(p[45], 0xBC);
	assert_int_equal(p[46], 0xDE);
	assert_int_equal(p[47], 0x40);
	assert_int_equal(p[57], 9);

	mc.join_state = 1;
	mc.scope = 2;
	mc.sl = 3;
	mc.mlid = 0xC001;
	mc.proxy_join = 1;
	sa_mcmember_record_encode(&mc, p);
	assert_int_equal(p[48], 0x21);
	assert_int_equal(p[44], 0x30);
	assert_int_equal(p[36], 0xC0);
	assert_int_equal(p[49], 0x80);

	sa_link_record_encode(&lr, p);
	assert_memory_equal(p, ((uint8_t[]){ 1, 2, 3, 4, 5, 6, 0, 0 }), 8);

	gr.guid_info.guid[7] = 0x1122334455667788ull;
	sa_guid_info_record_encode(&gr, p);
	assert_int_equal(p[1], 7);
	assert_int_equal(p[2], 2);
	assert_int_equal(p[64], 0x11);
	assert_int_equal(p[71], 0x88);

	pir.port_info.lid = 0xBEEF;
	sa_port_info_record_encode(&pir, p);
	assert_int_equal(p[1], 9);
	assert_int_equal(p[2], 1);
	assert_int_equal(p[4 + 16], 0xBE);	/* PortInfo.LID at PortInfo byte 16 */

	sir.switch_info.linear_fdb_top = 0x00C0;
	sa_switch_info_record_encode(&sir, p);
	assert_int_equal(p[1], 2);
	assert_int_equal(p[4 + 7], 0xC0);	/* SwitchInfo.LinearFDBTop, byte 6-7 */

	assert_int_equal(sa_comp_mask(sa_layout_find(SA_ATTR_NODE_RECORD), "LID"), 1);
	assert_int_equal(sa_comp_mask(sa_layout_find(SA_ATTR_NODE_RECORD), "NodeGUID"), 1u << 7);
	assert_int_equal(sa_comp_mask(sa_layout_find(SA_ATTR_NODE_RECORD), "NodeDescription"), 1u << 14);
	assert_int_equal(sa_comp_mask(sa_layout_find(SA_ATTR_PATH_RECORD), "ServiceID"), 3);
	assert_int_equal(sa_comp_mask(sa_layout_find(SA_ATTR_PATH_RECORD), "DGID"), 1u << 2);
	assert_int_equal(sa_comp_mask(sa_layout_find(SA_ATTR_PATH_RECORD), "NumbPath"), 1u << 12);
	assert_int_equal(sa_comp_mask(sa_layout_find(SA_ATTR_PATH_RECORD), "Preference"), 1u << 22);
	assert_int_equal(sa_comp_mask(sa_layout_find(SA_ATTR_MCMEMBER_RECORD), "JoinState"), 1u << 16);
	assert_int_equal(sa_comp_mask(sa_layout_find(SA_ATTR_MCMEMBER_RECORD), "ProxyJoin"), 1u << 17);
	assert_int_equal(sa_comp_mask(sa_layout_find(SA_ATTR_LINK_RECORD), "ToLID"), 1u << 3);
	assert_int_equal(sa_comp_mask(sa_layout_find(SA_ATTR_PORT_INFO_RECORD), "Options"), 1u << 2);
	assert_int_equal(sa_comp_mask(sa_layout_find(SA_ATTR_LINK_RECORD), "NoSuchField"), 0);
	assert_null(sa_layout_find(0x9999));
}

/* ---- RMPP ----------------------------------------------------------------- */

static uint8_t big_msg[MAD_SA_HDR_SIZE + SA_RMPP_MAX_DATA + MAD_SA_DATA_SIZE];
static uint8_t big_buf[MAD_SA_HDR_SIZE + SA_RMPP_MAX_DATA];

/* The verified vectors: the segments are built byte for byte from the
 * reassembled message, and the receiver's ACKs equal the recorded ACKs. */
static void test_rmpp_vectors(void **state)
{
	(void)state;
	uint8_t msg[512], seg[MAD_SIZE], out[MAD_SIZE], buf[512];
	size_t len = unhex(reassembled_hex, msg, sizeof(msg));
	struct sa_rmpp_recv r;
	bool rep;

	assert_int_equal(sa_rmpp_nsegs(len - 56), 2);
	assert_int_equal(sa_rmpp_build_seg(msg, len, 1, seg), 0);
	assert_memory_equal(seg, vec("sa_gettableresp_noderecord_seg1")->mad, MAD_SIZE);
	assert_int_equal(sa_rmpp_build_seg(msg, len, 2, seg), 0);
	assert_memory_equal(seg, vec("sa_gettableresp_noderecord_seg2")->mad, MAD_SIZE);
	assert_int_equal(sa_rmpp_build_seg(msg, len, 3, seg), -EINVAL);
	assert_int_equal(sa_rmpp_build_seg(msg, len, 0, seg), -EINVAL);
	assert_int_equal(sa_rmpp_build_seg(msg, 55, 1, seg), -EINVAL);

	sa_rmpp_recv_init(&r, buf, sizeof(buf), 64);
	assert_int_equal(sa_rmpp_recv_seg(&r, vec("sa_gettableresp_noderecord_seg1")->mad,
					  out, &rep), SA_RMPP_ACCEPTED);
	assert_true(rep);
	assert_memory_equal(out, vec("sa_rmpp_ack_seg1")->mad, MAD_SIZE);
	assert_int_equal(sa_rmpp_recv_seg(&r, vec("sa_gettableresp_noderecord_seg2")->mad,
					  out, &rep), SA_RMPP_COMPLETE);
	assert_true(rep);
	assert_memory_equal(out, vec("sa_rmpp_ack_seg2")->mad, MAD_SIZE);
	assert_int_equal(r.len, len);
	assert_memory_equal(buf, msg, len);
	/* a late duplicate is re-ACKed, never stored again */
	assert_int_equal(sa_rmpp_recv_seg(&r, vec("sa_gettableresp_noderecord_seg2")->mad,
					  out, &rep), SA_RMPP_DUPLICATE);
	assert_true(rep);
	assert_memory_equal(out, vec("sa_rmpp_ack_seg2")->mad, MAD_SIZE);
	/* not RMPP: the request vector */
	assert_int_equal(sa_rmpp_recv_seg(&r, vec("sa_gettable_noderecord_req")->mad,
					  out, &rep), SA_RMPP_NOT_RMPP);
	assert_false(rep);
}

/* Split a data_len message and reassemble it with window w; returns the
 * number of ACKs sent. */
static unsigned roundtrip(size_t data_len, uint32_t w)
{
	size_t len = MAD_SA_HDR_SIZE + data_len;
	uint32_t nsegs = sa_rmpp_nsegs(data_len);
	uint8_t seg[MAD_SIZE], out[MAD_SIZE];
	struct sa_rmpp_recv r;
	unsigned acks = 0;
	bool rep;

	memset(big_msg, 0, MAD_SA_HDR_SIZE);
	big_msg[0] = 1;
	big_msg[1] = MAD_MGMT_CLASS_SUBN_ADM;
	big_msg[2] = 2;
	big_msg[3] = MAD_METHOD_RESP_MASK | MAD_METHOD_GETTABLE;
	big_msg[26] = MAD_RMPP_FLAG_ACTIVE;
	for (size_t i = 0; i < data_len; i++)
		big_msg[MAD_SA_HDR_SIZE + i] = (uint8_t)(i * 7 + i / 251 + 1);
	memset(big_buf, 0xEE, sizeof(big_buf));
	sa_rmpp_recv_init(&r, big_buf, len, w);
	for (uint32_t s = 1; s <= nsegs; s++) {
		enum sa_rmpp_verdict v;

		assert_int_equal(sa_rmpp_build_seg(big_msg, len, s, seg), 0);
		v = sa_rmpp_recv_seg(&r, seg, out, &rep);
		assert_int_equal(v, s == nsegs ? SA_RMPP_COMPLETE : SA_RMPP_ACCEPTED);
		if (rep) {
			acks++;
			assert_int_equal(out[25], MAD_RMPP_TYPE_ACK);
			assert_int_equal(out[3], MAD_METHOD_GETTABLE);	/* R flipped */
			assert_int_equal(out[31], (uint8_t)s);
		}
	}
	assert_int_equal(r.len, len);
	/* big_msg header has no RMPP fields; segment 1's are in buf */
	assert_int_equal(big_buf[25], MAD_RMPP_TYPE_DATA);
	assert_memory_equal(big_buf + MAD_SA_HDR_SIZE, big_msg + MAD_SA_HDR_SIZE, data_len);
	return acks;
}

static void test_rmpp_roundtrip_sizes(void **state)
{
	(void)state;
	assert_int_equal(roundtrip(0, 64), 1);		/* First+Last: one ACK */
	assert_int_equal(roundtrip(1, 64), 1);
	assert_int_equal(roundtrip(MAD_SA_DATA_SIZE, 64), 1);
	assert_int_equal(roundtrip(MAD_SA_DATA_SIZE + 1, 64), 2);
	assert_int_equal(roundtrip(5 * MAD_SA_DATA_SIZE - 3, 64), 2);
	/* window 2: ACK after 1, at 3 (newwin), 5, and on Last (7) */
	assert_int_equal(roundtrip(7 * MAD_SA_DATA_SIZE, 2), 4);
	roundtrip(SA_RMPP_MAX_DATA, 64);
	assert_int_equal(sa_rmpp_nsegs(SA_RMPP_MAX_DATA), SA_RMPP_MAX_SEGS);
	assert_int_equal(sa_rmpp_build_seg(big_msg, MAD_SA_HDR_SIZE + SA_RMPP_MAX_DATA + 1,
					   1, big_buf), -EMSGSIZE);
}

/* Build the segments of a 5-segment message into segs[1..5]. */
static void five_segs(uint8_t segs[6][MAD_SIZE])
{
	size_t len = MAD_SA_HDR_SIZE + 5 * MAD_SA_DATA_SIZE - 10;

	memset(big_msg, 0, len);
	big_msg[0] = 1;
	big_msg[1] = MAD_MGMT_CLASS_SUBN_ADM;
	big_msg[2] = 2;
	big_msg[3] = 0x92;
	for (uint32_t s = 1; s <= 5; s++)
		assert_int_equal(sa_rmpp_build_seg(big_msg, len, s, segs[s]), 0);
}

static void test_rmpp_hostile(void **state)
{
	(void)state;
	static uint8_t segs[6][MAD_SIZE], bad[MAD_SIZE];
	uint8_t out[MAD_SIZE], buf[2048];
	struct sa_rmpp_recv r;
	bool rep;

	five_segs(segs);
	/* out of order and out of window */
	sa_rmpp_recv_init(&r, buf, sizeof(buf), 2);
	/* a later segment before segment 1: dropped, the sender restarts */
	assert_int_equal(sa_rmpp_recv_seg(&r, segs[2], out, &rep), SA_RMPP_OUT_OF_ORDER);
	assert_false(rep);
	memcpy(bad, segs[2], MAD_SIZE);
	bad[26] |= MAD_RMPP_FLAG_FIRST;	/* First on segment 2 */
	assert_int_equal(sa_rmpp_recv_seg(&r, bad, out, &rep), SA_RMPP_BAD);
	assert_true(rep);
	assert_int_equal(out[25], MAD_RMPP_TYPE_ABORT);
	assert_int_equal(out[27], SA_RMPP_STATUS_BAD_SEG);
	sa_rmpp_recv_init(&r, buf, sizeof(buf), 2);
	assert_int_equal(sa_rmpp_recv_seg(&r, segs[1], out, &rep), SA_RMPP_ACCEPTED);
	assert_int_equal(sa_rmpp_recv_seg(&r, segs[3], out, &rep), SA_RMPP_OUT_OF_ORDER);
	assert_false(rep);
	assert_int_equal(sa_rmpp_recv_seg(&r, segs[4], out, &rep), SA_RMPP_OUT_OF_WINDOW);
	assert_false(rep);
	assert_int_equal(sa_rmpp_recv_seg(&r, segs[1], out, &rep), SA_RMPP_DUPLICATE);
	assert_true(rep);
	assert_int_equal(out[25], MAD_RMPP_TYPE_ACK);
	assert_int_equal(out[31], 1);
	assert_int_equal(out[35], 3);	/* NewWindowLast = 1 + window */
	assert_int_equal(sa_rmpp_recv_seg(&r, segs[2], out, &rep), SA_RMPP_ACCEPTED);
	assert_int_equal(sa_rmpp_recv_seg(&r, segs[3], out, &rep), SA_RMPP_ACCEPTED);
	assert_true(rep);		/* window end: 3, next 5 */
	assert_int_equal(out[35], 5);
	assert_int_equal(sa_rmpp_recv_seg(&r, segs[4], out, &rep), SA_RMPP_ACCEPTED);
	assert_int_equal(sa_rmpp_recv_seg(&r, segs[5], out, &rep), SA_RMPP_COMPLETE);
	assert_int_equal(r.len, MAD_SA_HDR_SIZE + 5 * MAD_SA_DATA_SIZE - 10);

	/* oversized: the caller's buffer holds 2 segments; STOP, nothing past cap */
	memset(buf, 0xAA, sizeof(buf));
	sa_rmpp_recv_init(&r, buf, MAD_SA_HDR_SIZE + 2 * MAD_SA_DATA_SIZE, 64);
	assert_int_equal(sa_rmpp_recv_seg(&r, segs[1], out, &rep), SA_RMPP_ACCEPTED);
	assert_int_equal(sa_rmpp_recv_seg(&r, segs[2], out, &rep), SA_RMPP_ACCEPTED);
	assert_int_equal(sa_rmpp_recv_seg(&r, segs[3], out, &rep), SA_RMPP_TOO_BIG);
	assert_true(rep);
	assert_int_equal(out[25], MAD_RMPP_TYPE_STOP);
	assert_int_equal(out[27], SA_RMPP_STATUS_RESX);
	assert_int_equal(buf[MAD_SA_HDR_SIZE + 2 * MAD_SA_DATA_SIZE], 0xAA);
	assert_int_equal(sa_rmpp_recv_seg(&r, segs[4], out, &rep), SA_RMPP_FINISHED);

	/* hostile header values: each an ABORT with its status */
	struct { unsigned byte; uint8_t val; uint8_t status; } cases[] = {
		{ 24, 2, SA_RMPP_STATUS_UNV },
		{ 25, 9, SA_RMPP_STATUS_BADT },
		{ 27, 5, SA_RMPP_STATUS_BAD_STATUS },
		{ 31, 0, SA_RMPP_STATUS_BAD_SEG },
		{ 26, MAD_RMPP_FLAG_ACTIVE | MAD_RMPP_FLAG_FIRST | MAD_RMPP_FLAG_LAST,
		  SA_RMPP_STATUS_BAD_LEN },	/* Last with First's PayloadLength */
		{ 32, 0xFF, SA_RMPP_STATUS_RESX },	/* PayloadLength past the maximum */
		{ 36, 0, SA_RMPP_STATUS_RESX },	/* 0xFFFFFFFF: no wrap (bytes 32-35 set below) */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memcpy(bad, segs[1], MAD_SIZE);
		bad[cases[i].byte] = cases[i].val;
		if (cases[i].byte == 36)
			memset(bad + 32, 0xFF, 4);
		sa_rmpp_recv_init(&r, buf, sizeof(buf), 64);
		enum sa_rmpp_verdict v = sa_rmpp_recv_seg(&r, bad, out, &rep);
		assert_true(v == SA_RMPP_BAD || v == SA_RMPP_TOO_BIG);
		assert_true(rep);
		if (out[27] != cases[i].status)
			fail_msg("case %zu: status %u, want %u", i, out[27], cases[i].status);
	}
	/* a huge window is clamped (no wrap) and a huge SegmentNumber dropped */
	sa_rmpp_recv_init(&r, buf, sizeof(buf), 0xFFFFFFFFu);
	assert_int_equal(sa_rmpp_recv_seg(&r, segs[1], out, &rep), SA_RMPP_ACCEPTED);
	memcpy(bad, segs[2], MAD_SIZE);
	memset(bad + 28, 0xFF, 4);
	assert_int_equal(sa_rmpp_recv_seg(&r, bad, out, &rep), SA_RMPP_OUT_OF_WINDOW);
	/* the sender aborts */
	sa_rmpp_recv_init(&r, buf, sizeof(buf), 64);
	memcpy(bad, segs[1], MAD_SIZE);
	bad[25] = MAD_RMPP_TYPE_ABORT;
	assert_int_equal(sa_rmpp_recv_seg(&r, bad, out, &rep), SA_RMPP_PEER_ABORT);
	assert_false(rep);
	assert_string_equal(sa_rmpp_verdict_str(SA_RMPP_DUPLICATE), "duplicate");
	assert_string_equal(sa_rmpp_verdict_str((enum sa_rmpp_verdict)99), "unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_noderecord_vector),
		cmocka_unit_test(test_record_fields_disjoint),
		cmocka_unit_test(test_record_positions_and_comp_mask),
		cmocka_unit_test(test_rmpp_vectors),
		cmocka_unit_test(test_rmpp_roundtrip_sizes),
		cmocka_unit_test(test_rmpp_hostile),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
