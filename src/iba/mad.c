// SPDX-License-Identifier: MIT
/*
 * softib MAD codecs: the common header (IBA 13.4.2), SMP (14.2.1), SA/RMPP
 * (15.2.1, 13.6.2) and PMA (16.1.1) headers, and the attribute layouts of
 * 14.2.5 / 16.1.3-4, each one field table run by one generic decode/encode.
 * Directed-route rules live in mad_dr.c. No I/O, no allocation, no state.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "iba/fields.h"
#include "iba/mad.h"
#include "iba/mad_table.h"

/* ---- the generic engine --------------------------------------------------- */

static uint64_t member_ld(const uint8_t *s, unsigned size)
{
	uint8_t v8;
	uint16_t v16;
	uint32_t v32;
	uint64_t v64;

	switch (size) {
	case 1:
		memcpy(&v8, s, 1);
		return v8;
	case 2:
		memcpy(&v16, s, 2);
		return v16;
	case 4:
		memcpy(&v32, s, 4);
		return v32;
	default:
		memcpy(&v64, s, 8);
		return v64;
	}
}

static void member_st(uint8_t *s, unsigned size, uint64_t v)
{
	uint8_t v8 = (uint8_t)v;
	uint16_t v16 = (uint16_t)v;
	uint32_t v32 = (uint32_t)v;

	switch (size) {
	case 1:
		memcpy(s, &v8, 1);
		break;
	case 2:
		memcpy(s, &v16, 2);
		break;
	case 4:
		memcpy(s, &v32, 4);
		break;
	default:
		memcpy(s, &v, 8);
		break;
	}
}

static void fields_decode(const struct mad_field *f, size_t n, const uint8_t *p,
			  void *obj)
{
	uint8_t *s = obj;

	for (size_t i = 0; i < n; i++)
		for (unsigned k = 0; k < f[i].count; k++)
			member_st(s + f[i].member + k * f[i].msize, f[i].msize,
				  iba_get(p, f[i].off + k * f[i].stride,
					  f[i].bytes, f[i].shift, f[i].mask, 0));
}

static void fields_encode(const struct mad_field *f, size_t n, const void *obj,
			  uint8_t *p)
{
	const uint8_t *s = obj;

	for (size_t i = 0; i < n; i++)
		for (unsigned k = 0; k < f[i].count; k++)
			iba_put(p, f[i].off + k * f[i].stride, f[i].bytes,
				f[i].shift, f[i].mask, 0,
				member_ld(s + f[i].member + k * f[i].msize,
					  f[i].msize));
}

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* ---- headers -------------------------------------------------------------- */

#define T struct mad_hdr
static const struct mad_field hdr_fields[] = {	/* IBA 13.4.2 */
	F(T, "BaseVersion", base_version, 0, 1, 0, 0xFF),
	F(T, "MgmtClass", mgmt_class, 1, 1, 0, 0xFF),
	F(T, "ClassVersion", class_version, 2, 1, 0, 0xFF),
	F(T, "R", r, 3, 1, 7, 0x1),
	F(T, "Method", method, 3, 1, 0, 0x7F),
	F(T, "Status", status, 4, 2, 0, 0xFFFF),
	F(T, "ClassSpecific", class_specific, 6, 2, 0, 0xFFFF),
	F(T, "TransactionID", tid, 8, 8, 0, UINT64_MAX),
	F(T, "AttributeID", attr_id, 16, 2, 0, 0xFFFF),
	F(T, "AttributeModifier", attr_mod, 20, 4, 0, 0xFFFFFFFF),
};
#undef T

/* SMP bytes 24-255 after the common header (IBA 14.2.1.1-2). */
#define T struct mad_smp
static const struct mad_field smp_fields[] = {
	F(T, "M_Key", m_key, 24, 8, 0, UINT64_MAX),
	F(T, "DrSLID", dr_slid, 32, 2, 0, 0xFFFF),
	F(T, "DrDLID", dr_dlid, 34, 2, 0, 0xFFFF),
	FA(T, "Data", data, 64, 1, 0, 0xFF, MAD_SMP_DATA_SIZE, 1),
	FA(T, "InitialPath", initial_path, 128, 1, 0, 0xFF, MAD_DR_MAX_HOPS, 1),
	FA(T, "ReturnPath", return_path, 192, 1, 0, 0xFF, MAD_DR_MAX_HOPS, 1),
};
#undef T

