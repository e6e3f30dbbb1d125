/* SPDX-License-Identifier: MIT */
/*
 * softib IBA wire formats: the public interface of src/iba/.
 * Owns: header layouts (LRH, GRH, BTH, ETHs), the opcode table, packet
 * decode/build, ICRC/VCRC, PSN arithmetic and the AETH code tables.
 * IBA vol. 1 ch. 7 (LRH, VCRC), ch. 8 (GRH), ch. 9 (BTH, ETHs, ICRC, AETH).
 * Pure functions over caller buffers: no I/O, no malloc, no locks, no state.
 */
#ifndef SOFTIB_IBA_H
#define SOFTIB_IBA_H

#include <stdint.h>
#include <stddef.h>
#include <stdbool.h>

/* ---- Header sizes (bytes) ---------------------------------------------- */

enum {
	IBA_LRH_BYTES = 8,
	IBA_GRH_BYTES = 40,
	IBA_BTH_BYTES = 12,
	IBA_RDETH_BYTES = 4,
	IBA_DETH_BYTES = 8,
	IBA_RETH_BYTES = 16,
	IBA_ATOMICETH_BYTES = 28,
	IBA_AETH_BYTES = 4,
	IBA_ATOMICACKETH_BYTES = 8,
	IBA_IMMDT_BYTES = 4,
	IBA_IETH_BYTES = 4,
	IBA_XRCETH_BYTES = 4,
	IBA_FETH_BYTES = 4,
	IBA_ICRC_BYTES = 4,
	IBA_VCRC_BYTES = 2,
};

/* >= LRH + GRH + BTH + the largest ETH combination (100 bytes, RD). */
#define IBA_MAX_HDR_BYTES 128

/* LRH.LNH: what follows the LRH (IBA 7.7). */
enum iba_lnh {
	IBA_LNH_RAW = 0,
	IBA_LNH_IP6 = 1,
	IBA_LNH_LOCAL = 2,	/* BTH follows */
	IBA_LNH_GLOBAL = 3,	/* GRH, then BTH */
};

#define IBA_GRH_IPVER 6
#define IBA_GRH_NXTHDR_IBA 0x1B	/* GRH.NxtHdr: IBA transport follows */

#define IBA_LID_PERMISSIVE 0xFFFF
#define IBA_MCAST_QPN 0xFFFFFF

/* ---- Decoded headers (host byte order unless noted) --------------------- */

struct iba_lrh {
	uint8_t vl, lver, sl, lnh;
	uint16_t dlid;
	uint16_t pktlen;	/* 4-byte words, LRH..ICRC (VCRC excluded) */
	uint16_t slid;
};

struct iba_grh {
	uint8_t ipver, tclass;
	uint32_t flow_label;
	uint16_t paylen;	/* bytes after the GRH through the ICRC */
	uint8_t nxthdr, hoplmt;
	uint8_t sgid[16], dgid[16];
};

struct iba_bth {
	uint8_t opcode, se, mig, padcnt, tver;
	uint16_t pkey;
	uint8_t fecn, becn;
	uint32_t dqpn;
	uint8_t ackreq;
	uint32_t psn;
};

struct iba_reth {
	uint64_t va;
	uint32_t rkey, dmalen;
};

struct iba_aeth {
	uint8_t syndrome;
	uint32_t msn;
};

struct iba_deth {
	uint32_t qkey, src_qp;
};

struct iba_atomiceth {
	uint64_t va;
	uint32_t rkey;
	uint64_t swap_add, compare;
};

/* FETH (IBTA 1.5 FLUSH): byte 3 bits 5:4 selectivity level, 3:0 placement type. */
struct iba_feth {
	uint8_t sel, plt;
};

/* ---- Opcodes (IBA 9.2) ------------------------------------------------- */

/* Header-presence bits of an opcode (which extension headers follow the BTH).
 * The bits are in wire order, except FETH, which precedes RETH on the wire. */
#define IBA_HDR_RDETH		(1u << 0)
#define IBA_HDR_DETH		(1u << 1)
#define IBA_HDR_XRCETH		(1u << 2)
#define IBA_HDR_RETH		(1u << 3)
#define IBA_HDR_ATOMICETH	(1u << 4)
#define IBA_HDR_AETH		(1u << 5)
#define IBA_HDR_ATOMICACKETH	(1u << 6)
#define IBA_HDR_IMMDT		(1u << 7)
#define IBA_HDR_IETH		(1u << 8)
#define IBA_HDR_FETH		(1u << 9)
#define IBA_HDR_COUNT		10

