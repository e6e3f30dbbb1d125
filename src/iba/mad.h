/* SPDX-License-Identifier: MIT */
/*
 * softib MAD wire layer: the common MAD header (IBA 13.4.2), SMPs LID-routed
 * and directed-route (14.2.1), the SA header with RMPP (15.2, 13.6), the PMA
 * GMP (16.1), the SM and PMA attribute layouts as field tables, and the
 * directed-route SMI rules (14.2.2, C14-6/C14-9/C14-13) as pure functions.
 * No I/O, no allocation, no state; every function only touches its arguments.
 * Layout facts: ../shared/research/mad-formats.md (names as in IBA/ib_types).
 */
#ifndef SOFTIB_IBA_MAD_H
#define SOFTIB_IBA_MAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- sizes (IBA 13.4.2, 14.2.1, 15.2.1, 16.1.1) -------------------------- */
#define MAD_SIZE		256	/* every MAD on the wire */
#define MAD_HDR_SIZE		24	/* common header */
#define MAD_SMP_DATA_OFFS	64	/* SMP attribute data */
#define MAD_SMP_DATA_SIZE	64
#define MAD_SMP_PATH_OFFS	128	/* DR InitialPath; ReturnPath at 192 */
#define MAD_DR_MAX_HOPS		64	/* path entries; HopCount must be < 64 (C14-6) */
#define MAD_SA_HDR_SIZE		56	/* common + RMPP + SA header */
#define MAD_SA_DATA_SIZE	200
#define MAD_PMA_DATA_OFFS	64	/* bytes 24-63 reserved */
#define MAD_PMA_DATA_SIZE	192
#define MAD_PERMISSIVE_LID	0xFFFFu	/* IBA 4.1.4: DrSLID/DrDLID "permissive" */

/* ---- management classes, methods, status (IBA 13.4.4-13.4.7) ----------- */
#define MAD_BASE_VERSION		1
#define MAD_MGMT_CLASS_SUBN_LID_ROUTED	0x01
#define MAD_MGMT_CLASS_SUBN_ADM		0x03
#define MAD_MGMT_CLASS_PERF_MGMT	0x04
#define MAD_MGMT_CLASS_CM		0x07	/* Communication Management (IBA 12) */
#define MAD_MGMT_CLASS_SUBN_DIRECTED_ROUTE 0x81
#define MAD_SMP_CLASS_VERSION		1
#define MAD_SA_CLASS_VERSION		2
#define MAD_PMA_CLASS_VERSION		1

#define MAD_METHOD_GET			0x01
#define MAD_METHOD_SET			0x02
#define MAD_METHOD_SEND			0x03
#define MAD_METHOD_TRAP			0x05
#define MAD_METHOD_REPORT		0x06
#define MAD_METHOD_TRAP_REPRESS		0x07
#define MAD_METHOD_GETTABLE		0x12
#define MAD_METHOD_GETTRACETABLE	0x13
#define MAD_METHOD_GETMULTI		0x14
#define MAD_METHOD_DELETE		0x15
#define MAD_METHOD_RESP_MASK		0x80	/* the R bit over the method byte */
#define MAD_METHOD_GET_RESP		0x81
#define MAD_METHOD_REPORT_RESP		0x86
#define MAD_METHOD_GETTABLE_RESP	0x92
#define MAD_METHOD_GETMULTI_RESP	0x94
#define MAD_METHOD_DELETE_RESP		0x95

#define MAD_STATUS_SUCCESS		0x0000
#define MAD_STATUS_BUSY			0x0001
#define MAD_STATUS_REDIRECT		0x0002
#define MAD_STATUS_BAD_VERSION		0x0004	/* invalid field code 1 */
#define MAD_STATUS_UNSUP_METHOD		0x0008	/* code 2 */
#define MAD_STATUS_UNSUP_METHOD_ATTR	0x000C	/* code 3 */
#define MAD_STATUS_INVALID_FIELD	0x001C	/* code 7: value or modifier */
#define MAD_SMP_DIRECTION		0x8000	/* D bit of a DR SMP's Status */
#define MAD_SA_STATUS_NO_RESOURCES	0x0100
#define MAD_SA_STATUS_REQ_INVALID	0x0200
#define MAD_SA_STATUS_NO_RECORDS	0x0300
#define MAD_SA_STATUS_TOO_MANY_RECORDS	0x0400

