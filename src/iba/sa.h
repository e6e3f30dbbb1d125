/* SPDX-License-Identifier: MIT */
/*
 * softib SA records and RMPP: the SubnAdm record layouts (IBA 15.2.5) as field
 * tables over the MAD attribute tables of mad.h, their ComponentMask bits, and
 * RMPP segmentation and reassembly (IBA 13.6) as pure functions over
 * caller-given buffers. No I/O, no allocation, no locks: every function only
 * touches its arguments (a reassembly state belongs to one caller).
 * Layout facts: ../shared/research/mad-formats.md §4.
 */
#ifndef SOFTIB_IBA_SA_H
#define SOFTIB_IBA_SA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "iba/mad.h"

/* ---- attribute IDs of the records (IBA 15.2.5) --------------------------- */
#define SA_ATTR_NODE_RECORD		0x0011
#define SA_ATTR_PORT_INFO_RECORD	0x0012
#define SA_ATTR_SWITCH_INFO_RECORD	0x0014
#define SA_ATTR_LINK_RECORD		0x0020
#define SA_ATTR_GUID_INFO_RECORD	0x0030
#define SA_ATTR_PATH_RECORD		0x0035
#define SA_ATTR_MCMEMBER_RECORD		0x0038

/* ---- record structs ------------------------------------------------------- */

struct sa_node_record {		/* 0x11, 112 bytes (AttributeOffset 14) */
	uint16_t lid;
	struct mad_node_info node_info;		/* bytes 4-43 */
	struct mad_node_desc node_desc;		/* bytes 44-107 */
};

struct sa_port_info_record {	/* 0x12, 72 bytes (9) */
	uint16_t endport_lid;	/* a switch: port 0's LID */
	uint8_t port_num, options;
	struct mad_port_info port_info;		/* bytes 4-67 */
};

struct sa_switch_info_record {	/* 0x14, 24 bytes (3) */
	uint16_t lid;
	struct mad_switch_info switch_info;	/* bytes 4-23 */
};

struct sa_link_record {		/* 0x20, 8 bytes (1) */
	uint16_t from_lid;
	uint8_t from_port, to_port;
	uint16_t to_lid;
};

struct sa_guid_info_record {	/* 0x30, 72 bytes (9) */
	uint16_t lid;
	uint8_t block_num;
	struct mad_guid_info guid_info;		/* bytes 8-71 */
};

struct sa_path_record {		/* 0x35, 64 bytes (8) */
	uint64_t service_id;
	uint8_t dgid[16], sgid[16];
	uint16_t dlid, slid;
	uint8_t raw_traffic;
	uint32_t flow_label;	/* 20 bits */
	uint8_t hop_limit, tclass, reversible, numb_path;
	uint16_t pkey;
	uint16_t qos_class;	/* 12 bits */
	uint8_t sl, mtu_selector, mtu, rate_selector, rate,
		packet_life_time_selector, packet_life_time, preference;
};

struct sa_mcmember_record {	/* 0x38, 56 bytes (7) */
	uint8_t mgid[16], port_gid[16];
	uint32_t qkey;
	uint16_t mlid;
	uint8_t mtu_selector, mtu, tclass;
	uint16_t pkey;
	uint8_t rate_selector, rate, packet_life_time_selector,
		packet_life_time, sl;
	uint32_t flow_label;	/* 20 bits */
	uint8_t hop_limit, scope, join_state, proxy_join;
};

/* ---- layouts ---------------------------------------------------------------- */

/* An attribute layout of mad_layouts() (by name) placed inside a record at
 * byte off, decoded into the struct member at member. */
struct sa_embed {
	const char *layout;
	uint16_t off;
	uint16_t member;
};

/*
 * One SA record: its own fields, the attribute layouts it embeds, and the
 * ComponentMask field names by bit (bit n = comp[n]; "reserved" entries
 * count, IBA 15.2.5 / ib_types.h IB_*_COMPMASK_*). ncomp may cover only the
 * leading bits known here (PortInfoRecord: 0-7, up to CapabilityMask).
 */
struct sa_layout {
	const char *name;
	uint16_t attr_id;
	uint16_t size;		/* bytes; AttributeOffset = size / 8 */
	const struct mad_field *fields;
	size_t nfields;
	const struct sa_embed *embeds;
	size_t nembeds;
	const char *const *comp;
	size_t ncomp;
};

/* All SA record layouts; *n gets the count. */
const struct sa_layout *sa_layouts(size_t *n);

/* The layout of record attribute attr_id, or NULL. */
const struct sa_layout *sa_layout_find(uint16_t attr_id);

/*
 * Flatten a record's fields (its own and its embeds', offsets and members
 * shifted) into out[0..max). Returns the total count, which may exceed max
 * (then only max are written).
 */
size_t sa_layout_flatten(const struct sa_layout *l, struct mad_field *out,
			 size_t max);

/* Decode a record at p (l->size bytes) into rec, zeroed first / encode rec
 * into p, l->size bytes zeroed first (reserved and pad bits 0). */
void sa_record_decode(const struct sa_layout *l, const uint8_t *p, void *rec);
void sa_record_encode(const struct sa_layout *l, const void *rec, uint8_t *p);

/* ComponentMask of every bit named field in l (PathRecord ServiceID: bits 0
 * and 1), or 0 if l has no such bit. */
uint64_t sa_comp_mask(const struct sa_layout *l, const char *field);

#define SA_RECORD_CODEC(name) \
	void sa_##name##_decode(struct sa_##name *r, const uint8_t *p); \
	void sa_##name##_encode(const struct sa_##name *r, uint8_t *p);