/* Semantic bits of an opcode. */
#define IBA_OP_REQ		(1u << 0)	/* request (requester -> responder) */
#define IBA_OP_RESP		(1u << 1)	/* ACK, atomic ACK, READ response */
#define IBA_OP_SEND		(1u << 2)
#define IBA_OP_WRITE		(1u << 3)
#define IBA_OP_READ		(1u << 4)	/* READ request */
#define IBA_OP_READ_RESP	(1u << 5)
#define IBA_OP_ATOMIC		(1u << 6)	/* COMPARE_SWAP, FETCH_ADD */
#define IBA_OP_ACK		(1u << 7)	/* ACKNOWLEDGE or ATOMIC_ACKNOWLEDGE */
#define IBA_OP_FIRST		(1u << 8)
#define IBA_OP_MIDDLE		(1u << 9)
#define IBA_OP_LAST		(1u << 10)
#define IBA_OP_ONLY		(1u << 11)
#define IBA_OP_PAYLOAD		(1u << 12)	/* may carry payload */
#define IBA_OP_IMM		(1u << 13)	/* carries ImmDt */
#define IBA_OP_INV		(1u << 14)	/* carries IETH */
#define IBA_OP_RWR		(1u << 15)	/* consumes a receive WQE: every SEND* packet,
						   RDMA_WRITE_{LAST,ONLY}_WITH_IMMEDIATE */
#define IBA_OP_COMP		(1u << 16)	/* completes the message at the responder: LAST/ONLY
						   of SEND/WRITE, READ request, atomics, FLUSH,
						   ATOMIC_WRITE */
#define IBA_OP_FLUSH		(1u << 17)	/* IBTA 1.5 FLUSH */
#define IBA_OP_ATOMIC_WRITE	(1u << 18)	/* IBTA 1.5 ATOMIC_WRITE (RETH + 8-byte payload) */
#define IBA_OP_CNP		(1u << 19)	/* congestion notification; any bytes after the BTH
						   are reported as payload */

/* Transport prefix: opcode bits 7:5. */
#define IBA_TRANSPORT_RC	0x00
#define IBA_TRANSPORT_UC	0x20
#define IBA_TRANSPORT_RD	0x40
#define IBA_TRANSPORT_UD	0x60
#define IBA_TRANSPORT_CNP	0x80
#define IBA_TRANSPORT_XRC	0xA0
#define IBA_TRANSPORT_MASK	0xE0
#define IBA_OPC_MASK		0x1F

/* Operation: opcode bits 4:0 (add a transport prefix to get the BTH opcode). */
enum iba_opc {
	IBA_OPC_SEND_FIRST = 0x00,
	IBA_OPC_SEND_MIDDLE = 0x01,
	IBA_OPC_SEND_LAST = 0x02,
	IBA_OPC_SEND_LAST_WITH_IMMEDIATE = 0x03,
	IBA_OPC_SEND_ONLY = 0x04,
	IBA_OPC_SEND_ONLY_WITH_IMMEDIATE = 0x05,
	IBA_OPC_RDMA_WRITE_FIRST = 0x06,
	IBA_OPC_RDMA_WRITE_MIDDLE = 0x07,
	IBA_OPC_RDMA_WRITE_LAST = 0x08,
	IBA_OPC_RDMA_WRITE_LAST_WITH_IMMEDIATE = 0x09,
	IBA_OPC_RDMA_WRITE_ONLY = 0x0A,
	IBA_OPC_RDMA_WRITE_ONLY_WITH_IMMEDIATE = 0x0B,
	IBA_OPC_RDMA_READ_REQUEST = 0x0C,
	IBA_OPC_RDMA_READ_RESPONSE_FIRST = 0x0D,
	IBA_OPC_RDMA_READ_RESPONSE_MIDDLE = 0x0E,
	IBA_OPC_RDMA_READ_RESPONSE_LAST = 0x0F,
	IBA_OPC_RDMA_READ_RESPONSE_ONLY = 0x10,
	IBA_OPC_ACKNOWLEDGE = 0x11,
	IBA_OPC_ATOMIC_ACKNOWLEDGE = 0x12,
	IBA_OPC_COMPARE_SWAP = 0x13,
	IBA_OPC_FETCH_ADD = 0x14,
	IBA_OPC_RESYNC = 0x15,			/* RD only */
	IBA_OPC_SEND_LAST_WITH_INVALIDATE = 0x16,	/* RC, XRC */
	IBA_OPC_SEND_ONLY_WITH_INVALIDATE = 0x17,	/* RC, XRC */
	IBA_OPC_FLUSH = 0x1C,			/* RC (IBTA 1.5) */
	IBA_OPC_ATOMIC_WRITE = 0x1D,		/* RC (IBTA 1.5) */
	IBA_OPC_CNP = 0x00,			/* with IBA_TRANSPORT_CNP: 0x80 */
	IBA_OPC_CNP_ROCE = 0x01,		/* with IBA_TRANSPORT_CNP: 0x81, RoCEv2 CNP */
};