/* ---- attribute IDs (IBA 14.2.5, 16.1.3) --------------------------------- */
#define MAD_ATTR_CLASS_PORT_INFO	0x0001
#define MAD_ATTR_NOTICE			0x0002
#define MAD_ATTR_NODE_DESC		0x0010
#define MAD_ATTR_NODE_INFO		0x0011
#define MAD_ATTR_SWITCH_INFO		0x0012
#define MAD_ATTR_GUID_INFO		0x0014
#define MAD_ATTR_PORT_INFO		0x0015
#define MAD_ATTR_P_KEY_TABLE		0x0016
#define MAD_ATTR_SLVL_TABLE		0x0017
#define MAD_ATTR_VL_ARBITRATION		0x0018
#define MAD_ATTR_LIN_FWD_TBL		0x0019
#define MAD_ATTR_MCAST_FWD_TBL		0x001B
#define MAD_ATTR_SM_INFO		0x0020
#define MAD_ATTR_PORT_CNTRS		0x0012	/* PerfMgt class */
#define MAD_ATTR_PORT_CNTRS_EXT		0x001D	/* PerfMgt class */

/* NodeInfo.NodeType; PortInfo encodings (IBA 14.2.5.3, 14.2.5.6) */
#define MAD_NODE_TYPE_CA		1
#define MAD_NODE_TYPE_SWITCH		2
#define MAD_NODE_TYPE_ROUTER		3
#define MAD_PORT_STATE_NOP		0
#define MAD_PORT_STATE_DOWN		1
#define MAD_PORT_STATE_INIT		2
#define MAD_PORT_STATE_ARMED		3
#define MAD_PORT_STATE_ACTIVE		4
#define MAD_PORT_PHYS_STATE_SLEEP	1
#define MAD_PORT_PHYS_STATE_POLLING	2
#define MAD_PORT_PHYS_STATE_DISABLED	3
#define MAD_PORT_PHYS_STATE_TRAINING	4
#define MAD_PORT_PHYS_STATE_LINKUP	5
#define MAD_PORT_PHYS_STATE_LINK_ERR_RECOVERY 6
#define MAD_PORT_PHYS_STATE_PHY_TEST	7
#define MAD_MTU_256	1
#define MAD_MTU_512	2
#define MAD_MTU_1024	3
#define MAD_MTU_2048	4
#define MAD_MTU_4096	5
/* PortInfo.CapabilityMask bits (IBA 14.2.5.6 table 146) */
#define MAD_PORT_CAP_IS_SM			(1u << 1)
#define MAD_PORT_CAP_IS_NOTICE_SUP		(1u << 2)
#define MAD_PORT_CAP_IS_TRAP_SUP		(1u << 3)
#define MAD_PORT_CAP_IS_SL_MAP_SUP		(1u << 6)
#define MAD_PORT_CAP_IS_SM_DISABLED		(1u << 10)
#define MAD_PORT_CAP_IS_SYS_IMAGE_GUID_SUP	(1u << 11)
#define MAD_PORT_CAP_IS_EXT_SPEEDS_SUP		(1u << 14)
#define MAD_PORT_CAP_IS_CAP_MASK2_SUP		(1u << 15)
#define MAD_PORT_CAP_IS_CM_SUP			(1u << 16)
#define MAD_PORT_CAP_IS_VEND_CLASS_SUP		(1u << 20)
#define MAD_PORT_CAP_IS_CAP_MASK_NOTICE_SUP	(1u << 22)
#define MAD_PORT_CAP_IS_CLIENT_REREG_SUP	(1u << 25)
/* SMInfo states and Set modifiers (IBA 14.2.5.13) */
#define MAD_SMINFO_STATE_NOTACTIVE	0
#define MAD_SMINFO_STATE_DISCOVERING	1
#define MAD_SMINFO_STATE_STANDBY	2
#define MAD_SMINFO_STATE_MASTER		3
#define MAD_SMINFO_ATTR_MOD_HANDOVER	1
#define MAD_SMINFO_ATTR_MOD_ACKNOWLEDGE	2
#define MAD_SMINFO_ATTR_MOD_DISABLE	3
#define MAD_SMINFO_ATTR_MOD_STANDBY	4
#define MAD_SMINFO_ATTR_MOD_DISCOVER	5
/* Notice (IBA 14.2.5.1, 13.4.8.2) */
#define MAD_NOTICE_TYPE_FATAL		0
#define MAD_NOTICE_TYPE_URGENT		1
#define MAD_NOTICE_TYPE_SECURITY	2
#define MAD_NOTICE_TYPE_SUBN_MGMT	3
#define MAD_NOTICE_TYPE_INFO		4
#define MAD_NOTICE_PROD_CA		1
#define MAD_NOTICE_PROD_SWITCH		2
#define MAD_NOTICE_PROD_ROUTER		3
#define MAD_NOTICE_PROD_CLASS_MGR	4
#define MAD_TRAP_LINK_STATE_CHANGE	128
#define MAD_TRAP_LOCAL_CHANGES		144
/* Table entries and blocks */
#define MAD_LFT_BLOCK_SIZE	64	/* LinearForwardingTable entries per block */
#define MAD_LFT_NO_PATH		0xFF
#define MAD_MFT_BLOCK_SIZE	32	/* MLIDs per MulticastForwardingTable block */
#define MAD_MLID_START		0xC000
#define MAD_PKEY_BLOCK_SIZE	32
#define MAD_GUID_BLOCK_SIZE	8
#define MAD_VLARB_BLOCK_SIZE	32
#define MAD_DROP_VL		15
/* RMPP (IBA 13.6.2) */
#define MAD_RMPP_TYPE_DATA	1
#define MAD_RMPP_TYPE_ACK	2
#define MAD_RMPP_TYPE_STOP	3
#define MAD_RMPP_TYPE_ABORT	4
#define MAD_RMPP_FLAG_ACTIVE	0x1
#define MAD_RMPP_FLAG_FIRST	0x2
#define MAD_RMPP_FLAG_LAST	0x4

