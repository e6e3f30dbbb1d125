// SPDX-License-Identifier: MIT
/*
 * libibumad's names for MAD classes, methods, attributes and status codes
 * (<infiniband/umad_str.h>), from the IBA tables: classes 13.4.4, methods
 * 13.4.5 and 15.2.2 (SA), status 13.4.7 and 15.2.1.1 (SA), SM attributes
 * 14.2.5, SA attributes 15.2.5, PerfMgt 16.1.3.  Pure: static strings only.
 */
#include <arpa/inet.h>
#include <infiniband/umad_str.h>
#include <infiniband/umad_types.h>
#include <stddef.h>

#include "umad/umad_priv.h"

struct name16 {
	uint16_t v;
	const char *name;
};

static const char *lookup(const struct name16 *t, size_t n, uint16_t v, const char *dflt)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (t[i].v == v)
			return t[i].name;
	return dflt;
}

#define LOOKUP(t, v, d) lookup(t, sizeof(t) / sizeof(t[0]), v, d)

static const struct name16 classes[] = {
	{ 0x01, "Subn" }, { 0x81, "SubnDirectedRoute" }, { 0x03, "SubnAdm" },
	{ 0x04, "Perf" }, { 0x05, "BM" }, { 0x06, "DevMgt" }, { 0x07, "ComMgt" },
	{ 0x08, "SNMP" }, { 0x09, "VendorRange1" }, { 0x10, "DevAdm" },
	{ 0x21, "CongestionManagment" }, { 0x30, "VendorRange2" },
};

/* Class name; vendor classes 0x09-0x0f and 0x30-0x4f by range. */
UMAD_EXPORT const char *umad_class_str(uint8_t mgmt_class)
{
	if (mgmt_class >= 0x09 && mgmt_class <= 0x0f)
		return "VendorRange1";
	if (mgmt_class >= 0x30 && mgmt_class <= 0x4f)
		return "VendorRange2";
	return LOOKUP(classes, mgmt_class, "<unknown>");
}

static const struct name16 methods[] = {
	{ 0x01, "Get" }, { 0x02, "Set" }, { 0x81, "GetResp" }, { 0x03, "Send" },
	{ 0x05, "Trap" }, { 0x06, "Report" }, { 0x86, "ReportResp" },
	{ 0x07, "TrapRepress" },
};

static const struct name16 sa_methods[] = {
	{ 0x12, "GetTable" }, { 0x92, "GetTableResp" }, { 0x13, "GetTraceTable" },
	{ 0x14, "GetMulti" }, { 0x94, "GetMultiResp" }, { 0x15, "Delete" },
	{ 0x95, "DeleteResp" },
};

UMAD_EXPORT const char *umad_method_str(uint8_t mgmt_class, uint8_t method)
{
	const char *s = LOOKUP(methods, method, NULL);

	if (!s && mgmt_class == UMAD_CLASS_SUBN_ADM)
		s = LOOKUP(sa_methods, method, NULL);
	return s ? s : "<unknown>";
}

static const struct name16 common_attrs[] = {
	{ 0x0001, "ClassPortInfo" }, { 0x0002, "Notice" }, { 0x0003, "InformInfo" },
};

static const struct name16 sm_attrs[] = {
	{ 0x0010, "NodeDescription" }, { 0x0011, "NodeInfo" }, { 0x0012, "SwitchInfo" },
	{ 0x0014, "GUIDInfo" }, { 0x0015, "PortInfo" }, { 0x0016, "P_KeyTable" },
	{ 0x0017, "SLtoVLMappingTable" }, { 0x0018, "VLArbitrationTable" },
	{ 0x0019, "LinearForwardingTable" }, { 0x001A, "RandomForwardingTable" },
	{ 0x001B, "MulticastForwardingTable" }, { 0x0020, "SMInfo" },
	{ 0x0030, "VendorDiag" }, { 0x0031, "LedInfo" }, { 0xFF00, "VendorSpecific" },
};