SA_RECORD_CODEC(node_record)
SA_RECORD_CODEC(port_info_record)
SA_RECORD_CODEC(switch_info_record)
SA_RECORD_CODEC(link_record)
SA_RECORD_CODEC(guid_info_record)
SA_RECORD_CODEC(path_record)
SA_RECORD_CODEC(mcmember_record)
#undef SA_RECORD_CODEC

/* ---- RMPP (IBA 13.6) ---------------------------------------------------------- */

/*
 * A message is MAD_SA_HDR_SIZE bytes of header (common + RMPP + SA header, as
 * segment 1 carries it) followed by data_len SA data bytes; each DATA segment
 * repeats the header and carries MAD_SA_DATA_SIZE data bytes. softib bounds a
 * message at SA_RMPP_MAX_SEGS segments (a hostile length cannot ask more).
 */
#define SA_RMPP_VERSION		1
#define SA_RMPP_SEG_PAYLOAD	(MAD_SIZE - 36)	/* 220: class header + data */
#define SA_RMPP_MAX_SEGS	1024u
#define SA_RMPP_MAX_DATA	(SA_RMPP_MAX_SEGS * MAD_SA_DATA_SIZE)
/* RMPPStatus (IBA 13.6.2.1 table 108) */
#define SA_RMPP_STATUS_RESX		1	/* STOP: resources exhausted */
#define SA_RMPP_STATUS_T2L		118
#define SA_RMPP_STATUS_BAD_LEN		119	/* inconsistent Last and PayloadLength */
#define SA_RMPP_STATUS_BAD_SEG		120	/* inconsistent First and SegmentNumber */
#define SA_RMPP_STATUS_BADT		121	/* bad RMPPType */
#define SA_RMPP_STATUS_W2S		122
#define SA_RMPP_STATUS_S2B		123	/* SegmentNumber too big */
#define SA_RMPP_STATUS_BAD_STATUS	124
#define SA_RMPP_STATUS_UNV		125	/* unsupported version */

/* Segments a message of data_len SA data bytes needs (1 for 0 bytes). */
uint32_t sa_rmpp_nsegs(size_t data_len);

/*
 * Build DATA segment seg (1-based) of msg (msg_len = 56 + data_len bytes)
 * into the 256-byte out: msg's header with RMPPVersion 1, type DATA, flags
 * Active (+First on 1, +Last on the last), status 0, SegmentNumber seg,
 * PayloadLength nsegs x 220 - pad on the first, 220 - pad on the last
 * (pad = unused data bytes of the last segment), 0 between; RRespTime kept
 * from msg. Returns 0, or -EINVAL (NULL, msg_len < 56, seg 0 or past the
 * last), -EMSGSIZE (more than SA_RMPP_MAX_SEGS segments).
 */
int sa_rmpp_build_seg(const uint8_t *msg, size_t msg_len, uint32_t seg,
		      uint8_t *out);

/* What the receiver did with a MAD. */
enum sa_rmpp_verdict {
	SA_RMPP_ACCEPTED,	/* stored; more segments expected */
	SA_RMPP_COMPLETE,	/* Last stored: buf[0..len) is the message */
	SA_RMPP_DUPLICATE,	/* already have it: re-ACK (reply) */
	SA_RMPP_OUT_OF_ORDER,	/* a gap before it: dropped, sender resends */
	SA_RMPP_OUT_OF_WINDOW,	/* past NewWindowLast: dropped */
	SA_RMPP_TOO_BIG,	/* does not fit buf / SA_RMPP_MAX_SEGS: STOP */
	SA_RMPP_BAD,		/* protocol violation: ABORT with a status */
	SA_RMPP_PEER_ABORT,	/* the sender sent STOP or ABORT */
	SA_RMPP_NOT_RMPP,	/* not an SA MAD with RMPP Active: dropped */
	SA_RMPP_FINISHED,	/* state done/aborted and not a duplicate: dropped */
};

/* Short name of a verdict, for counters and logs ("duplicate"). */
const char *sa_rmpp_verdict_str(enum sa_rmpp_verdict v);

/* Reassembly state of one message (one TID), owned by the caller. */
struct sa_rmpp_recv {
	uint8_t *buf;		/* caller's buffer for 56 + data bytes */
	size_t cap;
	size_t len;		/* bytes valid in buf */
	uint32_t window;	/* receive window in segments (>= 1) */
	uint32_t last;		/* last segment received in order */
	uint32_t newwin;	/* NewWindowLast sent in ACKs */
	uint32_t first_len;	/* PayloadLength of segment 1 (0 = unknown) */
	bool done, aborted;
};

/* Start a reassembly into buf[0..cap) with a window of window segments
 * (0 is taken as 1, more than SA_RMPP_MAX_SEGS as that; Linux uses 64). */
void sa_rmpp_recv_init(struct sa_rmpp_recv *r, uint8_t *buf, size_t cap,
		       uint32_t window);

/*
 * Feed one received 256-byte MAD. Returns the verdict; when *reply is set,
 * out holds the 256-byte MAD to send back: an ACK (header copied from the
 * segment, R flipped, type ACK, SegmentNumber = last in order, Data2 =
 * NewWindowLast; after segment 1, at each window end, on completion and for
 * duplicates), a STOP (TOO_BIG) or an ABORT (BAD: the status in
 * out[27]). Never writes past buf[cap).
 */
enum sa_rmpp_verdict sa_rmpp_recv_seg(struct sa_rmpp_recv *r,
				      const uint8_t *mad, uint8_t *out,
				      bool *reply);

#endif /* SOFTIB_IBA_SA_H */
