// SPDX-License-Identifier: MIT
/*
 * Unit tests for src/iba/mad.c and mad_dr.c: the 13 verified MAD vectors of
 * ../shared/research/mad-vectors round-trip byte for byte and decode to the
 * values libibmad/tshark read (expect_libibmad in mad_vectors.json); every
 * table field at its maximum sets exactly its own bits; byte positions per
 * attribute (mad-formats.md §3, §5); the directed-route walk of smi_walk.txt
 * (IBA 14.2.2 C14-9/C14-13) and its drop verdicts; the reply transformation.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "iba/mad.h"
#include "../data/mad_vectors.h"

#define NVEC (sizeof(mad_vectors) / sizeof(mad_vectors[0]))

static const struct mad_vector *vec(const char *name)
{
	for (size_t i = 0; i < NVEC; i++)
		if (!strcmp(mad_vectors[i].name, name))
			return &mad_vectors[i];
	fail_msg("no vector %s", name);
	return NULL;
}

static const struct mad_layout *layout(uint16_t attr_id, const char *name)
{
	size_t n;
	const struct mad_layout *l = mad_layouts(&n);

	for (size_t i = 0; i < n; i++)
		if (l[i].attr_id == attr_id && (!name || !strcmp(l[i].name, name)))
			return &l[i];
	return NULL;
}

/* Decode the attribute at p with its layout and re-encode it into zeroes:
 * the bytes must come back unchanged. */
static void attr_roundtrip(uint16_t attr_id, const uint8_t *p)
{
	const struct mad_layout *l = layout(attr_id, NULL);
	uint64_t obj[64] = { 0 };
	uint8_t out[256] = { 0 };

	assert_non_null(l);
	mad_layout_decode(l, p, obj);
	mad_layout_encode(l, obj, out);
	assert_memory_equal(out, p, l->size);
}

/* ---- vectors: whole-MAD and attribute round trips ---------------------- */

static void test_vectors_roundtrip(void **state)
{
	(void)state;
	assert_int_equal(NVEC, 13);
	for (size_t i = 0; i < NVEC; i++) {
		const struct mad_vector *v = &mad_vectors[i];
		uint8_t out[MAD_SIZE];
		struct mad_smp smp;
		struct mad_sa sa;
		struct mad_pma pma;

		memset(out, 0xA5, sizeof(out));
		if (!strncmp(v->kind, "smp", 3)) {
			assert_int_equal(mad_smp_decode(&smp, v->mad), 0);
			mad_smp_encode(&smp, out);
			attr_roundtrip(smp.hdr.attr_id, v->mad + MAD_SMP_DATA_OFFS);
		} else if (!strncmp(v->kind, "sa", 2)) {
			assert_int_equal(mad_sa_decode(&sa, v->mad), 0);
			mad_sa_encode(&sa, out);
		} else {
			assert_string_equal(v->kind, "pma");
			assert_int_equal(mad_pma_decode(&pma, v->mad), 0);
			mad_pma_encode(&pma, out);
			attr_roundtrip(pma.hdr.attr_id, v->mad + MAD_PMA_DATA_OFFS);
		}
		if (memcmp(out, v->mad, MAD_SIZE))
			fail_msg("vector %s does not round-trip", v->name);
	}
	/* NodeRecords inside the SA segment: NodeInfo at record byte 4 and
	 * NodeDescription at 44 (mad-formats.md §4.2). */
	const uint8_t *rec = vec("sa_gettableresp_noderecord_seg1")->mad + 56;
	struct mad_node_info ni;
	struct mad_node_desc nd;

	attr_roundtrip(MAD_ATTR_NODE_INFO, rec + 4);
	attr_roundtrip(MAD_ATTR_NODE_DESC, rec + 44);
	mad_node_info_decode(&ni, rec + 4);
	mad_node_desc_decode(&nd, rec + 44);
	assert_int_equal(ni.node_type, MAD_NODE_TYPE_CA);
	assert_memory_equal(nd.description, "H1 mlx5_0", 9);
}

/* A reserved bit set in the input does not survive the round trip: the
 * test above would catch a codec that copies instead of decoding. */
static void test_reserved_bits_dropped(void **state)
{
	(void)state;
	uint8_t in[MAD_SIZE], out[MAD_SIZE];
	struct mad_smp smp;

	memcpy(in, vec("lid_getresp_portinfo")->mad, MAD_SIZE);
	in[18] = 0x01;				/* header reserved 18-19 */
	in[64 + 52] |= 0xE0;			/* PortInfo byte 52 bits 0-2 */
	assert_int_equal(mad_smp_decode(&smp, in), 0);
	mad_smp_encode(&smp, out);
	assert_int_equal(out[18], 0);
	assert_memory_equal(out, vec("lid_getresp_portinfo")->mad, 64);

	struct mad_port_info pi;
	uint8_t blk[64];

	mad_port_info_decode(&pi, in + 64);
	mad_port_info_encode(&pi, blk);
	assert_int_equal(blk[52], in[64 + 52] & 0x1F);
}

static void test_bad_headers(void **state)
{
	(void)state;
	uint8_t m[MAD_SIZE];
	struct mad_smp smp;
	struct mad_sa sa;
	struct mad_pma pma;

	memcpy(m, vec("lid_getresp_portinfo")->mad, MAD_SIZE);
	assert_int_equal(mad_sa_decode(&sa, m), -EPROTO);
	assert_int_equal(mad_pma_decode(&pma, m), -EPROTO);
	m[0] = 0x80;				/* OPA base version */
	assert_int_equal(mad_smp_decode(&smp, m), -EPROTO);
	memcpy(m, vec("pma_getresp_portcounters")->mad, MAD_SIZE);
	assert_int_equal(mad_smp_decode(&smp, m), -EPROTO);
}