static const struct name16 sa_attrs[] = {
	{ 0x0011, "NodeRecord" }, { 0x0012, "PortInfoRecord" }, { 0x0013, "SLtoVLMappingTableRecord" },
	{ 0x0014, "SwitchInfoRecord" }, { 0x0015, "LinearForwardingTableRecord" },
	{ 0x0016, "RandomForwardingTableRecord" }, { 0x0017, "MulticastForwardingTableRecord" },
	{ 0x0018, "SMInfoRecord" }, { 0x0019, "LinkSpeedWidthPairsTableRecord" },
	{ 0x00F3, "InformInfoRecord" }, { 0x0020, "LinkRecord" }, { 0x0030, "GuidInfoRecord" },
	{ 0x0031, "ServiceRecord" }, { 0x0033, "P_KeyTableRecord" }, { 0x0035, "PathRecord" },
	{ 0x0036, "VLArbitrationTableRecord" }, { 0x0038, "MCMemberRecord" },
	{ 0x0039, "TraceRecord" }, { 0x003A, "MultiPathRecord" },
	{ 0x003B, "ServiceAssociationRecord" },
};

static const struct name16 perf_attrs[] = {
	{ 0x0010, "PortSamplesControl" }, { 0x0011, "PortSamplesResult" },
	{ 0x0012, "PortCounters" }, { 0x0013, "PortRcvErrorDetails" },
	{ 0x0014, "PortXmitDiscardDetails" }, { 0x0015, "PortOpRcvCounters" },
	{ 0x0016, "PortFlowCtlCounters" }, { 0x0017, "PortVLOpPackets" },
	{ 0x0018, "PortVLOpData" }, { 0x0019, "PortVLXmitFlowCtlUpdateErrors" },
	{ 0x001A, "PortVLXmitWaitCounters" }, { 0x001B, "SwPortVLCongestion" },
	{ 0x001D, "PortCountersExtended" },
};

/* Attribute name of attr_id (network order) in mgmt_class. */
UMAD_EXPORT const char *umad_attribute_str(uint8_t mgmt_class, __be16 attr_id)
{
	uint16_t a = ntohs(attr_id);
	const char *s = LOOKUP(common_attrs, a, NULL);

	if (s)
		return s;
	switch (mgmt_class) {
	case UMAD_CLASS_SUBN_LID_ROUTED:
	case UMAD_CLASS_SUBN_DIRECTED_ROUTE:
		return LOOKUP(sm_attrs, a, "<unknown>");
	case UMAD_CLASS_SUBN_ADM:
		return LOOKUP(sa_attrs, a, "<unknown>");
	case UMAD_CLASS_PERF_MGMT:
		return LOOKUP(perf_attrs, a, "<unknown>");
	default:
		return "<unknown>";
	}
}

/* The common MAD status (IBA 13.4.7, table 112), network order: busy and
 * redirect bits first, then the 3-bit code in bits 2..4. */
UMAD_EXPORT const char *umad_common_mad_status_str(__be16 status)
{
	uint16_t s = ntohs(status);

	if (s & 0x0001)
		return "Busy";
	if (s & 0x0002)
		return "Redirection required";
	switch ((s >> 2) & 0x7) {
	case 0: return "Success";
	case 1: return "Bad Class and/or Base Version";
	case 2: return "Method not supported";
	case 3: return "Method/Attribute combination not supported";
	case 7: return "Invalid attribute/modifier value";
	default: return "Unknown";
	}
}

/* The SA status (IBA 15.2.1.1, table 187): the class-specific bits 8..15. */
UMAD_EXPORT const char *umad_sa_mad_status_str(__be16 status)
{
	switch ((ntohs(status) >> 8) & 0xff) {
	case 0: return "Success";
	case 1: return "No Resources";
	case 2: return "Request Invalid";
	case 3: return "No Records";
	case 4: return "Too Many Records";
	case 5: return "Invalid GID";
	case 6: return "Insufficient Components";
	case 7: return "Request Denied";
	case 8: return "Priority Suggested";
	default: return "Undefined Error";
	}
}