struct iba_opcode_info {
	const char *name;	/* e.g. "RC_SEND_ONLY"; NULL for a reserved opcode */
	uint32_t hdrs;		/* IBA_HDR_* */
	uint32_t flags;		/* IBA_OP_* */
	uint8_t eth_len;	/* bytes of ETHs after the BTH */
};

/* Opcode table entry for a BTH opcode. Never NULL; a reserved opcode has
 * name NULL and hdrs = flags = eth_len = 0. */
const struct iba_opcode_info *iba_opcode_info(uint8_t opcode);

#define IBA_ETH_NONE 0xFFFFFFFFu
/* Byte offset, counted from the end of the BTH, of the ETH named by hdr_bit
 * (one IBA_HDR_* bit) in a packet of this opcode; IBA_ETH_NONE if the opcode
 * has no such header. */
unsigned iba_eth_offset(uint8_t opcode, uint32_t hdr_bit);
/* Total bytes of the ETHs named by a set of IBA_HDR_* bits. */
unsigned iba_hdrs_len(uint32_t hdrs);
/* Size in bytes of one ETH (one IBA_HDR_* bit), 0 if not a single known bit. */
unsigned iba_eth_bytes(uint32_t hdr_bit);

/* ---- Packets ------------------------------------------------------------- */

/* Decoded view of a packet; pointers point into the caller's buffer. */
struct iba_pkt {
	struct iba_lrh lrh;
	struct iba_grh grh;		/* valid iff lrh.lnh == IBA_LNH_GLOBAL */
	struct iba_bth bth;
	const struct iba_opcode_info *op;	/* set by iba_decode; ignored by the builder */
	struct iba_reth reth;
	struct iba_aeth aeth;
	struct iba_deth deth;
	struct iba_atomiceth atomic;
	uint64_t atomic_ack;		/* AtomicAckETH: original remote data */
	uint32_t immdt_be;		/* ImmDt exactly as on the wire (network byte order),
					   as ibv_wc.imm_data wants */
	uint32_t ieth_rkey;
	uint32_t xrc_srqn;
	uint32_t rdeth_een;		/* RDETH EE-Context (RD only) */
	struct iba_feth feth;		/* FLUSH only */
	const uint8_t *payload;
	uint32_t paylen;		/* payload bytes, pad excluded */
	uint32_t hdr_len;		/* bytes from LRH start to payload start */
	bool placed;			/* not a wire field: the receiver sets it from the
					   link slot's SIB_SLOT_F_PLACED (softib hca direct.c) */
};

enum iba_err {
	IBA_OK = 0,
	IBA_ERR_SHORT = -1,	/* buffer shorter than the headers or than PktLen says */
	IBA_ERR_LNH = -2,	/* LNH 0/1: raw or IPv6 packet, not IBA transport */
	IBA_ERR_PKTLEN = -3,	/* PktLen too small for the headers, or bytes beyond it,
				   or payload on an opcode that carries none */
	IBA_ERR_TVER = -4,	/* BTH.TVer != 0 */
	IBA_ERR_OPCODE = -5,	/* reserved opcode */
	IBA_ERR_ICRC = -6,
	IBA_ERR_VCRC = -7,
	IBA_ERR_GRH = -8,	/* IPVer != 6, NxtHdr != 0x1B or PayLen inconsistent */
	IBA_ERR_PAD = -9,	/* PadCnt but no payload bytes after the headers */
};

/* Static description of an iba_err value; "unknown error" for others. */
const char *iba_strerror(int err);