/* ---- vectors: field values (expect_libibmad of mad_vectors.json) -------- */

static void test_vector_smp_fields(void **state)
{
	(void)state;
	struct mad_smp s;

	assert_int_equal(mad_smp_decode(&s, vec("dr_get_nodeinfo_link1")->mad), 0);
	assert_int_equal(s.hdr.base_version, 1);
	assert_int_equal(s.hdr.mgmt_class, 0x81);
	assert_int_equal(s.hdr.class_version, 1);
	assert_int_equal(s.hdr.method, MAD_METHOD_GET);
	assert_int_equal(s.hdr.r, 0);
	assert_int_equal(s.d, 0);
	assert_int_equal(s.hdr.status, 0);
	assert_int_equal(s.hop_cnt, 2);
	assert_int_equal(s.hop_ptr, 1);
	assert_int_equal(s.hdr.tid, 691489734722ull);
	assert_int_equal(s.hdr.attr_id, MAD_ATTR_NODE_INFO);
	assert_int_equal(s.hdr.attr_mod, 0);
	assert_int_equal(s.dr_slid, 0xFFFF);
	assert_int_equal(s.dr_dlid, 0xFFFF);
	assert_int_equal(s.initial_path[1], 1);
	assert_int_equal(s.initial_path[2], 4);

	assert_int_equal(mad_smp_decode(&s, vec("dr_get_nodeinfo_link2")->mad), 0);
	assert_int_equal(s.hop_ptr, 2);
	assert_int_equal(s.return_path[1], 1);

	assert_int_equal(mad_smp_decode(&s, vec("dr_getresp_nodeinfo_link1")->mad), 0);
	assert_int_equal(s.hdr.r, 1);
	assert_int_equal(s.hdr.method, MAD_METHOD_GET);
	assert_int_equal(s.d, 1);
	assert_int_equal(s.hdr.status, 0);
	assert_int_equal(s.hop_ptr, 1);
	assert_int_equal(s.return_path[1], 1);
	assert_int_equal(s.return_path[2], 1);

	struct mad_node_info ni;

	mad_node_info_decode(&ni, s.data);
	assert_int_equal(ni.base_version, 1);
	assert_int_equal(ni.class_version, 1);
	assert_int_equal(ni.node_type, MAD_NODE_TYPE_CA);
	assert_int_equal(ni.num_ports, 2);
	assert_int_equal(ni.sys_guid, 2516799295849216ull);
	assert_int_equal(ni.node_guid, 2516799295849216ull);
	assert_int_equal(ni.port_guid, 2516799295849217ull);
	assert_int_equal(ni.partition_cap, 128);
	assert_int_equal(ni.device_id, 4119);
	assert_int_equal(ni.revision, 0);
	assert_int_equal(ni.local_port_num, 1);
	assert_int_equal(ni.vendor_id, 713);

	assert_int_equal(mad_smp_decode(&s, vec("dr_set_lft_block0")->mad), 0);
	assert_int_equal(s.hdr.method, MAD_METHOD_SET);
	assert_int_equal(s.hdr.attr_id, MAD_ATTR_LIN_FWD_TBL);
	assert_int_equal(s.hop_cnt, 1);
	assert_int_equal(s.hop_ptr, 1);

	struct mad_lft lft;

	mad_lft_decode(&lft, s.data);
	assert_int_equal(lft.port[0], MAD_LFT_NO_PATH);
	assert_int_equal(lft.port[1], 1);
	assert_int_equal(lft.port[2], 0);
	assert_int_equal(lft.port[3], 4);
	for (int i = 4; i < 64; i++)
		assert_int_equal(lft.port[i], MAD_LFT_NO_PATH);
}

