// SPDX-License-Identifier: MIT
/*
 * Exported enum-to-string and static-rate helpers of the drop-in libibverbs:
 * same strings and values as rdma-core 44 (applications print them, e.g.
 * ibv_rc_pingpong's ibv_wc_status_str()). Rates: the IBA rate encoding used
 * by PathRecord Rate and the AV static rate (enum ibv_rate). Pure: no I/O,
 * no state, no locks.
 */
#include <stdbool.h>
#include <stddef.h>
#include <infiniband/verbs.h>

#ifndef SIB_EXPORT
#define SIB_EXPORT __attribute__((visibility("default")))
#endif

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Entry @i of a designated-initializer table, or "unknown" for a hole or overrun. */
static const char *table_str(const char *const *tbl, size_t n, unsigned int i)
{
	if (i >= n || !tbl[i])
		return "unknown";
	return tbl[i];
}

/* Strings: rdma-core 44 libibverbs ibv_node_type_str(). */
SIB_EXPORT const char *ibv_node_type_str(enum ibv_node_type node_type)
{
	static const char *const names[] = {
		[IBV_NODE_CA] = "InfiniBand channel adapter",
		[IBV_NODE_SWITCH] = "InfiniBand switch",
		[IBV_NODE_ROUTER] = "InfiniBand router",
		[IBV_NODE_RNIC] = "iWARP NIC",
		[IBV_NODE_USNIC] = "usNIC",
		[IBV_NODE_USNIC_UDP] = "usNIC UDP",
		[IBV_NODE_UNSPECIFIED] = "unspecified",
	};

	return table_str(names, ARRAY_SIZE(names), (unsigned int)node_type);
}

/* Strings: rdma-core 44 libibverbs ibv_port_state_str(). */
SIB_EXPORT const char *ibv_port_state_str(enum ibv_port_state port_state)
{
	static const char *const names[] = {
		[IBV_PORT_NOP] = "no state change (NOP)",
		[IBV_PORT_DOWN] = "down",
		[IBV_PORT_INIT] = "init",
		[IBV_PORT_ARMED] = "armed",
		[IBV_PORT_ACTIVE] = "active",
		[IBV_PORT_ACTIVE_DEFER] = "active defer",
	};

	return table_str(names, ARRAY_SIZE(names), (unsigned int)port_state);
}

/* Strings: rdma-core 44 libibverbs ibv_event_type_str(). */
SIB_EXPORT const char *ibv_event_type_str(enum ibv_event_type event)
{
	static const char *const names[] = {
		[IBV_EVENT_CQ_ERR] = "CQ error",
		[IBV_EVENT_QP_FATAL] = "local work queue catastrophic error",
		[IBV_EVENT_QP_REQ_ERR] = "invalid request local work queue error",
		[IBV_EVENT_QP_ACCESS_ERR] = "local access violation work queue error",
		[IBV_EVENT_COMM_EST] = "communication established",
		[IBV_EVENT_SQ_DRAINED] = "send queue drained",
		[IBV_EVENT_PATH_MIG] = "path migrated",
		[IBV_EVENT_PATH_MIG_ERR] = "path migration request error",
		[IBV_EVENT_DEVICE_FATAL] = "local catastrophic error",
		[IBV_EVENT_PORT_ACTIVE] = "port active",
		[IBV_EVENT_PORT_ERR] = "port error",
		[IBV_EVENT_LID_CHANGE] = "LID change",
		[IBV_EVENT_PKEY_CHANGE] = "P_Key change",
		[IBV_EVENT_SM_CHANGE] = "SM change",
		[IBV_EVENT_SRQ_ERR] = "SRQ catastrophic error",
		[IBV_EVENT_SRQ_LIMIT_REACHED] = "SRQ limit reached",
		[IBV_EVENT_QP_LAST_WQE_REACHED] = "last WQE reached",
		[IBV_EVENT_CLIENT_REREGISTER] = "client reregistration",
		[IBV_EVENT_GID_CHANGE] = "GID table change",
		[IBV_EVENT_WQ_FATAL] = "WQ fatal",
	};

	return table_str(names, ARRAY_SIZE(names), (unsigned int)event);
}