/* ---- field tables -------------------------------------------------------- */
/*
 * One scalar field (or a run of count equal fields stride bytes apart) of a
 * layout: a big-endian 1/2/4/8-byte container at byte off, the value being
 * (container >> shift) & mask, stored in the C struct member at member (of
 * msize bytes per entry). Bits that belong to no field are reserved: encode
 * writes them 0.
 */
struct mad_field {
	const char *name;	/* the IBA field name */
	uint16_t off;
	uint8_t bytes;
	uint8_t shift;
	uint64_t mask;
	uint16_t member;
	uint8_t msize;
	uint8_t count;		/* 1 for a scalar */
	uint8_t stride;
};

/* A named layout: the attribute ID (0 for headers), its size in bytes. */
struct mad_layout {
	const char *name;
	uint16_t attr_id;
	uint16_t size;
	const struct mad_field *fields;
	size_t nfields;
};

/* All layouts this module knows (headers and attributes); *n gets the count. */
const struct mad_layout *mad_layouts(size_t *n);

/* Run a layout's table: decode its fields from p into obj (the layout's
 * struct; members of no field untouched) / encode them from obj into p
 * (bits of no field untouched). The typed codecs below wrap these. */
void mad_layout_decode(const struct mad_layout *l, const uint8_t *p, void *obj);
void mad_layout_encode(const struct mad_layout *l, const void *obj, uint8_t *p);

/* ---- the common header and the class headers ----------------------------- */