static void test_vector_portinfo(void **state)
{
	(void)state;
	struct mad_smp s;
	struct mad_port_info pi;

	assert_int_equal(mad_smp_decode(&s, vec("lid_getresp_portinfo")->mad), 0);
	assert_int_equal(s.hdr.mgmt_class, MAD_MGMT_CLASS_SUBN_LID_ROUTED);
	assert_int_equal(s.hdr.r, 1);
	assert_int_equal(s.hdr.status, 0);
	assert_int_equal(s.hdr.tid, 21474836599ull);
	assert_int_equal(s.hdr.attr_id, MAD_ATTR_PORT_INFO);
	assert_int_equal(s.hdr.attr_mod, 1);
	assert_int_equal(s.m_key, 0);
	mad_port_info_decode(&pi, s.data);
	assert_int_equal(pi.lid, 3);
	assert_int_equal(pi.master_sm_lid, 1);
	assert_int_equal(pi.capability_mask, 642902088u);
	assert_int_equal(pi.local_port_num, 1);
	assert_int_equal(pi.link_width_enabled, 3);
	assert_int_equal(pi.link_width_supported, 3);
	assert_int_equal(pi.link_width_active, 2);
	assert_int_equal(pi.link_speed_supported, 7);
	assert_int_equal(pi.port_state, MAD_PORT_STATE_ACTIVE);
	assert_int_equal(pi.port_phys_state, MAD_PORT_PHYS_STATE_LINKUP);
	assert_int_equal(pi.link_down_default_state, 2);
	assert_int_equal(pi.lmc, 0);
	assert_int_equal(pi.link_speed_active, 4);
	assert_int_equal(pi.link_speed_enabled, 7);
	assert_int_equal(pi.neighbor_mtu, MAD_MTU_4096);
	assert_int_equal(pi.master_sm_sl, 0);
	assert_int_equal(pi.vl_cap, 4);
	assert_int_equal(pi.vl_high_limit, 4);
	assert_int_equal(pi.vl_arbitration_high_cap, 8);
	assert_int_equal(pi.vl_arbitration_low_cap, 8);
	assert_int_equal(pi.mtu_cap, MAD_MTU_4096);
	assert_int_equal(pi.operational_vls, 4);
	assert_int_equal(pi.guid_cap, 128);
	assert_int_equal(pi.subnet_timeout, 18);
	assert_int_equal(pi.resp_time_value, 16);
	assert_int_equal(pi.local_phy_errors, 8);
	assert_int_equal(pi.overrun_errors, 8);
	assert_int_equal(pi.m_key_lease_period, 15);
	assert_int_equal(pi.gid_prefix, 18338657682652659712ull);
	assert_true(pi.capability_mask & MAD_PORT_CAP_IS_TRAP_SUP);
	assert_false(pi.capability_mask & MAD_PORT_CAP_IS_SM);	/* H2, not the SM */
}

static void test_vector_sa_fields(void **state)
{
	(void)state;
	struct mad_sa s;

	assert_int_equal(mad_sa_decode(&s, vec("sa_gettable_noderecord_req")->mad), 0);
	assert_int_equal(s.hdr.method, MAD_METHOD_GETTABLE);
	assert_int_equal(s.hdr.r, 0);
	assert_int_equal(s.hdr.class_version, 2);
	assert_int_equal(s.hdr.tid, 30064771225ull);
	assert_int_equal(s.hdr.attr_id, 0x11);
	assert_int_equal(s.rmpp.rmpp_version, 0);
	assert_int_equal(s.rmpp.rmpp_type, 0);
	assert_int_equal(s.rmpp.rmpp_flags, 0);
	assert_int_equal(s.sm_key, 0);
	assert_int_equal(s.attr_offset, 0);
	assert_int_equal(s.comp_mask, 0);

	assert_int_equal(mad_sa_decode(&s, vec("sa_gettableresp_noderecord_seg1")->mad), 0);
	assert_int_equal(s.hdr.r, 1);
	assert_int_equal(s.hdr.method, MAD_METHOD_GETTABLE);
	assert_int_equal(s.rmpp.rmpp_version, 1);
	assert_int_equal(s.rmpp.rmpp_type, MAD_RMPP_TYPE_DATA);
	assert_int_equal(s.rmpp.rmpp_resp_time, 0);
	assert_int_equal(s.rmpp.rmpp_flags, MAD_RMPP_FLAG_ACTIVE | MAD_RMPP_FLAG_FIRST);
	assert_int_equal(s.rmpp.rmpp_status, 0);
	assert_int_equal(s.rmpp.seg_num, 1);
	assert_int_equal(s.rmpp.payload_len, 376);
	assert_int_equal(s.attr_offset, 14);

	assert_int_equal(mad_sa_decode(&s, vec("sa_rmpp_ack_seg1")->mad), 0);
	assert_int_equal(s.hdr.r, 0);
	assert_int_equal(s.rmpp.rmpp_type, MAD_RMPP_TYPE_ACK);
	assert_int_equal(s.rmpp.rmpp_flags, MAD_RMPP_FLAG_ACTIVE);
	assert_int_equal(s.rmpp.seg_num, 1);
	assert_int_equal(s.rmpp.payload_len, 65);	/* NewWindowLast */

	assert_int_equal(mad_sa_decode(&s, vec("sa_gettableresp_noderecord_seg2")->mad), 0);
	assert_int_equal(s.rmpp.rmpp_flags, MAD_RMPP_FLAG_ACTIVE | MAD_RMPP_FLAG_LAST);
	assert_int_equal(s.rmpp.seg_num, 2);
	assert_int_equal(s.rmpp.payload_len, 156);
	assert_int_equal(s.attr_offset, 14);

	assert_int_equal(mad_sa_decode(&s, vec("sa_rmpp_ack_seg2")->mad), 0);
	assert_int_equal(s.rmpp.rmpp_type, MAD_RMPP_TYPE_ACK);
	assert_int_equal(s.rmpp.seg_num, 2);
	assert_int_equal(s.rmpp.payload_len, 65);
}