#define IBA_CHECK_ICRC	0x1
#define IBA_CHECK_VCRC	0x2	/* implies IBA_HAS_VCRC */
#define IBA_HAS_VCRC	0x4	/* buffer ends with a 2-byte VCRC (native IB on a link) */
#define IBA_NO_ICRC	0x8	/* iba_finish: leave the 4 ICRC bytes zero, not computed */

/*
 * Decode a native IB packet (LRH [GRH] BTH ETHs payload pad ICRC [VCRC]);
 * len = bytes in buf, which must be exactly PktLen*4 (+2 with a VCRC).
 * Checks, in this order: length >= LRH (SHORT), LNH (LNH), len vs PktLen
 * (SHORT/PKTLEN), room for LRH+GRH+BTH+ICRC (PKTLEN), VCRC, ICRC (if asked),
 * GRH IPVer/NxtHdr/PayLen (GRH), TVer (TVER), reserved opcode (OPCODE),
 * room for the ETHs (PKTLEN), PadCnt vs payload (PAD/PKTLEN).
 * Returns IBA_OK or an iba_err; on error *pkt is partly filled. Never reads
 * past len. Pointers in *pkt point into buf. IBA 7.7, 8.3, 9.2-9.5.
 */
int iba_decode(const uint8_t *buf, size_t len, unsigned flags, struct iba_pkt *pkt);

/*
 * Write LRH, GRH (iff pkt->lrh.lnh == IBA_LNH_GLOBAL), BTH and the ETHs that
 * pkt->bth.opcode names (none for a reserved opcode), from *pkt, into buf
 * (>= IBA_MAX_HDR_BYTES). Fields are written exactly as given (set
 * grh.ipver = 6 and grh.nxthdr = 0x1B yourself); reserved bits are zeroed.
 * Returns the header length: the payload goes at buf + that. PktLen, PadCnt
 * and GRH PayLen are fixed by iba_finish().
 */
size_t iba_build_headers(uint8_t *buf, const struct iba_pkt *pkt);

/*
 * The headers are at buf and the payload (paylen bytes) at buf + hdr_len.
 * Writes the zero pad bytes, sets BTH.PadCnt, LRH.PktLen and (for LNH 3)
 * GRH.PayLen, appends the ICRC (4 zero bytes instead if flags has IBA_NO_ICRC:
 * a memory link that flags it as not computed) and then, if (flags &
 * IBA_HAS_VCRC), the VCRC.
 * buf must hold hdr_len + paylen + 3 + 4 + 2 bytes; the packet must fit the
 * 11-bit PktLen (<= 8188 bytes). Returns the total length written.
 */
size_t iba_finish(uint8_t *buf, size_t hdr_len, size_t paylen, unsigned flags);

/* ---- CRCs (IBA 7.8) ------------------------------------------------------ */

/*
 * ICRC of a native packet: CRC-32 (zlib) over LRH..pad with the variant fields
 * set to 1s (LNH 2: LRH.VL and BTH byte 4; LNH 3: all of the LRH, GRH TClass,
 * FlowLabel and HopLmt, BTH byte 4). Returns the value whose little-endian
 * bytes are the wire bytes. Returns 0 for raw packets (LNH 0/1, which carry
 * no ICRC) and for inputs shorter than the headers that are masked.
 */
uint32_t iba_icrc(const uint8_t *pkt, size_t len_before_icrc);
/* VCRC: CRC-16 (poly 0x100B reflected, init/xorout 0xFFFF) over every byte
 * from the LRH through the ICRC, unmasked; sent least significant byte first. */
uint16_t iba_vcrc(const uint8_t *pkt, size_t len_before_vcrc);
/* RoCEv2 ICRC, input from the IPv4 (resp. IPv6) header up to the ICRC, UDP
 * then BTH right after the IP header (no IPv6 extension headers). Masks the
 * IP TOS/TTL/checksum (IPv6: TClass/FlowLabel/HopLimit), UDP checksum and
 * BTH byte 4, with an all-1s LRH in front. Same return convention
 * (0 if len < IP header + UDP + BTH, or IPv4 IHL < 5). */
uint32_t iba_icrc_rocev2_ipv4(const uint8_t *ip_hdr, size_t len_before_icrc);
uint32_t iba_icrc_rocev2_ipv6(const uint8_t *ip6_hdr, size_t len_before_icrc);

static inline uint32_t iba_pad(size_t paylen)
{
	return (uint32_t)(-paylen & 3);
}

/* ---- PSN arithmetic, modulo 2^24 (IBA 9.7.x) ----------------------------- */