/* Strings: rdma-core 44 libibverbs ibv_wc_status_str(). */
SIB_EXPORT const char *ibv_wc_status_str(enum ibv_wc_status status)
{
	static const char *const names[] = {
		[IBV_WC_SUCCESS] = "success",
		[IBV_WC_LOC_LEN_ERR] = "local length error",
		[IBV_WC_LOC_QP_OP_ERR] = "local QP operation error",
		[IBV_WC_LOC_EEC_OP_ERR] = "local EE context operation error",
		[IBV_WC_LOC_PROT_ERR] = "local protection error",
		[IBV_WC_WR_FLUSH_ERR] = "Work Request Flushed Error",
		[IBV_WC_MW_BIND_ERR] = "memory management operation error",
		[IBV_WC_BAD_RESP_ERR] = "bad response error",
		[IBV_WC_LOC_ACCESS_ERR] = "local access error",
		[IBV_WC_REM_INV_REQ_ERR] = "remote invalid request error",
		[IBV_WC_REM_ACCESS_ERR] = "remote access error",
		[IBV_WC_REM_OP_ERR] = "remote operation error",
		[IBV_WC_RETRY_EXC_ERR] = "transport retry counter exceeded",
		[IBV_WC_RNR_RETRY_EXC_ERR] = "RNR retry counter exceeded",
		[IBV_WC_LOC_RDD_VIOL_ERR] = "local RDD violation error",
		[IBV_WC_REM_INV_RD_REQ_ERR] = "remote invalid RD request",
		[IBV_WC_REM_ABORT_ERR] = "aborted error",
		[IBV_WC_INV_EECN_ERR] = "invalid EE context number",
		[IBV_WC_INV_EEC_STATE_ERR] = "invalid EE context state",
		[IBV_WC_FATAL_ERR] = "fatal error",
		[IBV_WC_RESP_TIMEOUT_ERR] = "response timeout error",
		[IBV_WC_GENERAL_ERR] = "general error",
		[IBV_WC_TM_ERR] = "TM error",
		[IBV_WC_TM_RNDV_INCOMPLETE] = "TM software rendezvous",
	};

	return table_str(names, ARRAY_SIZE(names), (unsigned int)status);
}

/*
 * Static rates, indexed by enum ibv_rate. mult is the rate in units of
 * 2.5 Gb/s, 0 where the rate is no whole multiple (the 64b/66b FDR/EDR
 * rates); mbps is the data rate in Mb/s. Values: rdma-core 44 verbs.c.
 */
static const struct {
	int mult;
	int mbps;
} rates[] = {
	[IBV_RATE_2_5_GBPS] = { 1, 2500 },
	[IBV_RATE_5_GBPS] = { 2, 5000 },
	[IBV_RATE_10_GBPS] = { 4, 10000 },
	[IBV_RATE_20_GBPS] = { 8, 20000 },
	[IBV_RATE_30_GBPS] = { 12, 30000 },
	[IBV_RATE_40_GBPS] = { 16, 40000 },
	[IBV_RATE_60_GBPS] = { 24, 60000 },
	[IBV_RATE_80_GBPS] = { 32, 80000 },
	[IBV_RATE_120_GBPS] = { 48, 120000 },
	[IBV_RATE_14_GBPS] = { 0, 14062 },
	[IBV_RATE_56_GBPS] = { 0, 56250 },
	[IBV_RATE_112_GBPS] = { 0, 112500 },
	[IBV_RATE_168_GBPS] = { 0, 168750 },
	[IBV_RATE_25_GBPS] = { 0, 25781 },
	[IBV_RATE_100_GBPS] = { 0, 103125 },
	[IBV_RATE_200_GBPS] = { 0, 206250 },
	[IBV_RATE_300_GBPS] = { 0, 309375 },
	[IBV_RATE_28_GBPS] = { 11, 28125 },
	[IBV_RATE_50_GBPS] = { 20, 53125 },
	[IBV_RATE_400_GBPS] = { 160, 425000 },
	[IBV_RATE_600_GBPS] = { 240, 637500 },
	[IBV_RATE_800_GBPS] = { 320, 850000 },
	[IBV_RATE_1200_GBPS] = { 480, 1275000 },
};

/* Entries 0 (IBV_RATE_MAX) and 1 are holes: mbps 0 there. */
static bool rate_known(enum ibv_rate rate)
{
	return (unsigned int)rate < ARRAY_SIZE(rates) && rates[rate].mbps;
}

/* rdma-core 44: -1 for IBV_RATE_MAX, unknown rates and non-multiples. */
SIB_EXPORT int ibv_rate_to_mult(enum ibv_rate rate)
{
	if (!rate_known(rate) || !rates[rate].mult)
		return -1;
	return rates[rate].mult;
}

/* rdma-core 44: IBV_RATE_MAX unless @mult is exactly one rate's multiple. */
SIB_EXPORT enum ibv_rate mult_to_ibv_rate(int mult)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(rates); i++)
		if (mult > 0 && rates[i].mult == mult)
			return (enum ibv_rate)i;
	return IBV_RATE_MAX;
}

/* rdma-core 44: -1 for IBV_RATE_MAX and unknown rates. */
SIB_EXPORT int ibv_rate_to_mbps(enum ibv_rate rate)
{
	if (!rate_known(rate))
		return -1;
	return rates[rate].mbps;
}

/* rdma-core 44: IBV_RATE_MAX unless @mbps is exactly one rate's value. */
SIB_EXPORT enum ibv_rate mbps_to_ibv_rate(int mbps)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(rates); i++)
		if (mbps > 0 && rates[i].mbps == mbps)
			return (enum ibv_rate)i;
	return IBV_RATE_MAX;
}