static void test_vector_pma_and_notice(void **state)
{
	(void)state;
	struct mad_pma p;
	struct mad_port_counters pc;

	assert_int_equal(mad_pma_decode(&p, vec("pma_getresp_portcounters")->mad), 0);
	assert_int_equal(p.hdr.mgmt_class, MAD_MGMT_CLASS_PERF_MGMT);
	assert_int_equal(p.hdr.r, 1);
	assert_int_equal(p.hdr.tid, 38654705955ull);
	assert_int_equal(p.hdr.attr_id, MAD_ATTR_PORT_CNTRS);
	mad_port_counters_decode(&pc, p.data);
	assert_int_equal(pc.port_select, 1);
	assert_int_equal(pc.counter_select, 0);
	assert_int_equal(pc.symbol_error_counter, 65535);
	assert_int_equal(pc.link_error_recovery_counter, 0);
	assert_int_equal(pc.link_downed_counter, 1);
	assert_int_equal(pc.port_xmit_discards, 2);
	assert_int_equal(pc.port_xmit_data, 74565);
	assert_int_equal(pc.port_rcv_data, 69905);
	assert_int_equal(pc.port_xmit_pkts, 1037);
	assert_int_equal(pc.port_rcv_pkts, 1022);
	assert_int_equal(pc.port_xmit_wait, 0);

	struct mad_smp s;
	struct mad_notice n;
	struct mad_trap128 t;

	assert_int_equal(mad_smp_decode(&s, vec("lid_trap128_notice")->mad), 0);
	assert_int_equal(s.hdr.method, MAD_METHOD_TRAP);
	assert_int_equal(s.hdr.r, 0);
	assert_int_equal(s.hdr.mgmt_class, MAD_MGMT_CLASS_SUBN_LID_ROUTED);
	assert_int_equal(s.hdr.attr_id, MAD_ATTR_NOTICE);
	assert_int_equal(s.hdr.tid, 3);
	mad_notice_decode(&n, s.data);
	assert_int_equal(n.is_generic, 1);
	assert_int_equal(n.type, MAD_NOTICE_TYPE_URGENT);
	assert_int_equal(n.producer_type, MAD_NOTICE_PROD_SWITCH);
	assert_int_equal(n.trap_num, MAD_TRAP_LINK_STATE_CHANGE);
	assert_int_equal(n.issuer_lid, 2);
	assert_int_equal(n.notice_toggle, 0);
	assert_int_equal(n.notice_count, 0);
	mad_trap128_decode(&t, &n);
	assert_int_equal(t.lid, 2);

	/* Building the same trap from fields gives the vector's data bytes. */
	struct mad_notice b = { .is_generic = 1, .type = MAD_NOTICE_TYPE_URGENT,
		.producer_type = MAD_NOTICE_PROD_SWITCH,
		.trap_num = MAD_TRAP_LINK_STATE_CHANGE, .issuer_lid = 2 };
	uint8_t blk[64];

	mad_trap128_encode(&t, &b);
	mad_notice_encode(&b, blk);
	assert_memory_equal(blk, s.data, 64);

	assert_int_equal(mad_smp_decode(&s, vec("lid_trap_repress")->mad), 0);
	assert_int_equal(s.hdr.method, MAD_METHOD_TRAP_REPRESS);
	assert_int_equal(s.hdr.r, 0);
	mad_notice_decode(&n, s.data);
	assert_int_equal(n.trap_num, 128);
}

/* ---- tables: every field at max sets exactly its own bits --------------- */

static void set_member(uint8_t *obj, const struct mad_field *f, unsigned k,
		       uint64_t v)
{
	memcpy(obj + f->member + k * f->msize, &v, f->msize);	/* little-endian host */
}

static void test_layout_fields_disjoint(void **state)
{
	(void)state;
	size_t n;
	const struct mad_layout *l = mad_layouts(&n);

	assert_true(n >= 20);
	for (size_t i = 0; i < n; i++) {
		uint8_t used[MAD_SIZE] = { 0 };

		for (size_t j = 0; j < l[i].nfields; j++) {
			const struct mad_field *f = &l[i].fields[j];

			assert_true(f->count >= 1);
			assert_true(f->mask != 0 && f->msize * 8 >= 64 - __builtin_clzll(f->mask));
			for (unsigned k = 0; k < f->count; k++) {
				uint8_t obj[512] = { 0 }, back[512] = { 0 }, p[MAD_SIZE] = { 0 };
				unsigned off = f->off + k * f->stride;

				set_member(obj, f, k, f->mask);
				mad_layout_encode(&l[i], obj, p);
				/* the bits set are the field's, computed here by hand */
				for (unsigned b = 0; b < (unsigned)f->bytes * 8; b++) {
					unsigned bit = (unsigned)f->bytes * 8 - 1 - b;	/* from MSB */
					bool mine = b >= f->shift && ((f->mask >> (b - f->shift)) & 1);
					unsigned byte = off + bit / 8;
					uint8_t m = (uint8_t)(0x80 >> (bit % 8));

					if (!mine)
						continue;
					assert_true(byte < l[i].size);
					if (!(p[byte] & m))
						fail_msg("%s.%s bit missing", l[i].name, f->name);
					if (used[byte] & m)
						fail_msg("%s.%s overlaps another field", l[i].name, f->name);
					used[byte] |= m;
					p[byte] &= (uint8_t)~m;
				}
				for (unsigned b = 0; b < MAD_SIZE; b++)
					if (p[b])
						fail_msg("%s.%s[%u] set byte %u", l[i].name, f->name, k, b);
				/* and it decodes back into its own member only */
				set_member(obj, f, k, f->mask);
				mad_layout_encode(&l[i], obj, p);
				mad_layout_decode(&l[i], p, back);
				assert_memory_equal(obj, back, sizeof(obj));
			}
		}
	}
}

/* ---- attributes: byte positions from mad-formats.md, by hand ------------- */

#define ATTR_BUF_BYTES 256 /* scratch for one encoded attribute */