#define T struct mad_rmpp
static const struct mad_field rmpp_fields[] = {	/* IBA 13.6.2.1, at byte 24 */
	F(T, "RMPPVersion", rmpp_version, 24, 1, 0, 0xFF),
	F(T, "RMPPType", rmpp_type, 25, 1, 0, 0xFF),
	F(T, "RRespTime", rmpp_resp_time, 26, 1, 3, 0x1F),
	F(T, "RMPPFlags", rmpp_flags, 26, 1, 0, 0x7),
	F(T, "RMPPStatus", rmpp_status, 27, 1, 0, 0xFF),
	F(T, "Data1", seg_num, 28, 4, 0, 0xFFFFFFFF),
	F(T, "Data2", payload_len, 32, 4, 0, 0xFFFFFFFF),
};
#undef T

#define T struct mad_sa
static const struct mad_field sa_fields[] = {	/* IBA 15.2.1.1 */
	F(T, "SM_Key", sm_key, 36, 8, 0, UINT64_MAX),
	F(T, "AttributeOffset", attr_offset, 44, 2, 0, 0xFFFF),
	F(T, "ComponentMask", comp_mask, 48, 8, 0, UINT64_MAX),
	FA(T, "Data", data, 56, 1, 0, 0xFF, MAD_SA_DATA_SIZE, 1),
};
#undef T

#define T struct mad_pma
static const struct mad_field pma_fields[] = {	/* IBA 16.1.1 */
	FA(T, "Data", data, 64, 1, 0, 0xFF, MAD_PMA_DATA_SIZE, 1),
};
#undef T

void mad_hdr_decode(struct mad_hdr *h, const uint8_t *mad)
{
	fields_decode(hdr_fields, N(hdr_fields), mad, h);
}

void mad_hdr_encode(const struct mad_hdr *h, uint8_t *mad)
{
	memset(mad, 0, MAD_HDR_SIZE);
	fields_encode(hdr_fields, N(hdr_fields), h, mad);
}

static int hdr_check(const struct mad_hdr *h, uint8_t c1, uint8_t c2)
{
	if (h->base_version != MAD_BASE_VERSION)
		return -EPROTO;
	return h->mgmt_class == c1 || h->mgmt_class == c2 ? 0 : -EPROTO;
}

int mad_smp_decode(struct mad_smp *s, const uint8_t *mad)
{
	mad_hdr_decode(&s->hdr, mad);
	fields_decode(smp_fields, N(smp_fields), mad, s);
	s->d = 0;
	s->hop_ptr = s->hop_cnt = 0;
	if (s->hdr.mgmt_class == MAD_MGMT_CLASS_SUBN_DIRECTED_ROUTE) {
		s->d = !!(s->hdr.status & MAD_SMP_DIRECTION);
		s->hdr.status &= (uint16_t)~MAD_SMP_DIRECTION;
		s->hop_ptr = (uint8_t)(s->hdr.class_specific >> 8);
		s->hop_cnt = (uint8_t)s->hdr.class_specific;
	}
	return hdr_check(&s->hdr, MAD_MGMT_CLASS_SUBN_LID_ROUTED,
			 MAD_MGMT_CLASS_SUBN_DIRECTED_ROUTE);
}

void mad_smp_encode(const struct mad_smp *s, uint8_t *mad)
{
	struct mad_hdr h = s->hdr;

	if (h.mgmt_class == MAD_MGMT_CLASS_SUBN_DIRECTED_ROUTE) {
		h.status = (uint16_t)((h.status & ~MAD_SMP_DIRECTION) |
				      (s->d ? MAD_SMP_DIRECTION : 0));
		h.class_specific = (uint16_t)(s->hop_ptr << 8 | s->hop_cnt);
	}
	memset(mad, 0, MAD_SIZE);
	fields_encode(hdr_fields, N(hdr_fields), &h, mad);
	fields_encode(smp_fields, N(smp_fields), s, mad);
}