/* Common MAD header, bytes 0-23 (IBA 13.4.2). status is the raw 16 bits
 * except in struct mad_smp of a DR SMP (see there). */
struct mad_hdr {
	uint8_t base_version;
	uint8_t mgmt_class;
	uint8_t class_version;
	uint8_t r;		/* 1 = response */
	uint8_t method;		/* 7 bits, without R */
	uint16_t status;
	uint16_t class_specific;
	uint64_t tid;
	uint16_t attr_id;
	uint32_t attr_mod;
};

/* SMP (IBA 14.2.1.1 LID-routed, 14.2.1.2 directed route). For class 0x81,
 * d is the D bit and hdr.status the other 15 status bits; hop_ptr/hop_cnt are
 * hdr.class_specific's bytes. For class 0x01 d is 0 and the DR fields are
 * reserved (decoded as they stand, 0 in a valid SMP). */
struct mad_smp {
	struct mad_hdr hdr;
	uint8_t d;
	uint8_t hop_ptr;
	uint8_t hop_cnt;
	uint64_t m_key;
	uint16_t dr_slid;
	uint16_t dr_dlid;
	uint8_t data[MAD_SMP_DATA_SIZE];
	uint8_t initial_path[MAD_DR_MAX_HOPS];
	uint8_t return_path[MAD_DR_MAX_HOPS];
};

/* RMPP header, bytes 24-35 (IBA 13.6.2.1). */
struct mad_rmpp {
	uint8_t rmpp_version;
	uint8_t rmpp_type;
	uint8_t rmpp_resp_time;	/* RRespTime, 5 bits */
	uint8_t rmpp_flags;	/* MAD_RMPP_FLAG_*, 3 bits */
	uint8_t rmpp_status;
	uint32_t seg_num;	/* Data1 */
	uint32_t payload_len;	/* Data2: PayloadLength or NewWindowLast */
};

/* SA MAD (IBA 15.2.1.1): header, RMPP, SM_Key, AttributeOffset (in 8-byte
 * units), ComponentMask, 200 data bytes. */
struct mad_sa {
	struct mad_hdr hdr;
	struct mad_rmpp rmpp;
	uint64_t sm_key;
	uint16_t attr_offset;
	uint64_t comp_mask;
	uint8_t data[MAD_SA_DATA_SIZE];
};

/* PerfMgt GMP (IBA 16.1.1): header, 40 reserved bytes, 192 data bytes. */
struct mad_pma {
	struct mad_hdr hdr;
	uint8_t data[MAD_PMA_DATA_SIZE];
};

/*
 * Decoders take a whole 256-byte MAD. They return 0, or -EPROTO if
 * BaseVersion is not 1 or the class is not the decoder's (SMP: 0x01/0x81;
 * SA: 0x03; PMA: 0x04). Encoders write all 256 bytes, reserved bits 0.
 */
void mad_hdr_decode(struct mad_hdr *h, const uint8_t *mad);
void mad_hdr_encode(const struct mad_hdr *h, uint8_t *mad);
int mad_smp_decode(struct mad_smp *s, const uint8_t *mad);
void mad_smp_encode(const struct mad_smp *s, uint8_t *mad);
int mad_sa_decode(struct mad_sa *s, const uint8_t *mad);
void mad_sa_encode(const struct mad_sa *s, uint8_t *mad);
int mad_pma_decode(struct mad_pma *p, const uint8_t *mad);
void mad_pma_encode(const struct mad_pma *p, uint8_t *mad);

/* ---- attributes (IBA 14.2.5, 16.1.3, 16.1.4) ------------------------------ */

struct mad_node_info {		/* 0x0011, 40 bytes */
	uint8_t base_version, class_version, node_type, num_ports;
	uint64_t sys_guid, node_guid, port_guid;
	uint16_t partition_cap, device_id;
	uint32_t revision;
	uint8_t local_port_num;
	uint32_t vendor_id;	/* 24 bits */
};