/* PortInfo and SwitchInfo fields at their byte positions. */
static void attr_pos_port_switch_info(uint8_t *b)
{
	struct mad_port_info pi = { .lid = 0x1234, .lmc = 7, .port_state = 4,
		.m_key_protect_bits = 2, .port_phys_state = 5, .hoq_life = 0x13,
		.capability_mask2 = 0xBEEF, .link_round_trip_latency = 0xABCDEF,
		.client_reregister = 1, .subnet_timeout = 0x12 };
	mad_port_info_encode(&pi, b);
	assert_int_equal(b[16], 0x12);
	assert_int_equal(b[17], 0x34);
	assert_int_equal(b[32], 0x04);
	assert_int_equal(b[33], 0x50);
	assert_int_equal(b[34], 0x87);
	assert_int_equal(b[42], 0x13);
	assert_int_equal(b[51], 0x92);
	assert_int_equal(b[56], 0);
	assert_int_equal(b[57], 0xAB);
	assert_int_equal(b[59], 0xEF);
	assert_int_equal(b[60], 0xBE);

	struct mad_switch_info si = { .linear_fdb_top = 0x0102,
		.life_time_value = 0x1F, .port_state_change = 1,
		.enhanced_port0 = 1, .multicast_fdb_top = 0xC00F };
	mad_switch_info_encode(&si, b);
	assert_int_equal(b[6], 0x01);
	assert_int_equal(b[7], 0x02);
	assert_int_equal(b[11], 0xFC);
	assert_int_equal(b[16], 0x08);
	assert_int_equal(b[18], 0xC0);
	si.life_time_value = 0;
	mad_switch_info_encode(&si, b);
	assert_int_equal(b[11], 0x04);		/* PortStateChange alone */
}

/* GUIDInfo, P_KeyTable, MFT, SL2VL and VLArbitration table entries at their byte positions. */
static void attr_pos_tables(uint8_t *b)
{
	struct mad_guid_info gi = { .guid = { [7] = 0x0102030405060708ull } };
	mad_guid_info_encode(&gi, b);
	assert_int_equal(b[56], 0x01);
	assert_int_equal(b[63], 0x08);

	struct mad_pkey_table pk = { .pkey = { [0] = 0xFFFF, [31] = 0x7FFF } };
	mad_pkey_table_encode(&pk, b);
	assert_int_equal(b[0], 0xFF);
	assert_int_equal(b[62], 0x7F);
	assert_int_equal(b[63], 0xFF);

	struct mad_mft mft = { .port_mask = { [31] = 0x8001 } };
	mad_mft_encode(&mft, b);
	assert_int_equal(b[62], 0x80);
	assert_int_equal(b[63], 0x01);

	struct mad_sl2vl sl = { .vl = { 1, 2, [14] = 0xE, [15] = MAD_DROP_VL } };
	memset(b, 0xEE, ATTR_BUF_BYTES);
	mad_sl2vl_encode(&sl, b);
	assert_int_equal(b[0], 0x12);
	assert_int_equal(b[7], 0xEF);
	assert_int_equal(b[8], 0xEE);		/* 8 bytes only */
	struct mad_sl2vl sl2;
	mad_sl2vl_decode(&sl2, b);
	assert_memory_equal(&sl, &sl2, sizeof(sl));

	struct mad_vl_arb va = { .vl = { 3, [31] = 0xF }, .weight = { 0x40, [31] = 0xFF } };
	mad_vl_arb_encode(&va, b);
	assert_int_equal(b[0], 0x03);
	assert_int_equal(b[1], 0x40);
	assert_int_equal(b[62], 0x0F);
	assert_int_equal(b[63], 0xFF);
}

/* SMInfo, NodeDescription and ClassPortInfo fields at their byte positions. */
static void attr_pos_sm_class(uint8_t *b)
{
	struct mad_sm_info sm = { .guid = 1, .sm_key = 2, .act_count = 0x01020304,
		.priority = 0xA, .sm_state = MAD_SMINFO_STATE_MASTER };
	mad_sm_info_encode(&sm, b);
	assert_int_equal(b[7], 1);
	assert_int_equal(b[15], 2);
	assert_int_equal(b[16], 0x01);
	assert_int_equal(b[20], 0xA3);

	struct mad_node_desc nd;
	memset(nd.description, 'x', 64);
	mad_node_desc_encode(&nd, b);
	assert_int_equal(b[63], 'x');

	struct mad_class_port_info cpi = { .base_version = 1, .class_version = 1,
		.capability_mask = 0x0200, .capability_mask2 = 1,
		.resp_time_value = 18, .redirect_qp = 1, .redirect_sl = 0xF,
		.redirect_qkey = 0x80010000, .trap_hop_limit = 0xFF,
		.trap_qp = 0xABCDEF, .trap_lid = 0x0102 };
	mad_class_port_info_encode(&cpi, b);
	assert_int_equal(b[2], 0x02);
	assert_int_equal(b[7], 0x32);		/* mask2 bit 0 above RespTimeValue 18 */
	assert_int_equal(b[24], 0x00);
	assert_int_equal(b[25], 0xF0);
	assert_int_equal(b[35], 0x01);
	assert_int_equal(b[36], 0x80);
	assert_int_equal(b[60], 0x01);
	assert_int_equal(b[64], 0xFF);
	assert_int_equal(b[65], 0xAB);
}