int mad_sa_decode(struct mad_sa *s, const uint8_t *mad)
{
	mad_hdr_decode(&s->hdr, mad);
	fields_decode(rmpp_fields, N(rmpp_fields), mad, &s->rmpp);
	fields_decode(sa_fields, N(sa_fields), mad, s);
	return hdr_check(&s->hdr, MAD_MGMT_CLASS_SUBN_ADM, MAD_MGMT_CLASS_SUBN_ADM);
}

void mad_sa_encode(const struct mad_sa *s, uint8_t *mad)
{
	memset(mad, 0, MAD_SIZE);
	fields_encode(hdr_fields, N(hdr_fields), &s->hdr, mad);
	fields_encode(rmpp_fields, N(rmpp_fields), &s->rmpp, mad);
	fields_encode(sa_fields, N(sa_fields), s, mad);
}

int mad_pma_decode(struct mad_pma *p, const uint8_t *mad)
{
	mad_hdr_decode(&p->hdr, mad);
	fields_decode(pma_fields, N(pma_fields), mad, p);
	return hdr_check(&p->hdr, MAD_MGMT_CLASS_PERF_MGMT, MAD_MGMT_CLASS_PERF_MGMT);
}

void mad_pma_encode(const struct mad_pma *p, uint8_t *mad)
{
	memset(mad, 0, MAD_SIZE);
	fields_encode(hdr_fields, N(hdr_fields), &p->hdr, mad);
	fields_encode(pma_fields, N(pma_fields), p, mad);
}

/* ---- SM attributes (IBA 14.2.5) -------------------------------------------- */

#define T struct mad_node_info
static const struct mad_field node_info_fields[] = {	/* 14.2.5.3 */
	F(T, "BaseVersion", base_version, 0, 1, 0, 0xFF),
	F(T, "ClassVersion", class_version, 1, 1, 0, 0xFF),
	F(T, "NodeType", node_type, 2, 1, 0, 0xFF),
	F(T, "NumPorts", num_ports, 3, 1, 0, 0xFF),
	F(T, "SystemImageGUID", sys_guid, 4, 8, 0, UINT64_MAX),
	F(T, "NodeGUID", node_guid, 12, 8, 0, UINT64_MAX),
	F(T, "PortGUID", port_guid, 20, 8, 0, UINT64_MAX),
	F(T, "PartitionCap", partition_cap, 28, 2, 0, 0xFFFF),
	F(T, "DeviceID", device_id, 30, 2, 0, 0xFFFF),
	F(T, "Revision", revision, 32, 4, 0, 0xFFFFFFFF),
	F(T, "LocalPortNum", local_port_num, 36, 1, 0, 0xFF),
	F(T, "VendorID", vendor_id, 36, 4, 0, 0xFFFFFF),
};
#undef T

#define T struct mad_node_desc
static const struct mad_field node_desc_fields[] = {	/* 14.2.5.2 */
	FA(T, "NodeString", description, 0, 1, 0, 0xFF, 64, 1),
};
#undef T