struct mad_node_desc {		/* 0x0010: 64 bytes, not NUL-terminated */
	uint8_t description[64];
};

struct mad_port_info {		/* 0x0015, 64 bytes */
	uint64_t m_key, gid_prefix;
	uint16_t lid, master_sm_lid;
	uint32_t capability_mask;
	uint16_t diag_code, m_key_lease_period;
	uint8_t local_port_num, link_width_enabled, link_width_supported,
		link_width_active, link_speed_supported, port_state,
		port_phys_state, link_down_default_state, m_key_protect_bits,
		lmc, link_speed_active, link_speed_enabled, neighbor_mtu,
		master_sm_sl, vl_cap, init_type, vl_high_limit,
		vl_arbitration_high_cap, vl_arbitration_low_cap, init_type_reply,
		mtu_cap, vl_stall_count, hoq_life, operational_vls,
		partition_enforcement_inbound, partition_enforcement_outbound,
		filter_raw_inbound, filter_raw_outbound;
	uint16_t m_key_violations, p_key_violations, q_key_violations;
	uint8_t guid_cap, client_reregister, mcast_pkey_trap_suppression_enabled,
		subnet_timeout, resp_time_value, local_phy_errors, overrun_errors;
	uint16_t max_credit_hint;
	uint32_t link_round_trip_latency;	/* 24 bits */
	uint16_t capability_mask2;
	uint8_t link_speed_ext_active, link_speed_ext_supported,
		link_speed_ext_enabled;
};

struct mad_switch_info {	/* 0x0012, 20 bytes */
	uint16_t linear_fdb_cap, random_fdb_cap, multicast_fdb_cap,
		 linear_fdb_top;
	uint8_t default_port, default_mcast_primary_port,
		default_mcast_not_primary_port, life_time_value,
		port_state_change, optimized_sl_to_vl_mapping_programming;
	uint16_t lids_per_port, partition_enforcement_cap;
	uint8_t inbound_enforcement_cap, outbound_enforcement_cap,
		filter_raw_inbound_cap, filter_raw_outbound_cap,
		enhanced_port0;
	uint16_t multicast_fdb_top;
};

struct mad_guid_info {		/* 0x0014 */
	uint64_t guid[MAD_GUID_BLOCK_SIZE];
};

struct mad_pkey_table {		/* 0x0016 */
	uint16_t pkey[MAD_PKEY_BLOCK_SIZE];
};

struct mad_lft {		/* 0x0019: egress port per LID */
	uint8_t port[MAD_LFT_BLOCK_SIZE];
};

struct mad_mft {		/* 0x001B: port mask per MLID, one position */
	uint16_t port_mask[MAD_MFT_BLOCK_SIZE];
};

struct mad_sl2vl {		/* 0x0017, 8 bytes */
	uint8_t vl[16];		/* indexed by SL */
};

struct mad_vl_arb {		/* 0x0018, 32 entries */
	uint8_t vl[MAD_VLARB_BLOCK_SIZE];
	uint8_t weight[MAD_VLARB_BLOCK_SIZE];
};

struct mad_sm_info {		/* 0x0020, 21 bytes */
	uint64_t guid, sm_key;
	uint32_t act_count;
	uint8_t priority, sm_state;
};

struct mad_notice {		/* 0x0002, SMP form (64 bytes) */
	uint8_t is_generic, type;
	uint32_t producer_type;	/* 24 bits: producer type or VendorID */
	uint16_t trap_num;	/* or DeviceID */
	uint16_t issuer_lid;
	uint8_t notice_toggle;
	uint16_t notice_count;	/* 15 bits */
	uint8_t data_details[54];
};

/* Trap DataDetails (IBA 14.2.5.1 tables 120-): 128 and 144. */
struct mad_trap128 {
	uint16_t lid;		/* LIDADDR: the switch's LID */
};
struct mad_trap144 {
	uint16_t lid;
	uint8_t other_local_changes;
	uint32_t capability_mask;
	uint16_t change_flags;	/* bit 0 NodeDescription, 1 LinkWidthEnabled, 2 LinkSpeedEnabled */
	uint16_t capability_mask2;
};