/* PortCounters and PortCountersExtended fields at their byte positions. */
static void attr_pos_counters(uint8_t *b)
{
	struct mad_port_counters pc = { .counter_select2 = 1,
		.local_link_integrity_errors = 0xF, .vl15_dropped = 0x0102,
		.port_xmit_wait = 0xFFFFFFFF };
	mad_port_counters_encode(&pc, b);
	assert_int_equal(b[18], 1);
	assert_int_equal(b[19], 0xF0);
	assert_int_equal(b[22], 0x01);
	assert_int_equal(b[40], 0xFF);
	assert_int_equal(b[43], 0xFF);

	struct mad_port_counters_ext pce = { .port_xmit_data = 0x0102030405060708ull,
		.port_multicast_rcv_pkts = 9, .qp1_dropped = 7 };
	mad_port_counters_ext_encode(&pce, b);
	assert_int_equal(b[8], 0x01);
	assert_int_equal(b[15], 0x08);
	assert_int_equal(b[71], 9);
	assert_int_equal(b[183], 7);
}

/* Notice with trap 144 data at its byte positions, and back. */
static void attr_pos_trap144(uint8_t *b)
{
	struct mad_notice n = { .is_generic = 1, .type = MAD_NOTICE_TYPE_INFO,
		.producer_type = MAD_NOTICE_PROD_CA, .trap_num = MAD_TRAP_LOCAL_CHANGES,
		.issuer_lid = 5, .notice_toggle = 1, .notice_count = 3 };
	struct mad_trap144 t = { .lid = 5, .other_local_changes = 1,
		.capability_mask = 0x2651E84A, .change_flags = 1,
		.capability_mask2 = 0x0004 };
	struct mad_trap144 t2;

	memset(&t2, 0, sizeof(t2));
	mad_trap144_encode(&t, &n);
	mad_notice_encode(&n, b);
	assert_int_equal(b[0], 0x84);
	assert_int_equal(b[3], 0x01);
	assert_int_equal(b[5], 144);
	assert_int_equal(b[8], 0x80);
	assert_int_equal(b[9], 0x03);
	assert_int_equal(b[13], 5);		/* LIDADDR 12-13 */
	assert_int_equal(b[15], 1);		/* OtherLocalChanges */
	assert_int_equal(b[16], 0x26);		/* CapabilityMask 16-19 */
	assert_int_equal(b[19], 0x4A);
	assert_int_equal(b[21], 1);		/* change flags 20-21 */
	assert_int_equal(b[23], 4);		/* CapabilityMask2 22-23 */
	struct mad_notice n2;
	mad_notice_decode(&n2, b);
	mad_trap144_decode(&t2, &n2);
	assert_int_equal(t2.lid, t.lid);
	assert_int_equal(t2.other_local_changes, 1);
	assert_int_equal(t2.capability_mask, t.capability_mask);
	assert_int_equal(t2.change_flags, t.change_flags);
	assert_int_equal(t2.capability_mask2, t.capability_mask2);
}

static void test_attr_positions(void **state)
{
	(void)state;
	uint8_t b[ATTR_BUF_BYTES];

	/* one scratch buffer, shared by the checks in this order */
	attr_pos_port_switch_info(b);
	attr_pos_tables(b);
	attr_pos_sm_class(b);
	attr_pos_counters(b);
	attr_pos_trap144(b);
}

/* ---- directed route: the walk of smi_walk.txt ---------------------------- */

static const struct mad_dr_node H1 = { .is_switch = false, .num_ports = 1 };
static const struct mad_dr_node S1 = { .is_switch = true, .num_ports = 8 };
static const struct mad_dr_node H2 = { .is_switch = false, .num_ports = 2 };

#define EXPECT(r, v, p) do { \
	struct mad_dr_result r_ = (r); \
	if (r_.verdict != (v) || r_.port != (p)) \
		fail_msg("line %d: %s port %u, expected %s port %u", __LINE__, \
			 mad_dr_verdict_str(r_.verdict), r_.port, \
			 mad_dr_verdict_str(v), (unsigned)(p)); \
} while (0)

static void test_dr_walk(void **state)
{
	(void)state;
	uint8_t m[MAD_SIZE];

	/* The SM on H1 writes hop_ptr 0 (vector 1 as the SM builds it). */
	memcpy(m, vec("dr_get_nodeinfo_link1")->mad, MAD_SIZE);
	m[6] = 0;
	EXPECT(mad_dr_send(m, &H1, 1), MAD_DR_SEND, 1);		/* C14-9:1 */
	assert_memory_equal(m, vec("dr_get_nodeinfo_link1")->mad, MAD_SIZE);
	EXPECT(mad_dr_recv(m, &S1, 1), MAD_DR_FORWARD, 4);	/* C14-9:2 */
	assert_memory_equal(m, vec("dr_get_nodeinfo_link2")->mad, MAD_SIZE);
	EXPECT(mad_dr_recv(m, &H2, 1), MAD_DR_LOCAL, 1);	/* C14-9:3 */
	assert_int_equal(m[6], 3);				/* hop_cnt + 1 */
	assert_int_equal(m[192 + 1], 1);
	assert_int_equal(m[192 + 2], 1);

	/* H2's SMA answers with its NodeInfo. */
	memcpy(m + 64, vec("dr_getresp_nodeinfo_link1")->mad + 64, 64);
	assert_int_equal(mad_make_reply(m, MAD_STATUS_SUCCESS), 0);
	EXPECT(mad_dr_send(m, &H2, 1), MAD_DR_SEND, 1);		/* C14-13:1 */
	assert_int_equal(m[6], 2);
	EXPECT(mad_dr_recv(m, &S1, 4), MAD_DR_FORWARD, 1);	/* C14-13:2 */
	assert_memory_equal(m, vec("dr_getresp_nodeinfo_link1")->mad, MAD_SIZE);
	EXPECT(mad_dr_recv(m, &H1, 1), MAD_DR_LOCAL, 1);	/* C14-13:3 */
	assert_int_equal(m[6], 0);
}