#define T struct mad_port_info
static const struct mad_field port_info_fields[] = {	/* 14.2.5.6 */
	F(T, "M_Key", m_key, 0, 8, 0, UINT64_MAX),
	F(T, "GidPrefix", gid_prefix, 8, 8, 0, UINT64_MAX),
	F(T, "LID", lid, 16, 2, 0, 0xFFFF),
	F(T, "MasterSMLID", master_sm_lid, 18, 2, 0, 0xFFFF),
	F(T, "CapabilityMask", capability_mask, 20, 4, 0, 0xFFFFFFFF),
	F(T, "DiagCode", diag_code, 24, 2, 0, 0xFFFF),
	F(T, "M_KeyLeasePeriod", m_key_lease_period, 26, 2, 0, 0xFFFF),
	F(T, "LocalPortNum", local_port_num, 28, 1, 0, 0xFF),
	F(T, "LinkWidthEnabled", link_width_enabled, 29, 1, 0, 0xFF),
	F(T, "LinkWidthSupported", link_width_supported, 30, 1, 0, 0xFF),
	F(T, "LinkWidthActive", link_width_active, 31, 1, 0, 0xFF),
	F(T, "LinkSpeedSupported", link_speed_supported, 32, 1, 4, 0xF),
	F(T, "PortState", port_state, 32, 1, 0, 0xF),
	F(T, "PortPhysicalState", port_phys_state, 33, 1, 4, 0xF),
	F(T, "LinkDownDefaultState", link_down_default_state, 33, 1, 0, 0xF),
	F(T, "M_KeyProtectBits", m_key_protect_bits, 34, 1, 6, 0x3),
	F(T, "LMC", lmc, 34, 1, 0, 0x7),
	F(T, "LinkSpeedActive", link_speed_active, 35, 1, 4, 0xF),
	F(T, "LinkSpeedEnabled", link_speed_enabled, 35, 1, 0, 0xF),
	F(T, "NeighborMTU", neighbor_mtu, 36, 1, 4, 0xF),
	F(T, "MasterSMSL", master_sm_sl, 36, 1, 0, 0xF),
	F(T, "VLCap", vl_cap, 37, 1, 4, 0xF),
	F(T, "InitType", init_type, 37, 1, 0, 0xF),
	F(T, "VLHighLimit", vl_high_limit, 38, 1, 0, 0xFF),
	F(T, "VLArbitrationHighCap", vl_arbitration_high_cap, 39, 1, 0, 0xFF),
	F(T, "VLArbitrationLowCap", vl_arbitration_low_cap, 40, 1, 0, 0xFF),
	F(T, "InitTypeReply", init_type_reply, 41, 1, 4, 0xF),
	F(T, "MTUCap", mtu_cap, 41, 1, 0, 0xF),
	F(T, "VLStallCount", vl_stall_count, 42, 1, 5, 0x7),
	F(T, "HOQLife", hoq_life, 42, 1, 0, 0x1F),
	F(T, "OperationalVLs", operational_vls, 43, 1, 4, 0xF),
	F(T, "PartitionEnforcementInbound", partition_enforcement_inbound, 43, 1, 3, 0x1),
	F(T, "PartitionEnforcementOutbound", partition_enforcement_outbound, 43, 1, 2, 0x1),
	F(T, "FilterRawInbound", filter_raw_inbound, 43, 1, 1, 0x1),
	F(T, "FilterRawOutbound", filter_raw_outbound, 43, 1, 0, 0x1),
	F(T, "M_KeyViolations", m_key_violations, 44, 2, 0, 0xFFFF),
	F(T, "P_KeyViolations", p_key_violations, 46, 2, 0, 0xFFFF),
	F(T, "Q_KeyViolations", q_key_violations, 48, 2, 0, 0xFFFF),
	F(T, "GUIDCap", guid_cap, 50, 1, 0, 0xFF),
	F(T, "ClientReregister", client_reregister, 51, 1, 7, 0x1),
	F(T, "MulticastPKeyTrapSuppressionEnabled", mcast_pkey_trap_suppression_enabled, 51, 1, 5, 0x3),
	F(T, "SubnetTimeOut", subnet_timeout, 51, 1, 0, 0x1F),
	F(T, "RespTimeValue", resp_time_value, 52, 1, 0, 0x1F),
	F(T, "LocalPhyErrors", local_phy_errors, 53, 1, 4, 0xF),
	F(T, "OverrunErrors", overrun_errors, 53, 1, 0, 0xF),
	F(T, "MaxCreditHint", max_credit_hint, 54, 2, 0, 0xFFFF),
	F(T, "LinkRoundTripLatency", link_round_trip_latency, 56, 4, 0, 0xFFFFFF),
	F(T, "CapabilityMask2", capability_mask2, 60, 2, 0, 0xFFFF),
	F(T, "LinkSpeedExtActive", link_speed_ext_active, 62, 1, 4, 0xF),
	F(T, "LinkSpeedExtSupported", link_speed_ext_supported, 62, 1, 0, 0xF),
	F(T, "LinkSpeedExtEnabled", link_speed_ext_enabled, 63, 1, 0, 0x1F),
};
#undef T

