/* SPDX-License-Identifier: MIT */
/*
 * softib CM MADs (IBA 1.4 vol 1, 12.6): the Communication Management
 * class 0x07 attribute IDs, the layout of every message as one field table
 * ({offset, width, name}; offsets after the 24-byte MAD header, as IBA
 * 12.6 and linux include/rdma/ibta_vol1_c12.h give them, research
 * rdmacm.md §3), the REJ reasons (12.6.7.2) and SIDR_REP statuses
 * (12.6.10), and get/set helpers.  Pure: no I/O, no allocation.
 */
#ifndef SIB_IBA_CM_H
#define SIB_IBA_CM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CM_MGMT_CLASS		0x07	/* IBA 13.4.4 */
#define CM_CLASS_VERSION	2	/* IBA 12.6.1 (linux IB_CM_CLASS_VERSION) */
#define CM_METHOD_SEND		0x03	/* every CM message is a Send (12.6.1) */
#define CM_GSI_QKEY		0x80010000u
#define CM_MAD_SIZE		256
#define CM_HDR_SIZE		24	/* the common MAD header before the offsets below */

/* Attribute IDs (IBA 12.6.2, Table 97). */
enum cm_attr {
	CM_ATTR_REQ = 0x0010,
	CM_ATTR_MRA = 0x0011,
	CM_ATTR_REJ = 0x0012,
	CM_ATTR_REP = 0x0013,
	CM_ATTR_RTU = 0x0014,
	CM_ATTR_DREQ = 0x0015,
	CM_ATTR_DREP = 0x0016,
	CM_ATTR_SIDR_REQ = 0x0017,
	CM_ATTR_SIDR_REP = 0x0018,
	CM_ATTR_LAP = 0x0019,
	CM_ATTR_APR = 0x001A,
};
#define CM_ATTR_FIRST	CM_ATTR_REQ
#define CM_ATTR_LAST	CM_ATTR_APR
#define CM_ATTR_COUNT	(CM_ATTR_LAST - CM_ATTR_FIRST + 1)

/* REJ reasons (IBA 12.6.7.2, Table 104; linux enum ib_cm_rej_reason). */
enum cm_rej_reason {
	CM_REJ_NO_QP = 1,
	CM_REJ_NO_EEC = 2,
	CM_REJ_NO_RESOURCES = 3,
	CM_REJ_TIMEOUT = 4,
	CM_REJ_UNSUPPORTED = 5,
	CM_REJ_INVALID_COMM_ID = 6,
	CM_REJ_INVALID_COMM_INSTANCE = 7,
	CM_REJ_INVALID_SERVICE_ID = 8,
	CM_REJ_INVALID_TRANSPORT_TYPE = 9,
	CM_REJ_STALE_CONN = 10,
	CM_REJ_RDC_NOT_EXIST = 11,
	CM_REJ_INVALID_GID = 12,
	CM_REJ_INVALID_LID = 13,
	CM_REJ_INVALID_SL = 14,
	CM_REJ_INVALID_TRAFFIC_CLASS = 15,
	CM_REJ_INVALID_HOP_LIMIT = 16,
	CM_REJ_INVALID_PACKET_RATE = 17,
	CM_REJ_INVALID_ALT_GID = 18,
	CM_REJ_INVALID_ALT_LID = 19,
	CM_REJ_INVALID_ALT_SL = 20,
	CM_REJ_INVALID_ALT_TRAFFIC_CLASS = 21,
	CM_REJ_INVALID_ALT_HOP_LIMIT = 22,
	CM_REJ_INVALID_ALT_PACKET_RATE = 23,
	CM_REJ_PORT_CM_REDIRECT = 24,
	CM_REJ_PORT_REDIRECT = 25,
	CM_REJ_INVALID_MTU = 26,
	CM_REJ_INSUFFICIENT_RESP_RESOURCES = 27,
	CM_REJ_CONSUMER_DEFINED = 28,
	CM_REJ_INVALID_RNR_RETRY = 29,
	CM_REJ_DUPLICATE_LOCAL_COMM_ID = 30,
	CM_REJ_INVALID_CLASS_VERSION = 31,
	CM_REJ_INVALID_FLOW_LABEL = 32,
	CM_REJ_INVALID_ALT_FLOW_LABEL = 33,
	CM_REJ_VENDOR_OPTION_NOT_SUPPORTED = 35,
};