static void test_dr_hop0_and_switch_end(void **state)
{
	(void)state;
	uint8_t m[MAD_SIZE];

	/* hop count 0: the local SMA, no wire. */
	memcpy(m, vec("dr_get_nodeinfo_link1")->mad, MAD_SIZE);
	m[6] = 0;
	m[7] = 0;
	memset(m + 128, 0, 128);
	EXPECT(mad_dr_send(m, &H1, 1), MAD_DR_SEND, 1);		/* C14-9:3 */
	assert_int_equal(m[6], 1);
	EXPECT(mad_dr_recv(m, &H1, 1), MAD_DR_LOCAL, 1);	/* C14-9:4 */
	assert_int_equal(mad_make_reply(m, 0), 0);
	EXPECT(mad_dr_send(m, &H1, 1), MAD_DR_SEND, 1);		/* C14-13:3 */
	assert_int_equal(m[6], 0);
	EXPECT(mad_dr_recv(m, &H1, 1), MAD_DR_LOCAL, 1);	/* C14-13:4 */

	/* Vector 5 ends at the switch (hop_cnt 1): its SMA gets it. */
	memcpy(m, vec("dr_set_lft_block0")->mad, MAD_SIZE);
	EXPECT(mad_dr_recv(m, &S1, 1), MAD_DR_LOCAL, 1);
	assert_int_equal(m[6], 2);
	assert_int_equal(m[192 + 1], 1);
	assert_int_equal(mad_make_reply(m, 0), 0);
	assert_int_equal(m[3], MAD_METHOD_GET_RESP);
	EXPECT(mad_dr_send(m, &S1, 1), MAD_DR_SEND, 1);		/* back out port 1 */
	assert_int_equal(m[6], 1);
	EXPECT(mad_dr_recv(m, &H1, 1), MAD_DR_LOCAL, 1);
	assert_int_equal(m[6], 0);
}

static void test_dr_drops(void **state)
{
	(void)state;
	const uint8_t *v1 = vec("dr_get_nodeinfo_link1")->mad;
	uint8_t m[MAD_SIZE];

	/* a CA as an intermediate hop (hop_ptr 1 < hop_cnt 2) */
	memcpy(m, v1, MAD_SIZE);
	EXPECT(mad_dr_recv(m, &H2, 1), MAD_DR_DROP_NOT_SWITCH, 0);
	/* received with hop_ptr 0, hop_cnt 2: the sender did not increment */
	m[6] = 0;
	EXPECT(mad_dr_recv(m, &S1, 1), MAD_DR_DROP_HOP_PTR, 0);
	/* unreasonable hop pointers, both directions (C14-9:5, C14-13:5) */
	memcpy(m, v1, MAD_SIZE);
	m[6] = 4;
	EXPECT(mad_dr_recv(m, &S1, 1), MAD_DR_DROP_HOP_PTR, 0);
	EXPECT(mad_dr_send(m, &S1, 1), MAD_DR_DROP_HOP_PTR, 0);
	m[4] |= 0x80;
	EXPECT(mad_dr_recv(m, &S1, 1), MAD_DR_DROP_HOP_PTR, 0);
	EXPECT(mad_dr_send(m, &S1, 1), MAD_DR_DROP_HOP_PTR, 0);
	/* hop count 64 and 255 (C14-6) */
	memcpy(m, v1, MAD_SIZE);
	m[7] = 64;
	EXPECT(mad_dr_recv(m, &S1, 1), MAD_DR_DROP_HOP_CNT, 0);
	EXPECT(mad_dr_send(m, &S1, 1), MAD_DR_DROP_HOP_CNT, 0);
	m[7] = 255;
	EXPECT(mad_dr_recv(m, &S1, 1), MAD_DR_DROP_HOP_CNT, 0);
	/* 63 hops is allowed */
	m[7] = 63;
	m[6] = 0;
	memset(m + 129, 1, 63);
	EXPECT(mad_dr_send(m, &H1, 1), MAD_DR_SEND, 1);
	/* the originator sends out a port other than InitialPath[1] */
	memcpy(m, v1, MAD_SIZE);
	m[6] = 0;
	EXPECT(mad_dr_send(m, &H1, 2), MAD_DR_DROP_PORT, 2);
	/* a switch asked to forward out a port it does not have */
	memcpy(m, v1, MAD_SIZE);
	m[128 + 2] = 9;
	EXPECT(mad_dr_recv(m, &S1, 1), MAD_DR_DROP_PORT, 9);
	/* a CA at the end of the DR part with a non-permissive DrDLID */
	memcpy(m, vec("dr_get_nodeinfo_link2")->mad, MAD_SIZE);
	m[34] = 0;
	m[35] = 3;
	EXPECT(mad_dr_recv(m, &H2, 1), MAD_DR_DROP_PERMISSIVE, 0);
	/* a switch there LID-routes to DrDLID instead */
	struct mad_dr_result r = mad_dr_recv(m, &S1, 1);
	assert_int_equal(r.verdict, MAD_DR_LID_ROUTE);
	assert_int_equal(r.lid, 3);
	/* returning to a CA with hop_ptr 1 and a non-permissive DrSLID */
	memcpy(m, vec("dr_getresp_nodeinfo_link1")->mad, MAD_SIZE);
	m[32] = 0;
	m[33] = 1;
	EXPECT(mad_dr_recv(m, &H1, 1), MAD_DR_DROP_PERMISSIVE, 0);
	r = mad_dr_recv(m, &S1, 1);
	assert_int_equal(r.verdict, MAD_DR_LID_ROUTE);
	assert_int_equal(r.lid, 1);
	/* a CA relaying a response (2 <= hop_ptr <= hop_cnt) */
	memcpy(m, vec("dr_getresp_nodeinfo_link1")->mad, MAD_SIZE);
	m[6] = 2;
	EXPECT(mad_dr_recv(m, &H2, 1), MAD_DR_DROP_NOT_SWITCH, 0);
	EXPECT(mad_dr_send(m, &H2, 1), MAD_DR_DROP_NOT_SWITCH, 0);
	/* the responder's ReturnPath does not name its egress port */
	memcpy(m, vec("dr_getresp_nodeinfo_link1")->mad, MAD_SIZE);
	m[6] = 3;
	EXPECT(mad_dr_send(m, &H2, 2), MAD_DR_DROP_PORT, 2);
	/* every verdict has its own name */
	for (int a = MAD_DR_SEND; a <= MAD_DR_DROP_NOT_DR; a++) {
		assert_string_not_equal(mad_dr_verdict_str(a), "?");
		for (int b = a + 1; b <= MAD_DR_DROP_NOT_DR; b++)
			assert_string_not_equal(mad_dr_verdict_str(a), mad_dr_verdict_str(b));
	}
	/* not a DR SMP */
	memcpy(m, vec("lid_getresp_portinfo")->mad, MAD_SIZE);
	EXPECT(mad_dr_recv(m, &S1, 1), MAD_DR_DROP_NOT_DR, 0);
	EXPECT(mad_dr_send(m, &S1, 1), MAD_DR_DROP_NOT_DR, 0);
}