#define T struct mad_switch_info
static const struct mad_field switch_info_fields[] = {	/* 14.2.5.4 */
	F(T, "LinearFDBCap", linear_fdb_cap, 0, 2, 0, 0xFFFF),
	F(T, "RandomFDBCap", random_fdb_cap, 2, 2, 0, 0xFFFF),
	F(T, "MulticastFDBCap", multicast_fdb_cap, 4, 2, 0, 0xFFFF),
	F(T, "LinearFDBTop", linear_fdb_top, 6, 2, 0, 0xFFFF),
	F(T, "DefaultPort", default_port, 8, 1, 0, 0xFF),
	F(T, "DefaultMulticastPrimaryPort", default_mcast_primary_port, 9, 1, 0, 0xFF),
	F(T, "DefaultMulticastNotPrimaryPort", default_mcast_not_primary_port, 10, 1, 0, 0xFF),
	F(T, "LifeTimeValue", life_time_value, 11, 1, 3, 0x1F),
	F(T, "PortStateChange", port_state_change, 11, 1, 2, 0x1),
	F(T, "OptimizedSLtoVLMappingProgramming", optimized_sl_to_vl_mapping_programming, 11, 1, 0, 0x3),
	F(T, "LIDsPerPort", lids_per_port, 12, 2, 0, 0xFFFF),
	F(T, "PartitionEnforcementCap", partition_enforcement_cap, 14, 2, 0, 0xFFFF),
	F(T, "InboundEnforcementCap", inbound_enforcement_cap, 16, 1, 7, 0x1),
	F(T, "OutboundEnforcementCap", outbound_enforcement_cap, 16, 1, 6, 0x1),
	F(T, "FilterRawInboundCap", filter_raw_inbound_cap, 16, 1, 5, 0x1),
	F(T, "FilterRawOutboundCap", filter_raw_outbound_cap, 16, 1, 4, 0x1),
	F(T, "EnhancedPort0", enhanced_port0, 16, 1, 3, 0x1),
	F(T, "MulticastFDBTop", multicast_fdb_top, 18, 2, 0, 0xFFFF),
};
#undef T