struct mad_class_port_info {	/* 0x0001, 72 bytes (any GSI class) */
	uint8_t base_version, class_version;
	uint16_t capability_mask;
	uint32_t capability_mask2;	/* 27 bits */
	uint8_t resp_time_value;	/* 5 bits */
	uint8_t redirect_gid[16];
	uint8_t redirect_tc, redirect_sl;
	uint32_t redirect_fl;
	uint16_t redirect_lid, redirect_pkey;
	uint32_t redirect_qp, redirect_qkey;
	uint8_t trap_gid[16];
	uint8_t trap_tc, trap_sl;
	uint32_t trap_fl;
	uint16_t trap_lid, trap_pkey;
	uint8_t trap_hop_limit;
	uint32_t trap_qp, trap_qkey;
};

struct mad_port_counters {	/* PMA 0x0012, 44 bytes */
	uint8_t port_select;
	uint16_t counter_select;
	uint16_t symbol_error_counter;
	uint8_t link_error_recovery_counter, link_downed_counter;
	uint16_t port_rcv_errors, port_rcv_remote_physical_errors,
		 port_rcv_switch_relay_errors, port_xmit_discards;
	uint8_t port_xmit_constraint_errors, port_rcv_constraint_errors;
	uint8_t counter_select2;
	uint8_t local_link_integrity_errors, excessive_buffer_overrun_errors;
	uint16_t qp1_dropped, vl15_dropped;
	uint32_t port_xmit_data, port_rcv_data, port_xmit_pkts, port_rcv_pkts,
		 port_xmit_wait;
};

struct mad_port_counters_ext {	/* PMA 0x001D, 184 bytes */
	uint8_t port_select;
	uint16_t counter_select;
	uint32_t counter_select2;
	uint64_t port_xmit_data, port_rcv_data, port_xmit_pkts, port_rcv_pkts,
		 port_unicast_xmit_pkts, port_unicast_rcv_pkts,
		 port_multicast_xmit_pkts, port_multicast_rcv_pkts;
	/* with ClassPortInfo.CapabilityMask2 bit 1 */
	uint64_t symbol_error_counter, link_error_recovery_counter,
		 link_downed_counter, port_rcv_errors,
		 port_rcv_remote_physical_errors, port_rcv_switch_relay_errors,
		 port_xmit_discards, port_xmit_constraint_errors,
		 port_rcv_constraint_errors, local_link_integrity_errors,
		 excessive_buffer_overrun_errors, vl15_dropped, port_xmit_wait,
		 qp1_dropped;
};

/*
 * Attribute codecs over the attribute's bytes (p = MAD data area, e.g.
 * mad + 64 for an SMP). decode reads layout-size bytes; encode first zeroes
 * the layout's size (reserved bits 0) and writes every field.
 */
#define MAD_ATTR_CODEC(name) \
	void mad_##name##_decode(struct mad_##name *a, const uint8_t *p); \
	void mad_##name##_encode(const struct mad_##name *a, uint8_t *p);
MAD_ATTR_CODEC(node_info)
MAD_ATTR_CODEC(node_desc)
MAD_ATTR_CODEC(port_info)
MAD_ATTR_CODEC(switch_info)
MAD_ATTR_CODEC(guid_info)
MAD_ATTR_CODEC(pkey_table)
MAD_ATTR_CODEC(lft)
MAD_ATTR_CODEC(mft)
MAD_ATTR_CODEC(sl2vl)
MAD_ATTR_CODEC(vl_arb)
MAD_ATTR_CODEC(sm_info)
MAD_ATTR_CODEC(notice)
MAD_ATTR_CODEC(class_port_info)
MAD_ATTR_CODEC(port_counters)
MAD_ATTR_CODEC(port_counters_ext)
#undef MAD_ATTR_CODEC