#define IBA_PSN_MASK 0xFFFFFFu

static inline uint32_t iba_psn_add(uint32_t psn, uint32_t n)
{
	return (psn + n) & IBA_PSN_MASK;
}

/* <0, 0, >0 as a is behind, equal to, ahead of b (window 2^23). */
static inline int32_t iba_psn_cmp(uint32_t a, uint32_t b)
{
	return (int32_t)((a - b) << 8);
}

/* Signed distance a - b in PSNs, in [-2^23, 2^23). */
static inline int32_t iba_psn_diff(uint32_t a, uint32_t b)
{
	return iba_psn_cmp(a, b) / 256;
}

/* ---- AETH (IBA 9.7.5.1) -------------------------------------------------- */

#define IBA_AETH_ACK		0x00
#define IBA_AETH_RNR_NAK	0x20
#define IBA_AETH_NAK		0x60
#define IBA_AETH_TYPE_MASK	0x60
#define IBA_AETH_VALUE_MASK	0x1F

#define IBA_NAK_PSN_SEQ		0
#define IBA_NAK_INV_REQ		1
#define IBA_NAK_REM_ACCESS	2
#define IBA_NAK_REM_OP		3
#define IBA_NAK_INV_RD_REQ	4

#define IBA_AETH_CREDIT_INVALID 31

static inline uint8_t iba_aeth_type(uint8_t syndrome)
{
	return syndrome & IBA_AETH_TYPE_MASK;
}

static inline uint8_t iba_aeth_value(uint8_t syndrome)
{
	return syndrome & IBA_AETH_VALUE_MASK;
}

/* 5-bit RNR NAK timer code -> microseconds (code 0 = 655360; only the low
 * 5 bits of code are used). */
uint32_t iba_rnr_timer_us(uint8_t code);
/* Largest credit code 0..30 whose credit count <= free_rwqes. */
uint8_t iba_aeth_credit_code(uint32_t free_rwqes);
/* Credit code -> credit count; 31 (invalid: no flow control) -> UINT32_MAX. */
uint32_t iba_aeth_credits(uint8_t code);

/* IBV_MTU_256..IBV_MTU_4096 (1..5) -> 256 << (n - 1) bytes; 0 otherwise. */
static inline uint32_t iba_mtu_bytes(unsigned ibv_mtu_enum)
{
	return ibv_mtu_enum >= 1 && ibv_mtu_enum <= 5 ? 256u << (ibv_mtu_enum - 1) : 0;
}

/* ---- Header fields as data ------------------------------------------------ */

/* Header ids; for an ETH, id - IBA_HID_RDETH is its IBA_HDR_* bit number. */
enum iba_hid {
	IBA_HID_LRH, IBA_HID_GRH, IBA_HID_BTH,
	IBA_HID_RDETH, IBA_HID_DETH, IBA_HID_XRCETH, IBA_HID_RETH,
	IBA_HID_ATOMICETH, IBA_HID_AETH, IBA_HID_ATOMICACKETH,
	IBA_HID_IMMDT, IBA_HID_IETH, IBA_HID_FETH,
	IBA_HID_COUNT,
};

#define IBA_FIELD_RAW 0x1	/* bytes copied as they are (ImmDt), no byte swap */

/*
 * One scalar header field: the big-endian container of `bytes` bytes at
 * header offset `off`, shifted right by `shift`, masked by `mask`; it is
 * decoded into the struct iba_pkt member at pkt_off (pkt_size bytes).
 * GRH SGID/DGID are byte arrays and are not listed.
 */
struct iba_field {
	const char *name;	/* the struct iba_pkt member, e.g. "bth.psn" */
	uint8_t hid;		/* enum iba_hid */
	uint8_t off, bytes, shift, flags;
	uint8_t pkt_size;
	uint16_t pkt_off;
	uint64_t mask;
};

/* All scalar fields of all headers, ordered by hid then offset. */
const struct iba_field *iba_fields(size_t *count);
/* Size of a header by id (IBA_*_BYTES). */
unsigned iba_hdr_bytes(unsigned hid);
/* The value of field f in the header at hdr, as the decoded member holds it. */
uint64_t iba_field_get(const struct iba_field *f, const uint8_t *hdr);
/* Store v (masked to the field) into the header at hdr; other bits untouched. */
void iba_field_put(const struct iba_field *f, uint8_t *hdr, uint64_t v);

#endif /* SOFTIB_IBA_H */