static const struct mad_field guid_info_fields[] = {	/* 14.2.5.5 */
	FA(struct mad_guid_info, "GUID", guid, 0, 8, 0, UINT64_MAX, 8, 8),
};
static const struct mad_field pkey_table_fields[] = {	/* 14.2.5.7 */
	FA(struct mad_pkey_table, "P_Key", pkey, 0, 2, 0, 0xFFFF, 32, 2),
};
static const struct mad_field lft_fields[] = {		/* 14.2.5.10 */
	FA(struct mad_lft, "Port", port, 0, 1, 0, 0xFF, 64, 1),
};
static const struct mad_field mft_fields[] = {		/* 14.2.5.12 */
	FA(struct mad_mft, "PortMask", port_mask, 0, 2, 0, 0xFFFF, 32, 2),
};
/* 14.2.5.8: SL 2i in the high nibble of byte i, SL 2i+1 in the low one. */
#define SL(i) \
	F(struct mad_sl2vl, "SL" #i "toVL", vl[i], (i) / 2, 1, (i) % 2 ? 0 : 4, 0xF)
static const struct mad_field sl2vl_fields[] = {
	SL(0), SL(1), SL(2), SL(3), SL(4), SL(5), SL(6), SL(7),
	SL(8), SL(9), SL(10), SL(11), SL(12), SL(13), SL(14), SL(15),
};
#undef SL
static const struct mad_field vl_arb_fields[] = {	/* 14.2.5.9 */
	FA(struct mad_vl_arb, "VL", vl, 0, 1, 0, 0xF, 32, 2),
	FA(struct mad_vl_arb, "Weight", weight, 1, 1, 0, 0xFF, 32, 2),
};

#define T struct mad_sm_info
static const struct mad_field sm_info_fields[] = {	/* 14.2.5.13 */
	F(T, "GUID", guid, 0, 8, 0, UINT64_MAX),
	F(T, "SM_Key", sm_key, 8, 8, 0, UINT64_MAX),
	F(T, "ActCount", act_count, 16, 4, 0, 0xFFFFFFFF),
	F(T, "Priority", priority, 20, 1, 4, 0xF),
	F(T, "SMState", sm_state, 20, 1, 0, 0xF),
};
#undef T

#define T struct mad_notice
static const struct mad_field notice_fields[] = {	/* 14.2.5.1, 13.4.8.2 */
	F(T, "IsGeneric", is_generic, 0, 1, 7, 0x1),
	F(T, "Type", type, 0, 1, 0, 0x7F),
	F(T, "ProducerType", producer_type, 0, 4, 0, 0xFFFFFF),
	F(T, "TrapNumber", trap_num, 4, 2, 0, 0xFFFF),
	F(T, "IssuerLID", issuer_lid, 6, 2, 0, 0xFFFF),
	F(T, "NoticeToggle", notice_toggle, 8, 2, 15, 0x1),
	F(T, "NoticeCount", notice_count, 8, 2, 0, 0x7FFF),
	FA(T, "DataDetails", data_details, 10, 1, 0, 0xFF, 54, 1),
};
#undef T

/* ---- GSI / PMA attributes (IBA 13.4.8.1, 16.1.3) ------------------------- */

#define T struct mad_class_port_info
static const struct mad_field class_port_info_fields[] = {
	F(T, "BaseVersion", base_version, 0, 1, 0, 0xFF),
	F(T, "ClassVersion", class_version, 1, 1, 0, 0xFF),
	F(T, "CapabilityMask", capability_mask, 2, 2, 0, 0xFFFF),
	F(T, "CapabilityMask2", capability_mask2, 4, 4, 5, 0x7FFFFFF),
	F(T, "RespTimeValue", resp_time_value, 4, 4, 0, 0x1F),
	FA(T, "RedirectGID", redirect_gid, 8, 1, 0, 0xFF, 16, 1),
	F(T, "RedirectTC", redirect_tc, 24, 4, 24, 0xFF),
	F(T, "RedirectSL", redirect_sl, 24, 4, 20, 0xF),
	F(T, "RedirectFL", redirect_fl, 24, 4, 0, 0xFFFFF),
	F(T, "RedirectLID", redirect_lid, 28, 2, 0, 0xFFFF),
	F(T, "RedirectP_Key", redirect_pkey, 30, 2, 0, 0xFFFF),
	F(T, "RedirectQP", redirect_qp, 32, 4, 0, 0xFFFFFF),
	F(T, "RedirectQ_Key", redirect_qkey, 36, 4, 0, 0xFFFFFFFF),
	FA(T, "TrapGID", trap_gid, 40, 1, 0, 0xFF, 16, 1),
	F(T, "TrapTC", trap_tc, 56, 4, 24, 0xFF),
	F(T, "TrapSL", trap_sl, 56, 4, 20, 0xF),
	F(T, "TrapFL", trap_fl, 56, 4, 0, 0xFFFFF),
	F(T, "TrapLID", trap_lid, 60, 2, 0, 0xFFFF),
	F(T, "TrapP_Key", trap_pkey, 62, 2, 0, 0xFFFF),
	F(T, "TrapHL", trap_hop_limit, 64, 4, 24, 0xFF),
	F(T, "TrapQP", trap_qp, 64, 4, 0, 0xFFFFFF),
	F(T, "TrapQ_Key", trap_qkey, 68, 4, 0, 0xFFFFFFFF),
};
#undef T

#define T struct mad_port_counters
static const struct mad_field port_counters_fields[] = {	/* 16.1.3.5 */
	F(T, "PortSelect", port_select, 1, 1, 0, 0xFF),
	F(T, "CounterSelect", counter_select, 2, 2, 0, 0xFFFF),
	F(T, "SymbolErrorCounter", symbol_error_counter, 4, 2, 0, 0xFFFF),
	F(T, "LinkErrorRecoveryCounter", link_error_recovery_counter, 6, 1, 0, 0xFF),
	F(T, "LinkDownedCounter", link_downed_counter, 7, 1, 0, 0xFF),
	F(T, "PortRcvErrors", port_rcv_errors, 8, 2, 0, 0xFFFF),
	F(T, "PortRcvRemotePhysicalErrors", port_rcv_remote_physical_errors, 10, 2, 0, 0xFFFF),
	F(T, "PortRcvSwitchRelayErrors", port_rcv_switch_relay_errors, 12, 2, 0, 0xFFFF),
	F(T, "PortXmitDiscards", port_xmit_discards, 14, 2, 0, 0xFFFF),
	F(T, "PortXmitConstraintErrors", port_xmit_constraint_errors, 16, 1, 0, 0xFF),
	F(T, "PortRcvConstraintErrors", port_rcv_constraint_errors, 17, 1, 0, 0xFF),
	F(T, "CounterSelect2", counter_select2, 18, 1, 0, 0xFF),
	F(T, "LocalLinkIntegrityErrors", local_link_integrity_errors, 19, 1, 4, 0xF),
	F(T, "ExcessiveBufferOverrunErrors", excessive_buffer_overrun_errors, 19, 1, 0, 0xF),
	F(T, "QP1Dropped", qp1_dropped, 20, 2, 0, 0xFFFF),
	F(T, "VL15Dropped", vl15_dropped, 22, 2, 0, 0xFFFF),
	F(T, "PortXmitData", port_xmit_data, 24, 4, 0, 0xFFFFFFFF),
	F(T, "PortRcvData", port_rcv_data, 28, 4, 0, 0xFFFFFFFF),
	F(T, "PortXmitPkts", port_xmit_pkts, 32, 4, 0, 0xFFFFFFFF),
	F(T, "PortRcvPkts", port_rcv_pkts, 36, 4, 0, 0xFFFFFFFF),
	F(T, "PortXmitWait", port_xmit_wait, 40, 4, 0, 0xFFFFFFFF),
};
#undef T

#define T struct mad_port_counters_ext
#define C64(name, m, off) F(T, name, m, off, 8, 0, UINT64_MAX)
static const struct mad_field port_counters_ext_fields[] = {	/* 16.1.4.11 */
	F(T, "PortSelect", port_select, 1, 1, 0, 0xFF),
	F(T, "CounterSelect", counter_select, 2, 2, 0, 0xFFFF),
	F(T, "CounterSelect2", counter_select2, 4, 4, 0, 0xFFFFFFFF),
	C64("PortXmitData", port_xmit_data, 8),
	C64("PortRcvData", port_rcv_data, 16),
	C64("PortXmitPkts", port_xmit_pkts, 24),
	C64("PortRcvPkts", port_rcv_pkts, 32),
	C64("PortUnicastXmitPkts", port_unicast_xmit_pkts, 40),
	C64("PortUnicastRcvPkts", port_unicast_rcv_pkts, 48),
	C64("PortMulticastXmitPkts", port_multicast_xmit_pkts, 56),
	C64("PortMulticastRcvPkts", port_multicast_rcv_pkts, 64),
	C64("SymbolErrorCounter", symbol_error_counter, 72),
	C64("LinkErrorRecoveryCounter", link_error_recovery_counter, 80),
	C64("LinkDownedCounter", link_downed_counter, 88),
	C64("PortRcvErrors", port_rcv_errors, 96),
	C64("PortRcvRemotePhysicalErrors", port_rcv_remote_physical_errors, 104),
	C64("PortRcvSwitchRelayErrors", port_rcv_switch_relay_errors, 112),
	C64("PortXmitDiscards", port_xmit_discards, 120),
	C64("PortXmitConstraintErrors", port_xmit_constraint_errors, 128),
	C64("PortRcvConstraintErrors", port_rcv_constraint_errors, 136),
	C64("LocalLinkIntegrityErrors", local_link_integrity_errors, 144),
	C64("ExcessiveBufferOverrunErrors", excessive_buffer_overrun_errors, 152),
	C64("VL15Dropped", vl15_dropped, 160),
	C64("PortXmitWait", port_xmit_wait, 168),
	C64("QP1Dropped", qp1_dropped, 176),
};
#undef C64
#undef T

/* ---- the layout list and the codecs --------------------------------------- */

#define MAD_ATTRS(X) \
	X(node_info, "NodeInfo", MAD_ATTR_NODE_INFO, 40) \
	X(node_desc, "NodeDescription", MAD_ATTR_NODE_DESC, 64) \
	X(port_info, "PortInfo", MAD_ATTR_PORT_INFO, 64) \
	X(switch_info, "SwitchInfo", MAD_ATTR_SWITCH_INFO, 20) \
	X(guid_info, "GUIDInfo", MAD_ATTR_GUID_INFO, 64) \
	X(pkey_table, "P_KeyTable", MAD_ATTR_P_KEY_TABLE, 64) \
	X(lft, "LinearForwardingTable", MAD_ATTR_LIN_FWD_TBL, 64) \
	X(mft, "MulticastForwardingTable", MAD_ATTR_MCAST_FWD_TBL, 64) \
	X(sl2vl, "SLtoVLMappingTable", MAD_ATTR_SLVL_TABLE, 8) \
	X(vl_arb, "VLArbitrationTable", MAD_ATTR_VL_ARBITRATION, 64) \
	X(sm_info, "SMInfo", MAD_ATTR_SM_INFO, 21) \
	X(notice, "Notice", MAD_ATTR_NOTICE, 64) \
	X(class_port_info, "ClassPortInfo", MAD_ATTR_CLASS_PORT_INFO, 72) \
	X(port_counters, "PortCounters", MAD_ATTR_PORT_CNTRS, 44) \
	X(port_counters_ext, "PortCountersExtended", MAD_ATTR_PORT_CNTRS_EXT, 184)

#define X_LAYOUT(n, name, id, size) { name, id, size, n##_fields, N(n##_fields) },
static const struct mad_layout layouts[] = {
	{ "MADHeader", 0, MAD_HDR_SIZE, hdr_fields, N(hdr_fields) },
	{ "SMPHeader", 0, MAD_SIZE, smp_fields, N(smp_fields) },
	{ "RMPPHeader", 0, 36, rmpp_fields, N(rmpp_fields) },
	{ "SAHeader", 0, MAD_SIZE, sa_fields, N(sa_fields) },
	{ "PMAHeader", 0, MAD_SIZE, pma_fields, N(pma_fields) },
	MAD_ATTRS(X_LAYOUT)
};

const struct mad_layout *mad_layouts(size_t *n)
{
	*n = N(layouts);
	return layouts;
}

void mad_layout_decode(const struct mad_layout *l, const uint8_t *p, void *obj)
{
	fields_decode(l->fields, l->nfields, p, obj);
}

void mad_layout_encode(const struct mad_layout *l, const void *obj, uint8_t *p)
{
	fields_encode(l->fields, l->nfields, obj, p);
}

#define X_CODEC(n, name, id, size) \
	void mad_##n##_decode(struct mad_##n *a, const uint8_t *p) \
	{ \
		memset(a, 0, sizeof(*a)); \
		fields_decode(n##_fields, N(n##_fields), p, a); \
	} \
	void mad_##n##_encode(const struct mad_##n *a, uint8_t *p) \
	{ \
		memset(p, 0, size); \
		fields_encode(n##_fields, N(n##_fields), a, p); \
	}
MAD_ATTRS(X_CODEC)

/* ---- trap DataDetails (IBA 14.2.5.1; offsets in the Notice minus 10) ------ */

void mad_trap128_decode(struct mad_trap128 *t, const struct mad_notice *n)
{
	t->lid = (uint16_t)iba_ld_be(n->data_details + 0, 2);	/* bytes 10-11 */
}

void mad_trap128_encode(const struct mad_trap128 *t, struct mad_notice *n)
{
	memset(n->data_details, 0, sizeof(n->data_details));
	iba_st_be(n->data_details + 0, 2, t->lid);
}

void mad_trap144_decode(struct mad_trap144 *t, const struct mad_notice *n)
{
	const uint8_t *d = n->data_details;

	t->lid = (uint16_t)iba_ld_be(d + 2, 2);			/* 12-13 */
	t->other_local_changes = d[5] & 1;			/* 15 bit 0 */
	t->capability_mask = (uint32_t)iba_ld_be(d + 6, 4);	/* 16-19 */
	t->change_flags = (uint16_t)iba_ld_be(d + 10, 2);	/* 20-21 */
	t->capability_mask2 = (uint16_t)iba_ld_be(d + 12, 2);	/* 22-23 */
}

void mad_trap144_encode(const struct mad_trap144 *t, struct mad_notice *n)
{
	uint8_t *d = n->data_details;

	memset(d, 0, sizeof(n->data_details));
	iba_st_be(d + 2, 2, t->lid);
	d[5] = t->other_local_changes & 1;
	iba_st_be(d + 6, 4, t->capability_mask);
	iba_st_be(d + 10, 2, t->change_flags);
	iba_st_be(d + 12, 2, t->capability_mask2);
}