/* REJ MessageRejected and MRA MessageMRAed (12.6.6, 12.6.7). */
enum cm_msg_ref { CM_MSG_REQ = 0, CM_MSG_REP = 1, CM_MSG_OTHER = 2 };

/* SIDR_REP Status (IBA 12.6.10, Table 109). */
enum cm_sidr_status {
	CM_SIDR_VALID = 0,
	CM_SIDR_UNSUPPORTED_SID = 1,
	CM_SIDR_REJECT = 2,
	CM_SIDR_NO_QP = 3,
	CM_SIDR_REDIRECT = 4,
	CM_SIDR_UNSUPPORTED_VERSION = 5,
};

/* REQ Transport Service Type (12.6.5). */
enum cm_tst { CM_TST_RC = 0, CM_TST_UC = 1, CM_TST_RD = 2 };

/*
 * X(ID, attribute, "IBA name", byte offset after the MAD header, container
 *   bytes, shift, mask).  A container of 1/2/4/8 bytes is a big-endian word
 *   whose (word >> shift) & mask is the field; a container of more than 8
 *   bytes is a byte string (GIDs, ARI, private data), shift and mask 0.
 */
#define CM_FIELDS(X) \
	X(REQ_LOCAL_COMM_ID, REQ, "LocalCommID", 0, 4, 0, 0xFFFFFFFF) \
	X(REQ_VENDOR_ID, REQ, "VendorID", 4, 4, 0, 0xFFFFFF) \
	X(REQ_SERVICE_ID, REQ, "ServiceID", 8, 8, 0, UINT64_MAX) \
	X(REQ_LOCAL_CA_GUID, REQ, "LocalCAGUID", 16, 8, 0, UINT64_MAX) \
	X(REQ_LOCAL_QKEY, REQ, "LocalQ_Key", 28, 4, 0, 0xFFFFFFFF) \
	X(REQ_LOCAL_QPN, REQ, "LocalQPN", 32, 4, 8, 0xFFFFFF) \
	X(REQ_RESPONDER_RESOURCES, REQ, "ResponderResources", 35, 1, 0, 0xFF) \
	X(REQ_LOCAL_EECN, REQ, "LocalEECN", 36, 4, 8, 0xFFFFFF) \
	X(REQ_INITIATOR_DEPTH, REQ, "InitiatorDepth", 39, 1, 0, 0xFF) \
	X(REQ_REMOTE_EECN, REQ, "RemoteEECN", 40, 4, 8, 0xFFFFFF) \
	X(REQ_REMOTE_CM_RESPONSE_TIMEOUT, REQ, "RemoteCMResponseTimeout", 43, 1, 3, 0x1F) \
	X(REQ_TRANSPORT_SERVICE_TYPE, REQ, "TransportServiceType", 43, 1, 1, 0x3) \
	X(REQ_FLOW_CONTROL, REQ, "EndToEndFlowControl", 43, 1, 0, 0x1) \
	X(REQ_STARTING_PSN, REQ, "StartingPSN", 44, 4, 8, 0xFFFFFF) \
	X(REQ_LOCAL_CM_RESPONSE_TIMEOUT, REQ, "LocalCMResponseTimeout", 47, 1, 3, 0x1F) \
	X(REQ_RETRY_COUNT, REQ, "RetryCount", 47, 1, 0, 0x7) \
	X(REQ_PKEY, REQ, "PartitionKey", 48, 2, 0, 0xFFFF) \
	X(REQ_PATH_MTU, REQ, "PathPacketPayloadMTU", 50, 1, 4, 0xF) \
	X(REQ_RDC_EXISTS, REQ, "RDCExists", 50, 1, 3, 0x1) \
	X(REQ_RNR_RETRY_COUNT, REQ, "RNRRetryCount", 50, 1, 0, 0x7) \
	X(REQ_MAX_CM_RETRIES, REQ, "MaxCMRetries", 51, 1, 4, 0xF) \
	X(REQ_SRQ, REQ, "SRQ", 51, 1, 3, 0x1) \
	X(REQ_EXT_TRANSPORT_TYPE, REQ, "ExtendedTransportType", 51, 1, 0, 0x7) \
	X(REQ_PRIMARY_LOCAL_LID, REQ, "PrimaryLocalPortLID", 52, 2, 0, 0xFFFF) \
	X(REQ_PRIMARY_REMOTE_LID, REQ, "PrimaryRemotePortLID", 54, 2, 0, 0xFFFF) \
	X(REQ_PRIMARY_LOCAL_GID, REQ, "PrimaryLocalPortGID", 56, 16, 0, 0) \
	X(REQ_PRIMARY_REMOTE_GID, REQ, "PrimaryRemotePortGID", 72, 16, 0, 0) \
	X(REQ_PRIMARY_FLOW_LABEL, REQ, "PrimaryFlowLabel", 88, 4, 12, 0xFFFFF) \
	X(REQ_PRIMARY_PACKET_RATE, REQ, "PrimaryPacketRate", 91, 1, 0, 0x3F) \
	X(REQ_PRIMARY_TRAFFIC_CLASS, REQ, "PrimaryTrafficClass", 92, 1, 0, 0xFF) \
	X(REQ_PRIMARY_HOP_LIMIT, REQ, "PrimaryHopLimit", 93, 1, 0, 0xFF) \
	X(REQ_PRIMARY_SL, REQ, "PrimarySL", 94, 1, 4, 0xF) \
	X(REQ_PRIMARY_SUBNET_LOCAL, REQ, "PrimarySubnetLocal", 94, 1, 3, 0x1) \
	X(REQ_PRIMARY_LOCAL_ACK_TIMEOUT, REQ, "PrimaryLocalACKTimeout", 95, 1, 3, 0x1F) \
	X(REQ_ALT_LOCAL_LID, REQ, "AlternateLocalPortLID", 96, 2, 0, 0xFFFF) \
	X(REQ_ALT_REMOTE_LID, REQ, "AlternateRemotePortLID", 98, 2, 0, 0xFFFF) \
	X(REQ_ALT_LOCAL_GID, REQ, "AlternateLocalPortGID", 100, 16, 0, 0) \
	X(REQ_ALT_REMOTE_GID, REQ, "AlternateRemotePortGID", 116, 16, 0, 0) \
	X(REQ_ALT_FLOW_LABEL, REQ, "AlternateFlowLabel", 132, 4, 12, 0xFFFFF) \
	X(REQ_ALT_PACKET_RATE, REQ, "AlternatePacketRate", 135, 1, 0, 0x3F) \
	X(REQ_ALT_TRAFFIC_CLASS, REQ, "AlternateTrafficClass", 136, 1, 0, 0xFF) \
	X(REQ_ALT_HOP_LIMIT, REQ, "AlternateHopLimit", 137, 1, 0, 0xFF) \
	X(REQ_ALT_SL, REQ, "AlternateSL", 138, 1, 4, 0xF) \
	X(REQ_ALT_SUBNET_LOCAL, REQ, "AlternateSubnetLocal", 138, 1, 3, 0x1) \
	X(REQ_ALT_LOCAL_ACK_TIMEOUT, REQ, "AlternateLocalACKTimeout", 139, 1, 3, 0x1F) \
	X(REQ_PRIVATE_DATA, REQ, "PrivateData", 140, 92, 0, 0) \
	X(MRA_LOCAL_COMM_ID, MRA, "LocalCommID", 0, 4, 0, 0xFFFFFFFF) \
	X(MRA_REMOTE_COMM_ID, MRA, "RemoteCommID", 4, 4, 0, 0xFFFFFFFF) \
	X(MRA_MESSAGE_MRAED, MRA, "MessageMRAed", 8, 1, 6, 0x3) \
	X(MRA_SERVICE_TIMEOUT, MRA, "ServiceTimeout", 9, 1, 3, 0x1F) \
	X(MRA_PRIVATE_DATA, MRA, "PrivateData", 10, 222, 0, 0) \
	X(REJ_LOCAL_COMM_ID, REJ, "LocalCommID", 0, 4, 0, 0xFFFFFFFF) \
	X(REJ_REMOTE_COMM_ID, REJ, "RemoteCommID", 4, 4, 0, 0xFFFFFFFF) \
	X(REJ_MESSAGE_REJECTED, REJ, "MessageRejected", 8, 1, 6, 0x3) \
	X(REJ_ARI_LENGTH, REJ, "RejectedInfoLength", 9, 1, 1, 0x7F) \
	X(REJ_REASON, REJ, "Reason", 10, 2, 0, 0xFFFF) \
	X(REJ_ARI, REJ, "ARI", 12, 72, 0, 0) \
	X(REJ_PRIVATE_DATA, REJ, "PrivateData", 84, 148, 0, 0) \
	X(REP_LOCAL_COMM_ID, REP, "LocalCommID", 0, 4, 0, 0xFFFFFFFF) \
	X(REP_REMOTE_COMM_ID, REP, "RemoteCommID", 4, 4, 0, 0xFFFFFFFF) \
	X(REP_LOCAL_QKEY, REP, "LocalQ_Key", 8, 4, 0, 0xFFFFFFFF) \
	X(REP_LOCAL_QPN, REP, "LocalQPN", 12, 4, 8, 0xFFFFFF) \
	X(REP_LOCAL_EECN, REP, "LocalEECN", 16, 4, 8, 0xFFFFFF) \
	X(REP_STARTING_PSN, REP, "StartingPSN", 20, 4, 8, 0xFFFFFF) \
	X(REP_RESPONDER_RESOURCES, REP, "ResponderResources", 24, 1, 0, 0xFF) \
	X(REP_INITIATOR_DEPTH, REP, "InitiatorDepth", 25, 1, 0, 0xFF) \
	X(REP_TARGET_ACK_DELAY, REP, "TargetACKDelay", 26, 1, 3, 0x1F) \
	X(REP_FAILOVER_ACCEPTED, REP, "FailoverAccepted", 26, 1, 1, 0x3) \
	X(REP_FLOW_CONTROL, REP, "EndToEndFlowControl", 26, 1, 0, 0x1) \
	X(REP_RNR_RETRY_COUNT, REP, "RNRRetryCount", 27, 1, 5, 0x7) \
	X(REP_SRQ, REP, "SRQ", 27, 1, 4, 0x1) \
	X(REP_LOCAL_CA_GUID, REP, "LocalCAGUID", 28, 8, 0, UINT64_MAX) \
	X(REP_PRIVATE_DATA, REP, "PrivateData", 36, 196, 0, 0) \
	X(RTU_LOCAL_COMM_ID, RTU, "LocalCommID", 0, 4, 0, 0xFFFFFFFF) \
	X(RTU_REMOTE_COMM_ID, RTU, "RemoteCommID", 4, 4, 0, 0xFFFFFFFF) \
	X(RTU_PRIVATE_DATA, RTU, "PrivateData", 8, 224, 0, 0) \
	X(DREQ_LOCAL_COMM_ID, DREQ, "LocalCommID", 0, 4, 0, 0xFFFFFFFF) \
	X(DREQ_REMOTE_COMM_ID, DREQ, "RemoteCommID", 4, 4, 0, 0xFFFFFFFF) \
	X(DREQ_REMOTE_QPN, DREQ, "RemoteQPN/EECN", 8, 4, 8, 0xFFFFFF) \
	X(DREQ_PRIVATE_DATA, DREQ, "PrivateData", 12, 220, 0, 0) \
	X(DREP_LOCAL_COMM_ID, DREP, "LocalCommID", 0, 4, 0, 0xFFFFFFFF) \
	X(DREP_REMOTE_COMM_ID, DREP, "RemoteCommID", 4, 4, 0, 0xFFFFFFFF) \
	X(DREP_PRIVATE_DATA, DREP, "PrivateData", 8, 224, 0, 0) \
	X(SIDR_REQ_REQUEST_ID, SIDR_REQ, "RequestID", 0, 4, 0, 0xFFFFFFFF) \
	X(SIDR_REQ_PKEY, SIDR_REQ, "PartitionKey", 4, 2, 0, 0xFFFF) \
	X(SIDR_REQ_SERVICE_ID, SIDR_REQ, "ServiceID", 8, 8, 0, UINT64_MAX) \
	X(SIDR_REQ_PRIVATE_DATA, SIDR_REQ, "PrivateData", 16, 216, 0, 0) \
	X(SIDR_REP_REQUEST_ID, SIDR_REP, "RequestID", 0, 4, 0, 0xFFFFFFFF) \
	X(SIDR_REP_STATUS, SIDR_REP, "Status", 4, 1, 0, 0xFF) \
	X(SIDR_REP_ADD_INFO_LENGTH, SIDR_REP, "AdditionalInformationLength", 5, 1, 0, 0xFF) \
	X(SIDR_REP_QPN, SIDR_REP, "QPN", 8, 4, 8, 0xFFFFFF) \
	X(SIDR_REP_SERVICE_ID, SIDR_REP, "ServiceID", 12, 8, 0, UINT64_MAX) \
	X(SIDR_REP_QKEY, SIDR_REP, "Q_Key", 20, 4, 0, 0xFFFFFFFF) \
	X(SIDR_REP_ADD_INFO, SIDR_REP, "AdditionalInformation", 24, 72, 0, 0) \
	X(SIDR_REP_PRIVATE_DATA, SIDR_REP, "PrivateData", 96, 136, 0, 0)