/* Trap DataDetails <-> Notice.data_details (offsets are Notice byte - 10). */
void mad_trap128_decode(struct mad_trap128 *t, const struct mad_notice *n);
void mad_trap128_encode(const struct mad_trap128 *t, struct mad_notice *n);
void mad_trap144_decode(struct mad_trap144 *t, const struct mad_notice *n);
void mad_trap144_encode(const struct mad_trap144 *t, struct mad_notice *n);

/* ---- directed route (IBA 14.2.2) ---------------------------------------- */

/* What the SMI must do with a DR SMP. */
enum mad_dr_verdict {
	MAD_DR_SEND,		/* send side: transmit out the given port */
	MAD_DR_LOCAL,		/* hand to this node's SMA (D=0) or SM (D=1) */
	MAD_DR_FORWARD,		/* switch: updated, transmit out ->port */
	MAD_DR_LID_ROUTE,	/* end of the DR part, DrDLID/DrSLID not
				   permissive: LID-route to ->lid (switches) */
	MAD_DR_DROP_HOP_CNT,	/* HopCount >= 64 (C14-6) */
	MAD_DR_DROP_HOP_PTR,	/* HopPointer out of range for D and HopCount */
	MAD_DR_DROP_PORT,	/* path entry is not the port used / > NumPorts */
	MAD_DR_DROP_NOT_SWITCH,	/* a CA asked to be an intermediate hop */
	MAD_DR_DROP_PERMISSIVE,	/* a CA at the end of the DR part with a
				   non-permissive DrDLID (D=0) / DrSLID (D=1) */
	MAD_DR_DROP_NOT_DR,	/* not a DR SMP (class is not 0x81) */
};

/* The node doing SMI processing. */
struct mad_dr_node {
	bool is_switch;
	uint8_t num_ports;	/* physical ports (NodeInfo.NumPorts) */
};

/* Result: the verdict plus the egress port (SEND/FORWARD) or the LID
 * (LID_ROUTE). */
struct mad_dr_result {
	enum mad_dr_verdict verdict;
	uint8_t port;
	uint16_t lid;
};

/* Short name of a verdict, for counters and logs ("forward", "drop_hop_ptr"). */
const char *mad_dr_verdict_str(enum mad_dr_verdict v);

/*
 * Send-side SMI check on a 256-byte DR SMP about to leave this node on port
 * (IBA 14.2.2.2 C14-9 outgoing, 14.2.2.4 C14-13 returning): updates
 * HopPointer in mad. Returns MAD_DR_SEND with .port = port, or a drop verdict.
 * Hop count 0 (local SMA): HopPointer becomes 1, nothing goes on a wire.
 */
struct mad_dr_result mad_dr_send(uint8_t *mad, const struct mad_dr_node *node,
				 uint8_t port);

/*
 * Receive-side SMI processing of a DR SMP that arrived on port (C14-9,
 * C14-13): records ReturnPath, and decides. FORWARD (switches) has already
 * applied the send-side step for .port; LOCAL may have advanced HopPointer
 * to the end of the path (hop_cnt+1 outgoing, 0 returning) as a loop-back
 * to this node's SMA/SM would. Drops leave the reason.
 */
struct mad_dr_result mad_dr_recv(uint8_t *mad, const struct mad_dr_node *node,
				 uint8_t port);

/*
 * Turn a request into its response in place (IBA 13.4.5, 14.2.2.3): Get/Set
 * become GetResp (R=1, there is no SetResp), Trap becomes TrapRepress (R=0),
 * other methods get R set; Status = status; for a DR SMP the D bit is set
 * (Status keeps 15 bits) and HopCount, paths and HopPointer are kept (the
 * responder's mad_dr_send then decrements it). Returns 0, or -EINVAL if mad
 * already is a response or status does not fit (DR: 15 bits).
 */
int mad_make_reply(uint8_t *mad, uint16_t status);

#endif /* SOFTIB_IBA_MAD_H */