static void test_make_reply(void **state)
{
	(void)state;
	uint8_t m[MAD_SIZE];
	struct mad_smp s;

	/* a LID-routed Get answered "unsupported attribute" */
	memcpy(m, vec("lid_getresp_portinfo")->mad, MAD_SIZE);
	m[3] = MAD_METHOD_GET;
	assert_int_equal(mad_make_reply(m, MAD_STATUS_UNSUP_METHOD_ATTR), 0);
	assert_int_equal(mad_smp_decode(&s, m), 0);
	assert_int_equal(s.hdr.r, 1);
	assert_int_equal(s.hdr.method, MAD_METHOD_GET);
	assert_int_equal(s.hdr.status, MAD_STATUS_UNSUP_METHOD_ATTR);
	assert_int_equal(s.d, 0);
	/* already a response */
	assert_int_equal(mad_make_reply(m, 0), -EINVAL);
	/* a DR Set: GetResp, D set, status in 15 bits, paths kept */
	memcpy(m, vec("dr_set_lft_block0")->mad, MAD_SIZE);
	assert_int_equal(mad_make_reply(m, MAD_STATUS_INVALID_FIELD), 0);
	assert_int_equal(mad_smp_decode(&s, m), 0);
	assert_int_equal(s.hdr.r, 1);
	assert_int_equal(s.d, 1);
	assert_int_equal(s.hdr.status, MAD_STATUS_INVALID_FIELD);
	assert_int_equal(m[4], 0x80);
	assert_int_equal(s.hop_cnt, 1);
	assert_int_equal(s.initial_path[1], 1);
	memcpy(m, vec("dr_set_lft_block0")->mad, MAD_SIZE);
	assert_int_equal(mad_make_reply(m, MAD_SMP_DIRECTION), -EINVAL);
	/* Trap -> TrapRepress with R=0, which is itself not answered */
	memcpy(m, vec("lid_trap128_notice")->mad, MAD_SIZE);
	assert_int_equal(mad_make_reply(m, 0), 0);
	assert_memory_equal(m, vec("lid_trap_repress")->mad, MAD_SIZE);
	assert_int_equal(mad_make_reply(m, 0), -EINVAL);
	/* GetTable -> GetTableResp */
	memcpy(m, vec("sa_gettable_noderecord_req")->mad, MAD_SIZE);
	assert_int_equal(mad_make_reply(m, MAD_SA_STATUS_NO_RECORDS), 0);
	assert_int_equal(m[3], MAD_METHOD_GETTABLE_RESP);
	assert_int_equal(m[4], 0x03);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vectors_roundtrip),
		cmocka_unit_test(test_reserved_bits_dropped),
		cmocka_unit_test(test_bad_headers),
		cmocka_unit_test(test_vector_smp_fields),
		cmocka_unit_test(test_vector_portinfo),
		cmocka_unit_test(test_vector_sa_fields),
		cmocka_unit_test(test_vector_pma_and_notice),
		cmocka_unit_test(test_layout_fields_disjoint),
		cmocka_unit_test(test_attr_positions),
		cmocka_unit_test(test_dr_walk),
		cmocka_unit_test(test_dr_hop0_and_switch_end),
		cmocka_unit_test(test_dr_drops),
		cmocka_unit_test(test_make_reply),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