/* Every field of every message, as CM_<ID> (CM_REQ_SERVICE_ID, ...). */
enum cm_field_id {
#define CM_X_ENUM(id, attr, name, off, bytes, shift, mask) CM_##id,
	CM_FIELDS(CM_X_ENUM)
#undef CM_X_ENUM
	CM_FIELD_COUNT
};

/* One row of the table. */
struct cm_field {
	uint16_t attr;		/* enum cm_attr of the message */
	const char *name;	/* the IBA name */
	uint8_t off;		/* bytes after the MAD header */
	uint8_t bytes;		/* container (1, 2, 4, 8) or byte string length */
	uint8_t shift;
	uint64_t mask;
};

/* The table, indexed by enum cm_field_id (NULL past the end). */
const struct cm_field *cm_field(enum cm_field_id id);

/* Scalar fields of the 256-byte MAD `mad`: the value, or set it (bits
 * outside the field kept; v truncated to it).  Byte-string fields read 0
 * and are not written: use cm_bytes / cm_set_bytes. */
uint64_t cm_get(const uint8_t *mad, enum cm_field_id id);
void cm_set(uint8_t *mad, enum cm_field_id id, uint64_t v);

/* A byte-string field: its start in mad and *len its length (NULL for a
 * scalar).  cm_set_bytes copies min(len, field length) bytes of src and
 * zeroes the rest of the field; returns the bytes copied, or -1 if len is
 * longer than the field (nothing written) or the field is scalar. */
const uint8_t *cm_bytes(const uint8_t *mad, enum cm_field_id id, size_t *len);
int cm_set_bytes(uint8_t *mad, enum cm_field_id id, const uint8_t *src, size_t len);

/* The private data field of message `attr`: its id (CM_FIELD_COUNT: none,
 * e.g. LAP/APR) and length. */
enum cm_field_id cm_pdata_field(uint16_t attr);

/* Write the common MAD header of a CM message (BaseVersion 1, class 0x07,
 * class version 2, method Send, status 0, TID, attribute; modifier 0). */
void cm_put_hdr(uint8_t *mad, uint16_t attr, uint64_t tid);

/* Names: "REQ", ... ("?" outside 0x10..0x1A); a REJ reason's name
 * ("invalid service ID"; "?" unknown). */
const char *cm_attr_str(uint16_t attr);
const char *cm_rej_reason_str(uint16_t reason);

#endif
